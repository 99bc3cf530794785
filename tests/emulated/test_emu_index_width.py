"""The 32-bit index path near its limit and the 64-bit path, run for real on multi-GB tensors: the emulated device
runs only a few blocks of each launch (set_block_filter), among them those whose counters pass 2^31 and 2^32, so
the kernels form exactly the indices a GPU would (an int32 overflow would be a UBSan report in the ASan build)."""
from __future__ import annotations

import os

import pytest
import torch

from emulated._helpers import index_type, launches, ops

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("TENSOROPS_EMU_VARIANT") == "tsan",
                       reason="ThreadSanitizer's shadow and history for multi-GB buffers exceed this machine's memory; "
                              "the plain and ASan+UBSan builds run these"),
]

LO, HI = 10, 200
PATTERN = torch.arange(256, dtype=torch.uint8)  # element e holds e % 256


def big(n):
    try:
        x = torch.empty(n, dtype=torch.uint8)
    except RuntimeError as exc:  # pragma: no cover - machine-dependent
        pytest.skip(f"cannot allocate {n / 2**30:.1f} GiB: {exc}")
    x.view(-1, 256).copy_(PATTERN.expand(n // 256, 256))
    return x


def check_ranges(x, covered, step=1):
    """Elements of x (a view with stride `step` into the pattern buffer) in the `covered` index ranges are clamped,
    the elements just outside them are not."""
    clamped = PATTERN.clamp(LO, HI)
    for a, b in covered:
        idx = torch.arange(a, b) * step
        torch.testing.assert_close(x[a:b], clamped[idx % 256], rtol=0, atol=0, msg=f"range [{a}, {b})")
        for j in (a - 1, b):
            if 0 <= j < x.numel() and not any(c <= j < d for c, d in covered):
                assert int(x[j]) == int(PATTERN[(j * step) % 256]), f"element {j} outside the blocks run was written"


def test_contiguous_32_bit_path_at_its_limit(emu):
    n = 2**31 - 2**20  # the grid shrinks so that counter + step stays <= INT32_MAX
    x = big(n)
    emu.set_block_filter([0, -1])
    ops().clamp_scalar_(x, LO, HI)
    (l,) = launches(emu)
    assert l["name"] == "clamp_scalar_contig_kernel" and index_type(l) == "int", l
    stride = l["grid"] * 256 * 16  # elements per grid step (16 uint8 per thread)
    assert n % stride == 0 and n // stride > 1000  # each thread loops: its last counters sit just below 2^31
    rows = x.view(n // stride, stride)
    last = (l["grid"] - 1) * 4096
    for r in (0, 1, n // stride - 1):
        check_ranges(rows[r], [(0, 4096), (last, stride)])


def test_contiguous_64_bit_path_past_2_31_and_2_32(emu):
    n = 2**32 + 2**20
    x = big(n)
    blocks = [0, 2**19 - 1, 2**19, 2**20 - 1, 2**20, -1]  # element 2^31 opens block 2^19, 2^32 block 2^20
    emu.set_block_filter(blocks)
    ops().clamp_scalar_(x, LO, HI)
    (l,) = launches(emu)
    assert l["name"] == "clamp_scalar_contig_kernel" and index_type(l) == "long", l
    assert l["grid"] * 4096 == n and l["ran"] == 6
    check_ranges(x, [((b % l["grid"]) * 4096, (b % l["grid"] + 1) * 4096) for b in blocks])


def test_strided_plan_past_2_32(emu):
    n = 2**32 + 2**20
    x = big(n)
    v = x[::2]  # not dense: the strided plan kernel, offsets up to 2^32
    m = v.numel()
    blocks = [0, 2**20, 2**21 - 1, 2**21, -1]  # view element 2^31 (offset 2^32) opens block 2^21
    emu.set_block_filter(blocks)
    ops().clamp_scalar_(v, LO, HI)
    (l,) = launches(emu)
    assert l["name"] == "clamp_strided_kernel" and index_type(l) == "long", l
    assert l["grid"] * 1024 == m
    check_ranges(v, [((b % l["grid"]) * 1024, (b % l["grid"] + 1) * 1024) for b in blocks], step=2)
    assert int(x[2**32 + 1]) == (2**32 + 1) % 256  # the odd elements are not part of the view


def test_strided_plan_32_bit_path_at_its_limit(emu):
    n = 2**32 - 2**22
    x = big(n)
    v = x[::2]  # largest offset 2^32 - 2^22 - 2 > INT32_MAX: the 64-bit path, as index_width.h decides
    emu.set_block_filter([0, -1])
    ops().clamp_scalar_(v, LO, HI)
    assert index_type(launches(emu)[0]) == "long"
    w = x[: 2**31 - 2**21][::2]  # offsets below 2^31: the 32-bit path
    emu.clear_events()
    ops().clamp_scalar_(w, LO, HI)
    (l,) = launches(emu)
    assert l["name"] == "clamp_strided_kernel" and index_type(l) == "int", l
    assert l["grid"] * 1024 >= w.numel() > (l["grid"] - 1) * 1024
    check_ranges(w, [(0, 1024), ((l["grid"] - 1) * 1024, w.numel())], step=2)

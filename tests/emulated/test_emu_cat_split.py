"""cat/split's CUDA kernel on the emulated device, against torch.cat and torch.split_with_sizes_copy
(csrc/cuda/cat_split_cuda.cu, kernels/cat_split.cuh, device_table.cuh)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import launches, ops


def pieces(sizes, dtype, dim, other=(3, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for s in sizes:
        shape = list(other)
        shape.insert(dim, s)
        out.append((torch.randn(shape, generator=g) * 100).to(dtype))
    return out


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cat_few_pieces_table_in_parameters(emu, dtype, dim):
    ts = pieces([1, 4, 7, 2], dtype, dim)
    torch.testing.assert_close(ops().cat(ts, dim), torch.cat(ts, dim), rtol=0, atol=0)
    assert [l["name"] for l in launches(emu)] == ["copy_groups_kernel"]
    assert not any(e.startswith(("pinned_alloc", "copy_to_device")) for e in emu.events())


@pytest.mark.parametrize("case", ["units_16_8_4_2_1", "large_rows", "offsets"])
def test_cat_pieces_of_every_copy_unit(emu, case):
    if case == "units_16_8_4_2_1":  # rows of 16, 8, 4, 2 and 1 bytes: every copy unit of the kernel
        ts = [torch.arange(k * 6, dtype=torch.uint8).view(6, k) for k in (16, 8, 4, 2, 1, 3)]
        dim = 1
    elif case == "large_rows":  # tiles inside one row of one piece: the contiguous path
        ts = [torch.randn(3, 3000), torch.randn(3, 1500)]
        dim = 1
    else:  # storage offsets make some pieces misaligned for wide units
        base = torch.arange(1000, dtype=torch.int16)
        ts = [base[1:61].view(6, 10), base[3:63].view(6, 10), base[8:32].view(6, 4)]
        dim = 1
    torch.testing.assert_close(ops().cat(ts, dim), torch.cat(ts, dim), rtol=0, atol=0)


@pytest.mark.parametrize("capturing", [False, True], ids=["eager", "capturing"])
def test_cat_many_pieces_table_uploaded(emu, capturing):
    ts = pieces([1 + (i % 5) for i in range(150)], torch.float32, 1, other=(4, 3), seed=1)  # > 97 pieces
    emu.set_capturing(capturing)
    torch.testing.assert_close(ops().cat(ts, 1), torch.cat(ts, 1), rtol=0, atol=0)
    ev = emu.events()
    names = [l["name"] for l in launches(emu)]
    if capturing:  # no pinned block, no copy from host memory: the table travels in fill kernels' parameters
        assert not any(e.startswith(("pinned_alloc", "copy_to_device")) for e in ev), ev
        assert names[-1] == "copy_groups_kernel" and set(names[:-1]) == {"fill_words_kernel"}, names
    else:
        assert "pinned_alloc" in ev and "copy_to_device async" in ev, ev
        assert names == ["copy_groups_kernel"]


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_split(emu, dtype, offset):
    n = 4099 + offset
    x = (torch.randn(n * 3) * 100).to(dtype).view(3, n)[:, offset:]
    sizes = [1600, 7, 800, 9, 4099 - 2416]
    got = ops().split(x, sizes, 1)
    want = torch.split_with_sizes_copy(x, sizes, 1)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert [l["name"] for l in launches(emu)] == ["copy_groups_kernel"]


def test_split_many_pieces(emu):
    x = torch.randn(200 * 3 + 7, 2)
    sizes = [3] * 200 + [7]
    got = ops().split(x, sizes, 0)
    for a, b in zip(got, torch.split_with_sizes_copy(x, sizes, 0)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)

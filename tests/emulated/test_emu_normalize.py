"""normalize's CUDA kernels on the emulated device, against tensorops.reference (native torch)
(csrc/cuda/normalize_cuda.cu, kernels/normalize.cuh)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import corners, launches, ops
from tensorops import reference

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
# the GPU contracts x * a + b into one FMA, the emulated device (g++, baseline x86-64) rounds twice: within an ulp
TOL = {torch.float32: dict(rtol=3e-7, atol=3e-7), torch.float64: dict(rtol=1e-15, atol=1e-15),
       torch.float16: dict(rtol=1e-3, atol=1e-3)}


def image(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    return torch.rand(shape, generator=g).to(dtype)


@pytest.mark.parametrize("in_dtype", corners([torch.uint8, torch.float32, torch.float16, torch.float64],
                                             [torch.uint8, torch.float16]))
@pytest.mark.parametrize("out_dtype", corners([torch.float32, torch.float16, torch.float64],
                                              [torch.float32, torch.float64]))
@pytest.mark.parametrize("layout", ["nchw", "nhwc_to_nchw", "offset", "odd"])
def test_number_statistics(emu, in_dtype, out_dtype, layout):
    scale = 1 / 255 if in_dtype == torch.uint8 else 1.0
    fmt = torch.preserve_format
    if layout == "nchw":
        x = image((2, 3, 8, 12), in_dtype)
    elif layout == "nhwc_to_nchw":  # the fused transpose: input walked out of order, output dense
        x = image((2, 8, 12, 3), in_dtype).permute(0, 3, 1, 2)
        fmt = torch.contiguous_format
    elif layout == "offset":  # misaligned input and output vectors
        x = image((2 * 3 * 8 * 12 + 1,), in_dtype)[1:].view(2, 3, 8, 12)
    else:  # an inner size that is no multiple of the vector width: the scalar tail
        x = image((1, 3, 5, 7), in_dtype)
    got = ops().normalize(x, MEAN, STD, -3, scale, out_dtype, fmt)
    want = reference.normalize(x, MEAN, STD, dim=1, scale=scale, dtype=out_dtype, memory_format=fmt)
    torch.testing.assert_close(got, want, **TOL[out_dtype])
    assert got.stride() == want.stride()
    assert [l["name"] for l in launches(emu)] == ["normalize_kernel"]


def test_many_number_statistics_upload_without_a_synchronization(emu):
    # more channels than travel in the kernel arguments: a float64 table uploaded by cuda::upload_table
    c = 70
    x = image((2, c, 3, 4), torch.uint8)
    mean = [i / 100 for i in range(c)]
    std = [0.5 + i / 200 for i in range(c)]
    got = ops().normalize(x, mean, std, 1, 1 / 255, torch.float32, torch.preserve_format)
    want = reference.normalize(x, mean, std, dim=1, scale=1 / 255, dtype=torch.float32)
    torch.testing.assert_close(got, want, **TOL[torch.float32])
    ev = emu.events()
    assert "copy_to_device blocking" not in ev and "copy_to_device async" in ev, ev
    emu.clear_events()
    emu.set_capturing(True)  # while a CUDA graph is captured: fill kernels, no pinned block
    got = ops().normalize(x, mean, std, 1, 1 / 255, torch.float32, torch.preserve_format)
    torch.testing.assert_close(got, want, **TOL[torch.float32])
    ev = emu.events()
    assert not any(e.startswith("pinned_alloc") or e.startswith("copy_to_device") for e in ev), ev
    assert [l["name"] for l in launches(emu)] == ["fill_words_kernel", "normalize_kernel"]


@pytest.mark.parametrize("stats", ["per_channel", "per_sample", "broadcast_strided"])
def test_tensor_statistics(emu, stats):
    x = image((2, 3, 6, 10), torch.uint8)
    if stats == "per_channel":
        mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
    elif stats == "per_sample":
        mean, std = torch.rand(2, 3, 1, 1) * 0.5, torch.rand(2, 3, 1, 1) + 0.5
    else:
        mean, std = torch.rand(1, 3, 1, 10), torch.rand(2, 1, 6, 1) + 0.5
    got = ops().normalize_tensor(x, mean, std, 1 / 255, torch.float32, torch.preserve_format)
    want = reference.normalize(x, mean, std, dim=1, scale=1 / 255, dtype=torch.float32)
    torch.testing.assert_close(got, want, **TOL[torch.float32])
    assert [l["name"] for l in launches(emu)] == ["normalize_kernel"]


def _autograd(x, mean, std, scale, g):
    xs = x.detach().clone().requires_grad_(x.is_floating_point())
    m = mean.detach().clone().requires_grad_(True)
    s = std.detach().clone().requires_grad_(True)
    y = (xs.to(torch.float64) * scale - m.double()) / s.double()
    y.backward(g.double())
    return xs.grad, m.grad, s.grad


@pytest.mark.parametrize("entries", [3, 600, 2 * 3 * 5 * 7])  # shared-memory sums (<= 512 entries), global atomics
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backward(emu, entries, dtype):
    shape = (2, 3, 5, 7)
    x = image(shape, dtype, seed=1)
    if entries == 3:
        sshape = (1, 3, 1, 1)
    elif entries == 600:
        shape = (2, 600, 3, 2)
        x = image(shape, dtype, seed=1)
        sshape = (1, 600, 1, 1)
    else:
        sshape = shape
    mean = torch.rand(sshape, dtype=dtype) * 0.3
    std = torch.rand(sshape, dtype=dtype) + 0.5
    g = torch.randn(shape, dtype=dtype)
    gi, gm, gs = ops().normalize_tensor_backward(g, x, mean, std, 1.0, [True, True, True])
    wi, wm, ws = _autograd(x, mean, std, 1.0, g)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(gi.double(), wi.double(), **tol)
    torch.testing.assert_close(gm.double(), wm.double(), **tol)
    torch.testing.assert_close(gs.double(), ws.double(), **tol)
    (bw,) = launches(emu, "normalize_backward_kernel")
    assert (bw["smem"] > 0) == (entries <= 512), bw
    if bw["smem"] > 0:
        assert bw["grid"] <= 4 * 132  # a few blocks per SM when each block flushes its shared sums
    assert [l["name"] for l in launches(emu)] == ["normalize_backward_kernel", "normalize_stat_grads_kernel"]


def test_backward_deterministic(emu):
    x = image((2, 3, 5, 7), torch.float32, seed=2)
    mean, std = torch.rand(1, 3, 1, 1), torch.rand(1, 3, 1, 1) + 0.5
    g = torch.randn(2, 3, 5, 7)
    torch.use_deterministic_algorithms(True)
    try:
        gi, gm, gs = ops().normalize_tensor_backward(g, x, mean, std, 1.0, [True, True, True])
    finally:
        torch.use_deterministic_algorithms(False)
    wi, wm, ws = _autograd(x, mean, std, 1.0, g)
    torch.testing.assert_close(gi.double(), wi.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gm.double(), wm.double(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gs.double(), ws.double(), rtol=1e-5, atol=1e-5)
    names = [l["name"] for l in launches(emu)]
    assert names == ["normalize_backward_kernel", "normalize_kernel", "normalize_stat_grads_kernel"], names

"""clamp's CUDA kernels on the emulated device, against torch.clamp and torch's autograd (csrc/cuda/clamp_cuda.cu,
clamp_backward_cuda.cu, kernels/clamp.cuh)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import corners, index_type, launches, ops

# one dtype per element size and accumulation type: what the emulated build compiles (dispatch.h)
DTYPES = [torch.uint8, torch.int64, torch.float16, torch.float32, torch.float64]


def values(n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        x = (torch.randn(n, generator=g) * 50).to(dtype)
        x[:: max(1, n // 7)] = float("nan") if n > 3 else x[:: max(1, n // 7)]
        return x
    return torch.randint(0, 200, (n,), generator=g).to(dtype)


@pytest.mark.parametrize("dtype", corners(DTYPES, [torch.uint8, torch.float16, torch.float64]))
@pytest.mark.parametrize("n", corners([1, 15, 16, 17, 1000, 4096 * 3 + 5], [17, 4096 * 3 + 5]))
@pytest.mark.parametrize("offset", [0, 1, 8], ids=["aligned", "offset1", "offset8"])
def test_number_bounds_contiguous(emu, dtype, n, offset):
    base = values(n + offset, dtype)
    x = base[offset:]  # storage offset: misaligned for the vector path unless 16 bytes apart
    for lo, hi in [(10, 100), (10, None), (None, 100)]:
        emu.clear_events()
        got = ops().clamp_scalar(x, lo, hi)
        torch.testing.assert_close(got, torch.clamp(x, lo, hi), rtol=0, atol=0, equal_nan=True)
        (l,) = launches(emu)
        vec_ok = (x.data_ptr() % 16 == 0)
        assert l["name"] == ("clamp_scalar_contig_kernel" if vec_ok else "clamp_strided_kernel"), l
    y = x.clone()
    ops().clamp_scalar_(y, 10, 100)
    torch.testing.assert_close(y, torch.clamp(x, 10, 100), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_number_bounds_strided(emu, dtype):
    x = values(6 * 7 * 9, dtype).view(6, 7, 9).permute(2, 0, 1)[:, ::2]  # neither dense nor laid out alike
    got = ops().clamp_scalar(x, 5, 60)
    torch.testing.assert_close(got, torch.clamp(x, 5, 60), rtol=0, atol=0, equal_nan=True)
    assert got.stride() == torch.clamp(x, 5, 60).stride()
    assert [l["name"] for l in launches(emu)] == ["clamp_strided_kernel"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced"])
def test_tensor_bounds(emu, dtype, layout):
    x = values(2 * 3 * 5 * 7, dtype, seed=1).view(2, 3, 5, 7)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    elif layout == "sliced":
        x = values(2 * 3 * 5 * 14, dtype, seed=1).view(2, 3, 5, 14)[..., 1::2]
    lo = values(3, dtype, seed=2).view(1, 3, 1, 1)
    hi = (lo.to(torch.float64) + 40).to(dtype)
    for a, b in [(lo, hi), (lo, None), (None, hi)]:
        got = ops().clamp(x, a, b)
        torch.testing.assert_close(got, torch.clamp(x, a, b), rtol=0, atol=0, equal_nan=True)
    y = x.clone()
    ops().clamp_(y, lo, hi)
    torch.testing.assert_close(y, torch.clamp(x, lo, hi), rtol=0, atol=0, equal_nan=True)
    assert {l["name"] for l in launches(emu)} == {"clamp_strided_kernel"}


def test_bool_with_one_tensor_bound(emu):
    x = torch.tensor([True, False, True, False])
    b = torch.tensor([False, True, True, False])
    torch.testing.assert_close(ops().clamp(x, b, None), torch.clamp(x, b, None))
    torch.testing.assert_close(ops().clamp(x, None, b), torch.clamp(x, None, b))
    with pytest.raises(NotImplementedError):
        ops().clamp(x, b, b)


def _autograd(x, lo, hi, g):
    xr = x.detach().clone().requires_grad_(True)
    lr = lo.detach().clone().requires_grad_(True) if isinstance(lo, torch.Tensor) else lo
    hr = hi.detach().clone().requires_grad_(True) if isinstance(hi, torch.Tensor) else hi
    torch.clamp(xr, lr, hr).backward(g)
    grads = [xr.grad]
    for b in (lr, hr):
        if isinstance(b, torch.Tensor):
            grads.append(b.grad)
    return grads


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("bounds", ["per_channel", "elementwise", "min_only"])
def test_backward_tensor_bounds(emu, dtype, bounds):
    # entries: per-channel (shared-memory partials, warp-aggregated), elementwise (> 2048 entries: global atomics)
    shape = (4, 3, 30, 31) if bounds != "elementwise" else (2, 3, 30, 31)
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(3)) * 2).to(dtype)
    bshape = (1, 3, 1, 1) if bounds != "elementwise" else shape
    lo = torch.full(bshape, -0.5, dtype=dtype)
    hi = torch.full(bshape, 0.75, dtype=dtype)
    x.view(-1)[::17] = -0.5  # ties with the lower bound (torch: half the gradient to each)
    g = torch.randn(shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    h = None if bounds == "min_only" else hi
    gi, gmin, gmax = ops().clamp_backward(g, x, lo, h, [True, True, h is not None])
    want = _autograd(x.double(), lo.double(), None if h is None else h.double(), g.double())
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.float16 else dict(rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(gi.double(), want[0], rtol=0, atol=0)  # 0, g/2 or g: exact
    torch.testing.assert_close(gmin.double(), want[1], **tol)
    if h is not None:
        torch.testing.assert_close(gmax.double(), want[2], **tol)
    names = [l["name"] for l in launches(emu)]
    assert names == ["clamp_backward_kernel", "clamp_reduce_partials_kernel"], names
    shared = template_flag = launches(emu, "clamp_backward_kernel")[0]["full"]
    assert ("true>(" in shared) == (bounds != "elementwise"), template_flag  # Shared: the last template argument


def test_backward_deterministic(emu):
    x = torch.randn(2, 3, 8, 9, generator=torch.Generator().manual_seed(5))
    lo = torch.full((1, 3, 1, 1), -0.3)
    hi = torch.full((1, 3, 1, 1), 0.4)
    g = torch.randn_like(x)
    torch.use_deterministic_algorithms(True)
    try:
        gi, gmin, gmax = ops().clamp_backward(g, x, lo, hi, [True, True, True])
    finally:
        torch.use_deterministic_algorithms(False)
    want = _autograd(x, lo, hi, g)
    for a, b in zip((gi, gmin, gmax), want):
        torch.testing.assert_close(a, b)
    assert [l["name"] for l in launches(emu)] == ["clamp_backward_kernel"]  # terms only: torch sums them


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_backward_number_bounds(emu, dtype):
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(6)).to(dtype).transpose(0, 2)
    x[0, 0, 0] = 0.25  # a tie: torch gives it no gradient with number bounds
    g = torch.randn(7, 5, 3).to(dtype)
    got = ops().clamp_scalar_backward(g, x, -0.5, 0.25)
    (want,) = _autograd(x, -0.5, 0.25, g)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert [l["name"] for l in launches(emu)] == ["clamp_scalar_backward_kernel"]
    assert index_type(launches(emu)[0]) == "int"

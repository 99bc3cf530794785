"""tensorops.clamp / clamp_ against torch.clamp: values, dtype, shape and strides, errors and gradients."""
from __future__ import annotations

import math

import pytest
import torch

import tensorops
from conftest import TORCH_MINOR, clamp_corners_of_torch_2_14, kernel_ran, requires_compiled

NAN, INF = math.nan, math.inf
ALL_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def make(shape, dtype, device, low=-10, high=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool().to(device)
    if dtype == torch.uint8:
        return torch.randint(0, 20, shape, generator=g, dtype=dtype).to(device)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype).to(device)
    return torch.randint(low, high, shape, generator=g, dtype=dtype).to(device)


def assert_same(ours: torch.Tensor, ref: torch.Tensor) -> None:
    """Same values (NaN where torch has NaN), dtype, shape and strides (memory layout) as torch's result."""
    assert ours.dtype == ref.dtype, (ours.dtype, ref.dtype)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    torch.testing.assert_close(ours, ref, rtol=0, atol=0, equal_nan=True)
    if ref.numel() > 1:
        assert ours.stride() == ref.stride(), (ours.stride(), ref.stride())


def check(input, min=None, max=None):
    """tensorops.clamp matches torch.clamp: the same result, or the same kind of exception."""
    try:
        ref = torch.clamp(input, min, max)
    except Exception as exc:  # noqa: BLE001 - torch's error kind is the expectation
        with pytest.raises(type(exc)):
            tensorops.clamp(input, min, max)
        return None
    out = tensorops.clamp(input, min, max)
    assert_same(out, ref)
    return out


# ---- values ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dtypes_number_bounds(device, dtype):
    x = make((3, 5, 7), dtype, device)
    for lo, hi in [(2, 5), (-3, None), (None, 4), (True, None), (False, True), (0.5, 6.5), (None, 2.5), (7, 3)]:
        check(x, lo, hi)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_dtypes_tensor_bounds(device, dtype):
    x = make((3, 5, 7), dtype, device, seed=1)
    lo = make((5, 1), dtype, device, -10, 0, seed=2)
    hi = make((3, 1, 7), dtype, device, 0, 10, seed=3)
    check(x, lo, hi)
    check(x, lo, None)
    check(x, None, hi)
    check(x, hi, lo)  # min > max in places


@pytest.mark.parametrize(
    "xdt,ldt,hdt,zero_dim",
    [
        (torch.int64, torch.float32, torch.float32, False),
        (torch.uint8, torch.int64, torch.int64, True),
        (torch.float16, torch.float32, torch.float32, False),
        (torch.float32, torch.float64, torch.float64, True),
        (torch.int32, torch.int8, torch.int16, False),
        (torch.bool, torch.uint8, torch.uint8, False),
        (torch.bfloat16, torch.float16, torch.float16, False),
    ],
)
def test_type_promotion_tensor_bounds(device, xdt, ldt, hdt, zero_dim):
    x = make((4, 6), xdt, device, seed=4)
    shape = () if zero_dim else (6,)
    lo, hi = make(shape, ldt, device, 0, 3, seed=5), make(shape, hdt, device, 4, 8, seed=6)
    check(x, lo, hi)
    check(x, lo)
    check(x, None, hi)


def test_number_bound_conversion_like_torch(device):
    # torch converts number bounds to the result dtype with an overflow check (raises), and uint8 wraps -1
    for dtype, bound in [(torch.uint8, -1), (torch.uint8, 300), (torch.int8, 200), (torch.float16, 1e6),
                         (torch.float16, 1e-10), (torch.float16, INF), (torch.int32, 2**31)]:
        x = make((9,), dtype, device)
        check(x, bound)
        check(x, None, bound)


def test_number_and_zero_dim_tensor_mix(device):
    x = make((2, 3), torch.int64, device)
    check(x, torch.tensor(1.5, device=device), 2.5)  # torch reads the 0-dim tensor as a number
    check(x, 1, torch.tensor(3, device=device))


@pytest.mark.parametrize(
    "xshape,lshape,hshape",
    [
        ((2, 3, 4, 5), (1, 3, 1, 1), (1, 3, 1, 1)),
        ((2, 3, 4, 5), (5,), (4, 1)),
        ((2, 3, 4, 5), (2, 1, 4, 1), (3, 4, 5)),
        ((4, 5), (2, 3, 4, 5), None),  # bound larger than input
        ((3, 1), (1, 4), (2, 1, 1)),  # every operand broadcasts
        ((), (2, 3), (3,)),
        ((5,), (), ()),
    ],
)
def test_broadcasting(device, xshape, lshape, hshape):
    x = make(xshape, torch.float32, device, seed=7)
    lo = make(lshape, torch.float32, device, -8, 0, seed=8)
    hi = make(hshape, torch.float32, device, 0, 8, seed=9) if hshape is not None else None
    check(x, lo, hi)
    check(x, None, lo)


@clamp_corners_of_torch_2_14
def test_nan_and_inf(device):
    x = torch.tensor([NAN, -INF, INF, -3.0, -1.0, 0.0, 1.0, 3.0] * 5, device=device)
    for lo, hi in [(NAN, None), (None, NAN), (NAN, 1.0), (-1.0, NAN), (-INF, INF), (INF, -INF), (1.0, -1.0),
                   (-1.0, 1.0), (-INF, None), (None, INF)]:
        check(x, lo, hi)
    n = x.numel()
    lo = torch.full((n,), -1.0, device=device)
    hi = torch.full((n,), 1.0, device=device)
    lo[::3] = NAN
    hi[1::4] = NAN
    lo[2::7] = 2.0  # min > max
    check(x, lo, hi)
    check(x, lo)
    check(x, None, hi)
    check(x, torch.tensor(NAN, device=device), torch.tensor(1.0, device=device))
    # a broadcast (per-channel) NaN bound
    x4 = make((2, 3, 4, 5), torch.float32, device)
    c = torch.tensor([-1.0, NAN, 0.0], device=device).view(1, 3, 1, 1)
    check(x4, c, c + 2)
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        check(x.to(dtype), lo.to(dtype), hi.to(dtype))
        check(x.to(dtype), NAN, 1.0)


def test_noncontiguous_and_channels_last(device):
    base = make((4, 6, 10, 12), torch.float32, device, seed=10)
    lo = make((1, 6, 1, 1), torch.float32, device, -8, 0, seed=11)
    hi = make((1, 6, 1, 1), torch.float32, device, 0, 8, seed=12)
    views = {
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "transposed": base.transpose(2, 3),
        "sliced": base[:, :, 1::3, ::2],
        "permuted_nhwc_view": base.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
        "expanded": make((1, 6, 1, 12), torch.float32, device).expand(4, 6, 10, 12),
        "flipped_stride_view": base.as_strided((4, 6, 10, 6), (720, 120, 12, 2)),
    }
    for name, x in views.items():
        check(x, -1.0, 2.0)
        check(x, None, 0.5)
        check(x, lo, hi)  # per-channel bounds
        check(x, lo)
        check(x, x.mean().reshape(1), x.amax().reshape(1) / 2)
    # non-contiguous bounds, and bounds in channels_last against a contiguous input
    big_lo = make((4, 6, 10, 12), torch.float32, device, -8, 0, seed=13).contiguous(memory_format=torch.channels_last)
    check(base, big_lo, hi)
    check(base.transpose(2, 3), big_lo.transpose(2, 3))
    check(base, lo.transpose(0, 1).contiguous().transpose(0, 1), hi[:, :, :, :1])
    for dtype in (torch.float16, torch.bfloat16, torch.int32, torch.uint8, torch.float64):
        x = base.to(dtype).contiguous(memory_format=torch.channels_last)
        check(x, lo.to(dtype), hi.to(dtype))
        check(x, 1, 5)
        check(base.to(dtype), lo.to(dtype), None)
        check(x[:, :, ::2, 1:], 0.5, 3.5)  # non-dense, and promoted to float for integer dtypes
        check(x.transpose(0, 2), lo.double().view(6, 1, 1), None)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_special_values_fast_paths(device, dtype):
    # the run-wise paths: float16/bfloat16 compare on raw bits; channels_last per-channel bounds as a pattern
    vals = torch.tensor([NAN, -INF, INF, -0.0, 0.0, -1.0, 1.0, 0.25, -0.25, 1e4, -1e4, 3.0], dtype=dtype)
    x = vals.repeat(2 * 3 * 5 * 7 // 12 + 1)[: 2 * 3 * 5 * 7].view(2, 3, 5, 7).to(device)
    for lo, hi in [(-0.0, 0.0), (0.0, -0.0), (-1.0, 1.0), (-INF, INF), (INF, -INF), (0.25, 0.25), (None, -0.0),
                   (1.0, -1.0), (-1e4, None)]:
        check(x, lo, hi)
        t = lambda v: None if v is None else torch.full((1, 3, 1, 1), v, dtype=dtype, device=device)  # noqa: E731
        check(x, t(lo), t(hi))
        check(x.contiguous(memory_format=torch.channels_last), t(lo), t(hi))
    per_channel = torch.tensor([-1.0, NAN, -0.0], dtype=dtype, device=device).view(1, 3, 1, 1)
    check(x.contiguous(memory_format=torch.channels_last), per_channel, per_channel + 2)
    check(x, per_channel, None)


@pytest.mark.skipif(TORCH_MINOR < (2, 14), reason="builds a case with Tensor.flip on uint16, which torch before 2.14 lacks")
def test_dtypes_outside_the_kernels_go_to_torch():
    # uint16/uint32 are not kernel dtypes: native torch runs them (and raises what it raises)
    for dtype in (torch.uint16, torch.uint32):
        x = torch.tensor(list(range(10)), dtype=torch.int32).to(dtype)
        check(x, 2, 5)
        check(x, x.flip(0))


# ---- in-place ----------------------------------------------------------------------------------------------
def test_inplace_values(device):
    for dtype in (torch.float32, torch.float16, torch.int32, torch.uint8):
        x = make((3, 4, 5), dtype, device)
        ref = x.clone().clamp_(2, 6)
        out = tensorops.clamp_(x, 2, 6)
        assert out is x
        assert_same(x, ref)
        lo = make((4, 1), dtype, device, 0, 5, seed=3)
        x2 = make((3, 4, 5), dtype, device, seed=4)
        ref = x2.clone().clamp_(lo, None)
        tensorops.clamp_(x2, lo)
        assert_same(x2, ref)
    # a strided view updates its base; a wider bound dtype is cast back (torch allows safe casts)
    base = make((6, 8), torch.float32, device)
    ref_base = base.clone()
    ref_base[:, ::2].clamp_(-1.0, 1.0)
    tensorops.clamp_(base[:, ::2], -1.0, 1.0)
    assert_same(base, ref_base)
    x = make((3, 5), torch.float32, device)
    lo64 = make((5,), torch.float64, device, -3, 0)
    ref = x.clone().clamp_(lo64)
    tensorops.clamp_(x, lo64)
    assert_same(x, ref)
    x = torch.tensor([NAN, 1.0, 5.0], device=device)
    tensorops.clamp_(x, NAN)
    assert torch.isnan(x).all()


def test_inplace_errors(device):
    x = torch.arange(6, device=device)
    with pytest.raises(RuntimeError, match="min/max"):
        tensorops.clamp_(x, 0.5)  # float result cannot be cast back to int64
    with pytest.raises(RuntimeError, match="min/max"):
        tensorops.clamp_(x, torch.zeros(6, device=device))
    with pytest.raises(RuntimeError, match="min/max"):
        tensorops.clamp_(torch.zeros(3, device=device), torch.zeros(2, 3, device=device))  # would broadcast input
    with pytest.raises(RuntimeError, match="memory location"):
        tensorops.clamp_(torch.zeros(3, device=device).expand(2, 3), 0.0)
    with pytest.raises(RuntimeError, match="memory location"):
        tensorops.clamp_(torch.zeros(3, device=device).expand(2, 3), torch.zeros(3, device=device))
    # torch agrees that these are errors
    for args in [(torch.arange(6, device=device), 0.5, None), (torch.zeros(3, device=device), torch.zeros(2, 3, device=device), None)]:
        with pytest.raises(RuntimeError):
            args[0].clone().clamp_(args[1], args[2])


# ---- errors ------------------------------------------------------------------------------------------------
def test_bad_arguments():
    x = torch.randn(3)
    with pytest.raises(TypeError, match="input"):
        tensorops.clamp([1.0, 2.0], 0.0)
    with pytest.raises(TypeError, match="min"):
        tensorops.clamp(x, "0")
    with pytest.raises(TypeError, match="max"):
        tensorops.clamp(x, 0.0, [1.0])
    with pytest.raises(RuntimeError, match="min.*max"):
        tensorops.clamp(x)
    with pytest.raises(RuntimeError, match="min.*max"):
        tensorops.clamp_(x, None, None)
    with pytest.raises(NotImplementedError, match="input"):
        tensorops.clamp(torch.randn(3, dtype=torch.complex64), 0.0)
    with pytest.raises(NotImplementedError, match="min"):
        tensorops.clamp(x, torch.zeros(3, dtype=torch.complex64))
    with pytest.raises(NotImplementedError, match="max"):
        tensorops.clamp(x, None, 1j)
    with pytest.raises(TypeError, match="max is a tensor"):
        tensorops.clamp(x, 0.0, torch.ones(3))  # torch rejects a number mixed with a 1-d tensor too
    with pytest.raises(TypeError):
        torch.clamp(x, 0.0, torch.ones(3))
    with pytest.raises(NotImplementedError):
        tensorops.clamp(torch.tensor([True, False]), torch.tensor([False, True]), torch.tensor([True, True]))


@requires_compiled
def test_direct_op_errors_name_argument():
    ops = torch.ops.tensorops
    with pytest.raises(RuntimeError, match="At least one of .min. or .max. must not be None"):
        ops.clamp.default(torch.randn(3), None, None)
    with pytest.raises(NotImplementedError, match="min"):
        ops.clamp.default(torch.randn(3), torch.zeros(3, dtype=torch.complex64), None)
    with pytest.raises(ValueError, match="grad"):
        ops.clamp_backward.default(torch.randn(4), torch.randn(3), torch.zeros(3), None, [True, True, False])


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU to put a bound on another device")
def test_bound_on_other_device():
    x = torch.randn(3, device="cuda")
    with pytest.raises(RuntimeError, match="min"):
        tensorops.clamp(x, torch.zeros(3))
    check(x, torch.tensor(0.0), None)  # a CPU 0-dim bound is accepted, as by torch


# ---- gradients ---------------------------------------------------------------------------------------------
def torch_grads(fn, x, lo, hi, g):
    leaves = [t.detach().clone().requires_grad_(True) if isinstance(t, torch.Tensor) else t for t in (x, lo, hi)]
    out = fn(*leaves)
    out.backward(g)
    return out, [t.grad if isinstance(t, torch.Tensor) else None for t in leaves]


def compare_grads(x, lo, hi, seed=0):
    g = make(torch.broadcast_shapes(*[t.shape for t in (x, lo, hi) if isinstance(t, torch.Tensor)]),
             x.dtype, x.device, -1, 1, seed=seed)
    ref_out, ref = torch_grads(torch.clamp, x, lo, hi, g)
    out, ours = torch_grads(tensorops.clamp, x, lo, hi, g)
    assert_same(out.detach(), ref_out.detach())
    tol = dict(rtol=1e-5, atol=1e-5) if x.dtype in (torch.float32, torch.float64) else dict(rtol=2e-2, atol=2e-2)
    for name, a, b in zip(("input", "min", "max"), ours, ref):
        if b is None:
            assert a is None, name
            continue
        assert a.shape == b.shape and a.dtype == b.dtype, name
        torch.testing.assert_close(a, b, **tol, msg=lambda m: f"grad of {name}: {m}")


@clamp_corners_of_torch_2_14
def test_gradients_at_ties_and_nan(device):
    # inputs exactly at the bounds, min == max, min > max, NaN in input and in bounds
    x = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0, NAN, 1.0, -1.0, 0.5, 3.0] * 3, device=device)
    n = x.numel()
    lo = torch.full((n,), -1.0, device=device)
    hi = torch.full((n,), 1.0, device=device)
    lo[6::10] = 1.0  # min == max == x
    lo[7::10] = 2.0  # min > max
    lo[8::10] = NAN
    hi[9::10] = NAN
    hi[2::10] = -0.5  # max < min < x
    compare_grads(x, lo, hi)
    compare_grads(x, lo, None)
    compare_grads(x, None, hi)
    for a, b in [(-1.0, 1.0), (1.0, 1.0), (2.0, -2.0), (NAN, 1.0), (-1.0, None), (None, 1.0), (None, NAN)]:
        compare_grads(x, a, b)


GRID = [-INF, -1.0, 0.0, 0.5, 1.0, INF, NAN]


@clamp_corners_of_torch_2_14
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_gradient_grid_like_torch(device, dtype):
    # every (x, min, max) over a grid with ties, infinities and NaN: this torch splits ties in halves and
    # treats NaN differently for tensor and number bounds, so compare against its autograd directly
    cases = [(a, b, c) for a in GRID for b in GRID for c in GRID]
    x, lo, hi = (torch.tensor([c[i] for c in cases], dtype=dtype, device=device) for i in range(3))
    compare_grads(x, lo, hi)
    compare_grads(x, lo, None)
    compare_grads(x, None, hi)
    xs = torch.tensor(GRID, dtype=dtype, device=device)
    for a in GRID + [None]:
        for b in GRID + [None]:
            if a is not None or b is not None:
                compare_grads(xs, a, b)


@clamp_corners_of_torch_2_14
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gradients_broadcast(device, dtype):
    x = make((4, 3, 6, 5), dtype, device, -4, 4, seed=20)
    lo = make((1, 3, 1, 1), dtype, device, -3, 0, seed=21)
    hi = make((3, 1, 5), dtype, device, 0, 3, seed=22)
    compare_grads(x, lo, hi)
    compare_grads(x.contiguous(memory_format=torch.channels_last), lo, hi)
    compare_grads(x.transpose(0, 2), lo.transpose(0, 2), None)
    compare_grads(make((6, 5), dtype, device, seed=23), make((2, 6, 5), dtype, device, -1, 0, seed=24), None)
    compare_grads(x, -1.5, 2.0)


def test_gradients_empty(device):
    x = torch.empty(0, 3, device=device)
    compare_grads(x, torch.zeros(3, device=device), torch.ones(1, 3, device=device))
    compare_grads(x, -1.0, 1.0)


@clamp_corners_of_torch_2_14
def test_gradients_const_bounds_long_runs(device):
    # long runs with per-channel bounds: the blocked, lane-parallel accumulation path
    x = make((2, 3, 70, 80), torch.float32, device, -3, 3, seed=30)
    lo = torch.tensor([-1.0, -2.0, 0.0], device=device).view(1, 3, 1, 1)
    compare_grads(x, lo, lo + 1.5)
    compare_grads(x, None, lo + 1.0)
    # channels_last with per-channel bounds: the periodic-pattern path, over several threads' ranges
    xcl = x.contiguous(memory_format=torch.channels_last)
    xcl[:, 1, ::7, ::9] = NAN
    compare_grads(xcl, lo, lo + 1.5)
    compare_grads(xcl, lo, None)
    compare_grads(xcl, None, torch.tensor([1.0, NAN, 0.5], device=device).view(1, 3, 1, 1))
    compare_grads(make((2, 5, 30, 40), torch.float32, device, -3, 3).contiguous(memory_format=torch.channels_last),
                  make((1, 5, 1, 1), torch.float32, device, -2, 0), make((1, 5, 1, 1), torch.float32, device, 0, 2))
    # elementwise bounds over several threads' ranges (each bound entry gets one element)
    big = make((300, 250), torch.float32, device, -3, 3, seed=33)
    compare_grads(big, make((300, 250), torch.float32, device, -2, 0, seed=34),
                  make((300, 250), torch.float32, device, 0, 2, seed=35))
    compare_grads(big, make((300, 250), torch.float32, device, -2, 0, seed=36), make((250,), torch.float32, device, 0, 2))
    # out.sum().backward(): the incoming gradient is one number broadcast by 0 strides
    grads = []
    for fn in (tensorops.clamp, torch.clamp):
        leaves = [t.detach().clone().requires_grad_() for t in (x, lo, lo + 1.5)]
        (fn(*leaves) * 1.5).sum().backward()
        grads.append([t.grad for t in leaves])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


def test_gradients_mixed_dtypes(device):
    x = make((3, 4), torch.float16, device, seed=31)
    compare_grads(x, make((4,), torch.float32, device, -3, 0), None)
    x32 = make((3, 4), torch.float32, device, seed=32)
    compare_grads(x32, torch.tensor(-1.0, dtype=torch.float64, device=device),
                  torch.tensor(1.0, dtype=torch.float64, device=device))


@clamp_corners_of_torch_2_14
def test_double_backward_like_torch(device):
    x = torch.tensor([-2.0, -1.0, 0.0, 0.5, 1.0, 3.0], dtype=torch.float64, device=device)
    lo = torch.tensor([-1.0, -1.0, 0.5, 0.0, 0.0, 0.0], dtype=torch.float64, device=device)
    for args in [(lo, lo + 1.0), (lo, None), (-1.0, 1.0)]:
        results = []
        for fn in (tensorops.clamp, torch.clamp):
            leaves = [t.clone().requires_grad_() if isinstance(t, torch.Tensor) else t for t in (x, *args)]
            y = fn(*leaves)
            tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
            first = torch.autograd.grad((y * y).sum(), tensors, create_graph=True)
            second = torch.autograd.grad(sum((g * g).sum() for g in first), tensors, allow_unused=True)
            results.append([*first, *second])
        for a, b in zip(*results):
            if b is None:
                assert a is None or not a.any()
            else:
                torch.testing.assert_close(a, b)


def test_gradcheck_float64(device):
    g = torch.Generator().manual_seed(40)
    # values kept away from the bounds so that finite differences do not straddle a kink
    x = (torch.randint(-6, 7, (2, 3, 4, 5), generator=g).double() + 0.25).to(device).requires_grad_()
    lo = (torch.randint(-4, 0, (1, 3, 1, 1), generator=g).double() + 0.5).to(device).requires_grad_()
    hi = (torch.randint(1, 5, (4, 1), generator=g).double() + 0.5).to(device).requires_grad_()
    assert torch.autograd.gradcheck(tensorops.clamp, (x, lo, hi))
    assert torch.autograd.gradcheck(lambda a, b: tensorops.clamp(a, b), (x, lo))
    assert torch.autograd.gradcheck(lambda a, c: tensorops.clamp(a, None, c), (x, hi))
    assert torch.autograd.gradcheck(lambda a: tensorops.clamp(a, -1.0, 2.0), (x,))
    big = (torch.randint(-4, 0, (3, 2, 3, 4, 5), generator=g).double() + 0.5).to(device).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: tensorops.clamp(a, b), (x, big))  # bound larger than input


# ---- the compiled ops: registration, compile, profiler ----------------------------------------------------
@requires_compiled
def test_opcheck(device):
    from torch.library import opcheck

    ops = torch.ops.tensorops
    x = make((2, 3, 4, 5), torch.float32, device).requires_grad_()
    lo = make((1, 3, 1, 1), torch.float32, device, -8, 0).requires_grad_()
    hi = make((4, 1), torch.float32, device, 0, 8).requires_grad_()
    opcheck(ops.clamp.default, (x, lo, hi))
    opcheck(ops.clamp.default, (x.detach().contiguous(memory_format=torch.channels_last), lo.detach(), None))
    opcheck(ops.clamp.default, (make((3, 4), torch.int32, device), None, make((4,), torch.float32, device)))
    opcheck(ops.clamp_scalar.default, (x, -1.0, 2.0))
    opcheck(ops.clamp_scalar.default, (make((3, 4), torch.int64, device), 2.5, None))
    opcheck(ops.clamp_.default, (x.detach().clone(), lo.detach(), hi.detach()))
    opcheck(ops.clamp_scalar_.default, (x.detach().clone(), None, 1.0))
    g = torch.randn(2, 3, 4, 5, device=device)
    opcheck(ops.clamp_backward.default, (g, x.detach(), lo.detach(), hi.detach(), [True, True, True]))
    opcheck(ops.clamp_backward.default, (g, x.detach(), None, hi.detach(), [False, False, True]))
    opcheck(ops.clamp_scalar_backward.default, (g, x.detach(), -1.0, None))


@requires_compiled
def test_torch_compile_fullgraph(device):
    torch._dynamo.reset()

    def f(x, lo, hi):
        return tensorops.clamp(x, lo, hi).sum() + tensorops.clamp(x, -0.5, 0.5).sum()

    x = make((2, 3, 8, 8), torch.float32, device).requires_grad_()
    lo = make((1, 3, 1, 1), torch.float32, device, -8, 0).requires_grad_()
    hi = make((1, 3, 1, 1), torch.float32, device, 0, 8).requires_grad_()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    out, names = kernel_ran(compiled, x, lo, hi)
    assert {"tensorops::clamp", "tensorops::clamp_scalar"} <= names
    _, names = kernel_ran(out.backward)
    assert {"tensorops::clamp_backward", "tensorops::clamp_scalar_backward"} <= names  # the compiled backward
    grads = [t.grad.clone() for t in (x, lo, hi)]
    for t in (x, lo, hi):
        t.grad = None
    (torch.clamp(x, lo, hi).sum() + torch.clamp(x, -0.5, 0.5).sum()).backward()
    torch.testing.assert_close(out, f(x, lo, hi))
    for a, t in zip(grads, (x, lo, hi)):
        torch.testing.assert_close(a, t.grad)

    def g(x):
        y = x * 2
        tensorops.clamp_(y, -1.0, 1.0)
        return y + 1

    xi = make((4, 5), torch.float32, device)
    torch.testing.assert_close(torch.compile(g, fullgraph=True, backend="aot_eager")(xi), (xi * 2).clamp(-1, 1) + 1)


@requires_compiled
def test_compiled_kernel_ran(device):
    x = make((2, 3, 4, 5), torch.float32, device).requires_grad_()
    lo = make((1, 3, 1, 1), torch.float32, device, -8, 0).requires_grad_()
    out, names = kernel_ran(tensorops.clamp, x, lo, 3.0 * torch.ones(1, device=device))
    assert "tensorops::clamp" in names
    _, names = kernel_ran(lambda: out.backward(torch.ones_like(out)))
    assert "tensorops::clamp_backward" in names
    _, names = kernel_ran(tensorops.clamp, x.detach(), -1, 1)
    assert "tensorops::clamp_scalar" in names
    _, names = kernel_ran(tensorops.clamp_, x.detach().clone(), -1, 1)
    assert "tensorops::clamp_scalar_" in names
    _, names = kernel_ran(tensorops.clamp_, x.detach().clone(), lo.detach(), None)
    assert "tensorops::clamp_" in names


# ---- randomized cross-check --------------------------------------------------------------------------------
def _random_tensor(rng, shape, dtype, device):
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool().to(device)
    if dtype.is_floating_point:
        t = (torch.randn(shape, generator=g, dtype=torch.float64) * 3).round().to(dtype)  # rounding makes ties
        if t.numel() and rng.random() < 0.3:
            t.view(-1)[:: rng.randint(2, 7)] = NAN
        return t.to(device)
    return torch.randint(0 if dtype == torch.uint8 else -5, 6, shape, generator=g, dtype=dtype).to(device)


@clamp_corners_of_torch_2_14
def test_random_cases_like_torch(device):
    import random

    rng = random.Random(1234)
    for _ in range(250):
        shape = tuple(rng.choice([1, 2, 3, 5, 40]) for _ in range(rng.randint(0, 4)))
        dtype = rng.choice(ALL_DTYPES)
        x = _random_tensor(rng, shape, dtype, device)
        if x.dim() == 4 and rng.random() < 0.3:
            x = x.contiguous(memory_format=torch.channels_last)
        elif x.dim() >= 2 and rng.random() < 0.3:
            x = x.transpose(0, -1)
        if rng.random() < 0.5:
            bdtype = dtype if rng.random() < 0.8 else rng.choice(ALL_DTYPES)

            def bound():
                bshape = [d if rng.random() < 0.5 else 1 for d in shape][rng.randint(0, len(shape)):]
                return _random_tensor(rng, tuple(bshape), bdtype, device)

            lo = bound() if rng.random() < 0.8 else None
            hi = bound() if rng.random() < 0.8 or lo is None else None
        else:
            lo = rng.choice([None, -1, 0, 2, 0.5, NAN, True, INF])
            hi = rng.choice([1, 3, 0.5, -0.5, NAN, -INF]) if rng.random() < 0.7 or lo is None else None
        out = check(x, lo, hi)
        floats = all(not isinstance(t, torch.Tensor) or t.dtype.is_floating_point for t in (x, lo, hi))
        if out is not None and floats and out.numel():
            compare_grads(x, lo, hi, seed=rng.randrange(1000))

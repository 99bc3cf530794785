"""The many-tensor clamp (tensorops.clamp / clamp_ on lists) and tensorops.clip_grad_value_ against torch:
values, dtypes, layouts, NaN rules, errors, autograd, opcheck, torch.compile, and one kernel call per list."""
from __future__ import annotations

import copy
import math

import pytest
import torch

import tensorops
from conftest import HAS_CUDA, clamp_corners_of_torch_2_14, kernel_ran, requires_compiled, requires_cuda_kernels

DTYPES = [
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
]
BOUNDS = [(-0.5, 0.5), (None, 0.25), (-0.25, None), (0.5, -0.5), (-math.inf, math.inf)]
INT_BOUNDS = [(-5, 5), (None, 3), (2, None), (5, -5)]


def make(shape, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype).to(device)
    lo = 0 if dtype == torch.uint8 else -20
    return torch.randint(lo, 20, shape, generator=g).to(dtype).to(device)


def mixed_list(device):
    """Tensors of many sizes, dtypes and layouts in one list."""
    return [
        make((64, 3, 7, 7), torch.float32, device, 1),
        make((64,), torch.float32, device, 2),
        make((0,), torch.float32, device, 3),
        make((5, 7), torch.float64, device, 4).t(),                                   # transposed (dense)
        make((2, 3, 4, 5), torch.float16, device, 5).contiguous(memory_format=torch.channels_last),
        make((6, 10), torch.bfloat16, device, 6)[:, ::2],                             # sliced: not dense
        make((), torch.float32, device, 7),                                           # 0-dim
        make((1000, 33), torch.float32, device, 8),
        make((17,), torch.float64, device, 9),
    ]


def expected_of(tensors, lo, hi):
    return [torch.clamp(t, lo, hi) for t in tensors]


def assert_same_list(actual, expected, strides=True):
    assert isinstance(actual, list) and len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape and a.device == e.device
        if strides and a.numel() > 1:
            assert [s for s, n in zip(a.stride(), a.shape) if n > 1] == [s for s, n in zip(e.stride(), e.shape) if n > 1]
        torch.testing.assert_close(a, e, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_values_per_dtype(device, dtype):
    bounds = BOUNDS if dtype.is_floating_point else INT_BOUNDS
    for lo, hi in bounds:
        xs = [make(s, dtype, device, seed=i) for i, s in enumerate([(3, 4), (100,), (2, 3, 5), (70000,)])]
        assert_same_list(tensorops.clamp(xs, lo, hi), expected_of(xs, lo, hi))
        ys = [x.clone() for x in xs]
        versions = [y._version for y in ys]
        res = tensorops.clamp_(ys, lo, hi)
        assert all(r is y for r, y in zip(res, ys))
        assert all(y._version > v for y, v in zip(ys, versions))  # autograd sees the update
        assert_same_list(ys, expected_of(xs, lo, hi))


@pytest.mark.parametrize("lo,hi", BOUNDS + [(-1, 1)])
def test_mixed_list(device, lo, hi):
    xs = mixed_list(device)
    assert_same_list(tensorops.clamp(xs, lo, hi), expected_of(xs, lo, hi))
    assert_same_list(tensorops.clamp(tuple(xs), min=lo, max=hi), expected_of(xs, lo, hi))
    ys = [x.clone() for x in xs]
    base = make((6, 10), torch.bfloat16, device, 6)
    ys[5] = base[:, ::2]  # the same non-dense view (clone() would make it dense)
    tensorops.clamp_(ys, lo, hi)
    assert_same_list(ys, expected_of(xs, lo, hi), strides=False)
    assert torch.equal(base[:, 1::2], make((6, 10), torch.bfloat16, device, 6)[:, 1::2])  # untouched columns


def test_nan_rules(device):
    x = torch.tensor([math.nan, -2.0, 0.0, 2.0, math.inf, -math.inf], device=device)
    xs = [x, x.double(), x.half(), x.bfloat16()]
    for lo, hi in [(-1.0, 1.0), (math.nan, 1.0), (-1.0, math.nan), (None, math.nan), (1.0, -1.0)]:
        assert_same_list(tensorops.clamp(xs, lo, hi), expected_of(xs, lo, hi))
        ys = [t.clone() for t in xs]
        tensorops.clamp_(ys, lo, hi)
        assert_same_list(ys, expected_of(xs, lo, hi))


def test_integer_tensor_float_bound(device):
    xs = [make((5,), torch.int32, device), make((4,), torch.float32, device)]
    assert_same_list(tensorops.clamp(xs, -0.5, 2.5), expected_of(xs, -0.5, 2.5))  # int -> float result
    with pytest.raises(RuntimeError) as theirs:
        xs[0].clone().clamp_(-0.5, 2.5)
    with pytest.raises(RuntimeError) as ours:
        tensorops.clamp_([t.clone() for t in xs], -0.5, 2.5)
    assert str(theirs.value) in str(ours.value)


def test_empty(device):
    assert tensorops.clamp([], -1, 1) == []
    assert tensorops.clamp_([], -1, 1) == []
    xs = [torch.empty(0, device=device), torch.empty(3, 0, device=device)]
    assert_same_list(tensorops.clamp(xs, -1, 1), expected_of(xs, -1, 1))


def test_bounds_as_tensors(device):
    xs = [make((4, 3), torch.float32, device, i) for i in range(3)]
    lo, hi = torch.tensor(-0.5), torch.tensor(0.5)  # 0-dim: read as numbers
    assert_same_list(tensorops.clamp(xs, lo, hi), expected_of(xs, lo, hi))
    lo3 = torch.tensor([-0.1, -0.2, -0.3], device=device)  # broadcast tensor bounds: tensor by tensor
    hi3 = torch.tensor([0.1, 0.2, 0.3], device=device)
    assert_same_list(tensorops.clamp(xs, lo3, hi3), expected_of(xs, lo3, hi3))


def test_errors():
    x = torch.ones(3)
    with pytest.raises(RuntimeError, match="min.*max"):
        tensorops.clamp([x])
    with pytest.raises(TypeError, match=r"input\[1\]"):
        tensorops.clamp([x, 2.0], 0, 1)
    with pytest.raises(TypeError, match=r"\bmin\b"):
        tensorops.clamp_([x], "a", 1)
    with pytest.raises(NotImplementedError, match="complex"):
        tensorops.clamp([x, torch.ones(2, dtype=torch.complex64)], 0, 1)
    with pytest.raises(TypeError, match="out"):
        tensorops.clamp([x], 0, 1, out=[x])
    with pytest.raises(RuntimeError):  # torch's own error for an expanded (overlapping) view
        tensorops.clamp_([torch.zeros(1).expand(4)], 0, 1)


@clamp_corners_of_torch_2_14
def test_autograd(device):
    xs = [make((3, 4), torch.float64, device, i).requires_grad_() for i in range(3)]
    assert torch.autograd.gradcheck(lambda *t: tuple(tensorops.clamp(list(t), -0.5, 0.5)), xs)
    for t in xs:
        with torch.no_grad():
            t[0, 0] = 0.5  # a tie with the bound: no gradient there, as torch
    a = [t.detach().clone().requires_grad_() for t in xs]
    b = [t.detach().clone().requires_grad_() for t in xs]
    outs = tensorops.clamp(a + [make((2,), torch.float64, device)], -0.5, 0.5)
    (outs[0] * 2 + outs[2].sum()).sum().backward()
    ref = [torch.clamp(t, -0.5, 0.5) for t in b]
    (ref[0] * 2 + ref[2].sum()).sum().backward()
    torch.testing.assert_close(a[0].grad, b[0].grad)
    assert a[1].grad is None and b[1].grad is None
    torch.testing.assert_close(a[2].grad, b[2].grad)
    # in place on a leaf that requires grad: torch's error
    with pytest.raises(RuntimeError, match="leaf"):
        tensorops.clamp_([xs[0]], -1, 1)


@requires_compiled
def test_one_kernel_call_for_the_list(device):
    xs = [make((64, 3, 7, 7), torch.float32, device, i) for i in range(20)] + [make((9,), torch.float64, device)]
    _, names = kernel_ran(tensorops.clamp_, xs, -0.1, 0.1)
    assert names == {"tensorops::foreach_clamp_scalar_"}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = tensorops.clamp(xs, -0.1, 0.1)
    events = [e.name for e in prof.events()]
    assert events.count("tensorops::foreach_clamp_scalar") == 1
    assert not any(n in ("aten::clamp", "aten::clamp_", "aten::clamp_min", "aten::clamp_max") for n in events)
    assert_same_list(out, expected_of(xs, -0.1, 0.1))


@requires_compiled
def test_opcheck(device):
    xs = [make((8, 3), torch.float32, device, 1), make((5,), torch.float64, device, 2),
          make((4, 4), torch.float16, device, 3).t(), make((6,), torch.int32, device, 4)]
    torch.library.opcheck(torch.ops.tensorops.foreach_clamp_scalar.default, (xs, -0.5, 0.5))
    torch.library.opcheck(torch.ops.tensorops.foreach_clamp_scalar_.default, ([t.clone() for t in xs], -1, 1))
    g = [make((3, 2), torch.float64, device, i).requires_grad_() for i in range(2)]
    torch.library.opcheck(torch.ops.tensorops.foreach_clamp_scalar.default, (g, None, 0.3))


@requires_compiled
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    xs = [make((8, 3), torch.float32, device, 1), make((5,), torch.float64, device, 2)]

    def inplace(a, b):
        tensorops.clamp_([a, b], -0.5, 0.5)
        return a + 1, b + 1

    ys = [t.clone() for t in xs]
    out = torch.compile(inplace, fullgraph=True, backend="aot_eager")(*ys)
    for o, x, y in zip(out, xs, ys):
        torch.testing.assert_close(y, x.clamp(-0.5, 0.5))
        torch.testing.assert_close(o, x.clamp(-0.5, 0.5) + 1)
    f = torch.compile(lambda a, b: tensorops.clamp([a, b], max=0.1), fullgraph=True, backend="aot_eager")
    assert_same_list(list(f(*xs)), expected_of(xs, None, 0.1))


@requires_cuda_kernels
@pytest.mark.cuda
def test_mixed_devices():
    xs = [make((10,), torch.float32, "cpu", 1), make((10,), torch.float32, "cuda", 2),
          make((3, 3), torch.float16, "cuda", 3), make((4,), torch.float64, "cpu", 4)]
    assert_same_list(tensorops.clamp(xs, -0.5, 0.5), expected_of(xs, -0.5, 0.5))
    ys = [t.clone() for t in xs]
    tensorops.clamp_(ys, -0.5, 0.5)
    assert_same_list(ys, expected_of(xs, -0.5, 0.5))


# ---- clip_grad_value_ -------------------------------------------------------------------------------------------
def _model_pair(device, dtype=torch.float32):
    """A small model and an exact copy, both with the same gradients from one backward pass."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.Flatten(), torch.nn.Linear(288, 4))
    m = m.to(device=device, dtype=dtype)
    m2 = copy.deepcopy(m)
    x = torch.randn(2, 3, 8, 8).to(device=device, dtype=dtype)
    for net in (m, m2):
        net(x).pow(2).sum().backward()
    return m, m2


@pytest.mark.parametrize("foreach", [None, True, False])
@pytest.mark.parametrize("clip", [0.01, 1, math.inf, -0.1, math.nan])
def test_clip_grad_value_matches_torch(device, foreach, clip):
    m, m2 = _model_pair(device)
    m[0].bias.grad = None  # skipped, as torch does
    m2[0].bias.grad = None
    assert tensorops.clip_grad_value_(m.parameters(), clip, foreach=foreach) is None
    torch.nn.utils.clip_grad_value_(m2.parameters(), clip, foreach=foreach)
    for p, q in zip(m.parameters(), m2.parameters()):
        if q.grad is None:
            assert p.grad is None
        else:
            torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0, equal_nan=True)


def test_clip_grad_value_single_tensor_and_errors(device):
    p = torch.randn(10, device=device, requires_grad=True)
    p.grad = torch.randn(10, device=device) * 5
    q = p.detach().clone().requires_grad_()
    q.grad = p.grad.clone()
    tensorops.clip_grad_value_(p, 1.0)
    torch.nn.utils.clip_grad_value_(q, 1.0)
    torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0)
    tensorops.clip_grad_value_([], 1.0)  # nothing to do, as torch
    for bad in ("x", None, [1.0]):
        with pytest.raises(Exception) as theirs:
            torch.nn.utils.clip_grad_value_(q, bad)
        with pytest.raises(type(theirs.value)) as ours:
            tensorops.clip_grad_value_(p, bad)
        assert str(ours.value) == str(theirs.value)
    meta = torch.zeros(3, device="meta", requires_grad=True)
    meta.grad = torch.zeros(3, device="meta")
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.utils.clip_grad_value_([meta], 1.0, foreach=True)
    with pytest.raises(RuntimeError) as ours:
        tensorops.clip_grad_value_([meta], 1.0, foreach=True)
    assert str(ours.value) == str(theirs.value)


@requires_compiled
def test_clip_grad_value_one_kernel_call(device):
    m, m2 = _model_pair(device)
    _, names = kernel_ran(tensorops.clip_grad_value_, m.parameters(), 0.01)
    assert names == {"tensorops::foreach_clamp_scalar_"}
    torch.nn.utils.clip_grad_value_(m2.parameters(), 0.01)
    for p, q in zip(m.parameters(), m2.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.cuda
def test_clip_grad_value_half_cuda():
    m, m2 = _model_pair("cuda", torch.float16)
    tensorops.clip_grad_value_(m.parameters(), 0.05)
    torch.nn.utils.clip_grad_value_(m2.parameters(), 0.05)
    for p, q in zip(m.parameters(), m2.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=0)


def test_benchmark_resnet18_shapes_are_torchvisions():
    torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed")
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).resolve().parent.parent))
    from benchmarks.stack_chunk_foreach import RESNET18_SHAPES

    shapes = [tuple(p.shape) for p in torchvision.models.resnet18().parameters()]
    assert RESNET18_SHAPES == shapes and len(shapes) == 62


def test_forward_ad_and_vmap_match_torch(device):
    xs = [make((3, 4), torch.float64, device, i) for i in range(2)]
    ts = [make((3, 4), torch.float64, device, 10 + i) for i in range(2)]
    out, tangent = torch.func.jvp(lambda a, b: tuple(tensorops.clamp([a, b], -0.5, 0.5)), tuple(xs), tuple(ts))
    ref, ref_t = torch.func.jvp(lambda a, b: (torch.clamp(a, -0.5, 0.5), torch.clamp(b, -0.5, 0.5)), tuple(xs), tuple(ts))
    for o, r in zip(out + tangent, ref + ref_t):
        torch.testing.assert_close(o, r)
    batched = torch.func.vmap(lambda a, b: tuple(tensorops.clamp([a, b], max=0.0)))(*xs)
    for o, x in zip(batched, xs):
        torch.testing.assert_close(o, x.clamp(max=0.0))


def test_transforms_tangents_and_gradients_match_torch(device):
    """Under forward AD and torch.func the list forms run torch's clamp tensor by tensor: tangents (in-place
    form included), gradients and jacobians are torch's, and gradcheck with forward AD passes."""
    import torch.autograd.forward_ad as fwAD

    xs = [make((3, 4), torch.float64, device, i) for i in range(2)]
    ts = [make((3, 4), torch.float64, device, 20 + i) for i in range(2)]
    lo, hi = -0.5, 0.4
    with fwAD.dual_level():
        got = tensorops.clamp([fwAD.make_dual(x, t) for x, t in zip(xs, ts)], lo, hi)
        want = [torch.clamp(fwAD.make_dual(x, t), lo, hi) for x, t in zip(xs, ts)]
        for g, w in zip(got, want):
            torch.testing.assert_close(fwAD.unpack_dual(g).tangent, fwAD.unpack_dual(w).tangent, rtol=0, atol=0)
        duals = [fwAD.make_dual(x.clone(), t) for x, t in zip(xs, ts)]
        tensorops.clamp_(duals, lo, hi)
        for d, w in zip(duals, want):
            torch.testing.assert_close(fwAD.unpack_dual(d).primal, fwAD.unpack_dual(w).primal, rtol=0, atol=0)
            torch.testing.assert_close(fwAD.unpack_dual(d).tangent, fwAD.unpack_dual(w).tangent, rtol=0, atol=0)
    ours = lambda a, b: tuple(tensorops.clamp([a, b], lo, hi))  # noqa: E731
    theirs = lambda a, b: (torch.clamp(a, lo, hi), torch.clamp(b, lo, hi))  # noqa: E731
    for o, r in zip(torch.func.jacrev(ours, (0, 1))(*xs), torch.func.jacrev(theirs, (0, 1))(*xs)):
        torch.testing.assert_close(o, r)
    loss = lambda f: (lambda a, b: sum(p.pow(2).sum() for p in f(a, b)))  # noqa: E731
    for o, r in zip(torch.func.grad(loss(ours), (0, 1))(*xs), torch.func.grad(loss(theirs), (0, 1))(*xs)):
        torch.testing.assert_close(o, r)
    inputs = tuple((x + 0.01 * torch.rand_like(x)).requires_grad_() for x in xs)
    assert torch.autograd.gradcheck(ours, inputs, check_batched_grad=True, check_forward_ad=True,
                                    check_batched_forward_grad=True)

"""Property-based tests: every public op against torch / a float64 oracle over random shapes (0-5 dims, zero-size
dims), dtypes, layouts (slices, transposes, permutes, channels_last, expanded views), broadcastable statistics and
bounds, tensor counts and split sizes.

Deterministic (derandomize=True: the same examples on every run and machine); a failure prints the drawn
arguments, including the ``Spec(...)`` that rebuilds the input tensor. ``TENSOROPS_PROPERTY_SCALE=10`` runs ten
times as many examples.
"""
from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("hypothesis", reason="property tests need hypothesis (pip install hypothesis)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

import tensorops
from _robust import FLOATS, INTS, LAYOUTS, Spec, assert_equal_values, assert_normalize_close, assert_same_layout

_SCALE = float(os.environ.get("TENSOROPS_PROPERTY_SCALE", "1"))


def prop_settings(n: int):
    return settings(
        max_examples=max(1, int(n * _SCALE)),
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def assert_fresh(out: torch.Tensor, x: torch.Tensor, what: str) -> None:
    """An out-of-place op returns new memory, never its input's (even when the values would be the same)."""
    if out.numel() and x.numel():
        assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr(), f"{what} returned its input's memory"


SIDES = st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 5, 7])  # zero-size dims about one draw in ten


@st.composite
def specs(draw, dtypes, min_dims=0, max_dims=5, shape=None, specials=False):
    if shape is None:
        nd = draw(st.integers(min_dims, max_dims))
        shape = tuple(draw(st.lists(SIDES, min_size=nd, max_size=nd)))
    nd = len(shape)
    dtype = draw(st.sampled_from(dtypes))
    return Spec(
        shape=tuple(shape),
        dtype=dtype,
        layout=draw(st.sampled_from(LAYOUTS)),
        perm=tuple(draw(st.permutations(range(nd)))),
        seed=draw(st.integers(0, 2**31 - 1)),
        specials=specials and dtype.is_floating_point and draw(st.booleans()),
    )


def bcast_shape(draw, shape, min_rank=0):
    """A shape that broadcasts to ``shape`` without growing it: a suffix of it with some dims set to 1."""
    k = draw(st.integers(min(min_rank, len(shape)), len(shape)))
    tail = shape[len(shape) - k:]
    return tuple(draw(st.sampled_from([1, n])) for n in tail)


# ---- normalize --------------------------------------------------------------------------------------------
def draw_stat(draw, name, x, dim, gen_seed):
    c = x.shape[dim]
    g = torch.Generator().manual_seed(gen_seed)
    form = draw(st.sampled_from(["number", "list1", "listC", "tensor1", "tensorC", "bcast", "scalar_tensor"]))
    sdtype = draw(st.sampled_from([torch.float32, torch.float64]))

    def values(shape):
        if name == "mean":
            return torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
        sign = torch.where(torch.rand(shape, generator=g) < 0.2, -1.0, 1.0).double()
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 1.9 + 0.1) * sign  # |std| >= 0.1

    if form == "number":
        return float(values(()).item())
    if form == "list1" or (form == "listC" and c == 0):
        return values((1,)).tolist()
    if form == "listC":
        return values((c,)).tolist()
    if form == "tensor1":
        return values((1,)).to(sdtype)
    if form == "tensorC":
        return values((c,)).to(sdtype)
    if form == "scalar_tensor":
        return values(()).to(sdtype)
    shape = bcast_shape(draw, tuple(x.shape), min_rank=2)
    layout = draw(st.sampled_from(["contiguous", "transposed", "expanded"]))
    if layout == "transposed" and len(shape) >= 2:
        t = values(shape[:-2] + (shape[-1], shape[-2])).to(sdtype)
        return t.transpose(-1, -2)
    if layout == "expanded":
        return values(tuple(1 for _ in shape)).to(sdtype).expand(shape)  # stride 0 everywhere
    return values(shape).to(sdtype)


@prop_settings(1000)
@given(data=st.data())
def test_normalize_matches_float64_oracle(data):
    spec = data.draw(specs((torch.uint8,) + FLOATS, min_dims=1, specials=True), label="input")
    x = spec.build()
    nd = x.dim()
    dim = data.draw(st.integers(-nd, nd - 1), label="dim")
    seed = data.draw(st.integers(0, 2**31 - 1), label="stat_seed")
    mean = draw_stat(data.draw, "mean", x, dim, seed)
    std = draw_stat(data.draw, "std", x, dim, seed + 1)
    data.draw(st.just((mean, std)), label="mean, std")
    dtype = data.draw(st.sampled_from([None, *FLOATS]), label="dtype")
    scale = data.draw(st.sampled_from([None, 1.0, 0.5, 1 / 255, -2.0]), label="scale")
    fmts = [torch.preserve_format, torch.contiguous_format]
    fmts += [torch.channels_last] if nd == 4 else [torch.channels_last_3d] if nd == 5 else []
    fmt = data.draw(st.sampled_from(fmts), label="memory_format")

    out = tensorops.normalize(x, mean, std, dim=dim, dtype=dtype, scale=scale, memory_format=fmt)
    assert_normalize_close(out, x, mean, std, dim=dim, scale=scale, dtype=dtype)
    if fmt == torch.preserve_format:
        assert_same_layout(out, torch.empty_like(x, dtype=out.dtype), "preserve_format:")
    elif out.numel():
        assert out.is_contiguous(memory_format=fmt), f"not {fmt}: strides {out.stride()}"
    assert not x.requires_grad and not out.requires_grad
    assert_fresh(out, x, "normalize")


@prop_settings(100)
@given(data=st.data())
def test_normalize_grads_match_torch(data):
    spec = data.draw(specs((torch.float64,), min_dims=1, max_dims=4), label="input")
    x = spec.build(requires_grad=True)
    dim = data.draw(st.integers(-x.dim(), x.dim() - 1), label="dim")
    g = torch.Generator().manual_seed(spec.seed)
    mshape = bcast_shape(data.draw, tuple(x.shape))
    sshape = bcast_shape(data.draw, tuple(x.shape))
    scale = data.draw(st.sampled_from([1.0, 0.5, -2.0]), label="scale")

    def stat(shape, low):
        if len(shape) == 1 and x.dim() > 1 and shape[0] not in (1, x.shape[dim]):
            shape = (1,)  # a 1-D statistics tensor is laid along dim: it has 1 or C values
        return (torch.rand(shape, generator=g, dtype=torch.float64) + low).requires_grad_()

    def laid(s):
        if s.dim() != 1 or x.dim() == 1:
            return s
        shape = [1] * x.dim()
        shape[dim] = s.numel()
        return s.view(shape)

    mean, std = stat(mshape, -0.5), stat(sshape, 0.5)
    out = tensorops.normalize(x, mean, std, dim=dim, scale=scale)
    ref = (x * scale - laid(mean)) / laid(std)
    grad = torch.randn(out.shape, generator=g, dtype=torch.float64)
    got = torch.autograd.grad(out, (x, mean, std), grad, allow_unused=True)
    exp = torch.autograd.grad(ref, (x, mean, std), grad, allow_unused=True)
    for name, a, b in zip(("input", "mean", "std"), got, exp):
        a = torch.zeros_like(b) if a is None and b is not None else a
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9, msg=lambda m: f"grad of {name}: {m}")


# ---- clamp / clamp_ ---------------------------------------------------------------------------------------
CLAMP_DTYPES = FLOATS + INTS


def draw_bounds(draw, x, seed):
    """(min, max) as both Python numbers or both tensors/None, at least one given, of x's dtype (torch.clamp
    overloads take numbers or tensors, not one of each)."""
    g = torch.Generator().manual_seed(seed)
    kind = draw(st.sampled_from(["min", "max", "both"]), label="bounds")
    tensors = draw(st.booleans(), label="tensor bounds")

    def one(shape):
        if x.dtype == torch.uint8:
            return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)  # no negative scalars: torch wraps them
        if not x.dtype.is_floating_point:
            return torch.randint(-100, 100, shape, generator=g, dtype=x.dtype)
        v = torch.randn(shape, generator=g, dtype=torch.float64) * 3
        if tensors and v.numel() and draw(st.integers(0, 9)) == 0:
            v.view(-1)[0] = float("nan")  # a NaN bound: torch returns NaN there
        return v.to(x.dtype)

    def bound():
        if tensors:
            return one(bcast_shape(draw, tuple(x.shape)))
        return one(()).item()

    lo = bound() if kind in ("min", "both") else None
    hi = bound() if kind in ("max", "both") else None
    return lo, hi


@prop_settings(600)
@given(data=st.data())
def test_clamp_matches_torch(data):
    spec = data.draw(specs(CLAMP_DTYPES, specials=True), label="input")
    x = spec.build()
    lo, hi = draw_bounds(data.draw, x, spec.seed + 7)
    data.draw(st.just((lo, hi)), label="min, max")
    expected = torch.clamp(x, lo, hi)
    out = tensorops.clamp(x, min=lo, max=hi)
    assert_equal_values(out, expected, "clamp")
    assert_same_layout(out, expected, "clamp:")
    assert_fresh(out, x, "clamp")
    assert_equal_values(x, spec.build(), "clamp changed its input:")


@prop_settings(250)
@given(data=st.data())
def test_clamp__matches_torch_in_place(data):
    spec = data.draw(specs(CLAMP_DTYPES, specials=True).filter(lambda s: s.layout != "expanded"), label="input")
    x, ref = spec.build(), spec.build()
    lo, hi = draw_bounds(data.draw, x, spec.seed + 7)
    data.draw(st.just((lo, hi)), label="min, max")
    stride, ptr = x.stride(), x.data_ptr()
    out = tensorops.clamp_(x, min=lo, max=hi)
    ref.clamp_(lo, hi)
    assert out is x, "clamp_ must return its input"
    assert x.stride() == stride and x.data_ptr() == ptr
    assert_equal_values(x, ref, "clamp_")
    if x._base is not None:  # a view: nothing outside it was written
        assert_equal_values(x._base, ref._base, "clamp_ base of the view")


@prop_settings(100)
@given(data=st.data())
def test_clamp_grads_match_torch(data):
    spec = data.draw(specs((torch.float64,), max_dims=4), label="input")
    x = spec.build(requires_grad=True)
    lo, hi = draw_bounds(data.draw, x.detach(), spec.seed + 7)
    inputs = [x]
    if isinstance(lo, torch.Tensor):
        lo = lo.nan_to_num(0.0).requires_grad_()
        inputs.append(lo)
    if isinstance(hi, torch.Tensor):
        hi = hi.nan_to_num(0.0).requires_grad_()
        inputs.append(hi)
    out = tensorops.clamp(x, min=lo, max=hi)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(spec.seed), dtype=torch.float64)
    got = torch.autograd.grad(out, inputs, grad, allow_unused=True)
    exp = torch.autograd.grad(torch.clamp(x, lo, hi), inputs, grad, allow_unused=True)
    for i, (a, b) in enumerate(zip(got, exp)):
        a = torch.zeros_like(inputs[i]) if a is None else a
        b = torch.zeros_like(inputs[i]) if b is None else b
        # bound gradients are sums: the kernel adds in another order than torch, so allow float64 rounding
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12, msg=lambda m: f"grad of input {i}: {m}")


# ---- cat ------------------------------------------------------------------------------------------------------
@st.composite
def cat_args(draw, dtypes, mixed=False, max_count=6):
    nd = draw(st.integers(1, 5), label="ndim")
    shape = list(draw(st.lists(SIDES, min_size=nd, max_size=nd), label="shape"))
    dim = draw(st.integers(-nd, nd - 1), label="dim")
    count = draw(st.integers(1, max_count), label="count")
    dtype = draw(st.sampled_from(dtypes))
    parts = []
    for _ in range(count):
        shape[dim] = draw(SIDES)
        parts.append(draw(specs([draw(st.sampled_from(dtypes))] if mixed else [dtype], shape=tuple(shape))))
    container = draw(st.sampled_from([list, tuple]), label="container")
    return parts, dim, container


def cat_both(args):
    """The drawn tensors, tensorops.cat's result and torch.cat's."""
    parts, dim, container = args
    ts = container(p.build() for p in parts)
    return ts, tensorops.cat(ts, dim=dim), torch.cat(ts, dim)


@prop_settings(600)
@given(args=cat_args(FLOATS + INTS + (torch.bool,)))
def test_cat_matches_torch(args):
    ts, out, expected = cat_both(args)
    assert_equal_values(out, expected, "cat")
    assert_same_layout(out, expected, "cat:")
    for t in ts:
        assert_fresh(out, t, "cat")


@prop_settings(150)
@given(args=cat_args((torch.uint8, torch.int32, torch.float16, torch.bfloat16, torch.float32, torch.float64), mixed=True, max_count=4))
def test_cat_mixed_dtypes_promote_like_torch(args):
    _, out, expected = cat_both(args)
    assert_equal_values(out, expected, "cat (mixed dtypes)")


@prop_settings(100)
@given(args=cat_args((torch.float64,), max_count=4))
def test_cat_grads_match_torch(args):
    parts, dim, _ = args
    ts = [p.build(requires_grad=True) for p in parts]
    out = tensorops.cat(ts, dim=dim)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(parts[0].seed), dtype=torch.float64)
    got = torch.autograd.grad(out, ts, grad)
    exp = torch.autograd.grad(torch.cat(ts, dim), ts, grad)
    for i, (a, b) in enumerate(zip(got, exp)):
        assert_equal_values(a, b, f"grad of tensors[{i}]")


# ---- split ----------------------------------------------------------------------------------------------------
@st.composite
def split_args(draw, dtypes, max_dims=5):
    spec = draw(specs(dtypes, min_dims=1, max_dims=max_dims), label="tensor")
    nd = len(spec.shape)
    dim = draw(st.integers(-nd, nd - 1), label="dim")
    n = spec.shape[dim]
    if draw(st.booleans()):
        arg = draw(st.integers(1, n + 2))  # the last piece may be shorter; larger than the dim gives one piece
    else:
        cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
        edges = [0, *cuts, n]
        arg = [b - a for a, b in zip(edges, edges[1:])]  # zero-size sections included
        arg = draw(st.sampled_from([list, tuple]))(arg)
    return spec, arg, dim


@prop_settings(600)
@given(args=split_args(FLOATS + INTS + (torch.bool,)))
def test_split_matches_torch_as_contiguous_copies(args):
    spec, arg, dim = args
    x = spec.build()
    expected = torch.split(x, arg, dim)
    out = tensorops.split(x, arg, dim=dim)
    assert isinstance(out, (tuple, list)), type(out)
    assert len(out) == len(expected), f"{len(out)} pieces, torch gives {len(expected)}"
    for i, (o, e) in enumerate(zip(out, expected)):
        assert_equal_values(o, e, f"piece {i}")
        assert o.is_contiguous(), f"piece {i} is not contiguous: strides {o.stride()}"
        assert_fresh(o, x, f"split piece {i}")
    assert_equal_values(x, spec.build(), "split changed its input:")


@prop_settings(100)
@given(args=split_args((torch.float64,), max_dims=4))
def test_split_grads_match_torch(args):
    spec, arg, dim = args
    x = spec.build(requires_grad=True)
    out = tensorops.split(x, arg, dim=dim)
    g = torch.Generator().manual_seed(spec.seed)
    grads = [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in out]
    (got,) = torch.autograd.grad(out, x, grads, allow_unused=True)
    (exp,) = torch.autograd.grad(torch.split(x, arg, dim), x, grads, allow_unused=True)
    got = torch.zeros_like(x) if got is None else got
    exp = torch.zeros_like(x) if exp is None else exp
    assert_equal_values(got, exp, "grad of tensor")

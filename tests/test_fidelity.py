"""Drop-in fidelity: every public op through what a swapped-in call meets besides plain eager calls (forward
AD, torch.func's jvp / vjp / grad / jacrev / jacfwd / hessian / vmap, batched gradcheck with forward AD, meta
tensors, quantized and sparse inputs, out= forms and torch's error wording), compared with torch itself.

The functorch checks run PyTorch's own OpInfo samples (op_db entries cat, split, split_with_sizes_copy, clamp,
clamp_min, clamp_max, stack, chunk), as torch's test_ops does; normalize and crop_mirror_normalize, which torch
has no OpInfo for, use samples of their own against tensorops.reference.
"""
from __future__ import annotations

import functools
import re

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch.func import hessian, jacfwd, jacrev, jvp, vjp, vmap

import tensorops
from tensorops import reference
from conftest import kernel_ran, requires_compiled

F64 = torch.float64


# ---- OpInfo samples, each as (tensorops call, torch call, differentiable tensors) ---------------------------
@functools.lru_cache(maxsize=None)
def _op_db():
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as exc:  # pragma: no cover - torch without its testing package
        pytest.skip(f"torch's OpInfo database is not importable: {exc}")
    return {(op.name, op.variant_test_name): op for op in op_db}


def _split_call(fn, split_arg):
    return lambda x, *args, **kwargs: fn(x, split_arg(args[0]), *args[1:], **kwargs)


OPS = {
    # OpInfo name: (tensorops function, torch function) taking the sample's (input, *args, **kwargs)
    ("cat", ""): (tensorops.cat, torch.cat),
    ("split", ""): (tensorops.split, lambda x, *a, **k: tuple(p.clone() for p in torch.split(x, *a, **k))),
    ("split", "list_args"): (tensorops.split, lambda x, *a, **k: tuple(p.clone() for p in torch.split(x, *a, **k))),
    ("split_with_sizes_copy", ""): (tensorops.split, lambda x, *a, **k: tuple(torch.split_with_sizes_copy(x, *a, **k))),
    ("clamp", ""): (tensorops.clamp, torch.clamp),
    ("clamp_min", ""): (lambda x, m: tensorops.clamp(x, min=m), torch.clamp_min),
    ("clamp_max", ""): (lambda x, m: tensorops.clamp(x, max=m), torch.clamp_max),
    ("stack", ""): (tensorops.stack, torch.stack),
    ("chunk", ""): (tensorops.chunk, lambda x, *a, **k: tuple(p.clone() for p in torch.chunk(x, *a, **k))),
}


def _samples(key, dtype=F64, limit=None):
    op = _op_db()[key]
    out = list(op.sample_inputs("cpu", dtype, requires_grad=dtype.is_floating_point))
    return out if limit is None else out[:limit]


def _flat(sample):
    """(function of the differentiable tensors only, those tensors) for a sample; list inputs (cat) flattened."""
    leaves, spec = [], []
    def take(obj):
        if isinstance(obj, torch.Tensor) and obj.is_floating_point():
            leaves.append(obj.detach())
            return ("t", len(leaves) - 1)
        if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, torch.Tensor) for t in obj):
            return ("l", [take(t) for t in obj])
        return ("c", obj)
    inp = take(sample.input)
    args = [take(a) for a in sample.args]

    def build(node, values):
        kind, v = node
        if kind == "t":
            return values[v]
        if kind == "l":
            return [build(n, values) for n in v]
        return v

    def call(fn):
        def f(*values):
            return fn(build(inp, values), *[build(a, values) for a in args], **sample.kwargs)
        return f

    return call, leaves


def _ids(key):
    return f"{key[0]}{'.' + key[1] if key[1] else ''}"


def _assert_same(a, b, exact=True):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y, exact)
    elif exact:
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(a, b, equal_nan=True)


pytestmark = requires_compiled


@pytest.mark.parametrize("key", list(OPS), ids=_ids)
def test_opinfo_forward_ad_jvp_vjp_vmap(key):
    ours, theirs = OPS[key]
    checked = 0
    for sample in _samples(key):
        call, leaves = _flat(sample)
        if not leaves:
            continue
        checked += 1
        gen = torch.Generator().manual_seed(0)
        tangents = [torch.randn(t.shape, dtype=t.dtype, generator=gen) for t in leaves]
        # torch.autograd.forward_ad: tangents equal to torch's
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip(leaves, tangents)]
            got, want = call(ours)(*duals), call(theirs)(*duals)
            unpack = lambda r: [fwAD.unpack_dual(x).tangent for x in (r if isinstance(r, tuple) else (r,))]  # noqa: E731
            _assert_same(unpack(got), unpack(want))
        # torch.func.jvp and vjp
        _assert_same(jvp(call(ours), tuple(leaves), tuple(tangents)), jvp(call(theirs), tuple(leaves), tuple(tangents)))
        out, pull = vjp(call(ours), *leaves)
        out_t, pull_t = vjp(call(theirs), *leaves)
        cot = out.clone() if isinstance(out, torch.Tensor) else tuple(o.clone() for o in out)
        _assert_same(out, out_t)
        _assert_same(pull(cot), pull_t(cot), exact=False)
        # vmap over every differentiable tensor (a batch of 3: the sample scaled)
        batched = [torch.stack([p, 2 * p, -p]) for p in leaves]
        _assert_same(vmap(call(ours))(*batched), vmap(call(theirs))(*batched))
    assert checked > 0, f"no differentiable OpInfo sample for {key}"


@pytest.mark.parametrize("key", list(OPS), ids=_ids)
def test_opinfo_jacobians_and_batched_gradcheck(key):
    ours, theirs = OPS[key]
    checked = 0
    for sample in _samples(key, limit=4):
        call, leaves = _flat(sample)
        if not leaves or sum(t.numel() for t in leaves) > 400:
            continue  # keeps the jacobians small; the first test runs every sample
        checked += 1
        argnums = tuple(range(len(leaves)))
        _assert_same(jacrev(call(ours), argnums)(*leaves), jacrev(call(theirs), argnums)(*leaves), exact=False)
        _assert_same(jacfwd(call(ours), argnums)(*leaves), jacfwd(call(theirs), argnums)(*leaves), exact=False)
        # away from clamp's kinks (finite differences across a kink are not a derivative)
        inputs = tuple((t + 0.01 * torch.rand_like(t)).requires_grad_() for t in leaves)
        assert torch.autograd.gradcheck(
            call(ours), inputs, check_batched_grad=True, check_forward_ad=True, check_batched_forward_grad=True
        )
    assert checked > 0, f"no small differentiable OpInfo sample for {key}"


# ---- normalize (no OpInfo in torch): own samples against tensorops.reference ------------------------------
def _normalize_cases():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 4, 5, dtype=F64, generator=gen)
    mean = torch.rand(3, 1, 1, dtype=F64, generator=gen)
    std = torch.rand(1, 4, 1, dtype=F64, generator=gen) + 0.5
    m_per_sample = torch.rand(2, 3, 1, 1, dtype=F64, generator=gen)
    return {
        "numbers": (lambda x: tensorops.normalize(x, [0.1, 0.2, 0.3], [0.5, 0.6, 0.7], scale=2.0),
                    lambda x: reference.normalize(x, [0.1, 0.2, 0.3], [0.5, 0.6, 0.7], dim=-3, scale=2.0, dtype=F64),
                    (x,)),
        "tensors": (lambda x, m, s: tensorops.normalize(x, m, s),
                    lambda x, m, s: reference.normalize(x, m, s, dim=-3, scale=1.0, dtype=F64),
                    (x[0], mean, std)),
        "per-sample": (lambda x, m: tensorops.normalize(x, m, 0.25, scale=3.0),
                       lambda x, m: reference.normalize(x, m, torch.tensor(0.25, dtype=F64), dim=-3, scale=3.0, dtype=F64),
                       (x, m_per_sample)),
    }


def _hessians_match(ours, theirs, args):
    loss = lambda f: (lambda *a: f(*a).pow(2).sum())  # noqa: E731
    _assert_same(hessian(loss(ours))(*args), hessian(loss(theirs))(*args), exact=False)


def _cubic_loss_grads_match(ours, theirs, args):
    loss = lambda f: (lambda *a: f(*a).pow(3).sum())  # noqa: E731
    argnums = tuple(range(len(args)))
    _assert_same(torch.func.grad(loss(ours), argnums)(*args), torch.func.grad(loss(theirs), argnums)(*args), exact=False)


def _assert_transforms_match(ours, theirs, args, second_order):
    """Forward AD, jvp, jacrev, jacfwd, ``second_order(ours, theirs, args)``, vmap, gradcheck (batched, forward AD)
    and gradgradcheck: ours against theirs."""
    tangents = tuple(torch.randn_like(a) for a in args)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(a, t) for a, t in zip(args, tangents)]
        got = fwAD.unpack_dual(ours(*duals)).tangent
        want = fwAD.unpack_dual(theirs(*duals)).tangent
    assert got is not None
    _assert_same(got, want, exact=False)
    _assert_same(jvp(ours, args, tangents), jvp(theirs, args, tangents), exact=False)
    argnums = tuple(range(len(args)))
    _assert_same(jacrev(ours, argnums)(*args), jacrev(theirs, argnums)(*args), exact=False)
    _assert_same(jacfwd(ours, argnums)(*args), jacrev(theirs, argnums)(*args), exact=False)
    second_order(ours, theirs, args)
    batched = [torch.stack([a, 2 * a]) for a in args]
    _assert_same(vmap(ours)(*batched), vmap(theirs)(*batched), exact=False)
    inputs = tuple(a.clone().requires_grad_() for a in args)
    assert torch.autograd.gradcheck(
        ours, inputs, check_batched_grad=True, check_forward_ad=True, check_batched_forward_grad=True
    )
    assert torch.autograd.gradgradcheck(ours, inputs)


@pytest.mark.parametrize("case", list(_normalize_cases()))
def test_normalize_transforms(case):
    ours, theirs, args = _normalize_cases()[case]
    _assert_transforms_match(ours, theirs, args, _hessians_match)


# ---- crop_mirror_normalize (no OpInfo in torch): own samples against tensorops.reference ------------------------
def _cmn_ref(images, mean, std, top_left, mirror, size, dim=-3, channels=None, fill=0.0, pad=False):
    as_stat = lambda v: v if isinstance(v, torch.Tensor) and v.dim() == 2 else torch.as_tensor(v, dtype=F64).reshape(1, -1)  # noqa: E731
    C = images[0].shape[dim] if not isinstance(images, torch.Tensor) else images.shape[dim]
    return reference.crop_mirror_normalize(
        images, as_stat(mean), as_stat(std), torch.tensor(top_left), torch.tensor(mirror), size, dim=dim, scale=1.0,
        dtype=F64, memory_format=torch.contiguous_format, channels=channels or C, fill=fill, pad=pad)


def _cmn_cases():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 5, 6, dtype=F64, generator=gen)
    a, b = torch.randn(5, 6, 3, dtype=F64, generator=gen), torch.randn(4, 7, 3, dtype=F64, generator=gen)
    m, s = torch.rand(3, dtype=F64, generator=gen), torch.rand(2, 3, dtype=F64, generator=gen) + 0.5
    tl, mi = [[-1, 1], [3, 4]], [True, False]
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.6, 0.7]
    cmn = tensorops.crop_mirror_normalize
    return {
        "batch-pad": (lambda x: cmn(x, mean, std, size=(3, 4), top_left=tl, mirror=torch.tensor(mi), pad_channels=4,
                                    fill=0.25, out_of_bounds="pad"),
                      lambda x: _cmn_ref(x, mean, std, tl, mi, (3, 4), channels=4, fill=0.25, pad=True),
                      (x,)),
        "list-hwc": (lambda a, b: cmn([a, b], mean, std, dim=-1, size=(3, 3), mirror=torch.tensor(mi)),
                     lambda a, b: _cmn_ref([a, b], mean, std, [[1, 1], [0, 2]], mi, (3, 3), dim=-1),
                     (a, b)),
        "tensor-stats": (lambda x, m, s: cmn(x, m, s, size=(3, 4), mirror=torch.tensor(mi)),
                         lambda x, m, s: _cmn_ref(x, m, s, [[1, 1], [1, 1]], mi, (3, 4)),
                         (x, m, s)),
    }


@pytest.mark.parametrize("case", list(_cmn_cases()))
def test_crop_mirror_normalize_transforms(case):
    ours, theirs, args = _cmn_cases()[case]
    _assert_same(ours(*args), theirs(*args), exact=False)
    _assert_transforms_match(ours, theirs, args, _cubic_loss_grads_match)


def test_crop_mirror_normalize_kernel_under_transforms():
    """With number statistics, forward AD and torch.func run the compiled kernel (the tangent is the kernel on the
    tangent with mean 0), and vmap of either form is one kernel call."""
    x = torch.randn(2, 3, 5, 6, dtype=F64)
    f = lambda x: tensorops.crop_mirror_normalize(x, 0.5, [1, 2, 4], size=(3, 3))  # noqa: E731
    _, names = kernel_ran(lambda: jvp(f, (x,), (torch.ones_like(x),)))
    assert "tensorops::crop_mirror_normalize" in names
    _, names = kernel_ran(lambda: torch.func.grad(lambda x: f(x).sum())(x))
    assert "tensorops::crop_mirror_normalize" in names


@pytest.mark.parametrize("case", [(lambda x: tensorops.stack([x, x], 1), "tensorops::cat"),
                                  (lambda x: tensorops.chunk(x, 2, 1), "tensorops::split")], ids=["stack", "chunk"])
def test_stack_chunk_kernels_under_forward_ad(case):
    """stack and chunk are cat and split underneath: forward AD and torch.func.grad run those kernels."""
    fn, name = case
    x = torch.randn(3, 4, dtype=F64)
    _, names = kernel_ran(lambda: jvp(fn, (x,), (torch.ones_like(x),)))
    assert name in names
    loss = lambda x: sum(p.sum() for p in fn(x)) if isinstance(fn(x), tuple) else fn(x).sum()  # noqa: E731
    _, names = kernel_ran(lambda: torch.func.grad(loss)(x))
    assert name in names


def test_forward_ad_with_input_requiring_grad():
    """A dual input that also requires grad: no NotImplementedError, tangent and gradient both as torch's."""
    x = torch.randn(3, 4, dtype=F64, requires_grad=True)
    lo = torch.full((4,), -0.3, dtype=F64, requires_grad=True)
    t = torch.randn(3, 4, dtype=F64)
    for ours, theirs in (
        (lambda d: tensorops.clamp(d, lo, 0.5 + lo), lambda d: torch.clamp(d, lo, 0.5 + lo)),
        (lambda d: tensorops.clamp(d, -0.2, 0.4), lambda d: torch.clamp(d, -0.2, 0.4)),
        (lambda d: tensorops.cat([d, 2 * d], 1), lambda d: torch.cat([d, 2 * d], 1)),
        (lambda d: tensorops.split(d, [1, 3], 1)[1], lambda d: torch.split(d, [1, 3], 1)[1]),
        (lambda d: tensorops.normalize(d, [0.5], [2.0], dim=-1), lambda d: (d - 0.5) / 2.0),
        (lambda d: tensorops.stack([d, 2 * d], 1), lambda d: torch.stack([d, 2 * d], 1)),
        (lambda d: tensorops.chunk(d, 3, 1)[1], lambda d: torch.chunk(d, 3, 1)[1]),
        (lambda d: tensorops.crop_mirror_normalize(d[None, None], [0.5], [2.0], size=(2, 3), top_left=[[1, 0]],
                                                   mirror=torch.tensor([True])),
         lambda d: ((d[1:3, 0:3] - 0.5) / 2.0).flip(-1)[None, None]),
    ):
        with fwAD.dual_level():
            got = ours(fwAD.make_dual(x, t))
            want = theirs(fwAD.make_dual(x, t))
            _assert_same(fwAD.unpack_dual(got).tangent, fwAD.unpack_dual(want).tangent, exact=False)
        g = torch.autograd.grad(ours(x).sum(), x)[0]
        torch.testing.assert_close(g, torch.autograd.grad(theirs(x).sum(), x)[0])


def test_clamp_inplace_forward_ad_and_vmap():
    x = torch.randn(4, 5, dtype=F64)
    t = torch.randn(4, 5, dtype=F64)
    with fwAD.dual_level():
        a, b = fwAD.make_dual(x.clone(), t), fwAD.make_dual(x.clone(), t)
        tensorops.clamp_(a, -0.5, 0.5)
        b.clamp_(-0.5, 0.5)
        _assert_same(fwAD.unpack_dual(a).tangent, fwAD.unpack_dual(b).tangent)
    lo = torch.full((5,), -0.2, dtype=F64)
    for bounds in ((-0.3, 0.3), (lo, lo + 0.5)):
        y = x.clone()
        _, names = kernel_ran(vmap(tensorops.clamp_, in_dims=(0, None, None)), y, *bounds)
        _assert_same(y, torch.clamp(x, *bounds))
        assert len(names) == 1 and names <= {"tensorops::clamp_", "tensorops::clamp_scalar_"}, names


# ---- vmap makes one kernel call for the whole batch -----------------------------------------------------------
def _profile_counts(fn, *args):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*args)
    counts = {}
    for e in prof.events():
        if e.name.startswith("tensorops::"):
            counts[e.name] = counts.get(e.name, 0) + 1
    return out, counts


VMAP_CASES = {
    "normalize": (lambda x: tensorops.normalize(x, [0.1, 0.2, 0.3], [0.5, 0.6, 0.7]), "tensorops::normalize"),
    "normalize_tensor": (lambda x: tensorops.normalize(x, torch.zeros(3, 1, 1), torch.ones(1, 1, 4) * 2), "tensorops::normalize_tensor"),
    "clamp": (lambda x: tensorops.clamp(x, torch.zeros(4), torch.ones(3, 1, 1)), "tensorops::clamp"),
    "clamp_scalar": (lambda x: tensorops.clamp(x, -0.5, 0.5), "tensorops::clamp_scalar"),
    "cat": (lambda x: tensorops.cat([x, x * 2, x[:1]], 0), "tensorops::cat"),
    "split": (lambda x: tensorops.split(x, [1, 2], 0), "tensorops::split"),
    "stack": (lambda x: tensorops.stack([x, x[:, :1].expand(3, 2, 4)], 1), "tensorops::cat"),
    "chunk": (lambda x: tensorops.chunk(x, 2, -1), "tensorops::split"),
    "crop_mirror_normalize": (lambda x: tensorops.crop_mirror_normalize(
        x[:, None], 0.1, 0.5, size=(1, 3), top_left=[[1, 0], [0, 1], [1, 1]], mirror=torch.tensor([True, False, True])),
        "tensorops::crop_mirror_normalize"),
    "crop_mirror_normalize_list": (lambda x: tensorops.crop_mirror_normalize(
        [x, x[1:]], 0.5, 2.0, dim=-1, size=(2, 2), mirror=torch.tensor([True, False])),
        "tensorops::crop_mirror_normalize_list"),
}


@pytest.mark.parametrize("case", list(VMAP_CASES))
def test_vmap_one_kernel_call(case):
    fn, name = VMAP_CASES[case]
    x = torch.randn(8, 3, 2, 4)
    out, counts = _profile_counts(vmap(fn), x)
    assert counts == {name: 1}, counts
    _assert_same(out, torch.stack([fn(s) for s in x]) if isinstance(out, torch.Tensor)
                 else tuple(torch.stack(p) for p in zip(*[fn(s) for s in x])))


def test_vmap_in_dims_and_unbatched_operands():
    x = torch.randn(3, 5, 4)
    y = torch.randn(3, 4)
    # cat: a batched tensor (batch dim 1) with an unbatched one, dtype promotion and the (0,) legacy skip
    got = vmap(lambda a: tensorops.cat([a, y.double(), torch.empty(0)], 0), in_dims=1)(x)
    want = vmap(lambda a: torch.cat([a, y.double(), torch.empty(0)], 0), in_dims=1)(x)
    _assert_same(got, want)
    # clamp: unbatched input, batched bound
    lo = torch.randn(7, 4)
    _assert_same(vmap(lambda m: tensorops.clamp(y, m, None))(lo), vmap(lambda m: torch.clamp(y, m, None))(lo))
    # a 0-dim float64 bound ranks below the float32 input in promotion, also when it is batched: each
    # sample's result is what clamp gives for that sample (torch's own vmap rule gives float64 here)
    b = torch.randn(3, dtype=F64)
    got = vmap(lambda m: tensorops.clamp(y, m, None))(b)
    _assert_same(got, torch.stack([torch.clamp(y, m, None) for m in b]))
    # split along a negative dim with the batch dim last
    _assert_same(vmap(lambda a: tensorops.split(a, 2, -1), in_dims=2)(x), vmap(lambda a: torch.split(a, 2, -1), in_dims=2)(x))


def test_hessian_and_grad_of_every_op():
    x = torch.randn(3, 4, dtype=F64)
    for ours, theirs in (
        (lambda a: tensorops.clamp(a, -0.5, 0.5), lambda a: torch.clamp(a, -0.5, 0.5)),
        (lambda a: tensorops.cat([a, a * a], 0), lambda a: torch.cat([a, a * a], 0)),
        (lambda a: tensorops.split(a * a, [1, 2], 0)[1], lambda a: torch.split(a * a, [1, 2], 0)[1]),
        (lambda a: tensorops.normalize(a * a, [0.5], [2.0], dim=-1), lambda a: (a * a - 0.5) / 2.0),
        (lambda a: tensorops.stack([a, a * a], 2), lambda a: torch.stack([a, a * a], 2)),
        (lambda a: tensorops.chunk(a * a, 2, 1)[1], lambda a: torch.chunk(a * a, 2, 1)[1]),
        (lambda a: tensorops.crop_mirror_normalize((a * a)[None, None], 0.5, 2.0, size=(2, 2), mirror=torch.tensor([True])),
         lambda a: ((a * a)[None, None, 0:2, 1:3].flip(-1) - 0.5) / 2.0),
    ):
        loss_o = lambda a: ours(a).pow(3).sum()  # noqa: E731
        loss_t = lambda a: theirs(a).pow(3).sum()  # noqa: E731
        torch.testing.assert_close(torch.func.grad(loss_o)(x), torch.func.grad(loss_t)(x))
        torch.testing.assert_close(hessian(loss_o)(x), hessian(loss_t)(x))


# ---- inputs the kernels do not cover go where torch goes ------------------------------------------------------
@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_quantized_and_sparse_cat():
    a = torch.quantize_per_tensor(torch.randn(2, 3), 0.1, 3, torch.quint8)
    b = torch.quantize_per_tensor(torch.randn(4, 3), 0.1, 3, torch.quint8)
    for tensors in ([a, b], (a, b)):
        got, want = tensorops.cat(tensors), torch.cat(tensors)
        assert got.is_quantized and got.q_scale() == want.q_scale() and got.q_zero_point() == want.q_zero_point()
        assert torch.equal(got.int_repr(), want.int_repr())
    s1, s2 = torch.randn(3, 4).relu().to_sparse(), torch.randn(2, 4).relu().to_sparse()
    got, want = tensorops.cat([s1, s2], 0), torch.cat([s1, s2], 0)
    assert got.layout == want.layout == torch.sparse_coo
    assert torch.equal(got.to_dense(), want.to_dense())
    x = torch.randn(6, 4).relu().to_sparse()
    # torch has no split of a sparse tensor: neither has tensorops, with torch's exception
    assert _outcome(lambda: tensorops.split(x, [2, 4], 0))[0] is _outcome(lambda: torch.split_with_sizes_copy(x, [2, 4], 0))[0] is NotImplementedError
    q = torch.quantize_per_tensor(torch.randn(6, 4), 0.1, 3, torch.quint8)
    for p, r in zip(tensorops.split(q, [2, 4], 0), torch.split_with_sizes_copy(q, [2, 4], 0)):
        assert p.is_quantized and torch.equal(p.int_repr(), r.int_repr())


def _meta_like(t):
    return (tuple(t.shape), t.dtype, t.stride(), t.device.type)


@pytest.mark.parametrize(
    "call",
    [
        lambda d: tensorops.normalize(torch.empty(2, 3, 4, 5, dtype=torch.uint8, device=d), [0.5] * 3, [0.2] * 3),
        lambda d: tensorops.normalize(torch.empty(2, 3, 4, 5, device=d).to(memory_format=torch.channels_last), 0.5, 0.2),
        lambda d: tensorops.normalize(torch.empty(2, 3, 4, 5, device=d), torch.zeros(3, device=d), torch.ones(3, device=d)),
        lambda d: tensorops.clamp(torch.empty(4, 5, device=d), -1, 1),
        lambda d: tensorops.clamp(torch.empty(4, 5, dtype=torch.int32, device=d), torch.zeros(5, device=d), None),
        lambda d: tensorops.clamp_(torch.empty(4, 5, device=d), -1, 1),
        lambda d: tensorops.cat([torch.empty(2, 3, device=d), torch.empty(4, 3, dtype=F64, device=d)]),
        lambda d: tensorops.cat([torch.empty(2, 3, 4, 5, device=d).to(memory_format=torch.channels_last)] * 2, 1),
        lambda d: tensorops.split(torch.empty(5, 3, device=d), [2, 3]),
        lambda d: tensorops.stack([torch.empty(2, 3, device=d), torch.empty(2, 3, dtype=F64, device=d)], 1),
        lambda d: tensorops.stack([torch.empty(2, 3, 4, 5, device=d).to(memory_format=torch.channels_last)] * 3),
        lambda d: tensorops.chunk(torch.empty(5, 7, device=d), 3, 1),
    ],
    ids=["normalize-u8", "normalize-cl", "normalize-tensor", "clamp", "clamp-promote", "clamp_", "cat", "cat-cl", "split",
         "stack", "stack-cl", "chunk"],
)
def test_meta_tensors_like_cpu(call):
    """device="meta" works eagerly: shape, dtype and strides as on CPU (where the kernels match torch)."""
    meta, cpu = call("meta"), call("cpu")
    if isinstance(cpu, tuple):
        assert [_meta_like(t)[:3] for t in meta] == [_meta_like(t)[:3] for t in cpu]
        assert all(t.device.type == "meta" for t in meta)
    else:
        assert _meta_like(meta)[:3] == _meta_like(cpu)[:3] and meta.device.type == "meta"


# ---- signatures and out= as torch's -----------------------------------------------------------------------------
def _outcome(fn):
    """(exception type, None) or (None, result) of fn()."""
    try:
        return None, fn()
    except Exception as exc:  # noqa: BLE001 - compared with torch's
        return type(exc), None


def _assert_out_like_torch(ours, theirs, o1, o2):
    """ours(o1) raises what theirs(o2) raises, or neither raises and o1 holds what o2 holds; returns both results
    (None after an exception)."""
    e1, r1 = _outcome(lambda: ours(o1))
    e2, r2 = _outcome(lambda: theirs(o2))
    assert e1 == e2
    if e1 is None:
        _assert_same(o1, o2)
    return e1, r1, r2


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_cat_axis_alias_and_out():
    a, b = torch.randn(2, 3), torch.randn(2, 1)
    _assert_same(tensorops.cat([a, b], axis=1), torch.cat([a, b], axis=1))
    for out_factory in (
        lambda: torch.empty(0),                          # resized
        lambda: torch.empty(2, 4),                       # right shape
        lambda: torch.empty(2, 4, dtype=F64),            # castable dtype
        lambda: torch.empty(2, 4, dtype=torch.int64),    # float into int: torch raises
        lambda: a,                                       # aliases an input: torch raises
    ):
        o1, o2 = out_factory(), out_factory()
        if o1 is a:
            o1, o2 = a, a
        err, r1, _ = _assert_out_like_torch(lambda o: tensorops.cat([a, b], 1, out=o),
                                            lambda o: torch.cat([a, b], 1, out=o), o1, o2)
        assert err is not None or r1 is o1


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_clamp_out():
    x = torch.randn(3, 4)
    for out_factory, bounds in (
        (lambda: torch.empty(0), (-0.5, 0.5)),
        (lambda: torch.empty(3, 4, dtype=F64), (torch.zeros(4), None)),
        (lambda: torch.empty(3, 4, dtype=torch.int32), (-0.5, 0.5)),
    ):
        o1, o2 = out_factory(), out_factory()
        err, r1, _ = _assert_out_like_torch(lambda o: tensorops.clamp(x, *bounds, out=o),
                                            lambda o: torch.clamp(x, *bounds, out=o), o1, o2)
        assert err is not None or r1 is o1


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
def test_split_out_one_pass():
    flat = torch.arange(10.0)
    for make in (
        lambda: [torch.empty(2, 2), torch.empty(6)],             # right shapes (a 2x2 piece of a 4-bucket: resized)
        lambda: [torch.empty(0), torch.empty(0)],                 # resized
        lambda: [torch.empty(4)],                                 # wrong count: torch raises
        lambda: [torch.empty(4, dtype=torch.int64), torch.empty(6)],  # wrong dtype: torch raises
    ):
        o1, o2 = make(), make()
        err, r1, r2 = _assert_out_like_torch(lambda o: tensorops.split(flat, [4, 6], out=o),
                                             lambda o: torch.split_with_sizes_copy(flat, [4, 6], out=o), o1, o2)
        assert err is not None or (r1 is None and r2 is None)
    grads = [torch.empty(2, 3), torch.empty(4)]
    tensorops.split(torch.arange(10.0), [6, 4], out=[g.view(-1) for g in grads])
    _assert_same(torch.cat([g.view(-1) for g in grads]), torch.arange(10.0))


# ---- torch's error wording ---------------------------------------------------------------------------------------
def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def _torch_words(msg: str) -> str:
    """torch's message without its function-name prefix and final period."""
    return re.sub(r"^(torch\.\w+(\(\))?:\s*)", "", msg).rstrip(".")


@pytest.mark.parametrize("grad", [False, True], ids=["no-grad", "grad"])
@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize(
    "case",
    [
        ("cat", lambda d, g: ([torch.ones(2, 3, device=d, requires_grad=g), torch.ones(3, 3, device=d)], 1)),
        ("cat", lambda d, g: ([torch.ones(2, 3, device=d, requires_grad=g), torch.ones(3, device=d)], 1)),
        ("cat", lambda d, g: ([torch.ones(2, 3, device=d, requires_grad=g), torch.ones(2, 3, 1, device=d)], 0)),
        ("cat", lambda d, g: ([],)),
        ("clamp", lambda d, g: (torch.ones(2, device=d, requires_grad=g),)),
        ("clamp", lambda d, g: (torch.ones(2, device=d, requires_grad=g), None, None)),
    ],
    ids=["sizes", "ranks-1", "ranks-3", "empty", "clamp-none", "clamp-none-explicit"],
)
def test_torch_error_wording(case, device, grad):
    """The kernels' words are torch's CPU words, whichever path raises them (the C fast path, the autograd
    path, the checks before torch for meta tensors, whose own meta kernels word them differently)."""
    name, make = case
    ttype, tmsg = _message(lambda: getattr(torch, name)(*make("cpu", grad)))
    otype, omsg = _message(lambda: getattr(tensorops, name)(*make(device, grad)))
    assert otype is ttype, (omsg, tmsg)
    assert _torch_words(tmsg) in omsg, (omsg, tmsg)


def test_clamp_inplace_error_wording():
    ttype, tmsg = _message(lambda: torch.ones(2).clamp_())
    otype, omsg = _message(lambda: tensorops.clamp_(torch.ones(2)))
    assert otype is ttype and _torch_words(tmsg) in omsg


def test_normalize_2d_default_dim_suggests_hwc():
    x = torch.rand(224, 3)
    with pytest.raises(ValueError, match=r"dim -3.*\(224, 3\).*dim=-1"):
        tensorops.normalize(x, [0.5] * 3, [0.2] * 3)
    with pytest.raises(ValueError, match=r"dim -3.*\(5, 7\)") as info:
        tensorops.normalize(torch.rand(5, 7), 0.5, 0.2)
    assert "dim=-1" not in str(info.value)  # the last dim does not look like channels
    _assert_same(tensorops.normalize(x, [0.5] * 3, [0.2] * 3, dim=-1), (x - 0.5) / 0.2, exact=False)


# ---- what the README claims about clamp's gradients ---------------------------------------------------------------
def test_clamp_gradients_as_readme_states():
    """README: the input's gradient is bit-identical to torch's; the bounds' gradients are sums over the dims
    they broadcast along, equal to torch's up to summation order: within torch.testing's default tolerance for
    the dtype (float32: rtol 1.3e-6, atol 1e-5)."""
    gen = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, F64):
        x = torch.randn(64, 10, 5, dtype=dtype, generator=gen)
        lo = (torch.randn(10, 5, dtype=dtype, generator=gen) - 0.5)
        hi = (torch.randn(10, 5, dtype=dtype, generator=gen) + 0.5)
        g = torch.randn(64, 10, 5, dtype=dtype, generator=gen)
        leaves = [t.clone().requires_grad_() for t in (x, lo, hi)]
        ours = torch.autograd.grad(tensorops.clamp(*leaves), leaves, g)
        leaves = [t.clone().requires_grad_() for t in (x, lo, hi)]
        theirs = torch.autograd.grad(torch.clamp(*leaves), leaves, g)
        assert torch.equal(ours[0], theirs[0])
        torch.testing.assert_close(ours[1], theirs[1])
        torch.testing.assert_close(ours[2], theirs[2])


def test_registered_ops_carry_forward_ad_and_double_backward():
    """torch.ops.tensorops.* (as TorchScript or a torch.compile graph calls them) have the same derivatives."""
    ops = torch.ops.tensorops
    x = torch.randn(3, 4, dtype=F64)
    t = torch.randn(3, 4, dtype=F64)
    lo = torch.full((4,), -0.2, dtype=F64)
    for ours, theirs in (
        (lambda d: ops.clamp_scalar.default(d, -0.3, 0.3), lambda d: torch.clamp(d, -0.3, 0.3)),
        (lambda d: ops.clamp.default(d, lo, None), lambda d: torch.clamp(d, lo, None)),
        (lambda d: ops.cat.default([d, d], 1), lambda d: torch.cat([d, d], 1)),
        (lambda d: ops.split.default(d, [1, 2], 0)[1], lambda d: torch.split(d, [1, 2], 0)[1]),
        (lambda d: ops.normalize.default(d, [0.5], [2.0], 1, 1.0, F64, torch.preserve_format), lambda d: (d - 0.5) / 2.0),
        (lambda d: ops.crop_mirror_normalize_list.default(
            [d[None], d[None, 1:]], torch.full((1, 1), 0.5, dtype=F64), torch.full((1, 1), 2.0, dtype=F64),
            torch.tensor([[1, 0], [0, 1]]), torch.tensor([True, False]), [2, 3], -3, 1.0, F64,
            torch.contiguous_format, 1, 0.0, False),
         lambda d: torch.stack([d[1:3, 0:3].flip(-1), d[1:3, 1:4]])[:, None].sub(0.5).div(2.0)),
    ):
        with fwAD.dual_level():
            got = fwAD.unpack_dual(ours(fwAD.make_dual(x, t))).tangent
            want = fwAD.unpack_dual(theirs(fwAD.make_dual(x, t))).tangent
        torch.testing.assert_close(got, want)
        assert torch.autograd.gradgradcheck(lambda a: ours(a).pow(2), (x.clone().requires_grad_(),))


def test_ordinary_backward_runs_the_fused_kernels():
    x = torch.randn(4, 5, requires_grad=True)
    lo = torch.zeros(5, requires_grad=True)
    _, names = kernel_ran(lambda: tensorops.clamp(x, lo, None).sum().backward())
    assert "tensorops::clamp_backward" in names
    _, names = kernel_ran(lambda: tensorops.clamp(x, -0.5, 0.5).sum().backward())
    assert "tensorops::clamp_scalar_backward" in names
    m = torch.zeros(1, 5, requires_grad=True)
    _, names = kernel_ran(lambda: tensorops.normalize(x, m, torch.ones(1, 5), dim=-1).sum().backward())
    assert "tensorops::normalize_tensor_backward" in names


@pytest.mark.parametrize("bounds", [(-0.1, 0.1), (torch.zeros(5), None)], ids=["numbers", "tensor"])
def test_clamp_inplace_bumps_the_version_counter(bounds):
    """The kernel path of clamp_ (single tensor and list) counts as a write, as Tensor.clamp_ does: autograd then
    raises torch's error for a saved tensor modified in place."""
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    vx, vy = x._version, y._version
    _, names = kernel_ran(tensorops.clamp_, x, *bounds)
    y.clamp_(*bounds)
    assert names & {"tensorops::clamp_", "tensorops::clamp_scalar_"}, names
    assert x._version - vx == y._version - vy > 0
    if not isinstance(bounds[0], torch.Tensor):
        xs = [torch.randn(3), torch.randn(2, 2)]
        before = [t._version for t in xs]
        _, names = kernel_ran(tensorops.clamp_, xs, *bounds)
        assert "tensorops::foreach_clamp_scalar_" in names, names
        assert all(t._version > v for t, v in zip(xs, before))
    for inplace in (lambda t: tensorops.clamp_(t, *bounds), lambda t: t.clamp_(*bounds)):
        a = torch.randn(4, 5, requires_grad=True)
        saved = a.exp()  # exp saves its result for backward
        inplace(saved.detach())  # shares the version counter
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.sum().backward()

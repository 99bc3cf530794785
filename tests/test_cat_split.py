"""tensorops.cat / tensorops.split against torch.cat / torch.split (values, dtype, shape, strides, errors, autograd)."""
from __future__ import annotations

import re

import pytest
import torch

import tensorops
from tensorops import reference
from conftest import kernel_ran, make_tensor, requires_compiled, requires_cuda_kernels

ALL_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
]


def make(shape, dtype=torch.float32, device="cpu", seed=None):
    seed = seed if seed is not None else hash(tuple(shape)) % 1000
    return make_tensor(shape, dtype, device, seed, low=-100)


def _layout(t: torch.Tensor):
    # strides of the dims that have more than one element (a size-1 dim's stride never matters)
    return tuple(st for st, n in zip(t.stride(), t.shape) if n > 1)


def assert_same(actual: torch.Tensor, expected: torch.Tensor, *, strides: bool = True) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.device == expected.device
    if strides and actual.numel() > 0:
        assert _layout(actual) == _layout(expected), (actual.stride(), expected.stride())
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def assert_split_same(pieces, tensor, sizes, dim):
    expected = torch.split(tensor, sizes, dim)
    assert isinstance(pieces, tuple)
    assert len(pieces) == len(expected)
    for p, e in zip(pieces, expected):
        assert p.is_contiguous()
        assert_same(p, e.contiguous())
        if p.numel() > 0:
            assert p.data_ptr() != tensor.data_ptr() or tensor.numel() == 0
    ptrs = [p.data_ptr() for p in pieces if p.numel() > 0]
    assert len(set(ptrs)) == len(ptrs)


# ---- cat: values --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_cat_dtypes_every_dim(device, dtype):
    for dim in range(-3, 3):
        shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
        for k, s in enumerate((1, 0, 5)):  # mixed sizes along dim, one of them 0
            shapes[k][dim] = s
        xs = [make(s, dtype, device, seed=k) for k, s in enumerate(shapes)]
        assert_same(tensorops.cat(xs, dim), torch.cat(xs, dim))
        assert_same(tensorops.cat(tuple(xs), dim=dim), torch.cat(xs, dim=dim))


@pytest.mark.parametrize("count", [1, 2, 1000, 100_000])
def test_cat_counts(device, count):
    xs = [torch.full((1 + k % 3,), float(k), device=device) for k in range(count)]
    assert_same(tensorops.cat(xs), torch.cat(xs))
    ys = [torch.full((2, 1 + k % 2), float(k), device=device) for k in range(min(count, 1000))]
    assert_same(tensorops.cat(ys, 1), torch.cat(ys, 1))


def test_cat_many_inputs_every_case(device):
    # 3,000 inputs take the multi-threaded checking pass; anything unusual falls back to the serial pass
    n = 3000
    base = [make((2, 1 + k % 3), device=device, seed=k % 50) for k in range(n)]
    assert_same(tensorops.cat(base, 1), torch.cat(base, 1))
    mixed = list(base)
    mixed[1700] = mixed[1700].to(torch.float64)
    assert_same(tensorops.cat(mixed, 1), torch.cat(mixed, 1))
    skipped = [torch.empty(0, device=device) if k % 7 == 3 else x for k, x in enumerate(base)]
    assert_same(tensorops.cat(skipped, -1), torch.cat(skipped, -1))
    strided = [x.t().contiguous().t() if k % 5 == 0 else x for k, x in enumerate(base)]
    assert_same(tensorops.cat(strided, 1), torch.cat(strided, 1))
    cl = [make((1, 2, 2, 3), device=device, seed=k % 50).contiguous(memory_format=torch.channels_last) for k in range(n)]
    out = tensorops.cat(cl, 1)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert_same(out, torch.cat(cl, 1))
    cl[2999] = cl[2999].contiguous()
    assert_same(tensorops.cat(cl, 1), torch.cat(cl, 1))
    bad = list(base)
    bad[2500] = make((3, 1), device=device)
    with pytest.raises(RuntimeError, match=r"tensors\[2500\]"):
        tensorops.cat(bad, 1)
    bad[2500] = torch.tensor(1.0, device=device)
    with pytest.raises(RuntimeError, match=r"tensors\[2500\]"):
        tensorops.cat(bad, 1)
    with pytest.raises(IndexError, match=r"tensors\[0\]"):
        tensorops.cat(base, 2)


def test_cat_list_over_gil_threshold(device):
    # more than 16 MB in a list: the fast path snapshots the list and releases the GIL
    xs = [torch.full((1 << 20,), float(k), device=device) for k in range(5)]
    assert_same(tensorops.cat(xs), torch.cat(xs))
    assert_same(tensorops.cat(tuple(xs)), torch.cat(xs))


def test_cat_large_rows(device):
    xs = [make((5, 7, 300), torch.float32, device, seed=1), make((5, 1, 300), torch.float32, device, seed=2)]
    assert_same(tensorops.cat(xs, 1), torch.cat(xs, 1))
    xs = [make((2, 3, 64, 64), torch.float16, device, seed=k) for k in range(4)]
    assert_same(tensorops.cat(xs, 1), torch.cat(xs, 1))


def test_alignment_paths(device):
    # piece widths and addresses that allow 16-, 8-, 4-, 2- and 1-byte units (the CUDA kernel picks one)
    for dtype, length in [(torch.float32, 16), (torch.float32, 6), (torch.float32, 3), (torch.float16, 3),
                          (torch.uint8, 5), (torch.complex128, 1), (torch.float64, 1)]:
        base = make((4, 64), dtype, device)
        xs = [base[:, :length], base[:, 1:length + 1], base[:, 8:8 + 2 * length]]  # misaligned views too
        assert_same(tensorops.cat(xs, 1), torch.cat(xs, 1))
        assert_same(tensorops.cat([x.contiguous() for x in xs], 1), torch.cat(xs, 1))
        y = make((3, 3 * length + 1), dtype, device)[:, 1:]
        sizes = [length, 2 * length, 0]
        assert_split_same(tensorops.split(y, sizes, 1), y, sizes, 1)


@requires_cuda_kernels
@pytest.mark.cuda
def test_cuda_one_launch():
    xs = [make((64 + k % 3,), device="cuda", seed=k % 10) for k in range(5000)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        out = tensorops.cat(xs)
        pieces = tensorops.split(out, [x.shape[0] for x in xs])
        torch.cuda.synchronize()
    launches = [e.name for e in prof.events() if "copy_segments_kernel" in e.name]
    assert len(launches) == 2, launches  # one for cat, one for split
    assert_same(out, torch.cat(xs))
    for p, x in zip(pieces[:10], xs):
        assert_same(p, x)


def test_cat_zero_size(device):
    cases = [
        ([torch.empty(0, device=device), make((2, 3), device=device), torch.empty(0, device=device)], (0, -1)),
        ([torch.empty(0, device=device), torch.empty(0, device=device)], (0, -1)),  # all skipped
        ([make((2, 0), device=device), make((2, 0), device=device)], (0, -1)),
        ([make((0, 3), device=device), make((0, 3), device=device)], (0, -1)),
        ([make((2, 3), device=device), make((0, 3), device=device)], (0,)),
        ([make((2, 3), device=device), make((2, 0), device=device)], (1,)),
        ([torch.empty(0, device=device), make((4,), device=device)], (0, -1)),
    ]
    for xs, dims in cases:
        for dim in dims:
            assert_same(tensorops.cat(xs, dim), torch.cat(xs, dim))
    # every input skipped: dim is never looked at, as in torch
    xs = [torch.empty(0, device=device)]
    assert_same(tensorops.cat(xs, 5), torch.cat(xs, 5))
    # a skipped input still takes part in type promotion
    xs = [torch.empty(0, dtype=torch.float64, device=device), make((2,), device=device)]
    assert_same(tensorops.cat(xs), torch.cat(xs))


def test_cat_noncontiguous(device):
    base = make((6, 8, 5), torch.float32, device)
    cases = [
        ([base.transpose(0, 1), make((8, 2, 5), device=device)], 1),  # transposed: copied first
        ([base[:, :3], base[:, 5:]], 1),  # row-strided slices: read in place
        ([base[:, :, 1:4], base[:, :, :2]], 2),
        ([base[::2], base[1::2]], 0),  # strided outer dim
        ([make((1, 8, 5), device=device).expand(3, 8, 5), base], 0),  # broadcast rows (stride 0)
        ([make((6, 1, 1), device=device).expand(6, 2, 5), base], 1),  # broadcast inner dims: copied first
        ([base.permute(2, 0, 1), base.permute(2, 0, 1)], 2),
    ]
    for xs, dim in cases:
        assert_same(tensorops.cat(xs, dim), torch.cat(xs, dim))
    c = make((3, 4), torch.complex64, device)
    for xs in ([c.conj(), c], [c, torch._neg_view(c)], [c.conj().t(), c.t()]):
        for dim in (0, 1):
            out = tensorops.cat(xs, dim)
            assert not out.is_conj()
            assert_same(out, torch.cat(xs, dim).resolve_conj())


@pytest.mark.parametrize("fmt,ndim", [(torch.channels_last, 4), (torch.channels_last_3d, 5)], ids=["2d", "3d"])
def test_cat_channels_last(device, fmt, ndim):
    shape = (2, 3, 4, 5, 3)[:ndim]
    for dim in range(-ndim, ndim):
        other = list(shape)
        other[dim] = 2
        xs = [make(shape, device=device, seed=1).contiguous(memory_format=fmt),
              make(other, device=device, seed=2).contiguous(memory_format=fmt)]
        out = tensorops.cat(xs, dim)
        assert out.is_contiguous(memory_format=fmt)
        assert_same(out, torch.cat(xs, dim))
        # one contiguous input makes the output contiguous, as in torch
        ys = [xs[0], xs[1].contiguous()]
        assert_same(tensorops.cat(ys, dim), torch.cat(ys, dim))


def test_cat_type_promotion(device):
    cases = [
        [make((2, 2), torch.int32, device), make((2, 1), torch.float16, device)],
        [make((2, 2), torch.bool, device), make((2, 2), torch.uint8, device)],
        [make((2, 2), torch.int8, device), make((2, 2), torch.uint8, device)],
        [make((2, 2), torch.bfloat16, device), make((2, 2), torch.float16, device)],
        [make((2, 2), torch.float32, device), make((2, 3), torch.complex64, device), make((2, 1), torch.int64, device)],
        [make((2, 2), torch.bool, device), make((2, 2), torch.float64, device)],
    ]
    for xs in cases:
        assert_same(tensorops.cat(xs, 1), torch.cat(xs, 1))


# ---- cat: errors --------------------------------------------------------------------------------------------
def _raises_like_torch(fn, torch_fn, position):
    with pytest.raises(Exception) as expected:
        torch_fn()
    with pytest.raises(type(expected.value)) as actual:
        fn()
    if position is not None:
        assert re.search(position, str(actual.value)), str(actual.value)
    return actual.value


CAT_ERRORS = {
    "empty": (lambda d: ([], 0), None),
    "zero_dim": (lambda d: ([make((2,), device=d), torch.tensor(1.0, device=d)], 0), r"tensors\[1\]"),
    "rank": (lambda d: ([make((2, 3), device=d), make((2, 3, 1), device=d)], 0), r"tensors\[1\]"),
    "size": (lambda d: ([make((2, 3), device=d), make((2, 3), device=d), make((3, 3), device=d)], 1), r"tensors\[2\]"),
    "dim_high": (lambda d: ([make((2, 3), device=d)], 2), r"tensors\[0\]"),
    "dim_low": (lambda d: ([torch.empty(0, device=d), make((2, 3), device=d)], -3), r"tensors\[1\]"),
    "rank_after_skip": (lambda d: ([torch.empty(0, device=d), make((2,), device=d), make((2, 2), device=d)], 0), r"tensors\[2\]"),
}


@pytest.mark.parametrize("case", list(CAT_ERRORS), ids=str)
def test_cat_errors(device, case):
    args, position = CAT_ERRORS[case]
    xs, dim = args(device)
    _raises_like_torch(lambda: tensorops.cat(xs, dim), lambda: torch.cat(xs, dim), position)
    if tensorops.is_compiled() and xs:  # the op itself, without the Python wrapper
        _raises_like_torch(lambda: torch.ops.tensorops.cat.default(xs, dim), lambda: torch.cat(xs, dim), position)


def test_cat_mixed_devices_meta():
    # no second GPU-free device type is needed: a meta tensor among CPU ones must fail like torch
    xs = [make((2, 3)), make((2, 3)), torch.empty(2, 3, device="meta")]
    with pytest.raises(RuntimeError, match=r"tensors\[2\]"):
        tensorops.cat(xs)


@requires_cuda_kernels
@pytest.mark.cuda
def test_cat_mixed_devices_cuda():
    xs = [make((2, 3), device="cuda"), make((2, 3)), make((2, 3), device="cuda")]
    with pytest.raises(RuntimeError, match=r"tensors\[1\]"):
        tensorops.cat(xs)


def test_cat_argument_types():
    with pytest.raises(TypeError):
        tensorops.cat(make((2,)))
    with pytest.raises(TypeError, match=r"tensors\[1\]"):
        tensorops.cat([make((2,)), 3.0])
    with pytest.raises(TypeError):
        tensorops.cat([make((2,))], dim=0.5)
    np = pytest.importorskip("numpy")
    xs = [make((2, 3)), make((2, 1))]
    assert_same(tensorops.cat(xs, dim=np.int64(-1)), torch.cat(xs, dim=-1))
    assert [p.shape for p in tensorops.split(xs[0], 2, dim=np.int32(1))] == [(2, 2), (2, 1)]


# ---- split: values ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_split_dtypes_every_dim(device, dtype):
    x = make((4, 5, 6), dtype, device)
    for dim in range(-3, 3):
        n = x.shape[dim]
        for sizes in (2, 1, n, n + 3, [n], [0, n, 0], [1, n - 1], [n - 2, 0, 2]):
            assert_split_same(tensorops.split(x, sizes, dim), x, sizes, dim)
        assert_split_same(tensorops.split(x, 2, dim=dim), x, 2, dim)


def test_split_many_pieces(device):
    x = make((3, 10_000), device=device)
    assert_split_same(tensorops.split(x, 1, 1), x, 1, 1)
    sizes = [k % 3 for k in range(3000)]
    y = make((sum(sizes), 2), device=device)
    assert_split_same(tensorops.split(y, sizes), y, sizes, 0)


def test_split_zero_size(device):
    for shape, dim, sizes in [((0, 3), 0, 2), ((0, 3), 0, 0), ((0, 3), 1, [1, 2]), ((2, 0), 1, [0, 0]), ((4, 0), 0, 3)]:
        x = make(shape, device=device)
        assert_split_same(tensorops.split(x, sizes, dim), x, sizes, dim)


def test_split_noncontiguous_and_channels_last(device):
    base = make((6, 8, 5), device=device)
    for x in (base.transpose(0, 2), base[:, 1:7], base[::2], make((1, 8, 5), device=device).expand(4, 8, 5)):
        for dim in range(3):
            assert_split_same(tensorops.split(x, [1, x.shape[dim] - 1], dim), x, [1, x.shape[dim] - 1], dim)
    x = make((2, 6, 4, 5), device=device).contiguous(memory_format=torch.channels_last)
    for dim in range(4):
        assert_split_same(tensorops.split(x, 2, dim), x, 2, dim)
    c = make((4, 6), torch.complex128, device)
    for x in (c.conj(), torch._neg_view(c)):
        for p, e in zip(tensorops.split(x, [2, 4], 1), torch.split(x, [2, 4], 1)):
            assert not p.is_conj() and not p.is_neg()
            assert_same(p, e.resolve_conj().resolve_neg().contiguous())


SPLIT_ERRORS = {
    "zero_dim": (lambda d: (torch.tensor(1.0, device=d), 1, 0)),
    "dim": (lambda d: (make((3,), device=d), 1, 1)),
    "dim_low": (lambda d: (make((3,), device=d), [3], -2)),
    "negative_size": (lambda d: (make((3,), device=d), -1, 0)),
    "zero_size": (lambda d: (make((3,), device=d), 0, 0)),
    "sum": (lambda d: (make((3,), device=d), [1, 1], 0)),
    "negative_section": (lambda d: (make((3,), device=d), [4, -1], 0)),
}


@pytest.mark.parametrize("case", list(SPLIT_ERRORS), ids=str)
def test_split_errors(device, case):
    x, sizes, dim = SPLIT_ERRORS[case](device)
    _raises_like_torch(lambda: tensorops.split(x, sizes, dim), lambda: torch.split(x, sizes, dim), None)


@requires_compiled
def test_split_op_errors():
    x = make((3, 4))
    with pytest.raises(RuntimeError, match="sum exactly"):
        torch.ops.tensorops.split.default(x, [1, 1], 0)
    with pytest.raises(RuntimeError, match=r"split_sizes\[1\]"):
        torch.ops.tensorops.split.default(x, [4, -1], 0)
    with pytest.raises(IndexError):
        torch.ops.tensorops.split.default(x, [4], 2)


# ---- fallback paths -------------------------------------------------------------------------------------------
def test_meta_tensors_take_the_reference_path():
    xs = [torch.empty(2, 3, device="meta"), torch.empty(2, 5, device="meta", dtype=torch.float64)]
    out = tensorops.cat(xs, 1)
    assert out.device.type == "meta" and out.shape == (2, 8) and out.dtype == torch.float64
    pieces = tensorops.split(out, [3, 5], 1)
    assert [p.shape for p in pieces] == [(2, 3), (2, 5)]
    with pytest.raises(RuntimeError, match=r"tensors\[1\]"):
        tensorops.cat([torch.empty(2, 3, device="meta"), torch.empty(3, 3, device="meta")], 1)


def test_reference_matches_torch():
    xs = [make((2, 3)), make((2, 1))]
    assert_same(reference.cat(xs, 1), torch.cat(xs, 1))
    x = make((5, 2))
    assert [p.shape for p in reference.split(x, [2, 3], 0)] == [(2, 2), (3, 2)]


# ---- autograd ------------------------------------------------------------------------------------------------
def test_cat_backward(device):
    xs = [make((3, k, 2), torch.float32, device, seed=k).requires_grad_() for k in (1, 4, 2)]
    xs.append(torch.empty(0, device=device, dtype=torch.float64, requires_grad=True))  # skipped input
    ys = [x.detach().clone().requires_grad_() for x in xs]
    out, ref = tensorops.cat(xs, -2), torch.cat(ys, -2)
    assert_same(out.detach(), ref.detach())
    g = make(out.shape, out.dtype, device, seed=9)
    out.backward(g)
    ref.backward(g)
    for x, y in zip(xs, ys):
        assert x.grad.dtype == x.dtype
        assert_same(x.grad, y.grad, strides=False)


def test_split_backward_missing_grads(device):
    x = make((4, 9), torch.float32, device).requires_grad_()
    y = x.detach().clone().requires_grad_()
    pieces = tensorops.split(x, [2, 3, 4], 1)
    ref = torch.split(y, [2, 3, 4], 1)
    (pieces[0].sum() * 3 + (pieces[2] ** 2).sum()).backward()
    (ref[0].sum() * 3 + (ref[2] ** 2).sum()).backward()
    assert_same(x.grad, y.grad, strides=False)
    # no piece used: no gradient at all
    z = make((4, 9), device=device).requires_grad_()
    p = tensorops.split(z, 3, 1)
    torch.autograd.backward([p[0].detach().sum().requires_grad_()])
    assert z.grad is None


@requires_compiled
def test_gradcheck(device):
    xs = [make((2, k, 3), torch.float64, device, seed=k).requires_grad_() for k in (1, 3)]
    assert torch.autograd.gradcheck(lambda *t: tensorops.cat(list(t), 1), xs)
    x = make((3, 7), torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: tensorops.split(t, [2, 0, 5], 1), (x,))
    assert torch.autograd.gradcheck(lambda t: tensorops.split(t, [2, 5], 1)[1], (x,))  # a missing gradient
    c = make((2, 3), torch.complex128, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: tensorops.cat([t, t.conj()], 0), (c,))


@requires_compiled
def test_opcheck(device):
    xs = [make((2, 3, 4), device=device, seed=1).requires_grad_(), make((2, 1, 4), device=device, seed=2).requires_grad_()]
    torch.library.opcheck(torch.ops.tensorops.cat.default, (xs, 1))
    torch.library.opcheck(torch.ops.tensorops.cat.default, ([make((2, 3), device=device), make((2, 3), torch.int64, device)], -1))
    x = make((4, 6, 2), device=device).requires_grad_()
    torch.library.opcheck(torch.ops.tensorops.split.default, (x, [1, 0, 5], 1))


# ---- torch.compile and proof that the compiled kernels ran -----------------------------------------------------
@requires_compiled
def test_compile_fullgraph(device):
    torch._dynamo.reset()

    def f(a, b, c):
        y = tensorops.cat([a, b * 2, c], dim=-1)
        p, q = tensorops.split(y, [3, y.shape[-1] - 3], dim=-1)
        return p.sum() + (q * q).sum()

    args = [make((4, k), device=device, seed=k).requires_grad_() for k in (2, 3, 1)]
    ref_args = [a.detach().clone().requires_grad_() for a in args]
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    out = compiled(*args)
    ref = f(*ref_args)
    torch.testing.assert_close(out, ref)
    out.backward()
    ref.backward()
    for a, r in zip(args, ref_args):
        torch.testing.assert_close(a.grad, r.grad)


@requires_compiled
def test_compile_dynamic_shapes(device):
    torch._dynamo.reset()

    def f(a, b):
        y = tensorops.cat([a, b], dim=1)
        p, q = tensorops.split(y, [2, y.shape[1] - 2], dim=1)  # symbolic split sizes
        return p * 2, q

    g = torch.compile(f, fullgraph=True, dynamic=True)
    for n in (3, 5, 7):
        a, b = make((4, n), device=device, seed=n), make((4, n + 1), device=device, seed=n + 1)
        for x, y in zip(g(a, b), f(a, b)):
            assert_same(x, y)


@requires_compiled
def test_compile_inductor(device):
    torch._dynamo.reset()
    f = torch.compile(lambda xs: tensorops.split(tensorops.cat(xs, 1), 2, 1), fullgraph=True)
    xs = [make((3, 2), device=device, seed=1), make((3, 4), device=device, seed=2)]
    for p, e in zip(f(xs), torch.split(torch.cat(xs, 1), 2, 1)):
        assert_same(p, e.contiguous())


@requires_compiled
def test_compiled_kernel_ran(device):
    xs = [make((64,), device=device, seed=k) for k in range(100)]
    out, names = kernel_ran(tensorops.cat, xs)
    assert "tensorops::cat" in names
    assert_same(out, torch.cat(xs))
    pieces, names = kernel_ran(tensorops.split, out, 64)
    assert "tensorops::split" in names
    # the autograd path runs the kernels too, in both directions
    ys = [x.clone().requires_grad_() for x in xs[:3]]
    out, names = kernel_ran(lambda: tensorops.cat(ys).sum().backward())
    assert {"tensorops::cat", "tensorops::split"} <= names

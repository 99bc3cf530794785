"""tensorops.stack / tensorops.chunk against torch.stack / torch.chunk: values, dtype, shape, errors (types and
texts), autograd, torch.compile, and proof that the cat / split kernels ran."""
from __future__ import annotations

import pytest
import torch

import tensorops
from conftest import kernel_ran, make_tensor, requires_compiled

DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
]


make = make_tensor  # seed 0, integers in [0, 100)


def same_error(fn_ours, fn_torch):
    """Both raise: the same exception type and the same message."""
    with pytest.raises(Exception) as theirs:
        fn_torch()
    with pytest.raises(type(theirs.value)) as ours:
        fn_ours()
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


# ---- stack ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_stack_dtypes(device, dtype):
    xs = [make((3, 5), dtype, device, seed=i) for i in range(4)]
    for dim in range(-3, 3):
        expected = torch.stack(xs, dim)
        actual = tensorops.stack(xs, dim)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)


@pytest.mark.parametrize(
    "shape", [(), (0,), (7,), (2, 0, 3), (4, 3, 8, 8), (1, 1, 1)], ids=lambda s: "x".join(map(str, s)) or "scalar"
)
def test_stack_shapes(device, shape):
    xs = [make(shape, torch.float32, device, seed=i) for i in range(3)]
    for dim in range(-len(shape) - 1, len(shape) + 1):
        torch.testing.assert_close(tensorops.stack(xs, dim), torch.stack(xs, dim), rtol=0, atol=0)
    torch.testing.assert_close(tensorops.stack(tuple(xs)), torch.stack(tuple(xs)), rtol=0, atol=0)


def test_stack_non_contiguous_and_promotion(device):
    base = make((6, 8, 4), torch.float32, device)
    xs = [
        base[::2, :, 0],                              # sliced
        make((8, 3), torch.float64, device).t(),      # transposed, another dtype
        make((3, 8), torch.int32, device),            # integers promote
        make((3, 16), torch.float16, device)[:, ::2],  # strided columns
    ]
    for dim in (0, 1, -1, 2):
        expected = torch.stack(xs, dim)
        actual = tensorops.stack(xs, dim)
        assert actual.dtype == expected.dtype == torch.float64
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    cl = [make((2, 3, 4, 5), torch.float32, device, seed=i).contiguous(memory_format=torch.channels_last) for i in range(3)]
    torch.testing.assert_close(tensorops.stack(cl, 1), torch.stack(cl, 1), rtol=0, atol=0)


def test_stack_many_small(device):
    xs = [make((3,), torch.float32, device, seed=i) for i in range(2000)]
    torch.testing.assert_close(tensorops.stack(xs, 1), torch.stack(xs, 1), rtol=0, atol=0)


@pytest.mark.parametrize(
    "args",
    [
        lambda a: ([],),
        lambda a: ((),),
        lambda a: (a,),
        lambda a: ([a, 1],),
        lambda a: ([a, torch.ones(2, 4)],),
        lambda a: ([a, torch.ones(3)],),
        lambda a: ([a, a], 3),
        lambda a: ([a, a], -4),
        lambda a: ([a, a], 1.0),
        lambda a: ([a, a], True),
        lambda a: ([a, a.to("meta")],),
    ],
    ids=["empty-list", "empty-tuple", "tensor", "non-tensor", "sizes", "ranks", "dim-high", "dim-low", "dim-float",
         "dim-bool", "devices"],
)
def test_stack_errors_match_torch(args):
    a = torch.ones(2, 3)
    same_error(lambda: tensorops.stack(*args(a)), lambda: torch.stack(*args(a)))


def test_stack_out(device):
    xs = [make((2, 3), torch.float32, device, seed=i) for i in range(3)]
    out = torch.empty(0, device=device)
    res = tensorops.stack(xs, 1, out=out)
    assert res is out
    torch.testing.assert_close(out, torch.stack(xs, 1), rtol=0, atol=0)
    bad = torch.empty(3, 2, 3, dtype=torch.int64, device=device)
    same_error(lambda: tensorops.stack(xs, out=bad), lambda: torch.stack(xs, out=bad.clone()))


def test_stack_autograd(device):
    xs = [make((3, 4), torch.float64, device, seed=i).requires_grad_() for i in range(3)]
    assert torch.autograd.gradcheck(lambda *t: tensorops.stack(list(t), -1), xs)
    g = make((3, 3, 4), torch.float32, device, seed=9)
    a = [make((3, 4), torch.float32, device, seed=i).requires_grad_() for i in range(3)]
    b = [t.detach().clone().requires_grad_() for t in a]
    tensorops.stack(a, 0).backward(g)
    torch.stack(b, 0).backward(g)
    for x, y in zip(a, b):
        torch.testing.assert_close(x.grad, y.grad)


@requires_compiled
def test_stack_runs_cat_kernel_once(device):
    xs = [make((3, 4), torch.float32, device, seed=i) for i in range(50)]
    out, names = kernel_ran(tensorops.stack, xs, 1)
    assert "tensorops::cat" in names
    torch.testing.assert_close(out, torch.stack(xs, 1), rtol=0, atol=0)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        tensorops.stack(xs, 1)
    calls = [e for e in prof.events() if e.name == "tensorops::cat"]
    assert len(calls) == 1  # one pass for the whole list


@requires_compiled
def test_stack_compile_fullgraph(device):
    torch._dynamo.reset()
    xs = [make((3, 4), torch.float32, device, seed=i).requires_grad_() for i in range(3)]
    fn = torch.compile(lambda a, b, c: tensorops.stack([a, b, c], -1) * 2, fullgraph=True, backend="aot_eager")
    out = fn(*xs)
    torch.testing.assert_close(out, torch.stack(xs, -1) * 2)
    out.sum().backward()
    torch.testing.assert_close(xs[0].grad, torch.full_like(xs[0], 2.0))


# ---- chunk ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [0, 1, 5, 6, 7, 16, 17])
@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 6, 20])
def test_chunk_piece_sizes(size, chunks):
    x = torch.arange(size * 2, dtype=torch.float32).view(size, 2)
    expected = torch.chunk(x, chunks)
    actual = tensorops.chunk(x, chunks)
    assert [p.shape for p in actual] == [p.shape for p in expected]
    for a, e in zip(actual, expected):
        assert a.is_contiguous()
        torch.testing.assert_close(a, e, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_chunk_dtypes_and_dims(device, dtype):
    x = make((5, 6, 7), dtype, device)
    for dim in range(-3, 3):
        for chunks in (1, 2, 3, 4):
            expected = torch.chunk(x, chunks, dim)
            actual = tensorops.chunk(x, chunks, dim)
            assert isinstance(actual, tuple) and len(actual) == len(expected)
            for a, e in zip(actual, expected):
                assert a.dtype == e.dtype and a.is_contiguous()
                torch.testing.assert_close(a, e, rtol=0, atol=0)


def test_chunk_non_contiguous_copies(device):
    x = make((8, 10, 6), torch.float32, device).permute(2, 0, 1)[:, ::2]
    pieces = tensorops.chunk(x, 3, dim=-1)
    for a, e in zip(pieces, torch.chunk(x, 3, dim=-1)):
        assert a.is_contiguous()
        torch.testing.assert_close(a, e, rtol=0, atol=0)
    y = make((6, 4), torch.float32, device)
    pieces = tensorops.chunk(y, 2)
    pieces[0].fill_(123.0)  # a copy: the input is untouched
    assert not (y == 123.0).any()


@pytest.mark.parametrize(
    "args",
    [
        lambda a: (a, 0),
        lambda a: (a, -1),
        lambda a: (a, 2.0),
        lambda a: (a, True),
        lambda a: (torch.tensor(1.0), 2),
        lambda a: (a, 2, 2),
        lambda a: (a, 2, -3),
        lambda a: ([1], 2),
    ],
    ids=["zero", "negative", "float", "bool", "scalar-input", "dim-high", "dim-low", "list-input"],
)
def test_chunk_errors_match_torch(args):
    a = torch.ones(2, 3)
    same_error(lambda: tensorops.chunk(*args(a)), lambda: torch.chunk(*args(a)))


def test_chunk_autograd(device):
    x = make((7, 3), torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: tensorops.chunk(t, 3), (x,))
    # a piece without a gradient: zeros there, as torch
    y = x.detach().clone().requires_grad_()
    z = x.detach().clone().requires_grad_()
    (tensorops.chunk(y, 3)[1] * 3).sum().backward()
    (torch.chunk(z, 3)[1] * 3).sum().backward()
    torch.testing.assert_close(y.grad, z.grad)


@requires_compiled
def test_chunk_runs_split_kernel_once(device):
    x = make((100, 8), torch.float32, device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        pieces = tensorops.chunk(x, 7)
    calls = [e for e in prof.events() if e.name == "tensorops::split"]
    assert len(calls) == 1
    for a, e in zip(pieces, torch.chunk(x, 7)):
        torch.testing.assert_close(a, e, rtol=0, atol=0)


@requires_compiled
def test_chunk_compile_fullgraph(device):
    torch._dynamo.reset()
    x = make((9, 4), torch.float32, device).requires_grad_()
    fn = torch.compile(lambda t: [p * 2 for p in tensorops.chunk(t, 4, -2)], fullgraph=True, backend="aot_eager")
    out = fn(x)
    for a, e in zip(out, torch.chunk(x * 2, 4, -2)):
        torch.testing.assert_close(a, e)
    sum(p.sum() for p in out).backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))


def test_stack_chunk_roundtrip(device):
    x = make((4, 3, 5), torch.float32, device)
    pieces = tensorops.chunk(x, 4)
    torch.testing.assert_close(tensorops.stack([p.squeeze(0) for p in pieces]), x, rtol=0, atol=0)

"""GPU-only checks of the CUDA kernels (every test here is marked `cuda`; the large ones `slow` too):

* index width: tensors of about 1.2e9 and 1.8e9 elements (32-bit path, where grid-stride counters used to wrap)
  and over 2^31 elements (64-bit path), for normalize forward/backward, clamp with number and tensor bounds and
  its backward, cat and split;
* determinism: under torch.use_deterministic_algorithms(True) the bound/statistics gradients are bitwise equal
  from run to run (the kernels then leave the sums to torch's fixed-order reductions);
* CUDA graphs: capture, then an eager call with other tensors (another copy table, other coefficients), then a
  replay with new values in the static inputs, for every op;
* normalize backward with more statistics entries than the shared-memory path holds;
* layouts that exercise the launch plans' fast divisors (many dimensions that cannot merge, inner dimensions
  shorter than a thread's 4 elements), normalize's vector stores from an NHWC input, and cat/split with pieces
  of different alignments (copy units chosen per piece).

The kernels are called through torch.ops.tensorops.* so that no fallback can stand in for them.
"""
from __future__ import annotations

import gc

import pytest
import torch

import tensorops

from clamp_expect import clamp_grads_by_slices, is_dense, stepped_rows_of_3
from conftest import kernel_ran, requires_cuda_kernels

pytestmark = [pytest.mark.cuda, requires_cuda_kernels]
ops = torch.ops.tensorops

SIZES = [
    pytest.param(1_200_000_000, id="1.2e9"),
    pytest.param(1_800_000_000, id="1.8e9"),
    pytest.param(2**31 + 3 * 2**20 + 7, id="over2^31"),
]
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture
def free_gpu():
    """Large tests release their memory before the next one allocates."""
    yield
    gc.collect()
    torch.cuda.empty_cache()


def _need_bytes(n: int) -> None:
    free, _ = torch.cuda.mem_get_info()
    if free < n:
        pytest.skip(f"needs {n / 2**30:.0f} GiB of free GPU memory, {free / 2**30:.0f} GiB free")


def _pattern_u8(n: int, chunk: int = 1 << 28) -> torch.Tensor:
    # a cheap non-constant pattern over every position (the high part of the index mixes in), built in chunks
    out = torch.empty(n, device="cuda", dtype=torch.uint8)
    for start in range(0, n, chunk):
        i = torch.arange(start, min(n, start + chunk), device="cuda", dtype=torch.int64)
        out[start:start + chunk] = ((i * 7 + (i >> 20)) % 251).to(torch.uint8)
    return out


def _pattern_half(n: int) -> torch.Tensor:
    return (_pattern_u8(n).to(torch.float16) - 125) / 8


def _assert_equal_chunked(a: torch.Tensor, b: torch.Tensor, what: str, chunk: int = 1 << 28) -> None:
    a, b = a.reshape(-1), b.reshape(-1)
    assert a.shape == b.shape, what
    for start in range(0, a.numel(), chunk):
        x, y = a[start:start + chunk], b[start:start + chunk]
        if not torch.equal(x, y):
            bad = (x != y).nonzero()[:5].flatten() + start
            raise AssertionError(f"{what}: differs at flat positions {bad.tolist()} (of {a.numel()})")


# ---- index width: 1.2e9, 1.8e9 (32-bit path) and > 2^31 (64-bit path) elements -------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_normalize_forward(n, free_gpu):
    _need_bytes(n * 10)
    c = 3
    x = _pattern_u8(n - n % c).view(c, -1)  # CHW with H*W huge
    y = ops.normalize.default(x, MEAN, STD, 0, 1 / 255, torch.float16, torch.preserve_format)
    mean = torch.tensor(MEAN, device="cuda").view(c, 1)
    std = torch.tensor(STD, device="cuda").view(c, 1)
    # (the float32 reference per channel, in float16 like the kernel's output)
    for k in range(c):
        ref = ((x[k].float() * (1 / 255) - mean[k]) / std[k]).half()
        torch.testing.assert_close(y[k], ref, rtol=1e-3, atol=2e-3, msg=lambda m, k=k: f"channel {k}: {m}")
        del ref


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_normalize_backward(n, free_gpu):
    _need_bytes(n * 9)
    c = 3
    x = _pattern_half(n - n % c).view(1, c, -1)
    g = torch.ones_like(x)
    mean = torch.tensor(MEAN, device="cuda").view(1, c, 1)
    std = torch.tensor(STD, device="cuda").view(1, c, 1)
    gi, gm, gs = ops.normalize_tensor_backward.default(g, x, mean, std, 1.0, [True, True, True])
    # d input = g / std per channel (exact pattern), d mean = -count / std
    for k in range(c):  # every element of a channel gets the same a = 1 / std
        assert bool((gi[0, k] == gi[0, k, 0]).all()), f"grad_input channel {k} is not constant"
        torch.testing.assert_close(gi[0, k, 0].float().item(), 1 / STD[k], rtol=1e-3, atol=0)
    count = x.shape[-1]
    torch.testing.assert_close(gm.flatten().double(), -count / std.flatten().double(), rtol=1e-3, atol=0)
    ref_gs = torch.stack([-((x[0, k].float() - mean[0, k]) / std[0, k]).double().sum() / std[0, k].double()
                          for k in range(c)])
    torch.testing.assert_close(gs.flatten().double(), ref_gs, rtol=2e-3, atol=1e-3 * count)


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("inplace", [False, True], ids=["out", "inplace"])
def test_large_clamp_number_bounds(n, inplace, free_gpu):
    _need_bytes(n * 6)
    x = _pattern_half(n)
    expected = torch.clamp(x, -5.0, 7.5)
    if inplace:
        ops.clamp_scalar_.default(x, -5.0, 7.5)
        got = x
    else:
        got = ops.clamp_scalar.default(x, -5.0, 7.5)
    _assert_equal_chunked(got, expected, "clamp with number bounds")


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_clamp_number_bounds_strided(n, free_gpu):
    _need_bytes(n * 7)
    # rows of 3 with a row stride of 4 (about n elements): not dense, so the strided kernel runs (a transposed view
    # is dense and laid out like its output: the contiguous vector kernel would take it)
    x = stepped_rows_of_3(_pattern_half(n + n // 3 + 4))
    assert not is_dense(x)
    got = ops.clamp_scalar.default(x, -5.0, 7.5)
    assert got.is_contiguous()
    _assert_equal_chunked(got, torch.clamp(x, -5.0, 7.5), "clamp of a strided view")


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_clamp_tensor_bounds(n, free_gpu):
    _need_bytes(n * 6)
    x = _pattern_half(n - n % 4).view(-1, 4)
    lo = torch.tensor([-5.0, -1.0, 0.0, -10.0], device="cuda", dtype=torch.float16)
    hi = torch.tensor([7.5, 1.0, 3.0, 10.0], device="cuda", dtype=torch.float16)
    got = ops.clamp.default(x, lo, hi)
    _assert_equal_chunked(got, torch.clamp(x, lo, hi), "clamp with per-column tensor bounds")


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_clamp_backward(n, free_gpu):
    # float32: the bounds' gradients are counts here, too large for float16. The pattern ties both bounds of the
    # first three columns (x == -5, 7.5, -1, 1, 0, 3 occur): the weights there are torch's (clamp_expect.py)
    _need_bytes(n * 16)
    x = _pattern_half(n - n % 4).float().view(-1, 4)
    lo = torch.tensor([-5.0, -1.0, 0.0, -20.0], device="cuda")
    hi = torch.tensor([7.5, 1.0, 3.0, 20.0], device="cuda")
    g = torch.ones_like(x)
    gi, glo, ghi = ops.clamp_backward.default(g, x, lo, hi, [True, True, True])
    del g

    def check(start, expected):
        _assert_equal_chunked(gi[start:start + expected.shape[0]], expected, f"clamp grad_input (rows from {start})")

    ref_lo, ref_hi = clamp_grads_by_slices(x, lo, hi, check)
    torch.testing.assert_close(glo.double(), ref_lo, rtol=1e-4, atol=1.0)  # float32 sums of ones and halves
    torch.testing.assert_close(ghi.double(), ref_hi, rtol=1e-4, atol=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_clamp_number_bounds_backward(n, free_gpu):
    _need_bytes(n * 7)
    x = _pattern_half(n)  # ties both bounds (x == -5 and x == 7.5 occur): number bounds give them 0
    g = torch.ones_like(x)
    gi = ops.clamp_scalar_backward.default(g, x, -5.0, 7.5)
    del g

    def check(start, expected):
        _assert_equal_chunked(gi[start:start + expected.numel()], expected,
                              f"clamp_scalar grad_input (from {start})")

    clamp_grads_by_slices(x, -5.0, 7.5, check)


@pytest.mark.slow
@pytest.mark.parametrize("n", SIZES)
def test_large_cat_and_split(n, free_gpu):
    _need_bytes(n * 3)
    x = _pattern_u8(n)
    sizes = [n // 3, n // 3 + 17, n - 2 * (n // 3) - 17]
    pieces = ops.split.default(x, sizes, 0)
    offset = 0
    for p, s in zip(pieces, sizes):
        _assert_equal_chunked(p, x[offset:offset + s], f"split piece at {offset}")
        offset += s
    del x
    y = ops.cat.default(list(pieces), 0)
    _assert_equal_chunked(y, torch.cat(pieces), "cat of the pieces")


# ---- determinism ------------------------------------------------------------------------------------------------------
@pytest.fixture
def deterministic():
    before, warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(before, warn_only=warn)


@pytest.mark.parametrize("entries", [3, 600, 5000])  # shared-memory path, and the global one (> 512 entries)
def test_deterministic_normalize_backward(entries, deterministic):
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(64, entries, 32, device="cuda", generator=gen)
    mean = torch.randn(1, entries, 1, device="cuda", generator=gen)
    std = torch.rand(1, entries, 1, device="cuda", generator=gen) + 0.5
    g = torch.randn_like(x)
    runs = [ops.normalize_tensor_backward.default(g, x, mean, std, 1.0, [True, True, True]) for _ in range(3)]
    for r in runs[1:]:
        for a, b in zip(runs[0], r):
            assert torch.equal(a, b), "repeated backward passes differ under deterministic algorithms"
    # and the result is the gradient
    y = (x - mean) / std
    torch.testing.assert_close(runs[0][1], -(g.sum((0, 2), keepdim=True)) / std, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(runs[0][2], -((g * y).sum((0, 2), keepdim=True)) / std, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("entries", [4, 5000])  # shared-memory partials, and global atomics (> 2048 entries)
def test_deterministic_clamp_backward(entries, deterministic):
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(4096, entries, device="cuda", generator=gen)
    lo = torch.randn(entries, device="cuda", generator=gen) - 0.5
    hi = lo + 1.0
    g = torch.randn_like(x)
    runs = [ops.clamp_backward.default(g, x, lo, hi, [True, True, True]) for _ in range(3)]
    for r in runs[1:]:
        for a, b in zip(runs[0], r):
            assert torch.equal(a, b), "repeated backward passes differ under deterministic algorithms"
    torch.testing.assert_close(runs[0][1], torch.where(x < lo, g, 0).sum(0), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(runs[0][2], torch.where(x > hi, g, 0).sum(0), rtol=1e-4, atol=1e-3)


# ---- normalize backward with more statistics entries than shared memory holds ----------------------------------------
@pytest.mark.parametrize("entries", [513, 2000])
def test_normalize_backward_many_statistics_entries(entries):
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(3, entries, 5, 7, device="cuda", dtype=torch.float64, generator=gen)
    mean = torch.randn(1, entries, 1, 1, device="cuda", dtype=torch.float64, generator=gen).requires_grad_()
    std = (torch.rand(1, entries, 1, 1, device="cuda", dtype=torch.float64, generator=gen) + 0.5).requires_grad_()
    xr = x.clone().requires_grad_()
    g = torch.randn_like(x)
    gi, gm, gs = ops.normalize_tensor_backward.default(g, x, mean.detach(), std.detach(), 1.0, [True, True, True])
    ((xr - mean) / std).backward(g)
    torch.testing.assert_close(gi, xr.grad)
    torch.testing.assert_close(gm, mean.grad)
    torch.testing.assert_close(gs, std.grad)


# ---- CUDA graphs: capture -> an eager call with another table -> replay -------------------------------------------------
def _capture(fn, static):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn(*[t.clone() for t in static])  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(*static)
    return graph, out


def _u8(*shape, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, 256, shape, device="cuda", dtype=torch.uint8, generator=gen)


def _f(*shape, seed, dtype=torch.float32):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, device="cuda", generator=gen).to(dtype)


def _norm_list(x, mean, std):
    return ops.normalize.default(x, mean, std, 1, 1 / 255, torch.float32, torch.preserve_format)


def _norm_ref(x, mean, std):
    m = torch.tensor(mean, device="cuda").view(1, -1, 1, 1)
    s = torch.tensor(std, device="cuda").view(1, -1, 1, 1)
    return (x.float() / 255 - m) / s


GRAPH_CASES = {
    # name: (make static inputs (seed), the op, the reference, make the eager call's other inputs (seed))
    "normalize": (lambda s: [_u8(2, 3, 9, 11, seed=s)],
                  lambda x: _norm_list(x, MEAN, STD),
                  lambda x: _norm_ref(x, MEAN, STD),
                  lambda s: (lambda: _norm_list(_u8(1, 3, 5, 5, seed=s), [0.1, 0.2, 0.3], [0.9, 0.8, 0.7]))),
    "normalize_tensor": (lambda s: [_f(2, 70, 4, 5, seed=s), _f(1, 70, 1, 1, seed=s + 10),
                                    _f(1, 70, 1, 1, seed=s + 20).abs() + 0.5],
                         lambda x, m, sd: ops.normalize_tensor.default(x, m, sd, 1.0, torch.float32, torch.preserve_format),
                         lambda x, m, sd: (x - m) / sd,
                         lambda s: (lambda: ops.normalize_tensor.default(_f(1, 3, 2, 2, seed=s), _f(1, 3, 1, 1, seed=s),
                                                                         _f(1, 3, 1, 1, seed=s).abs() + 1, 1.0,
                                                                         torch.float32, torch.preserve_format))),
    "normalize_backward": (lambda s: [_f(2, 600, 3, seed=s), _f(2, 600, 3, seed=s + 1), _f(1, 600, 1, seed=s + 2),
                                      _f(1, 600, 1, seed=s + 3).abs() + 0.5],
                           lambda g, x, m, sd: ops.normalize_tensor_backward.default(g, x, m, sd, 1.0, [True, True, True]),
                           lambda g, x, m, sd: (g / sd, -g.sum((0, 2), keepdim=True) / sd,
                                                -(g * (x - m) / sd).sum((0, 2), keepdim=True) / sd),
                           lambda s: (lambda: ops.normalize_tensor_backward.default(
                               _f(4, 3, seed=s), _f(4, 3, seed=s), _f(1, 3, seed=s), _f(1, 3, seed=s).abs() + 1, 1.0,
                               [True, True, True]))),
    "clamp": (lambda s: [_f(33, 17, seed=s), _f(17, seed=s + 1) - 1, _f(17, seed=s + 2) + 1],
              lambda x, lo, hi: ops.clamp.default(x, lo, hi),
              lambda x, lo, hi: torch.clamp(x, lo, hi),
              lambda s: (lambda: ops.clamp.default(_f(5, seed=s), _f(5, seed=s), None))),
    "clamp_scalar": (lambda s: [_f(1001, seed=s)],
                     lambda x: ops.clamp_scalar.default(x, -0.5, 0.25),
                     lambda x: torch.clamp(x, -0.5, 0.25),
                     lambda s: (lambda: ops.clamp_scalar.default(_f(7, seed=s), 0.0, None))),
    "clamp_backward": (lambda s: [_f(64, 40, seed=s), _f(64, 40, seed=s + 1), _f(40, seed=s + 2) - 0.5,
                                  _f(40, seed=s + 3) + 0.5],
                       lambda g, x, lo, hi: ops.clamp_backward.default(g, x, lo, hi, [True, True, True]),
                       lambda g, x, lo, hi: (torch.where((x >= lo) & (x <= hi), g, 0),
                                             torch.where(x < lo, g, 0).sum(0), torch.where(x > hi, g, 0).sum(0)),
                       lambda s: (lambda: ops.clamp_backward.default(_f(3, seed=s), _f(3, seed=s), _f(3, seed=s), None,
                                                                     [True, True, False]))),
    "clamp_scalar_backward": (lambda s: [_f(999, seed=s), _f(999, seed=s + 1)],
                              lambda g, x: ops.clamp_scalar_backward.default(g, x, -0.5, 0.5),
                              lambda g, x: torch.where((x >= -0.5) & (x <= 0.5), g, 0),
                              lambda s: (lambda: ops.clamp_scalar_backward.default(_f(3, seed=s), _f(3, seed=s), 0.0, None))),
    # few pieces: the table travels in the kernel parameters
    "cat_small": (lambda s: [_f(5, 3, seed=s), _f(5, 4, seed=s + 1), _f(5, 1, seed=s + 2)],
                  lambda *xs: ops.cat.default(list(xs), 1),
                  lambda *xs: torch.cat(xs, 1),
                  lambda s: (lambda: ops.cat.default([_f(2, 2, seed=s), _f(2, 9, seed=s)], 1))),
    "split_small": (lambda s: [_f(12, 6, seed=s)],
                    lambda x: ops.split.default(x, [5, 0, 7], 0),
                    lambda x: torch.split(x, [5, 0, 7], 0),
                    lambda s: (lambda: ops.split.default(_f(9, seed=s), [1, 8], 0))),
    # more pieces than fit in the parameters: a device table filled by kernels while capturing
    "cat_many": (lambda s: [_f(3, 1 + k % 4, seed=s + k) for k in range(150)],
                 lambda *xs: ops.cat.default(list(xs), 1),
                 lambda *xs: torch.cat(xs, 1),
                 lambda s: (lambda: ops.cat.default([_f(2, 2, seed=s + k) for k in range(130)], 1))),
    "split_many": (lambda s: [_f(300, 2, seed=s)],
                   lambda x: ops.split.default(x, [2] * 150, 0),
                   lambda x: torch.split(x, [2] * 150, 0),
                   lambda s: (lambda: ops.split.default(_f(260, seed=s), [2] * 130, 0))),
}


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("name", list(GRAPH_CASES))
def test_graph_capture_eager_call_then_replay(name):
    make, op, ref, other = GRAPH_CASES[name]
    static = make(0)
    graph, out = _capture(op, static)
    for seed in (1, 2):
        eager = other(100 + seed)()  # another table / other coefficients between capture and replay
        torch.cuda.synchronize()
        del eager
        for dst, src in zip(static, make(seed)):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        for got, want in zip(_as_list(out), _as_list(ref(*static))):
            torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-5, atol=1e-5,
                                       msg=lambda m, seed=seed: f"{name} replay {seed}: {m}")


def _capture_raises(fn, match):
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        graph.capture_begin()
        try:
            with pytest.raises(RuntimeError, match=match):
                fn()
        finally:
            graph.capture_end()  # nothing was captured
    torch.cuda.current_stream().wait_stream(side)


def test_graph_capture_of_normalize_with_many_number_statistics_replays_its_statistics():
    # more than 64 number statistics: a table uploaded by fill kernels while capturing (device_table.cuh), so a
    # replay uses the statistics of capture time even after eager calls with others
    mean, std = [i / 140 for i in range(70)], [0.25 + i / 280 for i in range(70)]
    static = [_u8(1, 70, 2, 2, seed=0)]
    graph, out = _capture(lambda x: _norm_list(x, mean, std), static)
    for seed in (1, 2):
        _norm_list(_u8(1, 70, 2, 2, seed=seed), [0.0] * 70, [1.0] * 70)  # an eager call with other statistics
        static[0].copy_(_u8(1, 70, 2, 2, seed=seed))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, _norm_ref(static[0], mean, std))


def test_many_statistics_and_large_tables_never_synchronize():
    # tables above the kernel-parameter size (crop_mirror_normalize of 256 samples, normalize of 70 number
    # statistics, cat of 200 pieces) go to the device without a stream synchronization
    x = _u8(256, 3, 16, 16, seed=0)
    m, sd = torch.full((3,), 0.5, device="cuda"), torch.full((3,), 0.25, device="cuda")
    pieces = [_f(2, 3, seed=i) for i in range(200)]
    y = _u8(1, 70, 2, 2, seed=1)
    tensorops.crop_mirror_normalize(x, m, sd, size=(8, 8))  # first calls outside the check (caches, allocator)
    _norm_list(y, [0.5] * 70, [0.25] * 70)
    tensorops.cat(pieces, dim=1)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        tensorops.crop_mirror_normalize(x, m, sd, size=(8, 8))
        _norm_list(y, [0.5] * 70, [0.25] * 70)
        tensorops.cat(pieces, dim=1)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()


def test_graph_capture_of_crop_mirror_normalize_is_a_clear_error():
    x = _u8(4, 3, 12, 10, seed=0)
    tensorops.crop_mirror_normalize(x, [0.5] * 3, [0.25] * 3, size=(6, 5))  # eager: fine
    _capture_raises(lambda: tensorops.crop_mirror_normalize(x, [0.5] * 3, [0.25] * 3, size=(6, 5)),
                    r"crop_mirror_normalize\(\): cannot be captured in a CUDA graph")


def test_graph_capture_of_resized_crop_mirror_normalize_is_a_clear_error():
    x = _u8(4, 3, 12, 10, seed=0)
    tensorops.resized_crop_mirror_normalize(x, [0.5] * 3, [0.25] * 3, size=(6, 5))  # eager: fine
    _capture_raises(lambda: tensorops.resized_crop_mirror_normalize(x, [0.5] * 3, [0.25] * 3, size=(6, 5)),
                    r"resized_crop_mirror_normalize\(\): cannot be captured in a CUDA graph")


def test_resized_crop_mirror_normalize_real_batch_matches_the_cpu_kernel():
    """32 photo-sized images (300-500 px) -> (32, 3, 224, 224): the CUDA kernel (2-D taps per thread) against the
    CPU kernel (separable tables), both from resize.h's weights."""
    g = torch.Generator().manual_seed(5)
    sizes = [(300 + int(torch.randint(0, 200, (), generator=g)), 300 + int(torch.randint(0, 200, (), generator=g)))
             for _ in range(32)]
    images = [torch.randint(0, 256, (3, H, W), dtype=torch.uint8, generator=g) for H, W in sizes]
    boxes = torch.tensor([[H * 0.1, W * 0.05, H * 0.7, W * 0.8] for H, W in sizes], dtype=torch.float64)
    mirror = torch.arange(32) % 3 == 0
    args = dict(size=224, boxes=boxes, mirror=mirror)
    cpu = tensorops.resized_crop_mirror_normalize(images, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], **args)
    gpu, ran = kernel_ran(tensorops.resized_crop_mirror_normalize, [im.cuda() for im in images],
                          [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], **args)
    assert "tensorops::resized_crop_mirror_normalize_list" in ran
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-4, atol=1e-4)


def test_graph_capture_of_list_clamp_goes_to_torch_foreach_and_replays():
    static = [_f(33, 17, seed=0), _f(5, seed=1)]
    graph, out = _capture(lambda *xs: tensorops.clamp(list(xs), -0.5, 0.25), static)
    for seed in (1, 2):
        tensorops.clamp([_f(7, seed=seed), _f(3, 3, seed=seed)], 0.0, 0.1)  # an eager call with another table
        for dst, src in zip(static, [_f(33, 17, seed=seed), _f(5, seed=seed + 1)]):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        for got, x in zip(out, static):
            torch.testing.assert_close(got, torch.clamp(x, -0.5, 0.25), rtol=0, atol=0)


# ---- argument checks that need two devices ---------------------------------------------------------------------------
@pytest.mark.parametrize("grad_device, input_device", [("cpu", "cuda"), ("cuda", "cpu")])
def test_normalize_backward_checks_grad_device(grad_device, input_device):
    x = torch.randn(1, 3, 2, 2, device=input_device)
    mean = torch.zeros(1, 3, 1, 1, device=input_device)
    std = torch.ones(1, 3, 1, 1, device=input_device)
    g = torch.randn(1, 3, 2, 2, device=grad_device)
    with pytest.raises((ValueError, RuntimeError), match=r"grad.* is on"):
        ops.normalize_tensor_backward.default(g, x, mean, std, 1.0, [True, True, True])


# ---- launch plans (fast divisors, stepping to neighbours), vector stores, per-piece copy units ----------------------
def _rand(shape, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8).cuda()
    return torch.randn(shape, generator=gen).to(dtype).cuda()


MANY_DIMS = (3, 5, 2, 7, 3, 2, 5, 3)  # 18,900 elements
MANY_PERM = (7, 2, 5, 0, 3, 6, 1, 4)  # no two neighbours merge: an 8-dimension plan, every size a divisor


# (input, the dim that per-channel operands vary along), built when a test runs (no GPU work at collection).
# Inputs with gaps between their dimensions, so that the plan cannot merge them (the outputs are dense).
LAYOUTS = {
    "many_dims": lambda: (_rand(tuple(2 * s for s in MANY_DIMS), seed=3)[tuple(slice(None, None, 2) for _ in
                                                                            MANY_DIMS)].permute(MANY_PERM), 1),
    # inner plan dimension 3: shorter than a thread's 4 elements
    "inner3": lambda: (_rand((1001, 8), seed=4)[:, 1:7:2], 1),
    "inner5": lambda: (_rand((77, 3, 11), seed=5)[:, :, :10:2], 2),
    "odd_slice": lambda: (_rand((7, 13, 11), seed=6)[:, 1:, ::2], 0),  # odd sizes, three dimensions
}


def _stat(x, dim, seed, positive=False):
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    t = _rand(tuple(shape), seed=seed)
    return t.abs() + 0.5 if positive else t


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_plans_with_many_dims_and_short_inner_dims_normalize(layout):
    x, dim = LAYOUTS[layout]()
    xu8 = ((x * 40 + 128).clamp(0, 255)).to(torch.uint8)
    c = x.shape[dim]
    mean, std = [0.1 * k for k in range(c)], [0.5 + 0.25 * k for k in range(c)]
    for dtype in (torch.float32, torch.float16):
        got = ops.normalize.default(xu8, mean, std, dim, 1 / 255, dtype, torch.preserve_format)
        ref = tensorops.reference.normalize(xu8, mean, std, dim=dim, scale=1 / 255, dtype=dtype)
        torch.testing.assert_close(got, ref, rtol=1e-3, atol=1e-3)
    m, s = _stat(x, dim, 7), _stat(x, dim, 8, positive=True)
    got = ops.normalize_tensor.default(x, m, s, 1.0, torch.float32, torch.preserve_format)
    torch.testing.assert_close(got, tensorops.reference.normalize(x, m, s, dim=dim, scale=1.0, dtype=torch.float32))
    g = _rand(tuple(x.shape), seed=9)
    gi, gm, gs = ops.normalize_tensor_backward.default(g, x, m, s, 1.0, [True, True, True])
    xr, mr, sr = x.clone().requires_grad_(), m.clone().requires_grad_(), s.clone().requires_grad_()
    ((xr - mr) / sr).backward(g)
    torch.testing.assert_close(gi, xr.grad)
    torch.testing.assert_close(gm, mr.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(gs, sr.grad, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_plans_with_many_dims_and_short_inner_dims_clamp(layout):
    x, dim = LAYOUTS[layout]()
    lo, hi = _stat(x, dim, 10) - 0.5, _stat(x, dim, 11) + 0.5
    torch.testing.assert_close(ops.clamp.default(x, lo, hi), torch.clamp(x, lo, hi), rtol=0, atol=0)
    torch.testing.assert_close(ops.clamp_scalar.default(x, -0.5, 0.75), torch.clamp(x, -0.5, 0.75), rtol=0, atol=0)
    g = _rand(tuple(x.shape), seed=12)
    got = ops.clamp_backward.default(g, x, lo, hi, [True, True, True])
    ref = tensorops.reference.clamp_backward(g, x, lo, hi, [True, True, True])
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ops.clamp_scalar_backward.default(g, x, -0.5, 0.75),
                               tensorops.reference.clamp_backward(g, x, -0.5, 0.75, [True, False, False])[0],
                               rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 3, 224, 223), (3, 4, 9, 1), (1, 1, 1, 5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("misaligned", [False, True], ids=["aligned", "offset_input"])
def test_normalize_nhwc_input_to_nchw_output(shape, dtype, misaligned):
    # the output is dense and walked in order, so it is stored in vectors whatever the input's layout
    n, c, h, w = shape
    storage = _rand((n * c * h * w + 1,), torch.uint8, seed=13)
    start = int(misaligned)
    x = storage[start:start + n * c * h * w].view(n, h, w, c).permute(0, 3, 1, 2)  # NHWC memory, NCHW shape
    mean, std = [0.2 * k for k in range(c)], [0.5 + 0.1 * k for k in range(c)]
    got = ops.normalize.default(x, mean, std, 1, 1 / 255, dtype, torch.contiguous_format)
    assert got.is_contiguous()
    ref = tensorops.reference.normalize(x, mean, std, dim=1, scale=1 / 255, dtype=dtype,
                                        memory_format=torch.contiguous_format)
    torch.testing.assert_close(got, ref, rtol=1e-2 if dtype == torch.bfloat16 else 1e-3, atol=1e-3)


def _cat_case(case):
    u8 = torch.uint8
    if case == "dim0_mixed":  # one long row: 16-byte pieces, an odd one, then pieces misaligned at the output
        return [_rand((4096,), u8, seed=21), _rand((17,), u8, seed=22), _rand((4096,), u8, seed=23),
                _rand((4096 + 3,), u8, seed=20)[3:]], 0
    if case == "dim1_float":  # several rows: float32 columns of 4 and 1 elements
        return [_rand((33, 4), seed=24), _rand((33, 1), seed=25), _rand((33, 8), seed=26)], 1
    if case == "half_offset":  # a float16 piece that starts one element into its storage (2-byte aligned only)
        return [_rand((1000,), torch.float16, seed=27), _rand((1001,), torch.float16, seed=28)[1:],
                _rand((8,), torch.float16, seed=29)], 0
    # many_mixed: more pieces than fit in the kernel parameters, of every alignment class
    return [_rand((k * 16 if k % 3 == 0 else k,), u8, seed=30 + k) for k in range(1, 121)], 0


@pytest.mark.parametrize("case", ["dim0_mixed", "dim1_float", "half_offset", "many_mixed"])
def test_cat_with_pieces_of_different_alignments(case):
    tensors, dim = _cat_case(case)
    torch.testing.assert_close(ops.cat.default(tensors, dim), torch.cat(tensors, dim), rtol=0, atol=0)


@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("sizes", [[1600, 7, 800, 9], [16] * 50 + [5, 11, 3] * 20, [4099, 1]],
                         ids=["few", "many", "odd"])
def test_split_into_pieces_of_different_alignments(offset, sizes):
    storage = _rand((sum(sizes) + offset,), torch.uint8, seed=40)
    x = storage[offset:]
    got = ops.split.default(x, sizes, 0)
    for a, b in zip(got, torch.split(x, sizes, 0)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    x2 = _rand((6, sum(sizes[:4])), torch.uint8, seed=41)  # several rows
    got = ops.split.default(x2, sizes[:4], 1)
    for a, b in zip(got, torch.split(x2, sizes[:4], 1)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 4095, 4096 * 8 + 3])
@pytest.mark.parametrize("offset", [0, 1, 8])
def test_clamp_number_bounds_contiguous_vectors(dtype, n, offset):
    # 16-byte vectors per thread for 1- and 2-byte dtypes, a scalar tail; an offset start is not 16-byte aligned
    storage = _rand((n + offset,), dtype, seed=n)
    x = storage[offset:]
    lo, hi = (10, 200) if dtype == torch.uint8 else (-1, 1) if dtype == torch.int8 else (-0.5, 0.75)
    torch.testing.assert_close(ops.clamp_scalar.default(x, lo, hi), torch.clamp(x, lo, hi), rtol=0, atol=0)
    y = x.clone()
    ops.clamp_scalar_.default(y, lo, hi)
    torch.testing.assert_close(y, torch.clamp(x, lo, hi), rtol=0, atol=0)

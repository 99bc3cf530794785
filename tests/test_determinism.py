"""CPU reductions give the same bits whatever the threads: normalize's grad_mean / grad_std and clamp's bound
gradients on 1, 2 and 3 intra-op threads, with the thread policy (csrc/include/tensorops/parallel.h) forced to one
thread or to all of them (tensorops._C._force_thread_policy, a test hook); and they are at least as close to a
float64 reference as torch's own float32 autograd. The fixed chunks behind this are cpu_loop.h's
cpu_for_each_chunk."""
from __future__ import annotations

import contextlib

import pytest
import torch

import tensorops
from conftest import requires_compiled

pytestmark = requires_compiled

POLICY, ONE_THREAD, ALL_THREADS = 0, 1, 2
# (torch's intra-op threads, the policy's forced mode): one thread; two with the policy free; two with the policy
# forced each way; three (on any machine: more threads than cores is allowed) with threads forced
SETTINGS = [(1, POLICY), (2, POLICY), (2, ONE_THREAD), (2, ALL_THREADS), (3, ALL_THREADS)]


def _C():
    return tensorops._extension._C


@contextlib.contextmanager
def _threads(n: int, mode: int):
    old_n = torch.get_num_threads()
    old_mode = _C()._force_thread_policy(mode) if mode != POLICY else None  # the hook only where forced
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old_n)
        if old_mode is not None:
            _C()._force_thread_policy(old_mode)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view({torch.float32: torch.int32, torch.float64: torch.int64}[t.dtype])


def _same_bits_everywhere(run) -> None:
    """run() -> tuple of tensors; the same bits under every setting as under the first (and the forced-parallel
    settings did go parallel, so that no comparison is between two one-thread runs)."""
    first = None
    for n, mode in SETTINGS:
        with _threads(n, mode):
            before = _C().parallel_stats()["parallel_passes"]
            res = run()
            went_parallel = _C().parallel_stats()["parallel_passes"] > before
        if mode == ALL_THREADS:
            assert went_parallel, f"{n} threads forced: the pass should have gone parallel"
        if first is None:
            first = res
        for i, (a, b) in enumerate(zip(first, res)):
            assert torch.equal(_bits(a), _bits(b)), f"output {i} differs between {SETTINGS[0]} and {(n, mode)}"


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last)


def _per_sample(t: torch.Tensor) -> torch.Tensor:
    return t.expand(8, -1, -1, -1).contiguous() + torch.linspace(0, 0.1, 8, dtype=t.dtype).view(8, 1, 1, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "per_sample_stats", "no_grad_input"])
def test_normalize_statistics_gradients_same_bits_on_any_threads(dtype, layout):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(8, 3, 96, 160, generator=g, dtype=dtype)  # 369k elements: a dozen fixed chunks
    grad = torch.randn(x.shape, generator=g, dtype=dtype)
    mean = torch.tensor([0.485, 0.456, 0.406], dtype=dtype).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], dtype=dtype).view(1, 3, 1, 1)
    mask = [True, True, True]
    if layout == "channels_last":
        x, grad = _channels_last(x), _channels_last(grad)
    elif layout == "per_sample_stats":
        mean, std = _per_sample(mean), _per_sample(std)
    elif layout == "no_grad_input":
        mask = [False, True, True]
    op = torch.ops.tensorops.normalize_tensor_backward.default
    _same_bits_everywhere(lambda: op(grad, x, mean, std, 1.0, mask)[1:])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed", "one_bound"])
def test_clamp_bound_gradients_same_bits_on_any_threads(dtype, layout):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 3, 96, 160, generator=g, dtype=dtype)
    grad = torch.randn(x.shape, generator=g, dtype=dtype)
    lo = torch.tensor([-0.5, -0.2, 0.0], dtype=dtype).view(1, 3, 1, 1)
    hi = torch.tensor([0.5, 0.8, 1.0], dtype=dtype).view(1, 3, 1, 1)
    if layout == "channels_last":  # the bounds repeat with a period of 3 along each run
        x, grad = _channels_last(x), _channels_last(grad)
    elif layout == "transposed":  # any other strides
        x, grad = x.transpose(2, 3), grad.transpose(2, 3)
    elif layout == "one_bound":
        hi = None
    op = torch.ops.tensorops.clamp_backward.default
    mask = [True, True, hi is not None]
    _same_bits_everywhere(lambda: tuple(t for t in op(grad, x, lo, hi, mask)[1:] if t.numel()))


def test_clamp_bounds_as_large_as_the_input_same_bits_on_any_threads():
    # every bound entry receives exactly one element: one buffer, no partials
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 3, 128, 128, generator=g)
    grad = torch.randn(x.shape, generator=g)
    lo = torch.randn(x.shape, generator=g) - 1
    op = torch.ops.tensorops.clamp_backward.default
    _same_bits_everywhere(lambda: op(grad, x, lo, None, [True, True, False])[1:2])
    expected = torch.where(x < lo, grad, 0)
    assert torch.equal(op(grad, x, lo, None, [True, True, False])[1], expected)


def test_deterministic_mode_two_backward_calls_agree():
    # torch.use_deterministic_algorithms(True): two identical backward calls return the same bits, whatever the
    # policy decided in between (forced one way, then the other)
    x = torch.randn(16, 3, 64, 64)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).requires_grad_()
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1).requires_grad_()
    grad = torch.randn(x.shape)
    old = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        results = []
        for mode in (ONE_THREAD, ALL_THREADS):
            with _threads(2, mode):
                results.append(torch.autograd.grad(tensorops.normalize(x, mean, std), (mean, std), grad))
    finally:
        torch.use_deterministic_algorithms(old)
    for a, b in zip(*results):
        assert torch.equal(_bits(a), _bits(b))


def _worst_errors(ours, theirs, ref):
    return [((o.double() - r).abs().max().item(), (t.double() - r).abs().max().item()) for o, t, r in
            zip(ours, theirs, ref)]


def test_normalize_statistics_gradients_as_accurate_as_torch():
    # (16, 3, 224, 224) float32, per-channel statistics: grad_mean and grad_std at least as close to the float64
    # reference as torch's own float32 autograd (one float32 partial per thread, to 2026-12-06: 8.1e-2 off where
    # torch was 1.1e-3 off)
    g = torch.Generator().manual_seed(4)
    x = torch.rand(16, 3, 224, 224, generator=g)
    grad = torch.randn(x.shape, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def grads(fn, dtype):
        m, s = mean.to(dtype).requires_grad_(), std.to(dtype).requires_grad_()
        return torch.autograd.grad(fn(x.to(dtype), m, s), (m, s), grad.to(dtype))

    ref = grads(lambda a, m, s: (a - m) / s, torch.float64)
    theirs = grads(lambda a, m, s: (a - m) / s, torch.float32)
    for n, mode in SETTINGS:
        with _threads(n, mode):
            ours = grads(tensorops.normalize, torch.float32)
        for name, (err, torch_err), r in zip(("grad_mean", "grad_std"), _worst_errors(ours, theirs, ref), ref):
            tiny = 1e-9 * r.abs().max().item()
            assert err <= torch_err + tiny, f"{name} on {(n, mode)}: {err:.3g} from float64, torch {torch_err:.3g}"


def test_clamp_bound_gradients_as_accurate_as_torch():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(16, 3, 224, 224, generator=g)
    grad = torch.randn(x.shape, generator=g) + 0.5  # sums far from 0: a relative error shows
    lo = torch.tensor([-0.3, 0.0, 0.3]).view(1, 3, 1, 1)
    hi = torch.tensor([0.6, 0.9, 1.2]).view(1, 3, 1, 1)

    def grads(fn, dtype):
        l, h = lo.to(dtype).requires_grad_(), hi.to(dtype).requires_grad_()
        return torch.autograd.grad(fn(x.to(dtype), l, h), (l, h), grad.to(dtype))

    ref = grads(torch.clamp, torch.float64)
    theirs = grads(torch.clamp, torch.float32)
    for layout in (torch.contiguous_format, torch.channels_last):
        ours = grads(lambda a, l, h: tensorops.clamp(a.contiguous(memory_format=layout), l, h), torch.float32)
        for name, (err, torch_err), r in zip(("grad_min", "grad_max"), _worst_errors(ours, theirs, ref), ref):
            tiny = 1e-9 * r.abs().max().item()
            assert err <= torch_err + tiny, f"{name} ({layout}): {err:.3g} from float64, torch {torch_err:.3g}"


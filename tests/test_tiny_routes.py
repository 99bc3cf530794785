"""The lean eager entry points (tensorops._C.*_fast) and the native route below the measured crossovers
(csrc/include/tensorops/crossover.h): the same results as the full path and as torch, the kernel running
above the crossover (and below it when forced), and the Python wrapper's errors for what they do not handle."""
from __future__ import annotations

import pytest
import torch

import tensorops
from conftest import kernel_ran, requires_compiled

pytestmark = requires_compiled


def _C():
    return tensorops._extension._C


def _exact(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    assert a.dtype == b.dtype and a.stride() == b.stride()


def _bounds(c: int):
    return torch.linspace(-0.5, 0.0, c).view(1, c, 1, 1), torch.linspace(0.5, 1.0, c).view(1, c, 1, 1)


def test_crossovers_are_what_the_build_uses():
    below = _C().native_below()
    assert set(below) == {"clamp", "clamp_scalar", "clamp_grad"} and all(v >= 0 for v in below.values())


@pytest.mark.parametrize("side", [2, 8, 40])
def test_clamp_tensor_bounds_native_below_the_crossover_kernel_above(side):
    x = torch.randn(1, 3, side, side)
    x[0, 0, 0, 0] = float("nan")
    lo, hi = _bounds(3)
    out, names = kernel_ran(tensorops.clamp, x, lo, hi)
    _exact(out, torch.clamp(x, lo, hi))
    if x.numel() >= _C().native_below()["clamp"]:
        assert "tensorops::clamp" in names
    else:
        assert "tensorops::clamp" not in names  # torch.clamp ran: cheaper at this size
    forced, names = kernel_ran(_C().clamp_fast, x, lo, hi, 0)  # the kernel itself at this size
    assert "tensorops::clamp" in names
    _exact(forced, out)


def test_clamp_native_route_runs_below_autograd_and_matches_torch():
    # below the crossover the entry calls torch's clamp below autograd: under no_grad (or for tensors that need
    # none) the result is torch.clamp's, without a graph, also for an input that requires grad
    x = torch.randn(1, 3, 4, 4, requires_grad=True)
    lo, hi = _bounds(3)
    assert x.numel() < _C().native_below()["clamp"]
    with torch.no_grad():
        out = _C().clamp_fast(x, lo, hi)
        ref = torch.clamp(x, lo, hi)
    assert out is not None and not out.requires_grad and out.grad_fn is None
    _exact(out, ref)
    with torch.inference_mode():
        xi = torch.randn(1, 3, 4, 4)
        _exact(tensorops.clamp(xi, lo, hi), torch.clamp(xi, lo, hi))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.uint8, torch.bool])
def test_clamp_number_bounds_lean_entry(dtype):
    x = (torch.randn(1, 3, 8, 8) * 100).to(dtype)
    for lo, hi in ((-1, 1), (0.5, None), (None, 3)):
        if dtype == torch.bool and (lo, hi) == (0.5, None):
            continue
        out, names = kernel_ran(tensorops.clamp, x, lo, hi)
        _exact(out, torch.clamp(x, lo, hi))
        if x.numel() >= _C().native_below()["clamp_scalar"]:
            assert "tensorops::clamp_scalar" in names


def test_clamp_lean_entry_leaves_the_rest_to_python():
    x = torch.randn(2, 3, 4, 5)
    lo, _ = _bounds(3)
    # a non-0-dim tensor mixed with a number: the wrapper's message, naming the argument
    with pytest.raises(TypeError, match="min is a tensor of shape"):
        tensorops.clamp(x, lo, 1.0)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        tensorops.clamp(x, torch.zeros(7), None)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        tensorops.clamp(x)
    assert _C().clamp_fast(x, lo, 1.0) is None and _C().clamp_fast(x, None, None) is None
    # gradients: the full path, with the fused backward kernel
    xg = x.clone().requires_grad_()
    assert _C().clamp_fast(xg, -1.0, 1.0) is None
    out, names = kernel_ran(lambda: tensorops.clamp(xg, -0.5, 0.5).sum().backward())
    assert "tensorops::clamp_scalar_backward" in names
    torch.testing.assert_close(xg.grad, ((x > -0.5) & (x < 0.5)).float())
    with torch.no_grad():  # no graph needed: the lean entry again
        assert _C().clamp_fast(xg, -1.0, 1.0) is not None


def test_lean_entries_leave_forward_ad_tangents_and_fake_tensors_to_python():
    # The wrappers try the entry points without looking at forward AD (only at dynamo): the entries themselves
    # must refuse a tensor with a tangent, or a view of one, and the wrapper's route must give the tangent.
    import torch.autograd.forward_ad as fwAD
    from torch._subclasses.fake_tensor import FakeTensorMode

    x, (lo, hi) = torch.randn(1, 3, 8, 8), _bounds(3)
    u = torch.randint(0, 256, (1, 3, 8, 8), dtype=torch.uint8)
    norm_args = (0.5, 0.2, -3, None, None, torch.preserve_format)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        lo_dual = fwAD.make_dual(lo, torch.ones_like(lo))
        for t in (dual, dual[0], dual.transpose(2, 3)):  # the tangent of a view comes from its base
            assert _C().clamp_fast(t, -0.5, 0.5) is None
            assert _C().cat_fast([x, t], 0) is None
            assert _C().split_fast(t, 1, 1) is None
        assert _C().clamp_fast(x, lo_dual, hi) is None
        assert _C().normalize_fast(dual, *norm_args) is None
        # plain tensors inside a dual level: the entries may take them (no tangent to give)
        assert _C().clamp_fast(x, -0.5, 0.5) is not None and _C().normalize_fast(u, *norm_args) is not None
        tangent = fwAD.unpack_dual(tensorops.clamp(dual, -0.5, 0.5)).tangent
        torch.testing.assert_close(tangent, ((x >= -0.5) & (x <= 0.5)).float())
        tangent = fwAD.unpack_dual(tensorops.clamp(x, lo_dual, hi)).tangent
        torch.testing.assert_close(tangent, ((x < lo) & (lo < hi)).float())
        tangent = fwAD.unpack_dual(tensorops.cat([x, dual])).tangent
        torch.testing.assert_close(tangent, torch.cat([torch.zeros_like(x), torch.ones_like(x)]))
        tangents = [fwAD.unpack_dual(p).tangent for p in tensorops.split(dual, 1, 1)]
        torch.testing.assert_close(torch.cat(tangents, 1), torch.ones_like(x))
    with FakeTensorMode() as mode:  # as under non-strict torch.export, where dynamo is not tracing
        fake = mode.from_tensor(x)
        assert _C().clamp_fast(fake, -0.5, 0.5) is None and _C().split_fast(fake, 1, 1) is None
        out = tensorops.clamp(fake, mode.from_tensor(lo), mode.from_tensor(hi))
        assert out.shape == x.shape and type(out).__name__ == "FakeTensor"


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_normalize_lean_entry_same_as_full_path(layout):
    x = torch.randint(0, 256, (1, 3, 8, 8), dtype=torch.uint8)
    if layout == "nhwc":
        x = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    for kw in ({}, {"dtype": torch.float16}, {"scale": 1.0, "memory_format": torch.contiguous_format}):
        out, names = kernel_ran(tensorops.normalize, x, mean, std, **kw)
        assert "tensorops::normalize" in names
        full = torch.ops.tensorops.normalize.default(
            x, mean, std, 1, kw.get("scale", 1 / 255), kw.get("dtype", torch.float32),
            kw.get("memory_format", torch.preserve_format))
        _exact(out, full)
        ref = tensorops.reference.normalize(x, mean, std, dim=1, scale=kw.get("scale", 1 / 255),
                                            dtype=kw.get("dtype", torch.float32))
        torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)


def test_normalize_lean_entry_leaves_the_rest_to_python():
    x = torch.randint(0, 256, (1, 3, 8, 8), dtype=torch.uint8)
    with pytest.raises(ValueError, match="std has a zero value"):
        tensorops.normalize(x, [0.5] * 3, [0.2, 0.0, 0.2])
    with pytest.raises(ValueError, match="std has 2 values but input has 3 channels"):
        tensorops.normalize(x, 0.5, [0.2, 0.2])
    with pytest.raises(IndexError, match="out of range"):
        tensorops.normalize(x, 0.5, 0.2, dim=4)
    with pytest.raises(TypeError, match="dtype must be"):
        tensorops.normalize(x, 0.5, 0.2, dtype=torch.int32)
    with pytest.raises(ValueError, match="too close to zero"):
        tensorops.normalize(x, 0.5, 1e-45)
    args = (0.5, 0.2, -3, None, None, torch.preserve_format)
    assert _C().normalize_fast(x, *args) is not None
    assert _C().normalize_fast(x.float().requires_grad_(), *args) is None  # autograd must see it


def test_split_lean_entry_tiny():
    x = torch.randn(128)
    pieces, names = kernel_ran(tensorops.split, x, [64, 64])
    assert "tensorops::split" in names
    for p, e in zip(pieces, torch.split_with_sizes_copy(x, [64, 64])):
        _exact(p, e)
        assert p.data_ptr() != x.data_ptr() or p.numel() == 0  # a copy of its own, not a view


@pytest.mark.parametrize("threads", [1, 2])
def test_results_do_not_depend_on_the_threads_granted(threads):
    # above kParallelMinBytes: threads when torch has them and the policy grants them, one thread otherwise
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x = torch.randn(8, 3, 128, 128)
        lo, hi = _bounds(3)
        _exact(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi))
        xs = [torch.randn(64) for _ in range(5000)]
        _exact(tensorops.cat(xs), torch.cat(xs))
        u8 = torch.randint(0, 256, (8, 128, 128, 3), dtype=torch.uint8).permute(0, 3, 1, 2)
        out = tensorops.normalize(u8, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4], memory_format=torch.contiguous_format)
        ref = tensorops.reference.normalize(u8, [0.5, 0.4, 0.3], [0.2, 0.3, 0.4], dim=1, scale=1 / 255,
                                            dtype=torch.float32)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("spec, dim", [(3, 0), (3, -1), ([1, 0, 4], 1), ((2, 3), -1), (5, 1), (10, 0)])
def test_split_lean_entry_takes_the_users_arguments(spec, dim):
    # the C entry takes split_size_or_sections and dim as given (an int or exact ints, a negative dim)
    x = torch.randn(5, 5)
    pieces = _C().split_fast(x, spec, dim)
    assert pieces is not None
    sizes = [p.shape[dim] for p in torch.split(x, spec, dim)]
    expected = torch.split_with_sizes_copy(x, sizes, dim)
    assert len(pieces) == len(expected)
    for p, e in zip(pieces, expected):
        _exact(p, e)


@pytest.mark.parametrize("spec, dim", [(0, 0), (-1, 0), ([2, 2], 0), ([6, -1], 0), ([2, 3.0], 0), (2, 2), (2, -3),
                                       (True, 0), (2, True), ([True, 4], 0)])
def test_split_lean_entry_leaves_what_is_wrong_or_unusual_to_the_wrapper(spec, dim):
    x = torch.randn(5, 5)
    assert _C().split_fast(x, spec, dim) is None
    try:
        expected = torch.split(x, spec, dim)
    except Exception as e:  # the wrapper raises torch's error type
        with pytest.raises(type(e)):
            tensorops.split(x, spec, dim)
    else:
        sizes = [p.shape[dim] for p in expected]
        for p, e in zip(tensorops.split(x, spec, dim), torch.split_with_sizes_copy(x, sizes, dim)):
            _exact(p, e)


def test_one_intra_op_thread_never_goes_parallel():
    # DataLoader workers run with one thread: no pass may wake a thread, whatever its size
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        before = _C().parallel_stats()
        x = torch.randn(64, 3, 64, 64)  # 6 MB of traffic, far above kParallelMinBytes
        tensorops.clamp(x, -0.5, 0.5)
        tensorops.cat([x, x])
        after = _C().parallel_stats()
    finally:
        torch.set_num_threads(old)
    assert after["parallel_passes"] == before["parallel_passes"] and after["probes"] == before["probes"]


def test_parallel_passes_are_counted_where_threads_exist():
    if torch.get_num_threads() < 2:
        pytest.skip("torch has one intra-op thread here: nothing is ever parallel")
    before = _C().parallel_stats()
    x = torch.randn(64, 3, 64, 64)
    tensorops.clamp(x, -0.5, 0.5)
    after = _C().parallel_stats()
    decided = sum(after[k] - before[k] for k in ("parallel_passes", "serial_passes", "probes"))
    assert decided == 1 and after["recent_wait_ratio_1024"] >= 0 and after["paying_ratio_1024"] > 0
    # the time the caller was descheduled during its shares only grows (the thread CPU clock is read)
    assert after["descheduled_ns"] >= before["descheduled_ns"] >= 0


def test_paying_ratio_is_three_quarters_of_break_even():
    # a region pays with n threads while the time lost stays under (n - 1) times the caller's share; passes
    # go parallel up to 3/4 of that (parallel.h says why not half)
    n = torch.get_num_threads()
    assert _C().parallel_stats()["paying_ratio_1024"] == (n - 1) * 1024 * 3 // 4


@pytest.mark.native_crossovers
@pytest.mark.parametrize("side", [2, 8, 64])
def test_clamp_through_autograd_native_below_its_crossover_kernel_above(side):
    # below kClampGradNativeBelow the wrapper runs torch.clamp (its autograd is cheaper there), above it the
    # op's Function and kernels; the gradients are torch's either way
    gen = torch.Generator().manual_seed(side)
    x = torch.randn(1, 3, side, side, generator=gen).requires_grad_()
    lo, hi = (b.clone().requires_grad_() for b in _bounds(3))
    g = torch.randn(1, 3, side, side, generator=gen)
    (out, grads), names = kernel_ran(lambda: (lambda y: (y, torch.autograd.grad(y, (x, lo, hi), g)))(
        tensorops.clamp(x, lo, hi)))
    expected = torch.clamp(x, lo, hi)
    _exact(out, expected)
    theirs = torch.autograd.grad(expected, (x, lo, hi), g)
    assert torch.equal(grads[0], theirs[0])
    # the bounds' gradients are sums of up to 4,096 float32 terms, torch's and the kernel's in different orders:
    # one seed in fifty lands just past torch.testing's float32 atol (1e-5) at this size
    for a, b in zip(grads[1:], theirs[1:]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-4)
    below = x.numel() < _C().native_below()["clamp_grad"]
    assert ("tensorops::clamp" in names) != below, names


@pytest.mark.native_crossovers
def test_clamp_through_autograd_below_the_crossover_raises_torchs_errors():
    x = torch.randn(1, 3, 4, 4, requires_grad=True)
    lo = torch.zeros(1, 2, 1, 1, requires_grad=True)  # does not broadcast with 3 channels
    assert x.numel() < _C().native_below()["clamp_grad"]
    with pytest.raises(RuntimeError) as ours:
        tensorops.clamp(x, lo, lo + 1)
    with pytest.raises(RuntimeError) as theirs:
        torch.clamp(x, lo, lo + 1)
    assert str(ours.value) == str(theirs.value)


_POLICY_PROBE = r"""
#include <cstdio>
#include "tensorops/parallel.h"
// Regions recorded as parallel.h's run_on records them (2 threads: paying while the ratio is at most 768/1024).
int main() {
  using namespace tensorops::parallel_detail;
  State& s = state();
  const int n = 2;
  for (int k = 0; k < 3; ++k) record_region(n, 1000000, 1000000, 10000000);  // a busy machine: waits 10x
  std::printf("%lld %lld\n", (long long)recent_ratio(), (long long)s.probe_gap_ns.load());
  s.next_probe_ns.store(1);                                 // a probe is due only later
  record_region(n, 1000000, 1000000, 10000);                // a probe whose threads paid
  std::printf("%lld %lld\n", (long long)recent_ratio(), (long long)s.next_probe_ns.load());
  record_region(n, 1000000, 1000000, 10000);                // the next pass probed at once, and paid too
  std::printf("%lld %lld\n", (long long)recent_ratio(), (long long)s.probe_gap_ns.load());
  return 0;
}
"""


@pytest.fixture(scope="module")
def policy_probe(tmp_path_factory):
    from _probe import build

    return build(tmp_path_factory, "parallel policy", _POLICY_PROBE, torch_headers=True)


def test_a_quiet_machine_turns_threads_back_on_within_two_regions(policy_probe):
    # parallel.h (2): after costly regions the probes back off; a probe whose threads paid is followed by another
    # at once, and two paying regions in a row bring the median of the last three under the paying ratio
    from _probe import run

    busy, after_one, after_two = [list(map(int, line.split())) for line in run(policy_probe, "").splitlines()]
    paying = 768
    assert busy[0] > paying and busy[1] > 100_000_000  # threads off, probes backed off past their 100 ms minimum
    assert after_one[0] > paying and after_one[1] == 0  # one good region: still off, but the next pass probes
    assert after_two[0] <= paying and after_two[1] == 100_000_000  # two: threads on, probes at their minimum again


def test_a_one_task_region_is_not_recorded():
    # parallel.h's run_on: with threads granted (forced here by the test hook), a range that makes one task (a
    # one-chunk reduction; a one-image decode) runs inline and leaves the policy's recorded ratios alone; the same
    # pass on a larger tensor (a dozen chunks) is a region of threads, and is recorded
    op = torch.ops.tensorops.clamp_backward.default
    lo = torch.zeros(1, 3, 1, 1, dtype=torch.float64)
    one_chunk = torch.randn(3, 128, 128, dtype=torch.float64)  # 49k elements, 1.2 MB of traffic: threads granted
    many = torch.randn(8, 3, 128, 128, dtype=torch.float64)
    old_n, old_mode = torch.get_num_threads(), _C()._force_thread_policy(2)
    torch.set_num_threads(2)
    try:
        before = _C().parallel_stats()
        for _ in range(3):
            op(one_chunk, one_chunk, lo[0], None, [True, True, False])
        after_one = _C().parallel_stats()
        op(many, many, lo, None, [True, True, False])
        after_many = _C().parallel_stats()
    finally:
        torch.set_num_threads(old_n)
        _C()._force_thread_policy(old_mode)
    assert after_one["parallel_passes"] == before["parallel_passes"] + 3  # threads were granted
    assert after_one["recorded_regions"] == before["recorded_regions"]
    assert after_one["recent_wait_ratio_1024"] == before["recent_wait_ratio_1024"]
    assert after_many["recorded_regions"] == after_one["recorded_regions"] + 1

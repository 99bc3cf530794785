// clamp on the CPU, backward (the forward passes and the registration of the family's CPU ops are in clamp.cpp;
// two translation units, so that a parallel build compiles them at once). One pass (threads as tensorops/parallel.h
// decides) over a strided plan (bounds broadcast by 0 strides, never expanded in memory) writes grad_input and sums
// the bounds' gradients, in double, into buffers indexed by the bound's entry, one per fixed chunk of the elements
// (cpu_loop.h's cpu_for_each_chunk: the same bits on any number of threads), added up in chunk order. The
// gradient masks are math.h's; the inner loops (clamp_loops.h) are compiled for AVX-512, AVX2+FMA and baseline x86-64.
// Every function in this file, headers included, is compiled without trapping floating-point math: with it,
// GCC will not turn the gradient weights' chains of compares and selects into vector blends (it sinks a
// multiply into a branch and then may not speculate it: "control flow in loop"), and the backward loops run
// scalar, ~10x slower. Values are unchanged (no reassociation, no fast-math); nothing here reads FP flags.
#pragma GCC optimize("no-trapping-math")

#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "clamp_cpu.h"
#include "tensorops/clamp_host.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/cpu_loop.h"
#include "tensorops/dispatch.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/clamp.h"

namespace tensorops {
namespace {

using namespace clamp_host;

// ---- inner loops, built for AVX-512, for AVX2+FMA and for baseline x86-64 (cpu_isa.h) --------------------
#include "clamp_loops_isa.h"

// ---- backward ----------------------------------------------------------------------------------------------
// Operands of the plan: 0 a dense layout to walk (grad_input's when written), 1 grad, 2 x, 3 lo entry, 4 hi entry.
// Every run of a pass goes to the same one of four kernels: the choice depends only on the plan's strides along
// the run.
enum class BackwardPath {
  kPattern,      // bounds repeat with a short period along the run (channels_last input, (1, C, 1, 1) bounds)
  kFixedBounds,  // contiguous x, bounds fixed along the run (number bounds, per-channel bounds)
  kElementwise,  // contiguous x and bounds, one bound entry per element (bounds as large as the output)
  kStrided,      // any other layout
};

template <typename scalar_t, bool HasLo, bool HasHi, bool ScalarBounds>
struct BackwardRuns {
  using acc_t = typename Acc<scalar_t>::type;
  using sum_t = double;
  const scalar_t* g;
  const scalar_t* x;
  scalar_t* gi;        // grad_input (null: not wanted)
  const scalar_t* lo;  // bound values, indexed by the bound's entry
  const scalar_t* hi;
  int64_t s[5] = {};   // the plan's strides along the run
  int64_t period = 0, plo = 0, phi = 0;  // kPattern: the period, and the bounds' entry strides along it

  BackwardPath path() const {
    // grad_input and x contiguous along the run, grad contiguous or broadcast (from out.sum().backward())
    const bool dense = (!gi || s[0] == 1) && (s[1] == 1 || s[1] == 0) && s[2] == 1;
    if (period > 0) return BackwardPath::kPattern;
    if (dense && (!HasLo || s[3] == 0) && (!HasHi || s[4] == 0)) return BackwardPath::kFixedBounds;
    if (!ScalarBounds && dense && (!HasLo || s[3] == 1) && (!HasHi || s[4] == 1)) return BackwardPath::kElementwise;
    return BackwardPath::kStrided;
  }

  // One run: n elements from plan offsets off, the pointers at its start (gi null when not wanted), and its
  // chunk's gradient sums by bound entry (slo / shi, null when not wanted).
  struct Segment {
    const int64_t* off;
    int64_t n;
    const scalar_t* g;
    const scalar_t* x;
    scalar_t* gi;
    sum_t* slo;
    sum_t* shi;
  };

  template <bool WantGi, bool WantSums>
  void run(BackwardPath path, const int64_t* off, int64_t n, sum_t* slo, sum_t* shi) const {
    const Segment r{off, n, g + off[1], x + off[2], WantGi ? gi + off[0] : nullptr, slo, shi};
    switch (path) {
      case BackwardPath::kPattern: return pattern<WantGi, WantSums>(r);
      case BackwardPath::kFixedBounds: return fixed_bounds<WantGi, WantSums>(r);
      case BackwardPath::kElementwise: return elementwise<WantGi, WantSums>(r);
      case BackwardPath::kStrided: return strided(r);
    }
  }

  // The bounds' values unrolled into a pattern buffer, the kernel's per-position sums folded back onto the
  // bounds' entries.
  template <bool WantGi, bool WantSums>
  void pattern(const Segment& r) const {
    const int64_t* off = r.off;
    const PeriodicPattern pat(period, off[0]);
    acc_t pl[kPatternCapacity], ph[kPatternCapacity];
    sum_t dl[kPatternCapacity], dh[kPatternCapacity];
    pat.for_each([&](int64_t t, int64_t c) {
      pl[t] = HasLo ? static_cast<acc_t>(lo[off[3] + c * plo]) : acc_t(0);
      ph[t] = HasHi ? static_cast<acc_t>(hi[off[4] + c * phi]) : acc_t(0);
      dl[t] = dh[t] = sum_t(0);
    });
    TENSOROPS_CPU_DISPATCH(clamp_backward_run_pattern<scalar_t, acc_t, sum_t, HasLo, HasHi, WantGi, WantSums>)(
        r.g, r.x, r.gi, r.n, pl, ph, pat.len, dl, dh);
    if (!WantSums) return;
    pat.for_each([&](int64_t t, int64_t c) {
      if (r.slo) r.slo[off[3] + c * plo] += dl[t];
      if (r.shi) r.shi[off[4] + c * phi] += dh[t];
    });
  }

  // One bound value (each bound's) for the whole run; grad contiguous or broadcast along it (kGradConst).
  template <bool WantGi, bool WantSums>
  void fixed_bounds(const Segment& r) const {
    const acc_t l = HasLo ? static_cast<acc_t>(lo[r.off[3]]) : acc_t(0);
    const acc_t h = HasHi ? static_cast<acc_t>(hi[r.off[4]]) : acc_t(0);
    sum_t* a = r.slo ? r.slo + r.off[3] : nullptr;
    sum_t* b = r.shi ? r.shi + r.off[4] : nullptr;
    bool_switch(s[1] == 0, [&](auto grad_const) {
      constexpr bool kGradConst = decltype(grad_const)::value;
      TENSOROPS_CPU_DISPATCH(clamp_backward_run_const<scalar_t, acc_t, sum_t, HasLo, HasHi, ScalarBounds, WantGi,
                                                      WantSums, kGradConst>)(r.g, r.x, r.gi, r.n, l, h, a, b);
    });
  }

  // A bound entry per element, contiguous along the run.
  template <bool WantGi, bool WantSums>
  void elementwise(const Segment& r) const {
    const scalar_t* ls = HasLo ? lo + r.off[3] : nullptr;
    const scalar_t* hs = HasHi ? hi + r.off[4] : nullptr;
    sum_t* a = r.slo ? r.slo + r.off[3] : nullptr;
    sum_t* b = r.shi ? r.shi + r.off[4] : nullptr;
    bool_switch(s[1] == 0, [&](auto grad_const) {
      constexpr bool kGradConst = decltype(grad_const)::value;
      TENSOROPS_CPU_DISPATCH(clamp_backward_run_tensor_contig<scalar_t, acc_t, sum_t, HasLo, HasHi, WantGi, WantSums,
                                                              kGradConst>)(r.g, r.x, r.gi, r.n, ls, hs, a, b);
    });
  }

  void strided(const Segment& r) const {
    base::clamp_backward_run_strided<scalar_t, acc_t, sum_t, HasLo, HasHi, ScalarBounds>(
        r.g, s[1], r.x, s[2], r.gi, s[0], lo, r.off[3], s[3], hi, r.off[4], s[4], r.slo, r.shi, r.n);
  }
};

// The bounds' gradients (contiguous, the bounds' shapes; null: not wanted) = the chunks' partial buffers summed
// per entry, in chunk order.
template <typename scalar_t, typename sum_t>
void reduce_bound_sums(const std::vector<sum_t>& sums, int64_t partials, int64_t klo, int64_t khi, scalar_t* out_lo,
                       scalar_t* out_hi) {
  const int64_t K = klo + khi;
  parallel_for_bytes(0, K, K * static_cast<int64_t>(partials * sizeof(sum_t) + sizeof(scalar_t)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      sum_t total = 0;
      for (int64_t c = 0; c < partials; ++c) total += sums[static_cast<size_t>(c * K + k)];
      if (k < klo) {
        if (out_lo) out_lo[k] = static_cast<scalar_t>(total);
      } else if (out_hi) {
        out_hi[k - klo] = static_cast<scalar_t>(total);
      }
    }
  });
}

// One pass that writes grad_input (gi, when given) and sums the bounds' gradients (want_sums) into buffers
// indexed by the bound's entry, one per fixed chunk, reduced at the end.
template <typename scalar_t, bool HasLo, bool HasHi, bool ScalarBounds>
void clamp_backward_pass(const at::Tensor& dense, const at::Tensor& grad, const at::Tensor& x, scalar_t* gi,
                         const scalar_t* lo, c10::IntArrayRef lo_idx, int64_t klo, const scalar_t* hi,
                         c10::IntArrayRef hi_idx, int64_t khi, bool want_sums, at::Tensor& grad_lo,
                         at::Tensor& grad_hi) {
  using Runs = BackwardRuns<scalar_t, HasLo, HasHi, ScalarBounds>;
  using sum_t = typename Runs::sum_t;
  Plan<5> p = make_plan<5>(x.sizes(), {dense.strides(), grad.strides(), x.strides(), lo_idx, hi_idx});
  Runs r{grad.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), gi, lo, hi};
  int64_t pattern[5] = {};  // tensor bounds that vary along a short inner dim: a periodic pattern
  r.period = ScalarBounds ? 0 : fold_pattern<5>(p, {false, false, false, true, true}, pattern);
  r.plo = pattern[3];
  r.phi = pattern[4];
  for (int k = 0; k < 5; ++k) r.s[k] = p.strides[k][0];
  const BackwardPath path = r.path();
  const int64_t K = klo + khi;
  const int threads = threads_for(p.numel * static_cast<int64_t>((gi ? 3 : 2) * sizeof(scalar_t)));
  if (!want_sums) {  // nothing summed: the elements split evenly over the threads
    if (gi == nullptr) return;
    cpu_for_each_segment(p, threads, [&](const int64_t* off, int64_t n) {
      r.template run<true, false>(path, off, n, nullptr, nullptr);
    });
    return;
  }
  // One buffer per fixed chunk, unless every bound entry receives exactly one element (bounds as large as the
  // output): then chunks never share an entry, and one buffer avoids copies of a large bound.
  const bool one_buffer = (!HasLo || klo == p.numel) && (!HasHi || khi == p.numel);
  const int64_t chunks = reduction_chunks(p.numel, one_buffer ? 0 : K);
  const int64_t partials = one_buffer ? 1 : chunks;
  std::vector<sum_t> sums(static_cast<size_t>(partials * K), sum_t(0));
  cpu_for_each_chunk(p, chunks, threads, [&](int64_t c, const int64_t* off, int64_t n) {
    sum_t* mine = sums.data() + static_cast<size_t>(one_buffer ? 0 : c) * K;
    bool_switch(gi != nullptr, [&](auto want_gi) {
      r.template run<decltype(want_gi)::value, true>(path, off, n, HasLo ? mine : nullptr, HasHi ? mine + klo : nullptr);
    });
  });
  reduce_bound_sums<scalar_t, sum_t>(sums, partials, klo, khi,
                                     HasLo && grad_lo.numel() ? grad_lo.data_ptr<scalar_t>() : nullptr,
                                     HasHi && grad_hi.numel() ? grad_hi.data_ptr<scalar_t>() : nullptr);
}

}  // namespace

namespace cpu_clamp {

at::Tensor clamp_scalar_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                     const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  ScalarBackward b = prepare_scalar_backward(grad, input, min, max);
  if (b.done) return b.grad_input;
  at::Tensor none;
  TENSOROPS_DISPATCH_FLOATING(input.scalar_type(), "tensorops_clamp_scalar_backward_cpu", [&] {
    const scalar_t lo = min ? min->to<scalar_t>() : scalar_t(0);
    const scalar_t hi = max ? max->to<scalar_t>() : scalar_t(0);
    const std::vector<int64_t> zeros(input.dim(), 0);
    either_switch(min.has_value(), max.has_value(), [&]<bool L, bool H>() {
      clamp_backward_pass<scalar_t, L, H, true>(b.grad_input, b.g, input, b.grad_input.data_ptr<scalar_t>(), &lo, zeros,
                                                1, &hi, zeros, 1, false, none, none);
    });
  });
  return b.grad_input;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> clamp_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                                                  const std::optional<at::Tensor>& min,
                                                                  const std::optional<at::Tensor>& max,
                                                                  std::array<bool, 3> mask) {
  TensorBackward b = prepare_tensor_backward(grad, input, min, max, mask);
  if (b.done) return {b.grad_input, b.grad_min, b.grad_max};
  TENSOROPS_DISPATCH_FLOATING(b.T, "tensorops_clamp_backward_cpu", [&] {
    scalar_t* gi = mask[0] ? b.grad_input.data_ptr<scalar_t>() : nullptr;
    const scalar_t* lp = b.has_min ? b.lo.const_data_ptr<scalar_t>() : nullptr;
    const scalar_t* hp = b.has_max ? b.hi.const_data_ptr<scalar_t>() : nullptr;
    const int64_t klo = b.has_min ? b.lo.numel() : 0, khi = b.has_max ? b.hi.numel() : 0;
    either_switch(b.has_min, b.has_max, [&]<bool L, bool H>() {
      clamp_backward_pass<scalar_t, L, H, false>(b.dense, b.g, b.x, gi, lp, b.lo_idx, klo, hp, b.hi_idx, khi,
                                                 b.want_lo || b.want_hi, b.grad_min, b.grad_max);
    });
  });
  return {b.grad_input, b.grad_min, b.grad_max};
}

}  // namespace cpu_clamp
}  // namespace tensorops

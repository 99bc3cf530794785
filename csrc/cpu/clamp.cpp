// clamp on the CPU: one pass (threads as tensorops/parallel.h decides) over a strided plan (bounds broadcast by 0 strides, never
// expanded in memory). The value rules and gradient masks are math.h's; the inner loops (clamp_loops.h) are
// compiled for AVX2+FMA and for baseline x86-64. The backward is one pass that writes grad_input and sums the
// bounds' gradients into buffers indexed by the bound's entry, one per thread used, reduced at the end.
// Every function in this file, headers included, is compiled without trapping floating-point math: with it,
// GCC will not turn the gradient weights' chains of compares and selects into vector blends (it sinks a
// multiply into a branch and then may not speculate it: "control flow in loop"), and the backward loops run
// scalar, ~10x slower. Values are unchanged (no reassociation, no fast-math); nothing here reads FP flags.
#pragma GCC optimize("no-trapping-math")

#include <algorithm>
#include <limits>
#include <type_traits>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "tensorops/clamp_host.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/cpu_loop.h"
#include "tensorops/math.h"

namespace tensorops {
namespace {

using namespace clamp_host;

// ---- inner loops, built for AVX2+FMA and for baseline x86-64 -------------------------------------------------
TENSOROPS_BEGIN_AVX2
namespace avx2 {
#include "clamp_loops.h"
}  // namespace avx2
TENSOROPS_END_AVX2
namespace base {
#include "clamp_loops.h"
}  // namespace base

#define TENSOROPS_DISPATCH_CLAMP_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16, at::kBool)

// Calls f.template operator()<HasLo, HasHi>() for the bounds present (at least one is).
template <typename F>
void with_bounds(bool has_lo, bool has_hi, const F& f) {
  if (has_lo && has_hi)
    f.template operator()<true, true>();
  else if (has_lo)
    f.template operator()<true, false>();
  else
    f.template operator()<false, true>();
}

// ---- forward passes ----------------------------------------------------------------------------------------
// y = clamp(x) over a contiguous run with bounds fixed for the run (not NaN). float16/bfloat16 work on the
// raw bits (math::clamp_bits16), everything else in the compute type.
template <typename scalar_t, bool HasLo, bool HasHi>
void run_const(const scalar_t* x, scalar_t* y, int64_t n, scalar_t lo, scalar_t hi) {
  using acc_t = typename Acc<scalar_t>::type;
  if constexpr (std::is_same_v<scalar_t, c10::Half> || std::is_same_v<scalar_t, c10::BFloat16>) {
    constexpr uint16_t kInf = std::is_same_v<scalar_t, c10::Half> ? 0x7C00 : 0x7F80;
    TENSOROPS_CPU_DISPATCH(clamp_run_const_bits16<kInf, HasLo, HasHi>)(
        reinterpret_cast<const uint16_t*>(x), reinterpret_cast<uint16_t*>(y), n, lo.x, hi.x);
  } else {
    TENSOROPS_CPU_DISPATCH(clamp_run_const<scalar_t, acc_t, HasLo, HasHi>)(x, y, n, static_cast<acc_t>(lo),
                                                                          static_cast<acc_t>(hi));
  }
}

// Tensor bounds. x, lo, hi: scalar_t tensors viewed with out's shape (0 strides where they broadcast); out may
// be x itself (in-place). Operands: 0 out, 1 x, 2 lo, 3 hi (an absent bound stands in as x and is not read).
template <typename scalar_t, bool HasLo, bool HasHi>
void clamp_tensor_pass(const at::Tensor& out, const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  using acc_t = typename Acc<scalar_t>::type;
  const at::Tensor& lo_t = HasLo ? lo : x;
  const at::Tensor& hi_t = HasHi ? hi : x;
  Plan<4> p = make_plan<4>(out.sizes(), {out.strides(), x.strides(), lo_t.strides(), hi_t.strides()});
  // A short inner dimension along which the bounds vary (C of a channels_last batch with (1, C, 1, 1)
  // bounds), walked contiguously together with the next one, whose bounds do not vary: merge the two into
  // long runs and give the kernel the bounds as a periodic pattern. The phase of a run is off[0] % period,
  // which needs every outer output stride to be a multiple of the period.
  int64_t pattern[4] = {};
  const int64_t period = fold_periodic_inner<4>(p, 64, {false, false, HasLo, HasHi}, pattern);
  const int64_t plo = pattern[2], phi = pattern[3];
  scalar_t* y = out.data_ptr<scalar_t>();
  const scalar_t* xp = x.const_data_ptr<scalar_t>();
  const scalar_t* lp = lo_t.const_data_ptr<scalar_t>();
  const scalar_t* hp = hi_t.const_data_ptr<scalar_t>();
  const int64_t s0 = p.strides[0][0], s1 = p.strides[1][0], s2 = p.strides[2][0], s3 = p.strides[3][0];
  const int threads = threads_for(p.numel * static_cast<int64_t>(2 * sizeof(scalar_t)));
  cpu_for_each_segment(p, threads, [&](const int64_t* off, int64_t n) {
    const scalar_t* xs = xp + off[1];
    const scalar_t* ls = lp + off[2];
    const scalar_t* hs = hp + off[3];
    scalar_t* ys = y + off[0];
    if (period > 0) {  // bounds repeat with the period along the run
      constexpr int64_t kPattern = 256;
      scalar_t pl[kPattern + 64], ph[kPattern + 64];
      const int64_t len = std::max<int64_t>(1, kPattern / period) * period;
      const int64_t phase = off[0] % period;
      for (int64_t t = 0; t < len; ++t) {
        const int64_t c = (phase + t) % period;
        pl[t] = HasLo ? ls[c * plo] : scalar_t(0);
        ph[t] = HasHi ? hs[c * phi] : scalar_t(0);
      }
      for (int64_t start = 0; start < n; start += len)
        TENSOROPS_CPU_DISPATCH(clamp_run_tensor_contig<scalar_t, acc_t, HasLo, HasHi>)(
            xs + start, pl, ph, ys + start, std::min(len, n - start));
      return;
    }
    if (s0 == 1 && s1 == 1) {
      if ((!HasLo || s2 == 0) && (!HasHi || s3 == 0)) {  // bounds fixed along the run: (1, C, 1, 1) bounds
        const scalar_t l = HasLo ? ls[0] : scalar_t(0);
        const scalar_t h = HasHi ? hs[0] : scalar_t(0);
        if (!(HasLo && math::clamp_isnan(static_cast<acc_t>(l))) && !(HasHi && math::clamp_isnan(static_cast<acc_t>(h)))) {
          run_const<scalar_t, HasLo, HasHi>(xs, ys, n, l, h);
          return;
        }
      } else if ((!HasLo || s2 == 1) && (!HasHi || s3 == 1)) {
        TENSOROPS_CPU_DISPATCH(clamp_run_tensor_contig<scalar_t, acc_t, HasLo, HasHi>)(xs, ls, hs, ys, n);
        return;
      }
    }
    base::clamp_run_tensor_strided<scalar_t, acc_t, HasLo, HasHi>(xs, s1, ls, s2, hs, s3, ys, s0, n);
  });
}

// Scalar bounds (already converted to scalar_t the way torch does, and not NaN). Operands: 0 out, 1 x.
template <typename scalar_t, bool HasLo, bool HasHi>
void clamp_scalar_pass(const at::Tensor& out, const at::Tensor& x, scalar_t lo, scalar_t hi) {
  using acc_t = typename Acc<scalar_t>::type;
  const Plan<2> p = make_plan<2>(out.sizes(), {out.strides(), x.strides()});
  scalar_t* y = out.data_ptr<scalar_t>();
  const scalar_t* xp = x.const_data_ptr<scalar_t>();
  const acc_t l = static_cast<acc_t>(lo), h = static_cast<acc_t>(hi);
  const int64_t s0 = p.strides[0][0], s1 = p.strides[1][0];
  const int threads = threads_for(p.numel * static_cast<int64_t>(2 * sizeof(scalar_t)));
  cpu_for_each_segment(p, threads, [&](const int64_t* off, int64_t n) {
    if (s0 == 1 && s1 == 1)
      run_const<scalar_t, HasLo, HasHi>(xp + off[1], y + off[0], n, lo, hi);
    else
      base::clamp_run_const_strided<scalar_t, acc_t, HasLo, HasHi>(xp + off[1], s1, y + off[0], s0, n, l, h);
  });
}

// ---- ops ---------------------------------------------------------------------------------------------------
at::Tensor clamp_tensor_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max) {
  TensorForward f = prepare_tensor_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP_TYPES(f.T, "tensorops_clamp_cpu", [&] {
    with_bounds(f.has_min, f.has_max, [&]<bool L, bool H>() { clamp_tensor_pass<scalar_t, L, H>(f.target, f.x, f.lo, f.hi); });
  });
  f.finish();
  return f.out;
}

at::Tensor clamp_scalar_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Scalar>& min,
                             const std::optional<at::Scalar>& max) {
  ScalarForward f = prepare_scalar_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP_TYPES(f.T, "tensorops_clamp_scalar_cpu", [&] {
    // torch's checked conversion: a bound out of the dtype's range raises, as in torch
    const scalar_t lo = min ? min->to<scalar_t>() : scalar_t(0);
    const scalar_t hi = max ? max->to<scalar_t>() : scalar_t(0);
    with_bounds(min.has_value(), max.has_value(), [&]<bool L, bool H>() { clamp_scalar_pass<scalar_t, L, H>(f.out, f.x, lo, hi); });
  });
  return f.out;
}

at::Tensor clamp_cpu(const at::Tensor& input, const std::optional<at::Tensor>& min,
                     const std::optional<at::Tensor>& max) {
  return clamp_tensor_impl(at::Tensor(), input, min, max);
}

void clamp_inplace_cpu(const at::Tensor& input, const std::optional<at::Tensor>& min,
                       const std::optional<at::Tensor>& max) {
  clamp_tensor_impl(input, input, min, max);
}

at::Tensor clamp_scalar_cpu(const at::Tensor& input, const std::optional<at::Scalar>& min,
                            const std::optional<at::Scalar>& max) {
  return clamp_scalar_impl(at::Tensor(), input, min, max);
}

void clamp_scalar_inplace_cpu(const at::Tensor& input, const std::optional<at::Scalar>& min,
                              const std::optional<at::Scalar>& max) {
  clamp_scalar_impl(input, input, min, max);
}

// ---- backward ----------------------------------------------------------------------------------------------
// Operands: 0 a dense layout to walk (grad_input's when written), 1 grad, 2 x, 3 lo entry, 4 hi entry.
template <typename scalar_t, bool HasLo, bool HasHi, bool ScalarBounds>
void clamp_backward_pass(const at::Tensor& dense, const at::Tensor& grad, const at::Tensor& x, scalar_t* gi,
                         const scalar_t* lo, c10::IntArrayRef lo_idx, int64_t klo, const scalar_t* hi,
                         c10::IntArrayRef hi_idx, int64_t khi, bool want_sums, at::Tensor& grad_lo,
                         at::Tensor& grad_hi) {
  using acc_t = typename Acc<scalar_t>::type;
  using sum_t = double;
  Plan<5> p = make_plan<5>(x.sizes(), {dense.strides(), grad.strides(), x.strides(), lo_idx, hi_idx});
  // As in the forward: a short inner dim along which the (tensor) bounds vary, merged with the next one into
  // long runs with the bounds as a periodic pattern (channels_last input with (1, C, 1, 1) bounds).
  int64_t pattern[5] = {};
  const int64_t period = ScalarBounds ? 0 : fold_periodic_inner<5>(p, 64, {false, false, false, true, true}, pattern);
  const int64_t plo = pattern[3], phi = pattern[4];
  const scalar_t* g = grad.const_data_ptr<scalar_t>();
  const scalar_t* xp = x.const_data_ptr<scalar_t>();
  const int64_t K = klo + khi;
  // One buffer per thread the pass uses, unless every bound entry receives exactly one element (bounds as
  // large as the output): then threads never share an entry, and one buffer avoids copies of a large bound.
  const int threads = threads_for(p.numel * static_cast<int64_t>((gi ? 3 : 2) * sizeof(scalar_t)));
  const bool one_buffer = threads == 1 || ((!HasLo || klo == p.numel) && (!HasHi || khi == p.numel));
  const int nthreads = one_buffer ? 1 : threads;
  std::vector<sum_t> sums(want_sums ? static_cast<size_t>(nthreads) * K : 0, sum_t(0));
  const int64_t s0 = p.strides[0][0], s1 = p.strides[1][0], s2 = p.strides[2][0];
  const int64_t s3 = p.strides[3][0], s4 = p.strides[4][0];
  cpu_for_each_segment(p, threads, [&](const int64_t* off, int64_t n) {
    sum_t* mine = want_sums ? sums.data() + (one_buffer ? 0 : static_cast<size_t>(thread_slot(threads)) * K) : nullptr;
    sum_t* slo = mine && HasLo ? mine : nullptr;
    sum_t* shi = mine && HasHi ? mine + klo : nullptr;
    const scalar_t* gs = g + off[1];
    const scalar_t* xs = xp + off[2];
    scalar_t* gis = gi ? gi + off[0] : nullptr;
    if (period > 0) {
      constexpr int64_t kPattern = 256;
      const int64_t len = std::max<int64_t>(1, kPattern / period) * period;  // <= 320
      const int64_t phase = off[0] % period;
      acc_t pl[320], ph[320];
      sum_t dl[320], dh[320];
      for (int64_t t = 0; t < len; ++t) {
        const int64_t c = (phase + t) % period;
        pl[t] = HasLo ? static_cast<acc_t>(lo[off[3] + c * plo]) : acc_t(0);
        ph[t] = HasHi ? static_cast<acc_t>(hi[off[4] + c * phi]) : acc_t(0);
        dl[t] = dh[t] = sum_t(0);
      }
      if (gis && mine)
        TENSOROPS_CPU_DISPATCH(clamp_backward_run_pattern<scalar_t, acc_t, sum_t, HasLo, HasHi, true, true>)(gs, xs, gis, n, pl, ph, len, dl, dh);
      else if (gis)
        TENSOROPS_CPU_DISPATCH(clamp_backward_run_pattern<scalar_t, acc_t, sum_t, HasLo, HasHi, true, false>)(gs, xs, gis, n, pl, ph, len, dl, dh);
      else if (mine)
        TENSOROPS_CPU_DISPATCH(clamp_backward_run_pattern<scalar_t, acc_t, sum_t, HasLo, HasHi, false, true>)(gs, xs, gis, n, pl, ph, len, dl, dh);
      if (mine) {
        for (int64_t t = 0; t < len; ++t) {  // fold the positions back onto the bounds' entries
          const int64_t c = (phase + t) % period;
          if (slo) slo[off[3] + c * plo] += dl[t];
          if (shi) shi[off[4] + c * phi] += dh[t];
        }
      }
      return;
    }
    if ((!gi || s0 == 1) && (s1 == 1 || s1 == 0) && s2 == 1 && (!HasLo || s3 == 0) && (!HasHi || s4 == 0)) {
      const acc_t l = HasLo ? static_cast<acc_t>(lo[off[3]]) : acc_t(0);
      const acc_t h = HasHi ? static_cast<acc_t>(hi[off[4]]) : acc_t(0);
      sum_t* a = slo ? slo + off[3] : nullptr;
      sum_t* b = shi ? shi + off[4] : nullptr;
      auto run = [&]<bool WantGi, bool WantSums>() {
        if (s1 == 0)
          TENSOROPS_CPU_DISPATCH(clamp_backward_run_const<scalar_t, acc_t, sum_t, HasLo, HasHi, ScalarBounds, WantGi, WantSums, true>)(gs, xs, gis, n, l, h, a, b);
        else
          TENSOROPS_CPU_DISPATCH(clamp_backward_run_const<scalar_t, acc_t, sum_t, HasLo, HasHi, ScalarBounds, WantGi, WantSums, false>)(gs, xs, gis, n, l, h, a, b);
      };
      if (gis && mine)
        run.template operator()<true, true>();
      else if (gis)
        run.template operator()<true, false>();
      else if (mine)
        run.template operator()<false, true>();
      return;
    }
    if (!ScalarBounds && (!gi || s0 == 1) && (s1 == 1 || s1 == 0) && s2 == 1 && (!HasLo || s3 == 1) &&
        (!HasHi || s4 == 1)) {  // elementwise bounds, contiguous along the run
      const scalar_t* ls = HasLo ? lo + off[3] : nullptr;
      const scalar_t* hs = HasHi ? hi + off[4] : nullptr;
      sum_t* a = slo ? slo + off[3] : nullptr;
      sum_t* b = shi ? shi + off[4] : nullptr;
      auto run = [&]<bool WantGi, bool WantSums>() {
        if (s1 == 0)
          TENSOROPS_CPU_DISPATCH(clamp_backward_run_tensor_contig<scalar_t, acc_t, sum_t, HasLo, HasHi, WantGi, WantSums, true>)(gs, xs, gis, n, ls, hs, a, b);
        else
          TENSOROPS_CPU_DISPATCH(clamp_backward_run_tensor_contig<scalar_t, acc_t, sum_t, HasLo, HasHi, WantGi, WantSums, false>)(gs, xs, gis, n, ls, hs, a, b);
      };
      if (gis && mine)
        run.template operator()<true, true>();
      else if (gis)
        run.template operator()<true, false>();
      else if (mine)
        run.template operator()<false, true>();
      return;
    }
    base::clamp_backward_run_strided<scalar_t, acc_t, sum_t, HasLo, HasHi, ScalarBounds>(gs, s1, xs, s2, gis, s0, lo, off[3], s3, hi,
                                                                         off[4], s4, slo, shi, n);
  });
  if (!want_sums) return;
  // the small reduction over threads, straight into the bounds' gradients (contiguous, the bounds' shapes)
  scalar_t* out_lo = HasLo && grad_lo.numel() ? grad_lo.data_ptr<scalar_t>() : nullptr;
  scalar_t* out_hi = HasHi && grad_hi.numel() ? grad_hi.data_ptr<scalar_t>() : nullptr;
  parallel_for_bytes(0, K, K * static_cast<int64_t>(nthreads * sizeof(sum_t) + sizeof(scalar_t)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      sum_t total = 0;
      for (int th = 0; th < nthreads; ++th) total += sums[static_cast<size_t>(th) * K + k];
      if (k < klo) {
        if (out_lo) out_lo[k] = static_cast<scalar_t>(total);
      } else if (out_hi) {
        out_hi[k - klo] = static_cast<scalar_t>(total);
      }
    }
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> clamp_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                                                  const std::optional<at::Tensor>& min,
                                                                  const std::optional<at::Tensor>& max,
                                                                  std::array<bool, 3> mask) {
  TensorBackward b = prepare_tensor_backward(grad, input, min, max, mask);
  if (b.done) return {b.grad_input, b.grad_min, b.grad_max};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, b.T, "tensorops_clamp_backward_cpu", [&] {
    scalar_t* gi = mask[0] ? b.grad_input.data_ptr<scalar_t>() : nullptr;
    const scalar_t* lp = b.has_min ? b.lo.const_data_ptr<scalar_t>() : nullptr;
    const scalar_t* hp = b.has_max ? b.hi.const_data_ptr<scalar_t>() : nullptr;
    const int64_t klo = b.has_min ? b.lo.numel() : 0, khi = b.has_max ? b.hi.numel() : 0;
    with_bounds(b.has_min, b.has_max, [&]<bool L, bool H>() {
      clamp_backward_pass<scalar_t, L, H, false>(b.dense, b.g, b.x, gi, lp, b.lo_idx, klo, hp, b.hi_idx, khi,
                                                 b.want_lo || b.want_hi, b.grad_min, b.grad_max);
    });
  });
  return {b.grad_input, b.grad_min, b.grad_max};
}

at::Tensor clamp_scalar_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                     const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  ScalarBackward b = prepare_scalar_backward(grad, input, min, max);
  if (b.done) return b.grad_input;
  at::Tensor none;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "tensorops_clamp_scalar_backward_cpu", [&] {
    const scalar_t lo = min ? min->to<scalar_t>() : scalar_t(0);
    const scalar_t hi = max ? max->to<scalar_t>() : scalar_t(0);
    const std::vector<int64_t> zeros(input.dim(), 0);
    with_bounds(min.has_value(), max.has_value(), [&]<bool L, bool H>() {
      clamp_backward_pass<scalar_t, L, H, true>(b.grad_input, b.g, input, b.grad_input.data_ptr<scalar_t>(), &lo, zeros,
                                                1, &hi, zeros, 1, false, none, none);
    });
  });
  return b.grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("clamp", &clamp_cpu);
  m.impl("clamp_", &clamp_inplace_cpu);
  m.impl("clamp_scalar", &clamp_scalar_cpu);
  m.impl("clamp_scalar_", &clamp_scalar_inplace_cpu);
  m.impl("clamp_backward", &clamp_backward_cpu);
  m.impl("clamp_scalar_backward", &clamp_scalar_backward_cpu);
}

}  // namespace tensorops

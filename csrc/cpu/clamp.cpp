// clamp on the CPU, forward, and the registration of the family's CPU ops (the backward is clamp_backward.cpp, a
// translation unit of its own so that a parallel build compiles the two at once): one pass (threads as
// tensorops/parallel.h decides) over a strided plan (bounds broadcast by 0 strides, never expanded in memory). The
// value rules are math.h's; the inner loops (clamp_loops.h) are compiled for AVX-512, AVX2+FMA and baseline x86-64.
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
#include "tensorops/clamp_entries.h"
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

// ---- forward passes ----------------------------------------------------------------------------------------
// Tensor bounds. x, lo, hi: scalar_t tensors viewed with out's shape (0 strides where they broadcast); out may
// be x itself (in-place). Operands: 0 out, 1 x, 2 lo, 3 hi (an absent bound stands in as x and is not read).
template <typename scalar_t, bool HasLo, bool HasHi>
void clamp_tensor_pass(const at::Tensor& out, const at::Tensor& x, const at::Tensor& lo, const at::Tensor& hi) {
  using acc_t = typename Acc<scalar_t>::type;
  const at::Tensor& lo_t = HasLo ? lo : x;
  const at::Tensor& hi_t = HasHi ? hi : x;
  Plan<4> p = make_plan<4>(out.sizes(), {out.strides(), x.strides(), lo_t.strides(), hi_t.strides()});
  // bounds that vary along a short inner dim (channels_last input, (1, C, 1, 1) bounds): a periodic pattern
  int64_t pattern[4] = {};
  const int64_t period = fold_pattern<4>(p, {false, false, HasLo, HasHi}, pattern);
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
      const PeriodicPattern pat(period, off[0]);
      scalar_t pl[kPatternCapacity], ph[kPatternCapacity];
      pat.for_each([&](int64_t t, int64_t c) {
        pl[t] = HasLo ? ls[c * plo] : scalar_t(0);
        ph[t] = HasHi ? hs[c * phi] : scalar_t(0);
      });
      for (int64_t start = 0; start < n; start += pat.len)
        TENSOROPS_CPU_DISPATCH(clamp_run_tensor_contig<scalar_t, acc_t, HasLo, HasHi>)(
            xs + start, pl, ph, ys + start, std::min(pat.len, n - start));
      return;
    }
    if (s0 == 1 && s1 == 1) {
      if ((!HasLo || s2 == 0) && (!HasHi || s3 == 0)) {  // bounds fixed along the run: (1, C, 1, 1) bounds
        const scalar_t l = HasLo ? ls[0] : scalar_t(0);
        const scalar_t h = HasHi ? hs[0] : scalar_t(0);
        if (!(HasLo && math::clamp_isnan(static_cast<acc_t>(l))) && !(HasHi && math::clamp_isnan(static_cast<acc_t>(h)))) {
          TENSOROPS_CPU_DISPATCH(clamp_run_fixed<scalar_t, acc_t, HasLo, HasHi>)(xs, ys, n, l, h);
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
      TENSOROPS_CPU_DISPATCH(clamp_run_fixed<scalar_t, acc_t, HasLo, HasHi>)(xp + off[1], y + off[0], n, lo, hi);
    else
      base::clamp_run_const_strided<scalar_t, acc_t, HasLo, HasHi>(xp + off[1], s1, y + off[0], s0, n, l, h);
  });
}

// ---- ops ---------------------------------------------------------------------------------------------------
at::Tensor clamp_tensor_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max) {
  TensorForward f = prepare_tensor_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP(f.T, "tensorops_clamp_cpu", [&] {
    either_switch(f.has_min, f.has_max, [&]<bool L, bool H>() { clamp_tensor_pass<scalar_t, L, H>(f.target, f.x, f.lo, f.hi); });
  });
  f.finish();
  return f.out;
}

at::Tensor clamp_scalar_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Scalar>& min,
                             const std::optional<at::Scalar>& max) {
  ScalarForward f = prepare_scalar_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP(f.T, "tensorops_clamp_scalar_cpu", [&] {
    // torch's checked conversion: a bound out of the dtype's range raises, as in torch
    const scalar_t lo = min ? min->to<scalar_t>() : scalar_t(0);
    const scalar_t hi = max ? max->to<scalar_t>() : scalar_t(0);
    either_switch(min.has_value(), max.has_value(), [&]<bool L, bool H>() { clamp_scalar_pass<scalar_t, L, H>(f.out, f.x, lo, hi); });
  });
  return f.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  clamp_entries::register_ops<&clamp_tensor_impl, &clamp_scalar_impl, &cpu_clamp::clamp_backward_cpu,
                              &cpu_clamp::clamp_scalar_backward_cpu>(m);
}

}  // namespace tensorops

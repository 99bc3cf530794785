// The CPU driver for a Plan: splits the linear index range over the threads that tensorops/parallel.h's
// policy grants and hands each task runs ("segments") along the innermost plan dimension, so the per-op inner
// loop sees plain pointers, a count and fixed strides that the compiler can vectorize.
#pragma once
#include "tensorops/parallel.h"
#include "tensorops/plan.h"

namespace tensorops {

// f(const int64_t* offsets, int64_t count): process `count` elements starting at operand offsets `offsets`,
// stepping by plan.strides[k][0]. `threads`: threads_for(the pass's bytes); per-thread buffers use
// thread_slot(threads).
template <int N, typename F>
void cpu_for_each_segment(const Plan<N>& p, int threads, const F& f) {
  if (p.numel == 0) return;
  run_on(threads, 0, p.numel, [&](int64_t begin, int64_t end) {
    int64_t idx[kMaxPlanDims];
    int64_t off[N] = {};
    int64_t rem = begin;
    for (int d = 0; d < p.ndim; ++d) {
      idx[d] = rem % p.sizes[d];
      rem /= p.sizes[d];
      for (int k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
    }
    int64_t i = begin;
    while (i < end) {
      const int64_t n = std::min(p.sizes[0] - idx[0], end - i);
      f(static_cast<const int64_t*>(off), n);
      i += n;
      // advance the multi-index by n along dim 0 and carry
      idx[0] += n;
      for (int k = 0; k < N; ++k) off[k] += n * p.strides[k][0];
      for (int d = 0; d + 1 < p.ndim && idx[d] == p.sizes[d]; ++d) {
        idx[d] = 0;
        idx[d + 1] += 1;
        for (int k = 0; k < N; ++k) off[k] += p.strides[k][d + 1] - p.sizes[d] * p.strides[k][d];
      }
    }
  });
}

}  // namespace tensorops

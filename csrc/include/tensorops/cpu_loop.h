// The CPU driver for a Plan: splits the linear index range over the threads that tensorops/parallel.h's
// policy grants (evenly, or in fixed chunks for reductions) and hands each task runs ("segments") along the
// innermost plan dimension, so the per-op inner loop sees plain pointers, a count and fixed strides that the
// compiler can vectorize.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "tensorops/parallel.h"
#include "tensorops/plan.h"

namespace tensorops {

namespace cpu_loop_detail {
// f(offsets, count) for the runs of [begin, end) of p's linear index range, in order.
template <int N, typename F>
void for_each_segment_in(const Plan<N>& p, int64_t begin, int64_t end, const F& f) {
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
    if (i >= end) break;
    // advance the multi-index by n along dim 0 and carry
    idx[0] += n;
    for (int k = 0; k < N; ++k) off[k] += n * p.strides[k][0];
    for (int d = 0; d + 1 < p.ndim && idx[d] == p.sizes[d]; ++d) {
      idx[d] = 0;
      idx[d + 1] += 1;
      for (int k = 0; k < N; ++k) off[k] += p.strides[k][d + 1] - p.sizes[d] * p.strides[k][d];
    }
  }
}
}  // namespace cpu_loop_detail

// f(const int64_t* offsets, int64_t count): process `count` elements starting at operand offsets `offsets`,
// stepping by plan.strides[k][0]. `threads`: threads_for(the pass's bytes). For passes that write each output
// element once; a pass that sums into shared entries uses cpu_for_each_chunk.
template <int N, typename F>
void cpu_for_each_segment(const Plan<N>& p, int threads, const F& f) {
  if (p.numel == 0) return;
  run_on(threads, 0, p.numel, [&](int64_t begin, int64_t end) { cpu_loop_detail::for_each_segment_in(p, begin, end, f); });
}

// ---- reductions: fixed chunks ----------------------------------------------------------------------------------
// A pass that sums elements into K statistics entries (normalize's grad_mean / grad_std, clamp's bound
// gradients) gives the same bits whatever the thread count and whatever parallel.h's policy decides: the linear
// index range is cut into chunks whose boundaries depend only on numel and K, each chunk sums its elements in
// index order into its own partial buffer (K entries), and the caller adds the partials up in chunk order.
// Threads take whole chunks. (One float partial per thread, as before 2026-12-06, gave different bits on one and
// on two threads, and under torch.use_deterministic_algorithms(True) two identical calls could differ.)
// Memory stays bounded: at most kMaxReductionChunks chunks of at least max(kMinReductionChunk elements,
// kElementsPerEntry * K), so the partials hold at most max(K, numel / kElementsPerEntry) entries.
constexpr int64_t kMaxReductionChunks = 64;
constexpr int64_t kMinReductionChunk = 32768;  // at::internal::GRAIN_SIZE
constexpr int64_t kElementsPerEntry = 4;

// The number of chunks of a reduction over numel elements into `entries` partial entries per chunk (0 where the
// pass needs no partials: every entry receives exactly one element, e.g. bounds as large as the output).
inline int64_t reduction_chunks(int64_t numel, int64_t entries) {
  const int64_t min_size = std::max(kMinReductionChunk, kElementsPerEntry * entries);
  return std::max<int64_t>(1, std::min(kMaxReductionChunks, numel / min_size));
}

// Chunk c of `chunks` over numel elements starts here (chunk c ends where c + 1 starts).
inline int64_t reduction_chunk_begin(int64_t numel, int64_t chunks, int64_t c) {
  return numel / chunks * c + std::min(c, numel % chunks);
}

// f(int64_t chunk, const int64_t* offsets, int64_t count): cpu_for_each_segment's runs, those of chunk
// `chunk` (of `chunks`, reduction_chunks()) in index order, whole chunks to a thread (`threads` as there).
template <int N, typename F>
void cpu_for_each_chunk(const Plan<N>& p, int64_t chunks, int threads, const F& f) {
  if (p.numel == 0) return;
  run_on(threads, 0, chunks, [&](int64_t first, int64_t last) {
    for (int64_t c = first; c < last; ++c)
      cpu_loop_detail::for_each_segment_in(
          p, reduction_chunk_begin(p.numel, chunks, c), reduction_chunk_begin(p.numel, chunks, c + 1),
          [&](const int64_t* off, int64_t n) { f(c, off, n); });
  });
}

// ---- values that repeat along a run ----------------------------------------------------------------------------
// A short inner dimension along which per-channel values vary (C of a channels_last batch with (1, C, 1, 1)
// statistics or bounds), walked contiguously together with the next one, whose values do not vary: the two are
// merged into long runs (fold_periodic_inner) and a kernel gets the values as a periodic pattern, unrolled into
// a buffer of len positions (a multiple of the period, at most kPatternSpan) so its loop is plain and vectorizes.
constexpr int64_t kMaxPatternPeriod = 64;  // the longest period folded
constexpr int64_t kPatternSpan = 256;      // positions a pattern buffer is unrolled to (a multiple of the period)
constexpr int64_t kPatternCapacity = kPatternSpan + kMaxPatternPeriod;  // buffer size: len plus one period of slack

// Folds p's innermost dimension into a periodic pattern where it can; returns the period (0: not folded).
template <int N>
int64_t fold_pattern(Plan<N>& p, const std::array<bool, N>& may_vary, int64_t (&pattern_strides)[N]) {
  return fold_periodic_inner<N>(p, kMaxPatternPeriod, may_vary, pattern_strides);
}

// The pattern of one run: its phase is the run's output offset modulo the period (fold_periodic_inner makes
// every outer output stride a multiple of the period).
struct PeriodicPattern {
  int64_t period, phase, len;
  PeriodicPattern(int64_t period_, int64_t out_offset)
      : period(period_), phase(out_offset % period_), len(std::max<int64_t>(1, kPatternSpan / period_) * period_) {}
  // f(t, c) for each buffer position t < len, with c the entry of the period at t
  template <typename F>
  void for_each(const F& f) const {
    for (int64_t t = 0; t < len; ++t) f(t, (phase + t) % period);
  }
};

}  // namespace tensorops

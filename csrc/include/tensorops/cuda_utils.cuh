// Small CUDA launch helpers shared by every family's .cu file. Only c10/cuda headers (ATen/cuda/CUDAContext.h
// pulls cuSPARSE headers that not every toolkit ships).
#pragma once
#include <algorithm>
#include <cstdint>

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "tensorops/index_width.h"
#include "tensorops/plan.h"

// Kernel parameters read with run-time indices (the plan, by-value coefficient tables) stay in the parameter
// space instead of being copied to each thread's local memory (CUDA 11.7+, sm_70+).
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define TENSOROPS_GRID_CONSTANT __grid_constant__
#else
#define TENSOROPS_GRID_CONSTANT
#endif

namespace tensorops {
namespace cuda {

constexpr int kThreads = 256;  // threads per block for elementwise kernels
constexpr int kVec = 4;        // elements per thread per step

// Elements per thread for a dense, aligned loop over T: kVec, or as many as fill 16 bytes (one vector load and
// store per thread) for 1- and 2-byte dtypes.
template <typename T>
constexpr int vec_elems() {
  return sizeof(T) * kVec >= 16 ? kVec : static_cast<int>(16 / sizeof(T));
}

// A naturally aligned bundle of N elements, for one vector load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `work` items of `per_block` each, for loops with 64-bit counters (or none that can wrap).
inline unsigned int blocks_for(int64_t work, int64_t per_block) {
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(work, per_block), 1 << 24)));
}

// Calls f(index_t{}) with int32_t or int64_t.
template <typename F>
void with_index_type(bool use_int32, const F& f) {
  if (use_int32)
    f(int32_t{});
  else
    f(int64_t{});
}

// Every grid-stride launch over a plan goes through here: the grid and the index width (index_width.h: 32-bit
// only when every index the loop forms fits, grid-stride steps included) are picked by indexed_grid, and
// launch_with calls f(index_t{}, blocks) with index_t int32_t or int64_t. `items_per_block` = threads *
// elements per thread per step; `max_blocks` caps the grid (a few blocks per SM for per-block partials, ...).
template <int N>
IndexedLaunch indexed_grid(const Plan<N>& p, int64_t items_per_block, int64_t max_blocks = int64_t{1} << 24) {
  return pick_indexed_launch(p.numel, p.max_offset(), items_per_block, max_blocks);
}

template <typename F>
void launch_with(const IndexedLaunch& l, const F& f) {
  with_index_type(l.use_int32, [&](auto index_tag) { f(index_tag, static_cast<unsigned int>(l.blocks)); });
}

// Both steps at once, for a launch whose buffers do not depend on the grid.
template <int N, typename F>
IndexedLaunch launch_indexed(const Plan<N>& p, int64_t items_per_block, const F& f,
                             int64_t max_blocks = int64_t{1} << 24) {
  const IndexedLaunch l = indexed_grid(p, items_per_block, max_blocks);
  launch_with(l, f);
  return l;
}

// The same for a flat loop over n elements (offsets are the indices themselves).
template <typename F>
IndexedLaunch launch_indexed(int64_t n, int64_t items_per_block, const F& f, int64_t max_blocks = int64_t{1} << 24) {
  const IndexedLaunch l = pick_indexed_launch(n, n, items_per_block, max_blocks);
  launch_with(l, f);
  return l;
}

// Whether the current stream is being captured into a CUDA graph (host-to-device copies from host memory
// would then be replayed from whatever that memory holds at replay time).
inline bool stream_capturing() {
  return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
}

}  // namespace cuda
}  // namespace tensorops

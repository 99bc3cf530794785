// Small CUDA launch helpers shared by every family's .cu file. Only c10/cuda headers (ATen/cuda/CUDAContext.h
// pulls cuSPARSE headers that not every toolkit ships).
#pragma once
#include <algorithm>
#include <cstdint>

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

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

// A naturally aligned bundle of N elements, for one vector load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `work` items of `per_block` each; kernels use grid-stride loops, so capping is safe.
inline unsigned int blocks_for(int64_t work, int64_t per_block) {
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(work, per_block), 1 << 24)));
}

// 32-bit index math when every offset fits (a tensor over 2^31 elements takes the 64-bit path).
template <int N>
inline bool fits_int32(const Plan<N>& p) {
  return p.max_offset() + kVec * static_cast<int64_t>(kThreads) < (int64_t{1} << 31);
}

}  // namespace cuda
}  // namespace tensorops

// Warp-level helpers shared by the kernels that sum per-entry gradients (clamp's and normalize's backward).
#pragma once
#include "tensorops/cuda_utils.cuh"

namespace tensorops {
namespace kernels {

constexpr int kWarpSize = 32;

// Adds v to buf[k] for every lane of a warp, with atomics (shared or global memory). All 32 lanes must call it
// (callers keep warps converged: every thread of a block runs the same number of loop steps); lanes with nothing
// to add pass v = 0. When the whole warp aims at one entry (per-channel statistics or bounds: the common case)
// it sums across the warp first and adds once, instead of 32 atomics serialised on one address.
template <typename sum_t, typename index_t>
__device__ __forceinline__ void warp_accumulate(sum_t* buf, index_t k, sum_t v) {
  const unsigned full = 0xffffffffu;
  const index_t k0 = __shfl_sync(full, k, 0);
  if (__all_sync(full, k == k0)) {
    TENSOROPS_UNROLL
    for (int o = kWarpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(full, v, o);
    if ((threadIdx.x & (kWarpSize - 1)) == 0) atomicAdd(buf + k0, v);
  } else if (v != sum_t(0)) {
    atomicAdd(buf + k, v);
  }
}

}  // namespace kernels
}  // namespace tensorops

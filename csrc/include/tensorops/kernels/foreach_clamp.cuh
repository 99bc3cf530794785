// The many-tensor clamp's CUDA kernel (launched by csrc/cuda/foreach_clamp_cuda.cu). A header, so that nvcc and
// the emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. The values are
// math/clamp.h's clamp_value, the function the CPU loops call.
#pragma once
#include <cstdint>

#include "tensorops/clamp_host.h"
#include "tensorops/copy_table.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/math/clamp.h"

namespace tensorops {
namespace kernels {

using clamp_host::Acc;

constexpr int64_t kForeachTile = static_cast<int64_t>(cuda::kThreads) * cuda::kVec;

template <typename scalar_t, bool HasLo, bool HasHi>
__device__ __forceinline__ scalar_t clamp_element(scalar_t x, typename Acc<scalar_t>::type lo,
                                                  typename Acc<scalar_t>::type hi) {
  using acc_t = typename Acc<scalar_t>::type;
  return static_cast<scalar_t>(math::clamp_value<acc_t, HasLo, HasHi, false>(static_cast<acc_t>(x), lo, hi));
}

// table: start[n + 1] (prefix element counts), x[n], y[n] (addresses), as int64.
template <typename scalar_t, bool HasLo, bool HasHi>
__global__ void foreach_clamp_kernel(const int64_t* __restrict__ table, int64_t n, int64_t total,
                                     typename Acc<scalar_t>::type lo, typename Acc<scalar_t>::type hi) {
  const int64_t* start = table;
  const int64_t* xs = table + n + 1;
  const int64_t* ys = table + 2 * n + 1;
  __shared__ int64_t tile_seg;
  for (int64_t tile = blockIdx.x; tile * kForeachTile < total; tile += gridDim.x) {
    const int64_t first = tile * kForeachTile;
    const int64_t count = min(kForeachTile, total - first);
    if (threadIdx.x == 0) tile_seg = copy_table::find_segment(start, n, first);
    __syncthreads();
    const int64_t s = tile_seg;
    if (first + count <= start[s + 1]) {  // the tile lies in one tensor
      const scalar_t* x = reinterpret_cast<const scalar_t*>(xs[s]) + (first - start[s]);
      scalar_t* y = reinterpret_cast<scalar_t*>(ys[s]) + (first - start[s]);
      for (int64_t k = threadIdx.x; k < count; k += blockDim.x)
        y[k] = clamp_element<scalar_t, HasLo, HasHi>(x[k], lo, hi);
    } else {
      for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
        const int64_t q = first + k;
        const int64_t e = copy_table::find_segment(start, n, q);
        const int64_t off = q - start[e];
        reinterpret_cast<scalar_t*>(ys[e])[off] =
            clamp_element<scalar_t, HasLo, HasHi>(reinterpret_cast<const scalar_t*>(xs[e])[off], lo, hi);
      }
    }
    __syncthreads();  // tile_seg is rewritten for the next tile
  }
}

}  // namespace kernels
}  // namespace tensorops

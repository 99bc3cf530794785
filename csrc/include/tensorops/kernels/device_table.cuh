// The kernel behind cuda::upload_table (device_table.cuh): writes words carried in its own parameters to device
// memory, the capture-safe way to put a host table on the device. A template so that every .cu that includes it
// may instantiate it (kernels in headers have vague linkage only as templates).
#pragma once
#include <cstdint>

#include "tensorops/cuda_utils.cuh"

namespace tensorops {
namespace kernels {

// Words per fill launch: with the other parameters under the classic 4 KB kernel-parameter limit.
constexpr int64_t kFillWords = 496;

template <int64_t Words>
struct WordChunk {
  int64_t w[Words];
};

// dst[i] = chunk.w[i] for i < count (one block).
template <int64_t Words>
__global__ void fill_words_kernel(TENSOROPS_GRID_CONSTANT const WordChunk<Words> chunk, int64_t* dst, int64_t count) {
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = chunk.w[i];
}

}  // namespace kernels
}  // namespace tensorops

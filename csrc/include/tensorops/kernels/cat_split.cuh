// cat/split's CUDA kernel (launched by csrc/cuda/cat_split_cuda.cu). A header, so that nvcc and the emulated
// device (emu/device.h, csrc/emulated/) compile the same kernel source. The copy table and its lookups are
// copy_table.h's, the code the CPU kernel runs.
#pragma once
#include <cstdint>

#include "tensorops/copy_table.h"
#include "tensorops/cuda_utils.cuh"

namespace tensorops {
namespace kernels {

// Blocks take tiles of kCopyTile units. A tile that lies inside one row of one piece (every tile of a large
// copy) is a plain contiguous copy: one lookup by one thread, no per-unit index math. Other tiles (rows and
// pieces smaller than a tile) locate every unit on its own.
constexpr int64_t kCopyTile = static_cast<int64_t>(cuda::kThreads) * cuda::kVec;

// Table words passed by value: with the kernel's other arguments under the classic 4 KB parameter limit
// (grouped_words(n, groups) = 5n + 9 * groups + 1: up to 90 pieces in 5 unit groups, 97 in one).
constexpr int64_t kCopyParamWords = 496;
struct CopyTableParam {
  int64_t w[kCopyParamWords];
};

// One tile of a group whose units are U: `first` its first unit, `count` its units.
template <typename U>
__device__ __forceinline__ void copy_tile(const copy_table::UnitGroup& g, int64_t first, int64_t count,
                                          int64_t& tile_src, int64_t& tile_dst, bool& tile_contiguous) {
  constexpr int64_t V = static_cast<int64_t>(sizeof(U));
  if (threadIdx.x == 0) {
    const copy_table::Location l = copy_table::locate(g, first * V);
    tile_contiguous = l.run >= count * V;
    tile_src = l.src;
    tile_dst = l.dst;
  }
  __syncthreads();
  if (tile_contiguous) {
    const U* src = reinterpret_cast<const U*>(tile_src);
    U* dst = reinterpret_cast<U*>(tile_dst);
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) dst[k] = src[k];
  } else {
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      const copy_table::Location l = copy_table::locate(g, (first + k) * V);
      *reinterpret_cast<U*>(l.dst) = *reinterpret_cast<const U*>(l.src);
    }
  }
  __syncthreads();  // tile_* are rewritten for the next tile
}

// `table`: the grouped buffer (copy_table.h) on the device, or nullptr for the one in `inline_table`. Every tile
// belongs to one unit group; the unit is the same for the whole block, so the switch does not diverge.
__global__ void copy_groups_kernel(TENSOROPS_GRID_CONSTANT const CopyTableParam inline_table, const int64_t* table,
                                   int64_t rows, int64_t tiles) {
  const int64_t* buf = table != nullptr ? table : inline_table.w;
  __shared__ int64_t tile_src, tile_dst;
  __shared__ bool tile_contiguous;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const copy_table::UnitGroup g = copy_table::unit_group(buf, copy_table::find_group(buf, tile), rows);
    const int64_t first = (tile - g.first_tile) * kCopyTile;
    const int64_t count = min(kCopyTile, g.units - first);
    switch (g.unit) {
      case 16: copy_tile<uint4>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 8: copy_tile<uint2>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 4: copy_tile<uint32_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 2: copy_tile<uint16_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      default: copy_tile<uint8_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
    }
  }
}

}  // namespace kernels
}  // namespace tensorops

// cat and split on CUDA: ONE kernel launch for any number of inputs/outputs.
//
// The per-piece copy table of copy_table.h (addresses, row strides, prefix column offsets) travels in the kernel
// parameters when it fits (up to 90 pieces, 97 of one unit): no host-to-device copy, and a CUDA graph captures the
// table's values. Larger tables go to a device buffer: outside graph capture by a non-blocking copy from a
// pinned host tensor on the current stream (the caching host allocator keeps the block until the copy ran);
// while capturing, by small fill kernels that carry the table in their own parameters (a captured memcpy would
// replay from whatever the host memory holds at replay time). Every thread copies units of V bytes, chosen per
// piece: V = 16 (one 16-byte vector load and store) for a piece whose addresses, row strides and width are
// multiples of 16, else the largest power of two that divides them (down to single bytes), so one badly aligned
// piece does not slow the others and the kernel never depends on the dtype. The table is grouped by unit
// (copy_table.h's write_unit_groups); a unit finds its row with a fast divisor and its piece with locate() of
// copy_table.h (a binary search over the prefix offsets), the same code the CPU kernel runs. All offsets are
// 64-bit. The checks, the output and the table come from host/cat_split_host.cpp, compiled once for the CPU and
// CUDA ops.
#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "tensorops/cat_split_host.h"
#include "tensorops/copy_table.h"
#include "tensorops/cuda_utils.cuh"

namespace tensorops {
namespace {

using namespace cat_split_host;

// Blocks take tiles of kTile units. A tile that lies inside one row of one piece (every tile of a large
// copy) is a plain contiguous copy: one lookup by one thread, no per-unit index math. Other tiles (rows and
// pieces smaller than a tile) locate every unit on its own.
constexpr int64_t kTile = static_cast<int64_t>(cuda::kThreads) * cuda::kVec;

// Table words passed by value: with the kernel's other arguments under the classic 4 KB parameter limit
// (grouped_words(n, groups) = 5n + 9 * groups + 1: up to 90 pieces in 5 unit groups, 97 in one).
constexpr int64_t kParamWords = 496;
struct TableParam {
  int64_t w[kParamWords];
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
__global__ void copy_groups_kernel(TENSOROPS_GRID_CONSTANT const TableParam inline_table, const int64_t* table,
                                   int64_t rows, int64_t tiles) {
  const int64_t* buf = table != nullptr ? table : inline_table.w;
  __shared__ int64_t tile_src, tile_dst;
  __shared__ bool tile_contiguous;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const copy_table::UnitGroup g = copy_table::unit_group(buf, copy_table::find_group(buf, tile), rows);
    const int64_t first = (tile - g.first_tile) * kTile;
    const int64_t count = min(kTile, g.units - first);
    switch (g.unit) {
      case 16: copy_tile<uint4>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 8: copy_tile<uint2>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 4: copy_tile<uint32_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      case 2: copy_tile<uint16_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
      default: copy_tile<uint8_t>(g, first, count, tile_src, tile_dst, tile_contiguous); break;
    }
  }
}

// Writes `count` words of `chunk` to dst (a capture-safe upload of a large table).
__global__ void fill_words_kernel(TENSOROPS_GRID_CONSTANT const TableParam chunk, int64_t* dst, int64_t count) {
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = chunk.w[i];
}

void run_cuda(const Prepared& p, bool into_wide, c10::Device device) {
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  // the plain table first (host memory), then the grouped one that the kernel reads
  std::vector<int64_t> plain(static_cast<size_t>(copy_table::table_words(n)));
  fill_table(plain.data(), p.pieces, p.wide, p.wide_rs, into_wide);
  const copy_table::SegmentTable t = copy_table::table_view(plain.data(), n, p.row_bytes, p.rows);
  const int64_t words = copy_table::grouped_words(n, copy_table::class_count(copy_table::unit_classes(t)));
  TableParam inline_table;
  const int64_t* dev = nullptr;
  at::Tensor host, table;  // kept alive until the launch is queued
  int64_t* buf = inline_table.w;
  if (words > kParamWords) {
    host = at::empty({words}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
    buf = host.mutable_data_ptr<int64_t>();
  }
  const int64_t tiles = copy_table::write_unit_groups(t, kTile, buf);
  if (words > kParamWords) {
    if (!cuda::stream_capturing()) {
      // non_blocking from pinned memory: an async copy on the current stream that keeps `host` alive until done
      table = host.to(at::TensorOptions().device(device), /*non_blocking=*/true);
    } else {
      table = at::empty({words}, at::TensorOptions().dtype(at::kLong).device(device));
      for (int64_t first = 0; first < words; first += kParamWords) {
        const int64_t count = std::min(kParamWords, words - first);
        TableParam chunk;
        std::copy(buf + first, buf + first + count, chunk.w);
        fill_words_kernel<<<1, cuda::kThreads, 0, stream>>>(chunk, table.mutable_data_ptr<int64_t>() + first, count);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    }
    dev = table.const_data_ptr<int64_t>();
  }
  copy_groups_kernel<<<cuda::blocks_for(tiles, 1), cuda::kThreads, 0, stream>>>(inline_table, dev, p.rows, tiles);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The guard follows tensors[0]; a tensor on another device is reported by cat_prepare with its position.
at::Tensor cat_cuda(at::TensorList tensors, int64_t dim) {
  c10::cuda::OptionalCUDAGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  Prepared p;
  at::Tensor out = cat_prepare(tensors, dim, p);
  run_cuda(p, /*into_wide=*/true, out.device());
  return out;
}

std::vector<at::Tensor> split_cuda(const at::Tensor& input, c10::SymIntArrayRef sizes, int64_t dim) {
  const c10::cuda::CUDAGuard guard(input.device());
  Prepared p;
  std::vector<at::Tensor> outs = split_prepare(input, sizes, dim, p);
  run_cuda(p, /*into_wide=*/false, input.device());
  return outs;
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CUDA, m) {
  m.impl("cat", &cat_cuda);
  m.impl("split", &split_cuda);
}

}  // namespace tensorops

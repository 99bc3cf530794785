// cat and split on CUDA: ONE kernel launch for any number of inputs/outputs.
//
// The per-piece copy table of copy_table.h (addresses, row strides, prefix column offsets) travels in the kernel
// parameters when it fits (up to 99 pieces): no host-to-device copy, and a CUDA graph captures the
// table's values. Larger tables go to a device buffer: outside graph capture by a non-blocking copy from a
// pinned host tensor on the current stream (the caching host allocator keeps the block until the copy ran);
// while capturing, by small fill kernels that carry the table in their own parameters (a captured memcpy would
// replay from whatever the host memory holds at replay time). Every thread copies units of V bytes: V = 16
// (one 16-byte vector load and store) when every address, row stride and piece width is a multiple of 16, else
// the largest power of two that divides them all (down to single bytes), so the kernel never depends on the
// dtype. A unit finds its piece with locate() of copy_table.h (a binary search over the prefix offsets), the
// same code the CPU kernel runs. All offsets are 64-bit. The checks, the output and the table come from
// host/cat_split_host.cpp, compiled once for the CPU and CUDA ops.
#include <algorithm>

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
// (table_words(n) = 5n + 1: up to 99 pieces).
constexpr int64_t kParamWords = 496;
struct TableParam {
  int64_t w[kParamWords];
};

// `table`: the device buffer, or nullptr for the table in `inline_table`.
template <typename U>
__global__ void copy_segments_kernel(TENSOROPS_GRID_CONSTANT const TableParam inline_table, const int64_t* table,
                                     int64_t n, int64_t row_bytes, int64_t rows, int64_t units) {
  const copy_table::SegmentTable t =
      copy_table::table_view(table != nullptr ? table : inline_table.w, n, row_bytes, rows);
  constexpr int64_t V = static_cast<int64_t>(sizeof(U));
  __shared__ int64_t tile_src, tile_dst;
  __shared__ bool tile_contiguous;
  for (int64_t tile = blockIdx.x; tile * kTile < units; tile += gridDim.x) {
    const int64_t first = tile * kTile;
    const int64_t count = min(kTile, units - first);
    if (threadIdx.x == 0) {
      const copy_table::Location l = copy_table::locate(t, first * V);
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
        const copy_table::Location l = copy_table::locate(t, (first + k) * V);
        *reinterpret_cast<U*>(l.dst) = *reinterpret_cast<const U*>(l.src);
      }
    }
    __syncthreads();  // tile_* are rewritten for the next tile
  }
}

// Writes `count` words of `chunk` to dst (a capture-safe upload of a large table).
__global__ void fill_words_kernel(TENSOROPS_GRID_CONSTANT const TableParam chunk, int64_t* dst, int64_t count) {
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = chunk.w[i];
}

template <typename U>
void launch(const TableParam& inline_table, const int64_t* table, const copy_table::SegmentTable& t,
            cudaStream_t stream) {
  const int64_t units = t.rows * t.row_bytes / static_cast<int64_t>(sizeof(U));
  const unsigned int blocks = cuda::blocks_for(units, kTile);
  copy_segments_kernel<U><<<blocks, cuda::kThreads, 0, stream>>>(inline_table, table, t.n, t.row_bytes, t.rows,
                                                                 units);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void run_cuda(const Prepared& p, bool into_wide, c10::Device device) {
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  const int64_t words = copy_table::table_words(n);
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  TableParam inline_table;
  const int64_t* dev = nullptr;
  at::Tensor host, table;  // kept alive until the launch is queued
  int64_t* buf = inline_table.w;
  if (words > kParamWords) {
    host = at::empty({words}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
    buf = host.mutable_data_ptr<int64_t>();
  }
  fill_table(buf, p.pieces, p.wide, p.wide_rs, into_wide);
  const copy_table::SegmentTable t = copy_table::table_view(buf, n, p.row_bytes, p.rows);
  const int64_t align = copy_table::common_alignment(t);
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
  switch (align) {
    case 16: launch<uint4>(inline_table, dev, t, stream); break;
    case 8: launch<uint2>(inline_table, dev, t, stream); break;
    case 4: launch<uint32_t>(inline_table, dev, t, stream); break;
    case 2: launch<uint16_t>(inline_table, dev, t, stream); break;
    default: launch<uint8_t>(inline_table, dev, t, stream); break;
  }
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

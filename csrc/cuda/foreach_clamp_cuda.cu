// The many-tensor clamp on CUDA: one launch per dtype for the whole list. The table of a group (prefix element
// counts, source and destination addresses) is written into a pinned host tensor and copied to the device with
// a non-blocking copy on the current stream, as cat/split do (cat_split_cuda.cu). Blocks take tiles of
// elements; a tile inside one tensor (every tile of a large tensor) is located once by one thread and then
// clamped as a contiguous run; a tile that spans tensors locates each element with the binary search of
// copy_table.h. The values are math.h's clamp_lower / clamp_upper, the functions the CPU loops call.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "tensorops/copy_table.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/foreach_clamp_host.h"
#include "tensorops/math/clamp.h"

namespace tensorops {
namespace {

using clamp_host::Acc;
using foreach_clamp_host::from_bits;
using foreach_clamp_host::Item;

constexpr int64_t kTile = static_cast<int64_t>(cuda::kThreads) * cuda::kVec;

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
  for (int64_t tile = blockIdx.x; tile * kTile < total; tile += gridDim.x) {
    const int64_t first = tile * kTile;
    const int64_t count = min(kTile, total - first);
    if (threadIdx.x == 0) tile_seg = copy_table::find_segment(start, n, first);
    __syncthreads();
    const int64_t s = tile_seg;
    if (first + count <= start[s + 1]) {  // the tile lies in one tensor
      const scalar_t* x = reinterpret_cast<const scalar_t*>(xs[s]) + (first - start[s]);
      scalar_t* y = reinterpret_cast<scalar_t*>(ys[s]) + (first - start[s]);
      for (int64_t k = threadIdx.x; k < count; k += blockDim.x) y[k] = clamp_element<scalar_t, HasLo, HasHi>(x[k], lo, hi);
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

template <typename scalar_t>
void launch_group(const std::vector<const Item*>& group, bool has_lo, bool has_hi, c10::Device device) {
  using acc_t = typename Acc<scalar_t>::type;
  const int64_t n = static_cast<int64_t>(group.size());
  at::Tensor host = at::empty({3 * n + 1}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
  int64_t* buf = host.mutable_data_ptr<int64_t>();
  buf[0] = 0;
  for (int64_t s = 0; s < n; ++s) {
    buf[s + 1] = buf[s] + group[s]->numel;
    buf[n + 1 + s] = reinterpret_cast<int64_t>(group[s]->x);
    buf[2 * n + 1 + s] = reinterpret_cast<int64_t>(group[s]->y);
  }
  const int64_t total = buf[n];
  const acc_t lo = static_cast<acc_t>(from_bits<scalar_t>(group[0]->lo));
  const acc_t hi = static_cast<acc_t>(from_bits<scalar_t>(group[0]->hi));
  const at::Tensor table = host.to(at::TensorOptions().device(device), /*non_blocking=*/true);
  const int64_t* dev = table.const_data_ptr<int64_t>();
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  const unsigned int blocks = cuda::blocks_for(total, kTile);
  either_switch(has_lo, has_hi, [&]<bool L, bool H>() {
    foreach_clamp_kernel<scalar_t, L, H><<<blocks, cuda::kThreads, 0, stream>>>(dev, n, total, lo, hi);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

// One launch per dtype present, in order of first appearance.
void run_items(const std::vector<Item>& items, bool has_lo, bool has_hi, c10::Device device) {
  std::vector<bool> done(items.size(), false);
  for (size_t i = 0; i < items.size(); ++i) {
    if (done[i]) continue;
    std::vector<const Item*> group;
    for (size_t j = i; j < items.size(); ++j) {
      if (!done[j] && items[j].dtype == items[i].dtype) {
        group.push_back(&items[j]);
        done[j] = true;
      }
    }
    TENSOROPS_DISPATCH_FOREACH_CLAMP(items[i].dtype, "tensorops_foreach_clamp_cuda",
                                     [&] { launch_group<scalar_t>(group, has_lo, has_hi, device); });
  }
}

std::vector<at::Tensor> foreach_clamp_scalar_cuda(at::TensorList tensors, const std::optional<at::Scalar>& min,
                                                  const std::optional<at::Scalar>& max) {
  c10::cuda::OptionalCUDAGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/false, min, max);
  if (!p.items.empty()) run_items(p.items, p.has_min, p.has_max, tensors[0].device());
  return p.outs;
}

void foreach_clamp_scalar_inplace_cuda(at::TensorList tensors, const std::optional<at::Scalar>& min,
                                       const std::optional<at::Scalar>& max) {
  c10::cuda::OptionalCUDAGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/true, min, max);
  if (!p.items.empty()) run_items(p.items, p.has_min, p.has_max, tensors[0].device());
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CUDA, m) {
  m.impl("foreach_clamp_scalar", &foreach_clamp_scalar_cuda);
  m.impl("foreach_clamp_scalar_", &foreach_clamp_scalar_inplace_cuda);
}

}  // namespace tensorops

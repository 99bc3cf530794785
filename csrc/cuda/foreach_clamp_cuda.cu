// The many-tensor clamp on CUDA: one launch per dtype for the whole list. The table of a group (prefix element
// counts, source and destination addresses) goes to the device by cuda::upload_table (device_table.cuh: no
// synchronization, capture-safe), as cat/split's large tables do. The kernel (kernels/foreach_clamp.cuh): blocks
// take tiles of elements; a tile inside one tensor (every tile of a large tensor) is located once by one thread and
// then clamped as a contiguous run; a tile that spans tensors locates each element with the binary search of
// copy_table.h. The values are math/clamp.h's clamp_value, the function the CPU loops call.
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/device_table.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/foreach_clamp_host.h"
#include "tensorops/kernels/foreach_clamp.cuh"

namespace tensorops {
namespace {

using clamp_host::Acc;
using foreach_clamp_host::from_bits;
using foreach_clamp_host::Item;

template <typename scalar_t>
void launch_group(const std::vector<const Item*>& group, bool has_lo, bool has_hi, c10::Device device) {
  using acc_t = typename Acc<scalar_t>::type;
  const int64_t n = static_cast<int64_t>(group.size());
  int64_t total = 0;
  const at::Tensor table = cuda::upload_table(3 * n + 1, device, [&](int64_t* buf) {
    buf[0] = 0;
    for (int64_t s = 0; s < n; ++s) {
      buf[s + 1] = buf[s] + group[s]->numel;
      buf[n + 1 + s] = reinterpret_cast<int64_t>(group[s]->x);
      buf[2 * n + 1 + s] = reinterpret_cast<int64_t>(group[s]->y);
    }
    total = buf[n];
  });
  const acc_t lo = static_cast<acc_t>(from_bits<scalar_t>(group[0]->lo));
  const acc_t hi = static_cast<acc_t>(from_bits<scalar_t>(group[0]->hi));
  const int64_t* dev = table.const_data_ptr<int64_t>();
  const cuda::stream_t stream = cuda::current_stream(device);
  const unsigned int blocks = cuda::blocks_for(total, kernels::kForeachTile);
  either_switch(has_lo, has_hi, [&]<bool L, bool H>() {
    cuda::launch(kernels::foreach_clamp_kernel<scalar_t, L, H>, blocks, cuda::kThreads, 0, stream, dev, n, total, lo,
                 hi);
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
  cuda::OptionalDeviceGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/false, min, max);
  if (!p.items.empty()) run_items(p.items, p.has_min, p.has_max, tensors[0].device());
  return p.outs;
}

void foreach_clamp_scalar_inplace_cuda(at::TensorList tensors, const std::optional<at::Scalar>& min,
                                       const std::optional<at::Scalar>& max) {
  cuda::OptionalDeviceGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/true, min, max);
  if (!p.items.empty()) run_items(p.items, p.has_min, p.has_max, tensors[0].device());
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  m.impl("foreach_clamp_scalar", &foreach_clamp_scalar_cuda);
  m.impl("foreach_clamp_scalar_", &foreach_clamp_scalar_inplace_cuda);
}

}  // namespace tensorops

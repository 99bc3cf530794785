// resized_crop_mirror_normalize on CUDA: one launch for the whole batch, one thread per output element
// (grid-stride, 64-bit indices, split into (n, c, i, j) with fast divisors), as crop_mirror_normalize's. The
// per-sample table (resize::Sample: image, two axes, mirror) travels as a kernel parameter for batches up to
// kResizeParamSamples images and is uploaded above that (cmn_launch.cuh). The kernel: kernels/resize.cuh.
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cmn_launch.cuh"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/resize.cuh"
#include "tensorops/resize_entries.h"
#include "tensorops/resize_host.h"

namespace tensorops {
namespace {

void run(resize_host::Setup& r, double scale, double fill) {
  const cmn_host::Setup& s = r.base;
  if (s.out.numel() == 0) return;
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  const unsigned int blocks = cuda::blocks_for(s.out.numel(), cuda::kThreads);
  cuda::with_sample_table<kernels::kResizeParamSamples>(r.samples, s.out.device(), [&](const auto& table) {
    using Table = std::decay_t<decltype(table)>;
    TENSOROPS_DISPATCH_NORMALIZE_INPUT(s.in_dtype, "resized_crop_mirror_normalize_cuda", [&] {
      using in_t = scalar_t;
      TENSOROPS_DISPATCH_RESIZE_OUT(s.out.scalar_type(), "resized_crop_mirror_normalize_out", [&] {
        using out_t = scalar_t;
        using acc_t = float_acc_t<out_t>;  // as s.acc
        cuda::launch(kernels::resized_crop_mirror_normalize_kernel<in_t, out_t, acc_t, Table>, blocks,
                     cuda::kThreads, 0, stream, s.out.mutable_data_ptr<out_t>(),
                     cuda::cmn_params<acc_t>(s, scale, fill), static_cast<acc_t>(r.vmax), table);
      });
    });
  });
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  resize_entries::register_ops<&run>(m);
}

}  // namespace tensorops

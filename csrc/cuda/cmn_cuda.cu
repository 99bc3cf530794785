// crop_mirror_normalize on CUDA: one launch for the whole batch, one thread per output element (grid-stride,
// 64-bit indices, split into (n, c, i, j) with fast divisors). The per-sample table (cmn::Sample: address,
// strides, size, crop origin, mirror flag) travels as a kernel parameter for batches up to kCmnParamSamples images
// and is uploaded above that (cmn_launch.cuh). The kernel: kernels/crop_mirror_normalize.cuh.
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cmn_entries.h"
#include "tensorops/cmn_launch.cuh"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/crop_mirror_normalize.cuh"

namespace tensorops {
namespace {

void run(cmn_host::Setup& s, double scale, double fill) {
  if (s.out.numel() == 0) return;
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  const unsigned int blocks = cuda::blocks_for(s.out.numel(), cuda::kThreads);
  cuda::with_sample_table<kernels::kCmnParamSamples>(s.samples, s.out.device(), [&](const auto& table) {
    using Table = std::decay_t<decltype(table)>;
    TENSOROPS_DISPATCH_CMN_INPUT(s.in_dtype, "crop_mirror_normalize_cuda", [&] {
      using in_t = scalar_t;
      TENSOROPS_DISPATCH_FLOATING(s.out.scalar_type(), "crop_mirror_normalize_out", [&] {
        using out_t = scalar_t;
        using acc_t = float_acc_t<out_t>;  // as s.acc
        cuda::launch(kernels::crop_mirror_normalize_kernel<in_t, out_t, acc_t, Table>, blocks, cuda::kThreads, 0,
                     stream, s.out.mutable_data_ptr<out_t>(), cuda::cmn_params<acc_t>(s, scale, fill), table);
      });
    });
  });
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  cmn_entries::register_ops<&run>(m);
}

}  // namespace tensorops

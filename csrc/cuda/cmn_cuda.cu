// crop_mirror_normalize on CUDA: one launch for the whole batch, one thread per output element (grid-stride,
// 64-bit indices, split into (n, c, i, j) with fast divisors). The per-sample table (cmn::Sample: address,
// strides, size, crop origin, mirror flag) travels as a kernel parameter for batches up to kCmnParamSamples images
// (no copy at all); a larger batch's table goes to a device buffer by cuda::upload_records (device_table.cuh: an
// asynchronous copy from a pinned block, no stream synchronization). The kernel: kernels/crop_mirror_normalize.cuh.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cmn_entries.h"
#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/device_table.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/crop_mirror_normalize.cuh"

namespace tensorops {
namespace {

void run(cmn_host::Setup& s, double scale, double fill) {
  if (s.out.numel() == 0) return;
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  const int64_t numel = s.out.numel();
  const unsigned int blocks = cuda::blocks_for(numel, cuda::kThreads);
  at::Tensor device_table;  // kept alive until the launch is queued (the stream orders the kernel after the upload)
  if (s.N > kernels::kCmnParamSamples) device_table = cuda::upload_records(s.samples.data(), s.N, s.out.device());
  TENSOROPS_DISPATCH_CMN_INPUT(s.in_dtype, "crop_mirror_normalize_cuda", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_FLOATING(s.out.scalar_type(), "crop_mirror_normalize_out", [&] {
      using out_t = scalar_t;
      {
        using acc_t = float_acc_t<out_t>;  // as s.acc
        kernels::CmnParams<acc_t> p;
        p.N = s.N; p.C = s.C; p.Cp = s.Cp; p.h = s.h; p.w = s.w; p.numel = numel;
        p.div_cp = IntDivider<int64_t>(s.Cp);
        p.div_h = IntDivider<int64_t>(s.h);
        p.div_w = IntDivider<int64_t>(s.w);
        p.mean = s.mean.const_data_ptr<acc_t>();
        p.std = s.std.const_data_ptr<acc_t>();
        p.mean_sn = s.mean_sn; p.mean_sc = s.mean_sc; p.std_sn = s.std_sn; p.std_sc = s.std_sc;
        p.scale = static_cast<acc_t>(scale);
        p.fill = static_cast<acc_t>(fill);
        p.channels_last = s.out.is_contiguous(at::MemoryFormat::ChannelsLast) && !s.out.is_contiguous();
        out_t* out = s.out.mutable_data_ptr<out_t>();
        if (s.N <= kernels::kCmnParamSamples) {
          kernels::CmnParamTable t;
          for (int64_t n = 0; n < s.N; ++n) t.s[n] = s.samples[n];
          cuda::launch(kernels::crop_mirror_normalize_kernel<in_t, out_t, acc_t, kernels::CmnParamTable>, blocks,
                       cuda::kThreads, 0, stream, out, p, t);
        } else {
          kernels::CmnDeviceTable t{reinterpret_cast<const cmn::Sample*>(device_table.const_data_ptr())};
          cuda::launch(kernels::crop_mirror_normalize_kernel<in_t, out_t, acc_t, kernels::CmnDeviceTable>, blocks,
                       cuda::kThreads, 0, stream, out, p, t);
        }
      }
    });
  });
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  cmn_entries::register_ops<&run>(m);
}

}  // namespace tensorops

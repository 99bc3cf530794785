// resized_crop_mirror_normalize on CUDA: one launch for the whole batch, one thread per output element
// (grid-stride, 64-bit indices, split into (n, c, i, j) with fast divisors), as crop_mirror_normalize's. The
// per-sample table (resize::Sample: image, two axes, mirror) travels as a kernel parameter for batches up to
// kResizeParamSamples images (no copy at all); a larger batch's table goes to a device buffer by
// cuda::upload_records (an asynchronous copy from a pinned block, no stream synchronization). The kernel:
// kernels/resize.cuh.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/device_table.cuh"
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
  const int64_t numel = s.out.numel();
  const unsigned int blocks = cuda::blocks_for(numel, cuda::kThreads);
  at::Tensor device_table;  // kept alive until the launch is queued (the stream orders the kernel after the upload)
  if (s.N > kernels::kResizeParamSamples) device_table = cuda::upload_records(r.samples.data(), s.N, s.out.device());
  TENSOROPS_DISPATCH_NORMALIZE_INPUT(s.in_dtype, "resized_crop_mirror_normalize_cuda", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_RESIZE_OUT(s.out.scalar_type(), "resized_crop_mirror_normalize_out", [&] {
      using out_t = scalar_t;
      using acc_t = std::conditional_t<std::is_same_v<out_t, double>, double, float>;  // as s.acc
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
      if (s.N <= kernels::kResizeParamSamples) {
        kernels::ResizeParamTable t;
        for (int64_t n = 0; n < s.N; ++n) t.s[n] = r.samples[n];
        cuda::launch(kernels::resized_crop_mirror_normalize_kernel<in_t, out_t, acc_t, kernels::ResizeParamTable>,
                     blocks, cuda::kThreads, 0, stream, out, p, t);
      } else {
        kernels::ResizeDeviceTable t{reinterpret_cast<const resize::Sample*>(device_table.const_data_ptr())};
        cuda::launch(kernels::resized_crop_mirror_normalize_kernel<in_t, out_t, acc_t, kernels::ResizeDeviceTable>,
                     blocks, cuda::kThreads, 0, stream, out, p, t);
      }
    });
  });
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  resize_entries::register_ops<&run>(m);
}

}  // namespace tensorops

// Launch code the two batch ops share (crop_mirror_normalize: cmn_cuda.cu; resized_crop_mirror_normalize:
// resize_cuda.cu): the kernel's parameters from the host Setup, and the per-sample table handed to the kernel in
// its parameters (up to K samples: no copy at all) or uploaded to a device buffer (cuda::upload_records: an
// asynchronous copy from a pinned block, no stream synchronization; capture-safe).
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/device_table.cuh"
#include "tensorops/fast_divide.h"
#include "tensorops/kernels/crop_mirror_normalize.cuh"

namespace tensorops {
namespace cuda {

template <typename acc_t>
kernels::CmnParams<acc_t> cmn_params(const cmn_host::Setup& s, double scale, double fill) {
  kernels::CmnParams<acc_t> p;
  p.N = s.N; p.C = s.C; p.Cp = s.Cp; p.h = s.h; p.w = s.w; p.numel = s.out.numel();
  p.div_cp = IntDivider<int64_t>(s.Cp);
  p.div_h = IntDivider<int64_t>(s.h);
  p.div_w = IntDivider<int64_t>(s.w);
  p.mean = s.mean.const_data_ptr<acc_t>();
  p.std = s.std.const_data_ptr<acc_t>();
  p.mean_sn = s.mean_sn; p.mean_sc = s.mean_sc; p.std_sn = s.std_sn; p.std_sc = s.std_sc;
  p.scale = static_cast<acc_t>(scale);
  p.fill = static_cast<acc_t>(fill);
  p.channels_last = s.out.is_contiguous(at::MemoryFormat::ChannelsLast) && !s.out.is_contiguous();
  return p;
}

// Calls launch(table) with the samples as a kernels::SampleParamTable<Sample, K> when there are at most K, else
// as a kernels::SampleDeviceTable<Sample> over an uploaded copy (kept alive until launch has queued the kernel:
// the stream orders the kernel after the upload).
template <int K, typename Sample, typename Launch>
void with_sample_table(const std::vector<Sample>& samples, c10::Device device, const Launch& launch) {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (n <= K) {
    kernels::SampleParamTable<Sample, K> table;
    for (int64_t k = 0; k < n; ++k) table.s[k] = samples[k];
    launch(table);
  } else {
    const at::Tensor buffer = upload_records(samples.data(), n, device);
    launch(kernels::SampleDeviceTable<Sample>{reinterpret_cast<const Sample*>(buffer.const_data_ptr())});
  }
}

}  // namespace cuda
}  // namespace tensorops

// tensorops.augment on CUDA: for augment_apply, one statistics-and-tables launch (one block per sample; only
// when some sample drew a table op) and one pixel launch over the whole batch; for augment_erase one launch.
// The per-sample table travels in the kernels' parameters up to kAugmentParamSamples samples and is uploaded
// above that (cmn_launch.cuh). The kernels: kernels/augment.cuh.
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/augment_entries.h"
#include "tensorops/augment_host.h"
#include "tensorops/cmn_launch.cuh"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/kernels/augment.cuh"

namespace tensorops {
namespace {

kernels::AugmentImage image_of(const at::Tensor& in, const at::Tensor& out) {
  return kernels::AugmentImage{in.size(0),   in.size(1),   in.size(2),   in.size(3),   in.stride(0),  in.stride(1),
                               in.stride(2), in.stride(3), out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
}

void run_apply(augment_host::Setup& s) {
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  const kernels::AugmentImage g = image_of(s.in, s.out);
  kernels::AugmentFill fill{s.has_fill, {s.fill[0], s.fill[1], s.fill[2]}};
  at::Tensor luts;
  if (s.any_lut) luts = at::empty({s.N, 3, 256}, s.out.options());
  uint8_t* lut_ptr = s.any_lut ? luts.mutable_data_ptr<uint8_t>() : nullptr;
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const unsigned int blocks = cuda::blocks_for(s.N * s.H * s.W, cuda::kThreads);
  cuda::with_sample_table<kernels::kAugmentParamSamples>(s.samples, s.out.device(), [&](const auto& table) {
    using Table = std::decay_t<decltype(table)>;
    if (s.any_lut)
      cuda::launch(kernels::augment_lut_kernel<Table>, static_cast<unsigned int>(s.N), kernels::kLutThreads, 0, stream,
                   table, x, g, lut_ptr);
    cuda::launch(kernels::augment_pixel_kernel<Table>, blocks, cuda::kThreads, 0, stream, table, x, y, g,
                 static_cast<const uint8_t*>(lut_ptr), fill);
  });
}

void run_erase(augment_host::EraseSetup& s) {
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  const kernels::AugmentImage g = image_of(s.in, s.out);
  const at::Tensor boxes = cuda::upload_records(s.boxes.data(), static_cast<int64_t>(s.boxes.size()), s.out.device());
  const at::Tensor& v = s.value;
  const bool pp = s.per_pixel;
  const unsigned int blocks = cuda::blocks_for(s.out.numel(), cuda::kThreads);
  cuda::launch(kernels::augment_erase_kernel, blocks, cuda::kThreads, 0, stream, s.in.const_data_ptr<uint8_t>(),
               s.out.mutable_data_ptr<uint8_t>(), g, reinterpret_cast<const int64_t*>(boxes.const_data_ptr()),
               v.const_data_ptr<uint8_t>(), pp, pp ? v.stride(0) : int64_t{0}, pp ? v.stride(1) : int64_t{0},
               pp ? v.stride(2) : int64_t{0}, pp ? v.stride(3) : int64_t{0});
}

void run_mix(augment_host::MixSetup& s) {
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  kernels::MixInputs inputs{};
  const int k = static_cast<int>(s.augmented.size());
  for (int i = 0; i < k; ++i) inputs.a[i] = s.augmented[i].const_data_ptr<uint8_t>();
  const unsigned int blocks = cuda::blocks_for(s.out.numel(), cuda::kThreads);
  cuda::launch(kernels::augment_mix_kernel, blocks, cuda::kThreads, 0, stream, s.in.const_data_ptr<uint8_t>(),
               s.out.mutable_data_ptr<uint8_t>(), inputs, k, s.weights.const_data_ptr<float>(), s.per_sample,
               s.out.numel());
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  augment_entries::register_ops<&run_apply, &run_erase, &run_mix>(m);
}

}  // namespace tensorops

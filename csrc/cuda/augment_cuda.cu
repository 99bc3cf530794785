// tensorops.augment on CUDA: for augment_apply, one statistics-and-tables launch (one block per sample; only
// when some sample drew a table op) and one pixel launch over the whole batch; for augment_erase one launch.
// The per-sample table travels in the kernels' parameters up to kAugmentParamSamples samples and is uploaded
// above that (cmn_launch.cuh). The kernels: kernels/augment.cuh.
#include <type_traits>
#include <vector>

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

// One round (one op per sample) from `in` to `out`: the tables launch where a sample drew a table op, then the
// pixel launch.
void run_round(const augment_host::Setup& s, const std::vector<augment::Sample>& samples, const at::Tensor& in,
               const at::Tensor& out, cuda::stream_t stream) {
  const kernels::AugmentImage g = image_of(in, out);
  kernels::AugmentFill fill{s.has_fill, {s.fill[0], s.fill[1], s.fill[2]}};
  bool any_lut = false;
  for (const augment::Sample& sm : samples) any_lut = any_lut || augment::is_lut_op(sm.op);
  at::Tensor luts;
  if (any_lut) luts = at::empty({s.N, 3, 256}, out.options());
  uint8_t* lut_ptr = any_lut ? luts.mutable_data_ptr<uint8_t>() : nullptr;
  const uint8_t* x = in.const_data_ptr<uint8_t>();
  uint8_t* y = out.mutable_data_ptr<uint8_t>();
  const unsigned int blocks = cuda::blocks_for(s.N * s.H * s.W, cuda::kThreads);
  cuda::with_sample_table<kernels::kAugmentParamSamples>(samples, out.device(), [&](const auto& table) {
    using Table = std::decay_t<decltype(table)>;
    if (any_lut)
      cuda::launch(kernels::augment_lut_kernel<Table>, static_cast<unsigned int>(s.N), kernels::kLutThreads, 0, stream,
                   table, x, g, lut_ptr);
    cuda::launch(kernels::augment_pixel_kernel<Table>, blocks, cuda::kThreads, 0, stream, table, x, y, g,
                 static_cast<const uint8_t*>(lut_ptr), fill);
  });
}

// K ops per sample: K rounds, each into a temporary but the last (rounds where every sample drew identity are
// skipped; a batch of identities is one copying round).
void run_apply(augment_host::Setup& s) {
  const cuda::DeviceGuard guard(s.out.device());
  const cuda::stream_t stream = cuda::current_stream(s.out.device());
  std::vector<int64_t> live;
  for (int64_t k = 0; k < s.K; ++k) {
    bool any = false;
    for (int64_t n = 0; n < s.N; ++n) any = any || s.samples[n * s.K + k].op != augment::kIdentity;
    if (any) live.push_back(k);
  }
  if (live.empty()) live.push_back(0);
  at::Tensor src = s.in;
  std::vector<augment::Sample> round(s.N);
  for (size_t r = 0; r < live.size(); ++r) {
    for (int64_t n = 0; n < s.N; ++n) round[n] = s.samples[n * s.K + live[r]];
    const at::Tensor dst = r + 1 == live.size() ? s.out : augment_host::empty_like_batch(s.in);
    run_round(s, round, src, dst, stream);
    src = dst;
  }
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

// normalize's forward on CUDA (the backward: normalize_backward_cuda.cu; the kernels: kernels/normalize.cuh): one
// launch per call. Each thread handles kVec consecutive output elements (the output is
// dense, so its offset is the linear index): one vector store when the output is aligned, one vector load when
// the input is also walked in the same order and aligned. Offsets come from a LaunchPlan (plan.h: fast
// divisors). Statistics given as numbers travel by value in the kernel arguments (no host-to-device copy);
// statistics tensors are read through their broadcast strides. More than kNormalizeByValue number statistics
// become float64 tensors uploaded by cuda::upload_table (no synchronization, capture-safe).
// The arithmetic is math.h's, the same functions the CPU kernel calls.
#include <cstring>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/device_table.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/normalize.cuh"
#include "tensorops/math/normalize.h"
#include "tensorops/normalize_entries.h"
#include "tensorops/normalize_host.h"

namespace tensorops {

// normalize_tensor's CUDA implementation, also called by the backward's deterministic path
// (normalize_backward_cuda.cu); out: out= (normalize_entries.h), nullptr for a fresh output.
at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                                 const at::Tensor* out = nullptr);

namespace {

using namespace normalize_host;
using kernels::Coefs;
using kernels::kNormalizeByValue;
using cuda::kThreads;
using cuda::kVec;

// One launch for an (input, output) dtype pair; index width and grid from cuda::launch_indexed.
template <typename in_t, typename out_t, typename acc_t, bool kTensorStats>
void launch_typed(const Plan<4>& plan, at::Tensor& out, const at::Tensor& input, bool same_order,
                  bool coefs_per_vec, const Coefs<acc_t>& coefs, const acc_t* mean, const acc_t* std, acc_t scale,
                  cuda::stream_t stream) {
  const bool vec_load = same_order && cuda::aligned_to(input.const_data_ptr(), sizeof(in_t) * kVec);
  const bool vec_store = cuda::aligned_to(out.mutable_data_ptr(), sizeof(out_t) * kVec);
  const in_t* x = input.const_data_ptr<in_t>();
  out_t* y = out.mutable_data_ptr<out_t>();
  cuda::launch_indexed(plan, int64_t{kThreads} * kVec, [&](auto index_tag, unsigned int blocks) {
    using index_t = decltype(index_tag);
    cuda::launch(kernels::normalize_kernel<in_t, out_t, acc_t, index_t, kTensorStats>, blocks, kThreads, 0, stream,
                 LaunchPlan<4, index_t>(plan), x, y, coefs, mean, std, scale, vec_load, vec_store, coefs_per_vec);
  });
}

// The output dtypes an accumulation dtype serves (acc_dtype(out)): float64 for float64, float32 for the rest.
// Deriving one from the other halves the instantiations (no float64 output computed in float32 or vice versa).
template <typename acc_t, typename F>
void dispatch_out_for_acc(at::ScalarType out, const F& f) {
  if constexpr (std::is_same_v<acc_t, double>) {
    TORCH_CHECK(out == at::kDouble, "tensorops: normalize: internal: float64 accumulation for ", out);
    f(double{});
  } else {
    switch (out) {
      case at::kFloat: f(float{}); break;
      case at::kHalf: f(at::Half{}); break;
      case at::kBFloat16: f(at::BFloat16{}); break;
      default: TORCH_CHECK(false, "tensorops: normalize: internal: float32 accumulation for ", out);
    }
  }
}

// Launch for any (input, output) dtype pair; `stats` is either by-value coefficients or mean/std tensors.
template <typename acc_t, bool kTensorStats>
void launch(at::Tensor& out, const at::Tensor& input, c10::IntArrayRef mean_strides,
            c10::IntArrayRef std_strides, const Coefs<acc_t>& coefs, const acc_t* mean, const acc_t* std,
            acc_t scale) {
  const Plan<4> plan = make_plan<4>(out.sizes(), {out.strides(), input.strides(), mean_strides, std_strides});
  // The input is read in the output's order iff its plan strides equal the output's.
  bool same_order = true;
  for (int d = 0; d < plan.ndim; ++d) same_order = same_order && plan.strides[1][d] == plan.strides[0][d];
  // All kVec elements of a thread share coefficients when the innermost dim has constant statistics.
  const bool coefs_per_vec = plan.sizes[0] % kVec == 0 && plan.strides[2][0] == 0 && plan.strides[3][0] == 0;
  const cuda::DeviceGuard guard(input.device());
  const cuda::stream_t stream = cuda::current_stream();
  TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_cuda", [&] {
    using in_t = scalar_t;
    dispatch_out_for_acc<acc_t>(out.scalar_type(), [&](auto out_tag) {
      launch_typed<in_t, decltype(out_tag), acc_t, kTensorStats>(plan, out, input, same_order, coefs_per_vec, coefs,
                                                                 mean, std, scale, stream);
    });
  });
}

at::Tensor normalize_cuda(const at::Tensor& input, c10::ArrayRef<double> mean, c10::ArrayRef<double> std,
                          int64_t dim, double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                          const at::Tensor* out_arg) {
  check_input(input, dtype);
  int64_t channels = 0;
  const auto coef_strides = list_stat_strides(input, mean, std, dim, channels);
  if (channels > kNormalizeByValue) {
    // Too many for the kernel arguments: float64 statistics tensors put on the device without a synchronization
    // (and capture-safe) by cuda::upload_table, then normalize_tensor.
    const cuda::DeviceGuard guard(input.device());
    static_assert(sizeof(double) == sizeof(int64_t), "statistics travel as 8-byte words");
    const at::Tensor stats = cuda::upload_table(2 * channels, input.device(), [&](int64_t* words) {
      for (int64_t c = 0; c < channels; ++c) {
        const double m = mean[mean.size() == 1 ? 0 : c], s = std[std.size() == 1 ? 0 : c];
        std::memcpy(words + c, &m, sizeof m);
        std::memcpy(words + channels + c, &s, sizeof s);
      }
    }).view(at::kDouble);
    std::vector<int64_t> shape(input.dim(), 1);
    shape[dim] = channels;
    return normalize_tensor_cuda(input, stats.narrow(0, 0, channels).view(shape),
                                 stats.narrow(0, channels, channels).view(shape), scale, dtype, memory_format,
                                 out_arg);
  }
  at::Tensor out = output(input, dtype, memory_format, out_arg, {input});
  if (out.numel() == 0) return out_arg == nullptr ? out : out_host::finish(*out_arg, out);
  AT_DISPATCH_FLOATING_TYPES(acc_dtype(dtype), "normalize_coefs", [&] {
    Coefs<scalar_t> coefs{};
    for (int64_t c = 0; c < channels; ++c) {
      const scalar_t m = mean[mean.size() == 1 ? 0 : c], s = std[std.size() == 1 ? 0 : c];
      coefs.a[c] = math::normalize_coef_a<scalar_t>(scale, s);
      coefs.b[c] = math::normalize_coef_b<scalar_t>(m, s);
    }
    launch<scalar_t, false>(out, input, coef_strides, coef_strides, coefs, nullptr, nullptr,
                            static_cast<scalar_t>(scale));
  });
  return out_arg == nullptr ? out : out_host::finish(*out_arg, out);
}

}  // namespace

at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                                 const at::Tensor* out_arg) {
  return normalize_entries::normalize_tensor_with(input, mean, std, dtype, memory_format, out_arg, [&](at::Tensor& out,
                                                                                               c10::IntArrayRef) {
    const auto acc = acc_dtype(dtype);
    // statistics in another dtype are converted first (a small extra launch); float32 buffers are the norm
    const at::Tensor m = mean.scalar_type() == acc ? mean : mean.to(acc);
    const at::Tensor s = std.scalar_type() == acc ? std : std.to(acc);
    AT_DISPATCH_FLOATING_TYPES(acc, "normalize_tensor_cuda", [&] {
      launch<scalar_t, true>(out, input, expanded_strides(m, input.sizes()), expanded_strides(s, input.sizes()),
                             Coefs<scalar_t>{}, m.const_data_ptr<scalar_t>(), s.const_data_ptr<scalar_t>(),
                             static_cast<scalar_t>(scale));
    });
  });
}

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  normalize_entries::register_forward<&normalize_cuda, &normalize_tensor_cuda>(m);
}

}  // namespace tensorops

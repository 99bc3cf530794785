// normalize on CUDA (the kernels: kernels/normalize.cuh). The arithmetic is math.h's, the same functions the CPU
// kernel calls.
//
// Forward: one launch per call. Each thread handles kVec consecutive output elements (the output is dense, so its
// offset is the linear index): one vector store when the output is aligned, one vector load when the input is
// also walked in the same order and aligned. Offsets come from a LaunchPlan (plan.h: fast divisors). Statistics
// given as numbers travel by value in the kernel arguments (no host-to-device copy); statistics tensors are read
// through their broadcast strides. More than kNormalizeByValue number statistics become float64 tensors uploaded
// by cuda::upload_table (no synchronization, capture-safe).
//
// Backward: grad_input = grad * a in one launch that also sums, per statistics entry, grad and grad * y
// (warp-reduced, then in shared memory per block for at most kNormalizeSharedEntries entries, else global
// atomics), and a small launch that turns the sums into the statistics' gradients. Under
// torch.use_deterministic_algorithms(True) the sums come from torch's own reductions instead.
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

// normalize_tensor's CUDA implementation, also called by the backward's deterministic path; out: out=
// (normalize_entries.h), nullptr for a fresh output.
at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                                 const at::Tensor* out = nullptr);

namespace {

using namespace normalize_host;
using kernels::Coefs;
using kernels::kNormalizeByValue;
using kernels::kNormalizeSharedEntries;
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
  int64_t channels = 0;
  const auto coef_strides = list_stat_strides(input, dtype, mean, std, dim, channels);
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
    list_coefs<scalar_t>(mean, std, scale, channels, coefs.a, coefs.b);
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

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> normalize_tensor_backward_cuda(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std, double scale,
    std::array<bool, 3> mask) {
  Backward bw = backward_setup(grad, input, mean, std, mask);
  at::Tensor &grad_input = bw.grad_input, &grad_mean = bw.grad_mean, &grad_std = bw.grad_std;
  if (input.numel() == 0) return {grad_input, grad_mean, grad_std};
  const auto& shape = bw.shape;
  const auto acc = bw.acc;
  // The kernel's statistics sums use float atomics (their order varies from run to run). Under
  // torch.use_deterministic_algorithms(True) the kernel writes grad_input only and the sums come from torch's
  // own reductions, which are deterministic.
  const bool deterministic = bw.stats && at::globalContext().deterministicAlgorithms();
  const bool kernel_stats = bw.stats && !deterministic;
  // operands: 0 the dense layout walked, 1 grad, 2 input, 3 statistics entry
  const Plan<4> plan =
      make_plan<4>(input.sizes(), {bw.dense.strides(), grad.strides(), input.strides(), broadcast_strides(shape)});
  const cuda::DeviceGuard guard(input.device());
  const cuda::stream_t stream = cuda::current_stream();
  // acc_dtype(grad): float64 accumulation for float64 grads, float32 for the rest
  TENSOROPS_DISPATCH_FLOATING(grad.scalar_type(), "normalize_backward_grad", [&] {
    using g_t = scalar_t;
    using acc_t = float_acc_t<g_t>;
    const at::Tensor m = mean.to(acc).expand(shape).contiguous();
    const at::Tensor s = std.to(acc).expand(shape).contiguous();
    const int64_t K = m.numel();
    at::Tensor sums = at::zeros({kernel_stats ? 2 * K : 0}, input.options().dtype(acc));
    const size_t smem = kernel_stats && K <= kNormalizeSharedEntries ? 2 * K * sizeof(acc_t) : 0;
    if (mask[0] || kernel_stats) {
      TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_backward_in", [&] {
        using in_t = scalar_t;
        in_t* gi = mask[0] ? grad_input.mutable_data_ptr<in_t>() : nullptr;
        // shared-memory sums: a few blocks per SM, each looping over the data (one flush of its sums per block)
        const int64_t max_blocks = smem > 0 ? 4 * cuda::sm_count(input.device()) : int64_t{1} << 24;
        cuda::launch_indexed(
            plan, int64_t{kThreads} * 4,
            [&](auto index_tag, unsigned int blocks) {
              using index_t = decltype(index_tag);
              cuda::launch(kernels::normalize_backward_kernel<g_t, in_t, acc_t, index_t>, blocks, kThreads, smem,
                           stream, LaunchPlan<4, index_t>(plan), grad.const_data_ptr<g_t>(),
                           input.const_data_ptr<in_t>(), gi, m.const_data_ptr<acc_t>(), s.const_data_ptr<acc_t>(),
                           kernel_stats ? sums.mutable_data_ptr<acc_t>() : nullptr, K, static_cast<acc_t>(scale),
                           kernel_stats);
            },
            max_blocks);
      });
    }
    if (deterministic) {
      const at::Tensor g = grad.to(acc);
      const at::Tensor y = normalize_tensor_cuda(input, m, s, scale, acc, at::MemoryFormat::Preserve);
      sums = at::cat({g.sum_to_size(shape).reshape(-1), (g * y).sum_to_size(shape).reshape(-1)});
    }
    if (bw.stats) {
      cuda::launch(kernels::normalize_stat_grads_kernel<acc_t>, cuda::blocks_for(K, kThreads), kThreads, 0, stream,
                   sums.const_data_ptr<acc_t>(), s.const_data_ptr<acc_t>(), grad_mean.mutable_data_ptr<acc_t>(),
                   grad_std.mutable_data_ptr<acc_t>(), K);
    }
  });
  return {grad_input, grad_mean, grad_std};
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  normalize_entries::register_forward<&normalize_cuda, &normalize_tensor_cuda>(m);
  normalize_entries::register_backward<&normalize_tensor_backward_cuda>(m);
}

}  // namespace tensorops

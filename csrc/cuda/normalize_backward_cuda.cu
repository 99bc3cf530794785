// normalize's backward on CUDA (the forward: normalize_cuda.cu; the kernels: kernels/normalize.cuh): grad_input =
// grad * a in one launch that also sums, per statistics entry, grad and grad * y (warp-reduced, then in shared
// memory per block for at most kNormalizeSharedEntries entries, else global atomics), and a small launch that turns
// the sums into the statistics' gradients. Under torch.use_deterministic_algorithms(True) the sums come from
// torch's own reductions instead.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/normalize.cuh"
#include "tensorops/normalize_entries.h"
#include "tensorops/normalize_host.h"

namespace tensorops {

at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                                 const at::Tensor* out = nullptr);

namespace {

using namespace normalize_host;
using kernels::kNormalizeSharedEntries;
using cuda::kThreads;

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
  normalize_entries::register_backward<&normalize_tensor_backward_cuda>(m);
}

}  // namespace tensorops

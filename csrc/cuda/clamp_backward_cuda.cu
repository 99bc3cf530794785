// clamp's backward on CUDA (the forward: clamp_cuda.cu; the kernels: kernels/clamp.cuh). One launch writes
// grad_input and accumulates the bounds' gradient partial sums, plus one small reduction launch. Bounds with at most
// kSharedEntries entries (per-channel bounds, ...) accumulate in shared memory per block (warp-aggregated when a
// warp shares one entry), then the blocks' partials are summed; larger bounds accumulate with global atomics into a
// buffer that is cast to the result dtype. Under torch.use_deterministic_algorithms(True) the kernel writes every
// element's term and torch's fixed-order reductions sum them.
#include <optional>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/clamp_entries.h"
#include "tensorops/clamp_host.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/kernels/clamp.cuh"

namespace tensorops {
namespace {

using namespace clamp_host;
using cuda::kThreads;

constexpr int64_t kSharedEntries = 2048;  // bound entries accumulated in shared memory (min + max)

std::tuple<at::Tensor, at::Tensor, at::Tensor> clamp_backward_cuda(const at::Tensor& grad, const at::Tensor& input,
                                                                   const std::optional<at::Tensor>& min,
                                                                   const std::optional<at::Tensor>& max,
                                                                   std::array<bool, 3> mask) {
  cuda::DeviceGuard guard(input.device());
  TensorBackward b = prepare_tensor_backward(grad, input, min, max, mask);
  if (b.done) return {b.grad_input, b.grad_min, b.grad_max};
  const Plan<5> p =
      make_plan<5>(b.g.sizes(), {b.dense.strides(), b.g.strides(), b.x.strides(), b.lo_idx, b.hi_idx});
  const bool any_sums = b.want_lo || b.want_hi;
  // The kernel sums the bounds' gradients with float atomics (their order varies from run to run). Under
  // torch.use_deterministic_algorithms(True) it writes each element's term instead and torch's reductions,
  // which are deterministic, sum them.
  const bool deterministic = any_sums && at::globalContext().deterministicAlgorithms();
  const bool want_sums = any_sums && !deterministic;
  const int64_t klo = b.has_min ? b.lo.numel() : 0, khi = b.has_max ? b.hi.numel() : 0;
  const int64_t K = klo + khi;
  const bool shared = K <= kSharedEntries;
  const auto stream = cuda::current_stream();
  TENSOROPS_DISPATCH_FLOATING(b.T, "tensorops_clamp_backward_cuda", [&] {
    using sum_t = float_acc_t<scalar_t>;
    const auto sum_opts = b.g.options().dtype(c10::CppTypeToScalarType<sum_t>::value);
    scalar_t* gi = mask[0] ? b.grad_input.data_ptr<scalar_t>() : nullptr;
    const scalar_t* lp = b.has_min ? b.lo.const_data_ptr<scalar_t>() : nullptr;
    const scalar_t* hp = b.has_max ? b.hi.const_data_ptr<scalar_t>() : nullptr;
    // shared-memory partials: a few blocks per SM, each looping over the data; global atomics: enough blocks
    const int64_t max_blocks = shared && want_sums ? 4 * cuda::sm_count(b.g.device()) : int64_t{1} << 24;
    const IndexedLaunch grid = cuda::indexed_grid(p, kThreads, max_blocks);
    const int64_t blocks = grid.blocks;
    at::Tensor partial = want_sums ? (shared ? at::empty({blocks * K}, sum_opts) : at::zeros({K}, sum_opts))
                                   : at::empty({0}, sum_opts);
    sum_t* pp = want_sums ? partial.data_ptr<sum_t>() : nullptr;
    auto terms = [&](bool wanted) {  // dense, in the walked layout (offset 0 of the plan)
      return wanted ? at::empty_strided(b.dense.sizes(), b.dense.strides(), sum_opts) : at::Tensor();
    };
    at::Tensor terms_lo = terms(deterministic && b.want_lo), terms_hi = terms(deterministic && b.want_hi);
    sum_t* tlo = terms_lo.defined() ? terms_lo.data_ptr<sum_t>() : nullptr;
    sum_t* thi = terms_hi.defined() ? terms_hi.data_ptr<sum_t>() : nullptr;
    const size_t smem = shared && want_sums ? static_cast<size_t>(K) * sizeof(sum_t) : 0;
    either_switch(b.has_min, b.has_max, [&]<bool L, bool H>() {
      cuda::launch_with(grid, [&](auto index_tag, unsigned int nblocks) {
        using index_t = decltype(index_tag);
        bool_switch(shared, [&](auto shared_tag) {
          cuda::launch(kernels::clamp_backward_kernel<scalar_t, sum_t, index_t, L, H, decltype(shared_tag)::value>,
                       nblocks, kThreads, smem, stream, LaunchPlan<5, index_t>(p), gi, b.g.const_data_ptr<scalar_t>(),
                       b.x.const_data_ptr<scalar_t>(), lp, hp, klo, khi, want_sums, pp, tlo, thi);
        });
      });
    });
    if (want_sums) {
      scalar_t* glo = b.want_lo ? b.grad_min.data_ptr<scalar_t>() : nullptr;
      scalar_t* ghi = b.want_hi ? b.grad_max.data_ptr<scalar_t>() : nullptr;
      const int64_t nblocks = shared ? blocks : 1;  // global mode: partial holds the totals
      cuda::launch(kernels::clamp_reduce_partials_kernel<scalar_t, sum_t>, cuda::blocks_for(K, kThreads), kThreads, 0,
                   stream, pp, nblocks, klo, khi, glo, ghi);
    }
    if (terms_lo.defined()) b.grad_min.copy_(terms_lo.sum_to_size(b.grad_min.sizes()));
    if (terms_hi.defined()) b.grad_max.copy_(terms_hi.sum_to_size(b.grad_max.sizes()));
  });
  return {b.grad_input, b.grad_min, b.grad_max};
}

at::Tensor clamp_scalar_backward_cuda(const at::Tensor& grad, const at::Tensor& input,
                                      const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  cuda::DeviceGuard guard(input.device());
  ScalarBackward b = prepare_scalar_backward(grad, input, min, max);
  if (b.done) return b.grad_input;
  const Plan<3> p = make_plan<3>(input.sizes(), {b.grad_input.strides(), b.g.strides(), input.strides()});
  const auto stream = cuda::current_stream();
  TENSOROPS_DISPATCH_FLOATING(input.scalar_type(), "tensorops_clamp_scalar_backward_cuda", [&] {
    using acc_t = typename Acc<scalar_t>::type;
    const acc_t lo = min ? min->to<acc_t>() : acc_t(0);
    const acc_t hi = max ? max->to<acc_t>() : acc_t(0);
    either_switch(min.has_value(), max.has_value(), [&]<bool L, bool H>() {
      cuda::launch_indexed(p, kThreads, [&](auto index_tag, unsigned int blocks) {
        using index_t = decltype(index_tag);
        cuda::launch(kernels::clamp_scalar_backward_kernel<scalar_t, index_t, L, H>, blocks, kThreads, 0, stream,
                     LaunchPlan<3, index_t>(p), b.grad_input.data_ptr<scalar_t>(), b.g.const_data_ptr<scalar_t>(),
                     input.const_data_ptr<scalar_t>(), lo, hi);
      });
    });
  });
  return b.grad_input;
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  clamp_entries::register_backward<&clamp_backward_cuda, &clamp_scalar_backward_cuda>(m);
}

}  // namespace tensorops

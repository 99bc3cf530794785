// clamp's forward on CUDA (the backward: clamp_backward_cuda.cu; the kernels: kernels/clamp.cuh). The host steps
// (checks, torch's promotion and output layout, operand views) are the CPU ops' (clamp_host.h). Launch code stays
// thin: device guard, current stream, every launch through cuda::launch (which checks it), early return on empty
// tensors, 32-bit index math only when every offset fits (64-bit otherwise).
//
// One launch: a vectorized kernel for contiguous input with number bounds, otherwise a strided kernel over a
// LaunchPlan (plan.h: bounds broadcast by 0 strides, sizes as fast divisors) where each thread walks kVec
// neighbouring elements. Number bounds are converted as torch's CUDA kernel does (to the compute type, float for
// float16/bfloat16, without the CPU kernel's overflow check). Bool tensors take only the variant torch has
// (one tensor bound: the others are refused by the host code and not compiled).
#include <optional>
#include <type_traits>

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
using cuda::kVec;

template <typename scalar_t, bool HasLo, bool HasHi, bool TensorBounds>
void launch_strided(const Plan<4>& p, scalar_t* out, const scalar_t* x, const scalar_t* lo, const scalar_t* hi,
                    typename Acc<scalar_t>::type lo_v, typename Acc<scalar_t>::type hi_v) {
  const auto stream = cuda::current_stream();
  cuda::launch_indexed(p, static_cast<int64_t>(kThreads) * kVec, [&](auto index_tag, unsigned int blocks) {
    using index_t = decltype(index_tag);
    cuda::launch(kernels::clamp_strided_kernel<scalar_t, index_t, HasLo, HasHi, TensorBounds>, blocks, kThreads, 0,
                 stream, LaunchPlan<4, index_t>(p), out, x, lo, hi, lo_v, hi_v);
  });
}

at::Tensor clamp_tensor_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max) {
  cuda::DeviceGuard guard(input.device());
  TensorForward f = prepare_tensor_forward(inplace, input, min, max);
  if (f.done) return f.out;
  const at::Tensor& lo_t = f.has_min ? f.lo : f.x;
  const at::Tensor& hi_t = f.has_max ? f.hi : f.x;
  const Plan<4> p = make_plan<4>(f.target.sizes(), {f.target.strides(), f.x.strides(), lo_t.strides(), hi_t.strides()});
  TENSOROPS_DISPATCH_CLAMP(f.T, "tensorops_clamp_cuda", [&] {
    using acc_t = typename Acc<scalar_t>::type;
    either_switch(f.has_min, f.has_max, [&]<bool L, bool H>() {
      if constexpr (!(std::is_same_v<scalar_t, bool> && L && H)) {  // refused by check_bool_result
        launch_strided<scalar_t, L, H, true>(p, f.target.data_ptr<scalar_t>(), f.x.const_data_ptr<scalar_t>(),
                                             lo_t.const_data_ptr<scalar_t>(), hi_t.const_data_ptr<scalar_t>(),
                                             acc_t(0), acc_t(0));
      }
    });
  });
  f.finish();
  return f.out;
}

at::Tensor clamp_scalar_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Scalar>& min,
                             const std::optional<at::Scalar>& max) {
  cuda::DeviceGuard guard(input.device());
  ScalarForward f = prepare_scalar_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP_NUMBER(f.T, "tensorops_clamp_scalar_cuda", [&] {
    using acc_t = typename Acc<scalar_t>::type;
    const acc_t lo = min ? min->to<acc_t>() : acc_t(0);
    const acc_t hi = max ? max->to<acc_t>() : acc_t(0);
    scalar_t* out = f.out.data_ptr<scalar_t>();
    const scalar_t* x = f.x.const_data_ptr<scalar_t>();
    const int64_t n = f.out.numel();
    // dense and laid out alike (contiguous, channels_last, ...): one flat array for both
    constexpr int kV = cuda::vec_elems<scalar_t>();
    const bool contiguous = f.out.is_non_overlapping_and_dense() && f.out.strides() == f.x.strides() &&
                            cuda::aligned_to(out, sizeof(scalar_t) * kV) && cuda::aligned_to(x, sizeof(scalar_t) * kV);
    either_switch(min.has_value(), max.has_value(), [&]<bool L, bool H>() {
      if (contiguous) {
        const auto stream = cuda::current_stream();
        cuda::launch_indexed(n, static_cast<int64_t>(kThreads) * kV, [&](auto index_tag, unsigned int blocks) {
          using index_t = decltype(index_tag);
          cuda::launch(kernels::clamp_scalar_contig_kernel<scalar_t, index_t, L, H>, blocks, kThreads, 0, stream, out,
                       x, static_cast<index_t>(n), lo, hi);
        });
      } else {
        const Plan<4> p = make_plan<4>(f.out.sizes(), {f.out.strides(), f.x.strides(), f.x.strides(), f.x.strides()});
        launch_strided<scalar_t, L, H, false>(p, out, x, x, x, lo, hi);
      }
    });
  });
  return f.out;
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  clamp_entries::register_forward<&clamp_tensor_impl, &clamp_scalar_impl>(m);
}

}  // namespace tensorops

// normalize on CUDA: one launch per call. Each thread handles kVec consecutive output elements (the output is
// dense, so its offset is the linear index): one vector store when the output is aligned, one vector load when
// the input is also walked in the same order and aligned. Offsets come from a LaunchPlan (plan.h: fast
// divisors). Statistics given as numbers travel by value in the kernel arguments (no host-to-device copy);
// statistics tensors are read through their broadcast strides.
// The arithmetic is math.h's, the same functions the CPU kernel calls.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/math/normalize.h"
#include "tensorops/normalize_entries.h"
#include "tensorops/normalize_host.h"

namespace tensorops {
namespace {

using namespace normalize_host;
using cuda::kThreads;
using cuda::kVec;
using cuda::Vec;

constexpr int64_t kMaxByValue = 64;  // channels passed in the kernel arguments

template <typename acc_t>
struct Coefs {
  acc_t a[kMaxByValue];
  acc_t b[kMaxByValue];
};

// Operands of the plan: 0 output, 1 input, 2 mean (or the channel index for by-value coefficients), 3 std.
// A thread finds the offsets of its first element with one decomposition of the linear index (fast divisors)
// and steps to its neighbours along the innermost plan dimension. `vec_load`: the input is walked in the
// output's order and aligned (one vector load per thread); `vec_store`: the output is aligned (one vector store;
// the output is dense, so its offset is the linear index, whatever the input's layout: NHWC -> NCHW included).
template <typename in_t, typename out_t, typename acc_t, typename index_t, bool kTensorStats>
__global__ void normalize_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<4, index_t> plan,
                                 const in_t* __restrict__ in, out_t* __restrict__ out,
                                 TENSOROPS_GRID_CONSTANT const Coefs<acc_t> coefs, const acc_t* __restrict__ mean,
                                 const acc_t* __restrict__ std, const acc_t scale, const bool vec_load,
                                 const bool vec_store, const bool coefs_per_vec) {
  const index_t numel = plan.numel;
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x * kVec;
  for (index_t base = (static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; base < numel;
       base += step) {
    acc_t a[kVec], b[kVec], m[kVec], s[kVec];  // m, s: only read with statistics tensors
    in_t x[kVec];
    const bool full = base + kVec <= numel;
    const bool load_vec = vec_load && full;
    if (load_vec) {
      const auto xv = *reinterpret_cast<const Vec<in_t, kVec>*>(in + base);
      TENSOROPS_UNROLL
      for (int j = 0; j < kVec; ++j) x[j] = xv.v[j];
    }
    index_t off[4];
    index_t inner = plan.offsets(base, off);
    TENSOROPS_UNROLL
    for (int j = 0; j < kVec; ++j) {
      if (!full && base + j >= numel) break;
      if (j > 0 && !(coefs_per_vec && load_vec)) plan.next(base + j, inner, off);
      if (j == 0 || !coefs_per_vec) {
        if constexpr (kTensorStats) {
          m[j] = mean[off[2]];
          s[j] = std[off[3]];
          a[j] = math::normalize_coef_a<acc_t>(scale, s[j]);
          b[j] = math::normalize_coef_b<acc_t>(m[j], s[j]);
        } else {
          a[j] = coefs.a[off[2]];
          b[j] = coefs.b[off[2]];
        }
      } else {
        a[j] = a[0];
        b[j] = b[0];
        m[j] = m[0];
        s[j] = s[0];
      }
      if (!load_vec) x[j] = in[off[1]];
    }
    auto value = [&](int j) {
      const acc_t xj = static_cast<acc_t>(x[j]);
      if constexpr (kTensorStats) return math::normalize_value(xj, a[j], b[j], scale, m[j], s[j]);
      return math::normalize_apply(xj, a[j], b[j]);
    };
    if (vec_store && full) {
      Vec<out_t, kVec> yv;
      TENSOROPS_UNROLL
      for (int j = 0; j < kVec; ++j) yv.v[j] = static_cast<out_t>(value(j));
      *reinterpret_cast<Vec<out_t, kVec>*>(out + base) = yv;
    } else {
      for (int j = 0; j < kVec && base + j < numel; ++j) out[base + j] = static_cast<out_t>(value(j));
    }
  }
}

// One launch for an (input, output) dtype pair; index width and grid from cuda::launch_indexed.
template <typename in_t, typename out_t, typename acc_t, bool kTensorStats>
void launch_typed(const Plan<4>& plan, at::Tensor& out, const at::Tensor& input, bool same_order,
                  bool coefs_per_vec, const Coefs<acc_t>& coefs, const acc_t* mean, const acc_t* std, acc_t scale,
                  cudaStream_t stream) {
  const bool vec_load = same_order && cuda::aligned_to(input.const_data_ptr(), sizeof(in_t) * kVec);
  const bool vec_store = cuda::aligned_to(out.mutable_data_ptr(), sizeof(out_t) * kVec);
  const in_t* x = input.const_data_ptr<in_t>();
  out_t* y = out.mutable_data_ptr<out_t>();
  cuda::launch_indexed(plan, int64_t{kThreads} * kVec, [&](auto index_tag, unsigned int blocks) {
    using index_t = decltype(index_tag);
    normalize_kernel<in_t, out_t, acc_t, index_t, kTensorStats><<<blocks, kThreads, 0, stream>>>(
        LaunchPlan<4, index_t>(plan), x, y, coefs, mean, std, scale, vec_load, vec_store, coefs_per_vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
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
  const c10::cuda::CUDAGuard guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_cuda", [&] {
    using in_t = scalar_t;
    dispatch_out_for_acc<acc_t>(out.scalar_type(), [&](auto out_tag) {
      launch_typed<in_t, decltype(out_tag), acc_t, kTensorStats>(plan, out, input, same_order, coefs_per_vec, coefs,
                                                                 mean, std, scale, stream);
    });
  });
}

at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format);

at::Tensor normalize_cuda(const at::Tensor& input, c10::ArrayRef<double> mean, c10::ArrayRef<double> std,
                          int64_t dim, double scale, at::ScalarType dtype, at::MemoryFormat memory_format) {
  check_input(input, dtype);
  int64_t channels = 0;
  const auto coef_strides = list_stat_strides(input, mean, std, dim, channels);
  if (channels > kMaxByValue) {  // too many for the kernel arguments: statistics tensors instead
    // (built on the host and copied: a copy from host memory cannot be captured into a CUDA graph)
    const c10::cuda::CUDAGuard guard(input.device());  // the capture status is the input device's stream's
    TORCH_CHECK(!cuda::stream_capturing(), "tensorops: normalize: mean/std: more than ", kMaxByValue,
                " values given as numbers cannot be used while capturing a CUDA graph (they are copied from host "
                "memory); pass them as CUDA tensors (normalize with tensor mean/std) instead, got ", channels);
    const auto acc = acc_dtype(dtype);
    std::vector<int64_t> shape(input.dim(), 1);
    shape[dim] = channels;
    auto to_tensor = [&](c10::ArrayRef<double> v) {
      std::vector<double> full(channels);
      for (int64_t c = 0; c < channels; ++c) full[c] = v[v.size() == 1 ? 0 : c];
      return at::tensor(full, at::TensorOptions().dtype(at::kDouble)).to(acc).view(shape).to(input.device());
    };
    return normalize_tensor_cuda(input, to_tensor(mean), to_tensor(std), scale, dtype, memory_format);
  }
  at::Tensor out = make_output(input, dtype, memory_format);
  if (out.numel() == 0) return out;
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
  return out;
}

at::Tensor normalize_tensor_cuda(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 double scale, at::ScalarType dtype, at::MemoryFormat memory_format) {
  return normalize_entries::normalize_tensor_with(input, mean, std, dtype, memory_format, [&](at::Tensor& out,
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

// ---- backward: grad_input = grad * a, and per statistics entry the sums of grad and grad * y -------------------
constexpr int64_t kMaxSharedEntries = 512;  // entries accumulated in shared memory before one atomic per block

template <typename g_t, typename in_t, typename acc_t, typename index_t>
__global__ void normalize_backward_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<4, index_t> plan,
                                          const g_t* __restrict__ grad,
                                          const in_t* __restrict__ in, in_t* __restrict__ grad_in,
                                          const acc_t* __restrict__ mean, const acc_t* __restrict__ std,
                                          acc_t* __restrict__ sums, const int64_t K, const acc_t scale,
                                          const bool stats) {
  extern __shared__ unsigned char smem_raw[];
  acc_t* local = reinterpret_cast<acc_t*>(smem_raw);
  const bool use_shared = stats && K <= kMaxSharedEntries;
  if (use_shared) {
    for (int64_t k = threadIdx.x; k < 2 * K; k += blockDim.x) local[k] = acc_t(0);
    __syncthreads();
  }
  const index_t numel = plan.numel;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    index_t off[4];
    plan.offsets(i, off);
    const index_t k = off[3];  // statistics entry (contiguous buffer of the broadcast shape)
    const acc_t a = math::normalize_coef_a<acc_t>(scale, std[k]);
    const acc_t g = static_cast<acc_t>(grad[off[1]]);
    if (grad_in != nullptr) grad_in[off[0]] = static_cast<in_t>(g * a);
    if (stats) {
      const acc_t y = math::normalize_value(static_cast<acc_t>(in[off[2]]), a,
                                            math::normalize_coef_b<acc_t>(mean[k], std[k]), scale, mean[k], std[k]);
      acc_t* dst = use_shared ? local : sums;
      atomicAdd(dst + k, g);
      atomicAdd(dst + K + k, g * y);
    }
  }
  if (use_shared) {
    __syncthreads();
    for (int64_t k = threadIdx.x; k < 2 * K; k += blockDim.x) atomicAdd(sums + k, local[k]);
  }
}

template <typename acc_t>
__global__ void normalize_stat_grads_kernel(const acc_t* __restrict__ sums, const acc_t* __restrict__ std,
                                            acc_t* __restrict__ grad_mean, acc_t* __restrict__ grad_std,
                                            const int64_t K) {
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < K;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    grad_mean[k] = math::normalize_grad_mean(sums[k], std[k]);
    grad_std[k] = math::normalize_grad_std(sums[K + k], std[k]);
  }
}

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
  const c10::cuda::CUDAGuard guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  // acc_dtype(grad): float64 accumulation for float64 grads, float32 for the rest
  TENSOROPS_DISPATCH_FLOATING(grad.scalar_type(), "normalize_backward_grad", [&] {
    using g_t = scalar_t;
    using acc_t = float_acc_t<g_t>;
    const at::Tensor m = mean.to(acc).expand(shape).contiguous();
    const at::Tensor s = std.to(acc).expand(shape).contiguous();
    const int64_t K = m.numel();
    at::Tensor sums = at::zeros({kernel_stats ? 2 * K : 0}, input.options().dtype(acc));
    const size_t smem = kernel_stats && K <= kMaxSharedEntries ? 2 * K * sizeof(acc_t) : 0;
    if (mask[0] || kernel_stats) {
      TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_backward_in", [&] {
        using in_t = scalar_t;
        in_t* gi = mask[0] ? grad_input.mutable_data_ptr<in_t>() : nullptr;
        cuda::launch_indexed(plan, int64_t{kThreads} * 4, [&](auto index_tag, unsigned int blocks) {
          using index_t = decltype(index_tag);
          normalize_backward_kernel<g_t, in_t, acc_t, index_t><<<blocks, kThreads, smem, stream>>>(
              LaunchPlan<4, index_t>(plan), grad.const_data_ptr<g_t>(), input.const_data_ptr<in_t>(), gi,
              m.const_data_ptr<acc_t>(), s.const_data_ptr<acc_t>(),
              kernel_stats ? sums.mutable_data_ptr<acc_t>() : nullptr, K,
              static_cast<acc_t>(scale), kernel_stats);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    }
    if (deterministic) {
      const at::Tensor g = grad.to(acc);
      const at::Tensor y = normalize_tensor_cuda(input, m, s, scale, acc, at::MemoryFormat::Preserve);
      sums = at::cat({g.sum_to_size(shape).reshape(-1), (g * y).sum_to_size(shape).reshape(-1)});
    }
    if (bw.stats) {
      normalize_stat_grads_kernel<acc_t><<<cuda::blocks_for(K, kThreads), kThreads, 0, stream>>>(
          sums.const_data_ptr<acc_t>(), s.const_data_ptr<acc_t>(), grad_mean.mutable_data_ptr<acc_t>(),
          grad_std.mutable_data_ptr<acc_t>(), K);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return {grad_input, grad_mean, grad_std};
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CUDA, m) {
  normalize_entries::register_ops<&normalize_cuda, &normalize_tensor_cuda, &normalize_tensor_backward_cuda>(m);
}

}  // namespace tensorops

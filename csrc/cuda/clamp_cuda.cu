// clamp on CUDA. The host steps (checks, torch's promotion and output layout, operand views) are the CPU ops'
// (clamp_host.h); the values and gradient weights are math.h's. Launch code stays thin: device guard, current
// stream, a launch check after every launch, early return on empty tensors, 32-bit index math only when every
// offset fits (64-bit otherwise).
//
//  * forward: one launch; a vectorized kernel for contiguous input with number bounds, otherwise a strided
//    kernel over a LaunchPlan (plan.h: bounds broadcast by 0 strides, sizes as fast divisors) where each thread
//    walks kVec neighbouring elements.
//  * backward: one launch that writes grad_input and accumulates the bounds' gradient partial sums, plus one
//    small reduction launch. Bounds with at most kSharedEntries entries (per-channel bounds, ...) accumulate in
//    shared memory per block (warp-aggregated when a warp shares one entry), then the blocks' partials are
//    summed; larger bounds accumulate with global atomics into a buffer that is cast to the result dtype.
//
// Number bounds are converted as torch's CUDA kernel does (to the compute type, float for float16/bfloat16,
// without the CPU kernel's overflow check).
#include <optional>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/clamp_entries.h"
#include "tensorops/clamp_host.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/math/clamp.h"

namespace tensorops {
namespace {

using namespace clamp_host;
using cuda::kThreads;
using cuda::kVec;

constexpr int64_t kSharedEntries = 2048;  // bound entries accumulated in shared memory (min + max)
constexpr int kWarp = 32;

// ---- forward -----------------------------------------------------------------------------------------------
// Contiguous input and output, number bounds: aligned vector loads and stores of kV = vec_elems<scalar_t>()
// elements (16 bytes for 1- to 4-byte dtypes). No __restrict__: the in-place op (clamp_scalar_) passes one pointer
// as both out and x.
template <typename scalar_t, typename index_t, bool HasLo, bool HasHi>
__global__ void clamp_scalar_contig_kernel(scalar_t* out, const scalar_t* x, index_t n,
                                           typename Acc<scalar_t>::type lo, typename Acc<scalar_t>::type hi) {
  using acc_t = typename Acc<scalar_t>::type;
  constexpr int kV = cuda::vec_elems<scalar_t>();
  using V = cuda::Vec<scalar_t, kV>;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  const index_t nvec = n / kV;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < nvec; i += stride) {
    V v = reinterpret_cast<const V*>(x)[i];
#pragma unroll
    for (int j = 0; j < kV; ++j)
      v.v[j] = static_cast<scalar_t>(math::clamp_value<acc_t, HasLo, HasHi, false>(static_cast<acc_t>(v.v[j]), lo, hi));
    reinterpret_cast<V*>(out)[i] = v;
  }
  for (index_t i = nvec * kV + static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<scalar_t>(math::clamp_value<acc_t, HasLo, HasHi, false>(static_cast<acc_t>(x[i]), lo, hi));
}

// Any layout. Each thread takes kVec neighbouring linear indices: one index decomposition, then steps along the
// innermost plan dimension while it lasts. Operands: 0 out, 1 x, 2 lo, 3 hi (absent bounds are not read).
// NanBounds: tensor bounds (NaN propagates per element); number bounds come as lo_v / hi_v.
template <typename scalar_t, typename index_t, bool HasLo, bool HasHi, bool TensorBounds>
__global__ void clamp_strided_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<4, index_t> p, scalar_t* out,
                                     const scalar_t* x, const scalar_t* lo, const scalar_t* hi,
                                     typename Acc<scalar_t>::type lo_v, typename Acc<scalar_t>::type hi_v) {
  using acc_t = typename Acc<scalar_t>::type;
  const index_t n = p.numel;
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x * kVec;
  for (index_t base = (static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; base < n; base += step) {
    index_t off[4];
    index_t col = p.offsets(base, off);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const index_t i = base + j;
      if (i >= n) break;
      if (j > 0) p.next(i, col, off);
      acc_t l = lo_v, h = hi_v;
      if (TensorBounds) {
        if (HasLo) l = static_cast<acc_t>(lo[off[2]]);
        if (HasHi) h = static_cast<acc_t>(hi[off[3]]);
      }
      out[off[0]] = static_cast<scalar_t>(math::clamp_value<acc_t, HasLo, HasHi, TensorBounds>(static_cast<acc_t>(x[off[1]]), l, h));
    }
  }
}

template <typename scalar_t, bool HasLo, bool HasHi, bool TensorBounds>
void launch_strided(const Plan<4>& p, scalar_t* out, const scalar_t* x, const scalar_t* lo, const scalar_t* hi,
                    typename Acc<scalar_t>::type lo_v, typename Acc<scalar_t>::type hi_v) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cuda::launch_indexed(p, static_cast<int64_t>(kThreads) * kVec, [&](auto index_tag, unsigned int blocks) {
    clamp_strided_kernel<scalar_t, decltype(index_tag), HasLo, HasHi, TensorBounds>
        <<<blocks, kThreads, 0, stream>>>(LaunchPlan<4, decltype(index_tag)>(p), out, x, lo, hi, lo_v, hi_v);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

at::Tensor clamp_tensor_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Tensor>& min,
                             const std::optional<at::Tensor>& max) {
  c10::cuda::CUDAGuard guard(input.device());
  TensorForward f = prepare_tensor_forward(inplace, input, min, max);
  if (f.done) return f.out;
  const at::Tensor& lo_t = f.has_min ? f.lo : f.x;
  const at::Tensor& hi_t = f.has_max ? f.hi : f.x;
  const Plan<4> p = make_plan<4>(f.target.sizes(), {f.target.strides(), f.x.strides(), lo_t.strides(), hi_t.strides()});
  TENSOROPS_DISPATCH_CLAMP(f.T, "tensorops_clamp_cuda", [&] {
    using acc_t = typename Acc<scalar_t>::type;
    either_switch(f.has_min, f.has_max, [&]<bool L, bool H>() {
      launch_strided<scalar_t, L, H, true>(p, f.target.data_ptr<scalar_t>(), f.x.const_data_ptr<scalar_t>(),
                                           lo_t.const_data_ptr<scalar_t>(), hi_t.const_data_ptr<scalar_t>(),
                                           acc_t(0), acc_t(0));
    });
  });
  f.finish();
  return f.out;
}

at::Tensor clamp_scalar_impl(const at::Tensor& inplace, const at::Tensor& input, const std::optional<at::Scalar>& min,
                             const std::optional<at::Scalar>& max) {
  c10::cuda::CUDAGuard guard(input.device());
  ScalarForward f = prepare_scalar_forward(inplace, input, min, max);
  if (f.done) return f.out;
  TENSOROPS_DISPATCH_CLAMP(f.T, "tensorops_clamp_scalar_cuda", [&] {
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
        const auto stream = c10::cuda::getCurrentCUDAStream();
        cuda::launch_indexed(n, static_cast<int64_t>(kThreads) * kV, [&](auto index_tag, unsigned int blocks) {
          using index_t = decltype(index_tag);
          clamp_scalar_contig_kernel<scalar_t, index_t, L, H>
              <<<blocks, kThreads, 0, stream>>>(out, x, static_cast<index_t>(n), lo, hi);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      } else {
        const Plan<4> p = make_plan<4>(f.out.sizes(), {f.out.strides(), f.x.strides(), f.x.strides(), f.x.strides()});
        launch_strided<scalar_t, L, H, false>(p, out, x, x, x, lo, hi);
      }
    });
  });
  return f.out;
}

// ---- backward ----------------------------------------------------------------------------------------------
// Adds v to buf[k] for every lane of a warp. All 32 lanes must call it (the loop below keeps warps converged);
// lanes with nothing to add pass v = 0. When the warp shares one entry (per-channel bounds), it adds once.
template <typename sum_t, typename index_t>
__device__ __forceinline__ void warp_accumulate(sum_t* buf, index_t k, sum_t v) {
  const unsigned full = 0xffffffffu;
  const index_t k0 = __shfl_sync(full, k, 0);
  if (__all_sync(full, k == k0)) {
#pragma unroll
    for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_down_sync(full, v, o);
    if ((threadIdx.x & (kWarp - 1)) == 0) atomicAdd(buf + k0, v);
  } else if (v != sum_t(0)) {
    atomicAdd(buf + k, v);
  }
}

// Operands: 0 grad_input's layout (or a dense stand-in), 1 grad, 2 x, 3 lo entry, 4 hi entry.
// Shared: partial sums of the block in shared memory, written to partial[blockIdx.x][klo + khi]; else global
// atomics straight into partial[klo + khi]. Deterministic mode (want_sums false, terms_lo/terms_hi given): every
// element's gradient term is written at its dense offset, for torch's fixed-order reductions to sum.
template <typename scalar_t, typename sum_t, typename index_t, bool HasLo, bool HasHi, bool Shared>
__global__ void clamp_backward_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<5, index_t> p, scalar_t* gi,
                                      const scalar_t* g, const scalar_t* x, const scalar_t* lo, const scalar_t* hi,
                                      int64_t klo, int64_t khi, bool want_sums, sum_t* partial, sum_t* terms_lo,
                                      sum_t* terms_hi) {
  using acc_t = typename Acc<scalar_t>::type;
  extern __shared__ unsigned char smem_raw[];
  sum_t* smem = reinterpret_cast<sum_t*>(smem_raw);
  const int64_t K = klo + khi;
  if (Shared && want_sums) {
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) smem[k] = sum_t(0);
    __syncthreads();
  }
  sum_t* acc_lo = Shared ? smem : partial;
  sum_t* acc_hi = acc_lo + klo;
  const index_t n = p.numel;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  // the loop bound is the same for every thread of a block, so warps stay converged for warp_accumulate
  for (index_t base = static_cast<index_t>(blockIdx.x) * blockDim.x; base < n; base += stride) {
    const index_t i = base + threadIdx.x;
    sum_t dlo = 0, dhi = 0;
    index_t a = 0, b = 0;
    if (i < n) {
      index_t off[5];
      p.offsets(i, off);
      const acc_t v = static_cast<acc_t>(x[off[2]]);
      const acc_t gv = static_cast<acc_t>(g[off[1]]);
      a = off[3];
      b = off[4];
      const acc_t l = HasLo ? static_cast<acc_t>(lo[a]) : acc_t(0);
      const acc_t h = HasHi ? static_cast<acc_t>(hi[b]) : acc_t(0);
      if (gi) gi[off[0]] = static_cast<scalar_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, false>(gv, v, l, h));
      if (HasLo) dlo = static_cast<sum_t>(math::clamp_grad_min<acc_t, HasHi>(gv, v, l, h));
      if (HasHi) dhi = static_cast<sum_t>(math::clamp_grad_max<acc_t, HasLo>(gv, v, l, h));
      if (HasLo && terms_lo) terms_lo[off[0]] = dlo;
      if (HasHi && terms_hi) terms_hi[off[0]] = dhi;
    }
    if (want_sums) {
      if (HasLo) warp_accumulate(acc_lo, a, dlo);
      if (HasHi) warp_accumulate(acc_hi, b, dhi);
    }
  }
  if (Shared && want_sums) {
    __syncthreads();
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) partial[static_cast<int64_t>(blockIdx.x) * K + k] = smem[k];
  }
}

// grad_min / grad_max[k] = sum over blocks of partial[block][k] (the bounds' entries are contiguous).
template <typename scalar_t, typename sum_t>
__global__ void clamp_reduce_partials_kernel(const sum_t* partial, int64_t blocks, int64_t klo, int64_t khi,
                                             scalar_t* grad_lo, scalar_t* grad_hi) {
  const int64_t K = klo + khi;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < K;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    sum_t total = 0;
    for (int64_t b = 0; b < blocks; ++b) total += partial[b * K + k];
    if (k < klo) {
      if (grad_lo) grad_lo[k] = static_cast<scalar_t>(total);
    } else if (grad_hi) {
      grad_hi[k - klo] = static_cast<scalar_t>(total);
    }
  }
}

// Number bounds: grad_input only. Operands: 0 grad_input, 1 grad, 2 x.
template <typename scalar_t, typename index_t, bool HasLo, bool HasHi>
__global__ void clamp_scalar_backward_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<3, index_t> p, scalar_t* gi,
                                             const scalar_t* g, const scalar_t* x, typename Acc<scalar_t>::type lo,
                                             typename Acc<scalar_t>::type hi) {
  using acc_t = typename Acc<scalar_t>::type;
  const index_t n = p.numel;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<index_t>(gridDim.x) * blockDim.x) {
    index_t off[3];
    p.offsets(i, off);
    gi[off[0]] = static_cast<scalar_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, true>(
        static_cast<acc_t>(g[off[1]]), static_cast<acc_t>(x[off[2]]), lo, hi));
  }
}

int sm_count(const at::Tensor& t) {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, t.get_device()));
  return sms > 0 ? sms : 1;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> clamp_backward_cuda(const at::Tensor& grad, const at::Tensor& input,
                                                                   const std::optional<at::Tensor>& min,
                                                                   const std::optional<at::Tensor>& max,
                                                                   std::array<bool, 3> mask) {
  c10::cuda::CUDAGuard guard(input.device());
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
  const auto stream = c10::cuda::getCurrentCUDAStream();
  TENSOROPS_DISPATCH_FLOATING(b.T, "tensorops_clamp_backward_cuda", [&] {
    using sum_t = float_acc_t<scalar_t>;
    const auto sum_opts = b.g.options().dtype(c10::CppTypeToScalarType<sum_t>::value);
    scalar_t* gi = mask[0] ? b.grad_input.data_ptr<scalar_t>() : nullptr;
    const scalar_t* lp = b.has_min ? b.lo.const_data_ptr<scalar_t>() : nullptr;
    const scalar_t* hp = b.has_max ? b.hi.const_data_ptr<scalar_t>() : nullptr;
    // shared-memory partials: a few blocks per SM, each looping over the data; global atomics: enough blocks
    const int64_t max_blocks = shared && want_sums ? 4 * sm_count(b.g) : int64_t{1} << 24;
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
        bool_switch(shared, [&](auto shared_tag) {
          clamp_backward_kernel<scalar_t, sum_t, decltype(index_tag), L, H, decltype(shared_tag)::value>
              <<<nblocks, kThreads, smem, stream>>>(LaunchPlan<5, decltype(index_tag)>(p), gi,
                                                    b.g.const_data_ptr<scalar_t>(), b.x.const_data_ptr<scalar_t>(),
                                                    lp, hp, klo, khi, want_sums, pp, tlo, thi);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    });
    if (want_sums) {
      scalar_t* glo = b.want_lo ? b.grad_min.data_ptr<scalar_t>() : nullptr;
      scalar_t* ghi = b.want_hi ? b.grad_max.data_ptr<scalar_t>() : nullptr;
      const int64_t nblocks = shared ? blocks : 1;  // global mode: partial holds the totals
      clamp_reduce_partials_kernel<scalar_t, sum_t>
          <<<cuda::blocks_for(K, kThreads), kThreads, 0, stream>>>(pp, nblocks, klo, khi, glo, ghi);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    if (terms_lo.defined()) b.grad_min.copy_(terms_lo.sum_to_size(b.grad_min.sizes()));
    if (terms_hi.defined()) b.grad_max.copy_(terms_hi.sum_to_size(b.grad_max.sizes()));
  });
  return {b.grad_input, b.grad_min, b.grad_max};
}

at::Tensor clamp_scalar_backward_cuda(const at::Tensor& grad, const at::Tensor& input,
                                      const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max) {
  c10::cuda::CUDAGuard guard(input.device());
  ScalarBackward b = prepare_scalar_backward(grad, input, min, max);
  if (b.done) return b.grad_input;
  const Plan<3> p = make_plan<3>(input.sizes(), {b.grad_input.strides(), b.g.strides(), input.strides()});
  const auto stream = c10::cuda::getCurrentCUDAStream();
  TENSOROPS_DISPATCH_FLOATING(input.scalar_type(), "tensorops_clamp_scalar_backward_cuda", [&] {
    using acc_t = typename Acc<scalar_t>::type;
    const acc_t lo = min ? min->to<acc_t>() : acc_t(0);
    const acc_t hi = max ? max->to<acc_t>() : acc_t(0);
    either_switch(min.has_value(), max.has_value(), [&]<bool L, bool H>() {
      cuda::launch_indexed(p, kThreads, [&](auto index_tag, unsigned int blocks) {
        clamp_scalar_backward_kernel<scalar_t, decltype(index_tag), L, H><<<blocks, kThreads, 0, stream>>>(
            LaunchPlan<3, decltype(index_tag)>(p), b.grad_input.data_ptr<scalar_t>(), b.g.const_data_ptr<scalar_t>(),
            input.const_data_ptr<scalar_t>(), lo, hi);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
  return b.grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CUDA, m) {
  clamp_entries::register_ops<&clamp_tensor_impl, &clamp_scalar_impl, &clamp_backward_cuda,
                              &clamp_scalar_backward_cuda>(m);
}

}  // namespace tensorops

// normalize's CUDA kernels (launched by csrc/cuda/normalize_cuda.cu). A header, so
// that nvcc and the emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. The arithmetic
// is math/normalize.h's, the functions the CPU kernel calls.
#pragma once
#include "tensorops/cuda_utils.cuh"
#include "tensorops/kernels/warp.cuh"
#include "tensorops/math/normalize.h"
#include "tensorops/plan.h"

namespace tensorops {
namespace kernels {

using cuda::kThreads;
using cuda::kVec;
using cuda::Vec;

constexpr int64_t kNormalizeByValue = 64;  // channels passed in the kernel arguments

template <typename acc_t>
struct Coefs {
  acc_t a[kNormalizeByValue];
  acc_t b[kNormalizeByValue];
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

// ---- backward: grad_input = grad * a, and per statistics entry the sums of grad and grad * y -------------------
constexpr int64_t kNormalizeSharedEntries = 512;  // entries accumulated in shared memory before one atomic per block

// Every thread of a block runs the same number of loop steps (the bound is the block's base), so warps stay
// converged for warp_accumulate: per-channel statistics (a warp's elements share one entry) cost one atomic per
// warp and step instead of 32 on one address.
template <typename g_t, typename in_t, typename acc_t, typename index_t>
__global__ void normalize_backward_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<4, index_t> plan,
                                          const g_t* __restrict__ grad,
                                          const in_t* __restrict__ in, in_t* __restrict__ grad_in,
                                          const acc_t* __restrict__ mean, const acc_t* __restrict__ std,
                                          acc_t* __restrict__ sums, const int64_t K, const acc_t scale,
                                          const bool stats) {
  TENSOROPS_DYNAMIC_SHARED(unsigned char, smem_raw);
  acc_t* local = reinterpret_cast<acc_t*>(smem_raw);
  const bool use_shared = stats && K <= kNormalizeSharedEntries;
  if (use_shared) {
    for (int64_t k = threadIdx.x; k < 2 * K; k += blockDim.x) local[k] = acc_t(0);
    __syncthreads();
  }
  acc_t* dst = use_shared ? local : sums;
  const index_t numel = plan.numel;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t base = static_cast<index_t>(blockIdx.x) * blockDim.x; base < numel; base += stride) {
    const index_t i = base + threadIdx.x;
    index_t k = 0;  // statistics entry (contiguous buffer of the broadcast shape)
    acc_t g = acc_t(0), gy = acc_t(0);
    if (i < numel) {
      index_t off[4];
      plan.offsets(i, off);
      k = off[3];
      const acc_t a = math::normalize_coef_a<acc_t>(scale, std[k]);
      g = static_cast<acc_t>(grad[off[1]]);
      if (grad_in != nullptr) grad_in[off[0]] = static_cast<in_t>(g * a);
      if (stats) {
        const acc_t y = math::normalize_value(static_cast<acc_t>(in[off[2]]), a,
                                              math::normalize_coef_b<acc_t>(mean[k], std[k]), scale, mean[k], std[k]);
        gy = g * y;
      }
    }
    if (stats) {
      warp_accumulate(dst, k, g);
      warp_accumulate(dst + K, k, gy);
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

}  // namespace kernels
}  // namespace tensorops

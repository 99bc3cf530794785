// clamp's CUDA kernels (launched by csrc/cuda/clamp_cuda.cu and clamp_backward_cuda.cu). A header, so that nvcc
// and the emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. The values and gradient
// weights are math/clamp.h's, the functions the CPU loops call.
#pragma once
#include "tensorops/clamp_host.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/kernels/warp.cuh"
#include "tensorops/math/clamp.h"
#include "tensorops/plan.h"

namespace tensorops {
namespace kernels {

using clamp_host::Acc;

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

// Any layout. Each thread takes cuda::kVec neighbouring linear indices: one index decomposition, then steps along the
// innermost plan dimension while it lasts. Operands: 0 out, 1 x, 2 lo, 3 hi (absent bounds are not read).
// NanBounds: tensor bounds (NaN propagates per element); number bounds come as lo_v / hi_v.
template <typename scalar_t, typename index_t, bool HasLo, bool HasHi, bool TensorBounds>
__global__ void clamp_strided_kernel(TENSOROPS_GRID_CONSTANT const LaunchPlan<4, index_t> p, scalar_t* out,
                                     const scalar_t* x, const scalar_t* lo, const scalar_t* hi,
                                     typename Acc<scalar_t>::type lo_v, typename Acc<scalar_t>::type hi_v) {
  using acc_t = typename Acc<scalar_t>::type;
  const index_t n = p.numel;
  const index_t step = static_cast<index_t>(gridDim.x) * blockDim.x * cuda::kVec;
  for (index_t base = (static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x) * cuda::kVec; base < n;
       base += step) {
    index_t off[4];
    index_t col = p.offsets(base, off);
#pragma unroll
    for (int j = 0; j < cuda::kVec; ++j) {
      const index_t i = base + j;
      if (i >= n) break;
      if (j > 0) p.next(i, col, off);
      acc_t l = lo_v, h = hi_v;
      if (TensorBounds) {
        if (HasLo) l = static_cast<acc_t>(lo[off[2]]);
        if (HasHi) h = static_cast<acc_t>(hi[off[3]]);
      }
      out[off[0]] = static_cast<scalar_t>(
          math::clamp_value<acc_t, HasLo, HasHi, TensorBounds>(static_cast<acc_t>(x[off[1]]), l, h));
    }
  }
}

// ---- backward ----------------------------------------------------------------------------------------------
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
  TENSOROPS_DYNAMIC_SHARED(unsigned char, smem_raw);
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

}  // namespace kernels
}  // namespace tensorops

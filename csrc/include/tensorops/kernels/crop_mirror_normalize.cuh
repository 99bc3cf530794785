// crop_mirror_normalize's CUDA kernel (launched by csrc/cuda/cmn_cuda.cu). A header, so that nvcc and the
// emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. Every element's value comes from
// cmn::value (crop_mirror_normalize.h), the function the CPU kernel's fallback path calls.
#pragma once
#include <cstdint>

#include "tensorops/crop_mirror_normalize.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/fast_divide.h"

namespace tensorops {
namespace kernels {

using cmn::Sample;

// 48 samples * 72 bytes plus the other parameters stay under the classic 4 KiB kernel-parameter limit.
constexpr int kCmnParamSamples = 48;

// A batch op's per-sample table (crop_mirror_normalize's cmn::Sample, resize's resize::Sample): in the kernel's
// parameters for batches up to K samples, else in a device buffer (cmn_launch.cuh picks).
template <typename S, int K>
struct SampleParamTable {
  S s[K];
  __device__ const S& operator[](int64_t n) const { return s[n]; }
};
template <typename S>
struct SampleDeviceTable {
  const S* s;
  __device__ const S& operator[](int64_t n) const { return s[n]; }
};

template <typename acc_t>
struct CmnParams {
  int64_t N, C, Cp, h, w, numel;
  IntDivider<int64_t> div_cp, div_h, div_w;  // Cp, h and w as fast divisors (fast_divide.h)
  const acc_t* mean;
  const acc_t* std;
  int64_t mean_sn, mean_sc, std_sn, std_sc;
  acc_t scale, fill;
  bool channels_last;
};

// Output element idx of a batch op's (N, Cp, h, w) output, contiguous or channels_last, as (n, c, i, j).
struct BatchIndex {
  int64_t n, c, i, j;
};
template <typename acc_t>
TENSOROPS_HD BatchIndex batch_index(const CmnParams<acc_t>& p, int64_t idx) {
  BatchIndex b;
  int64_t r = idx;  // r ends as the sample index
  if (p.channels_last) {
    b.c = p.div_cp.divmod(r);
    b.j = p.div_w.divmod(r);
    b.i = p.div_h.divmod(r);
  } else {
    b.j = p.div_w.divmod(r);
    b.i = p.div_h.divmod(r);
    b.c = p.div_cp.divmod(r);
  }
  b.n = r;
  return b;
}

template <typename in_t, typename out_t, typename acc_t, typename Table>
__global__ void crop_mirror_normalize_kernel(out_t* __restrict__ out, const TENSOROPS_GRID_CONSTANT CmnParams<acc_t> p,
                                             const TENSOROPS_GRID_CONSTANT Table table) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < p.numel; idx += stride) {
    const auto [n, c, i, j] = batch_index(p, idx);
    const Sample& s = table[n];
    const int64_t y = s.y0 + i, x = cmn::source_x(s, j, p.w);
    const bool real = c < p.C && cmn::inside(s, y, x);
    acc_t v = acc_t(0), mean = acc_t(0), sd = acc_t(1);
    if (real) {
      const in_t* src = reinterpret_cast<const in_t*>(s.src);
      v = static_cast<acc_t>(src[c * s.sc + y * s.sy + x * s.sx]);
      mean = p.mean[n * p.mean_sn + c * p.mean_sc];
      sd = p.std[n * p.std_sn + c * p.std_sc];
    }
    out[idx] = static_cast<out_t>(cmn::value(real, v, p.scale, mean, sd, p.fill));
  }
}

}  // namespace kernels
}  // namespace tensorops

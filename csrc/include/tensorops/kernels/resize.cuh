// resized_crop_mirror_normalize's CUDA kernel (launched by csrc/cuda/resize_cuda.cu). A header, so that nvcc and
// the emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. One thread per output
// element (n, c, i, j): its two windows and weights come from resize.h (the functions the CPU kernel builds its
// tables with), the sum runs over the window's rows and columns and is divided by the weights' sums, clamped to
// [0, vmax] where vmax > 0 (bicubic of integer images), then normalized as crop_mirror_normalize's (cmn::value)
// and stored by resize::store (uint8 outputs rounded).
#pragma once
#include <cstdint>

#include "tensorops/crop_mirror_normalize.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/fast_divide.h"
#include "tensorops/kernels/crop_mirror_normalize.cuh"  // CmnParams, batch_index, the sample tables
#include "tensorops/resize.h"

namespace tensorops {
namespace kernels {

// 20 samples * 184 bytes plus the other parameters stay under the classic 4 KiB kernel-parameter limit.
constexpr int kResizeParamSamples = 20;

template <typename in_t, typename out_t, typename acc_t, typename Table>
__global__ void resized_crop_mirror_normalize_kernel(out_t* __restrict__ out,
                                                     const TENSOROPS_GRID_CONSTANT CmnParams<acc_t> p,
                                                     const acc_t vmax,
                                                     const TENSOROPS_GRID_CONSTANT Table table) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < p.numel; idx += stride) {
    const auto [n, c, i, j] = batch_index(p, idx);
    const resize::Sample& s = table[n];
    const int64_t jj = s.mirror ? p.w - 1 - j : j;  // the column of the unmirrored resampled row
    int64_t y0, ky, x0, kx;
    resize::window(s.y, i, y0, ky);
    resize::window(s.x, jj, x0, kx);
    const bool real = c < p.C && ky > 0 && kx > 0 && !resize::outside(s.y, i) && !resize::outside(s.x, jj);
    acc_t v = acc_t(0), mean = acc_t(0), sd = acc_t(1);
    if (real) {
      const in_t* src = reinterpret_cast<const in_t*>(s.src) + c * s.sc;
      double sum_x = 0.0, sum_y = 0.0;
      for (int64_t b = 0; b < kx; ++b) sum_x += resize::weight(s.x, jj, x0 + b);
      acc_t acc = acc_t(0);
      for (int64_t a = 0; a < ky; ++a) {
        const double wy = resize::weight(s.y, i, y0 + a);
        sum_y += wy;
        const in_t* row = src + (y0 + a) * s.sy;
        acc_t racc = acc_t(0);
        for (int64_t b = 0; b < kx; ++b)
          racc += static_cast<acc_t>(resize::weight(s.x, jj, x0 + b)) * static_cast<acc_t>(row[(x0 + b) * s.sx]);
        acc += static_cast<acc_t>(wy) * racc;
      }
      const double total = sum_x * sum_y;
      v = total > 0.0 ? static_cast<acc_t>(acc / static_cast<acc_t>(total)) : acc_t(0);
      if (vmax > acc_t(0)) v = v < acc_t(0) ? acc_t(0) : (v > vmax ? vmax : v);  // resize_host::Setup::vmax
      mean = p.mean[n * p.mean_sn + c * p.mean_sc];
      sd = p.std[n * p.std_sn + c * p.std_sc];
    }
    out[idx] = resize::store<out_t>(cmn::value(real, v, p.scale, mean, sd, p.fill));
  }
}

}  // namespace kernels
}  // namespace tensorops

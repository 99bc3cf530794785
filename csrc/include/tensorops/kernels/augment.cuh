// tensorops.augment's CUDA kernels (launched by csrc/cuda/augment_cuda.cu). A header, so that nvcc and the
// emulated device (emu/device.h, csrc/emulated/) compile the same kernel source. Every value comes from
// math/augment.h, the functions the CPU loops call. Per op group:
//  - augment_lut_kernel: one block per sample; the table ops' statistics (256-bin histograms per channel, and of
//    the floored luma for contrast: extremes, sum and equalize's table all come from them), then each channel's
//    256-entry table. Samples of other ops leave at once.
//  - augment_pixel_kernel: one thread per output pixel of the batch (all C channels): the sample's op (table
//    lookup, saturation / hue / grayscale, sharpness's 3x3, affine's map, rot90's index map, or a copy).
//  - augment_erase_kernel: one thread per output element: the box's value or the input.
#pragma once
#include <cstdint>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/kernels/crop_mirror_normalize.cuh"  // SampleParamTable, SampleDeviceTable
#include "tensorops/math/augment.h"

namespace tensorops {
namespace kernels {

// 40 samples * 88 bytes (Sample: Pillow's affine data are six doubles) plus the other parameters stay under the
// classic 4 KiB kernel-parameter limit.
constexpr int kAugmentParamSamples = 40;
static_assert(kAugmentParamSamples * sizeof(augment::Sample) + 512 <= 4096, "augment's kernel parameters");

struct AugmentImage {
  int64_t N, C, H, W;
  int64_t sn, sc, sh, sw;  // input strides
  int64_t on, oc, oh, ow;  // output strides
};

struct AugmentFill {
  bool has_fill;
  float v[3];
  // channel c's fill by constant indices (a dynamic index would copy the parameter to local memory)
  __device__ float at(int64_t c) const { return c == 0 ? v[0] : (c == 1 ? v[1] : v[2]); }
};

constexpr int kLutThreads = 256;

template <typename Table>
__global__ void augment_lut_kernel(const Table table, const uint8_t* __restrict__ in, const AugmentImage g,
                                   uint8_t* __restrict__ luts) {
  __shared__ unsigned long long hist[4 * 256];  // channels 0..2, then the floored luma
  __shared__ float stats[7];                   // mean, lo[3], hi[3]
  const int64_t n = blockIdx.x;
  const augment::Sample sm = table[n];
  if (!augment::is_lut_op(sm.op)) return;  // the whole block: no barrier is left waiting
  const bool channel_hists = sm.op == augment::kEqualize || sm.op == augment::kAutocontrast;
  const bool luma_hist = sm.op == augment::kContrast;
  for (int k = threadIdx.x; k < 4 * 256; k += blockDim.x) hist[k] = 0;
  __syncthreads();
  const uint8_t* x = in + n * g.sn;
  const int64_t pixels = g.H * g.W;
  if (channel_hists || luma_hist) {
    for (int64_t p = threadIdx.x; p < pixels; p += blockDim.x) {
      const int64_t i = p / g.W, j = p - i * g.W;
      const uint8_t* px = x + i * g.sh + j * g.sw;
      if (channel_hists) {
        for (int64_t c = 0; c < g.C; ++c) atomicAdd(&hist[c * 256 + px[c * g.sc]], 1ull);
      } else if (g.C == 3) {
        const int l = static_cast<int>(augment::luma(px[0], px[g.sc], px[2 * g.sc]));  // floor: l >= 0
        atomicAdd(&hist[3 * 256 + l], 1ull);
      } else {
        atomicAdd(&hist[3 * 256 + px[0]], 1ull);
      }
    }
  }
  __syncthreads();
  uint8_t* lut = luts + n * 3 * 256;
  if (threadIdx.x == 0) {
    if (luma_hist) {
      int64_t sum = 0;
      for (int v = 0; v < 256; ++v) sum += static_cast<int64_t>(hist[3 * 256 + v]) * v;
      stats[0] = augment::contrast_mean(sum, pixels, true);  // torch.mean on CUDA: times 1 / count
    }
    if (sm.op == augment::kAutocontrast) {
      for (int64_t c = 0; c < g.C; ++c) {
        int lo = 0, hi = 255;
        while (lo < 255 && hist[c * 256 + lo] == 0) ++lo;
        while (hi > 0 && hist[c * 256 + hi] == 0) --hi;
        stats[1 + c] = static_cast<float>(lo);
        stats[4 + c] = static_cast<float>(hi);
      }
    }
    if (sm.op == augment::kEqualize) {
      for (int64_t c = 0; c < g.C; ++c) {
        if (!augment::equalize_lut(hist + c * 256, pixels, lut + c * 256))
          for (int v = 0; v < 256; ++v) lut[c * 256 + v] = static_cast<uint8_t>(v);  // left as it is
      }
    }
  }
  __syncthreads();
  if (sm.op == augment::kEqualize) return;
  for (int v = threadIdx.x; v < 256; v += blockDim.x)
    for (int64_t c = 0; c < g.C; ++c)
      lut[c * 256 + v] = augment::lut_entry(sm, v, stats[0], stats[1 + c], stats[4 + c]);
}

template <typename Table>
__global__ void augment_pixel_kernel(const Table table, const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                     const AugmentImage g, const uint8_t* __restrict__ luts, const AugmentFill fill) {
  const int64_t hw = g.H * g.W, total = g.N * hw;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t n = p / hw, r = p - n * hw, i = r / g.W, j = r - i * g.W;
    const augment::Sample& sm = table[n];
    const uint8_t* x = in + n * g.sn;
    uint8_t* y = out + n * g.on + i * g.oh + j * g.ow;
    const uint8_t* px = x + i * g.sh + j * g.sw;
    const int32_t op = sm.op;
    if (augment::is_lut_op(op)) {
      const uint8_t* lut = luts + n * 3 * 256;
      for (int64_t c = 0; c < g.C; ++c) y[c * g.oc] = lut[c * 256 + px[c * g.sc]];
    } else if (g.C == 3 && (op == augment::kSaturation || op == augment::kGrayscale || op == augment::kHue)) {
      const uint8_t R = px[0], G = px[g.sc], B = px[2 * g.sc];
      if (op == augment::kSaturation) {
        const float gray = augment::floor_small(augment::luma(R, G, B));
        y[0] = augment::blend(R, gray, sm.f0, sm.f1);
        y[g.oc] = augment::blend(G, gray, sm.f0, sm.f1);
        y[2 * g.oc] = augment::blend(B, gray, sm.f0, sm.f1);
      } else if (op == augment::kGrayscale) {
        const uint8_t l = augment::to_u8(augment::luma(R, G, B));
        y[0] = l;
        y[g.oc] = l;
        y[2 * g.oc] = l;
      } else {
        uint8_t ro, go, bo;
        augment::hue(R, G, B, sm.f0, ro, go, bo);
        y[0] = ro;
        y[g.oc] = go;
        y[2 * g.oc] = bo;
      }
    } else if (op == augment::kSharpness && g.H > 2 && g.W > 2 && i > 0 && j > 0 && i < g.H - 1 && j < g.W - 1) {
      for (int64_t c = 0; c < g.C; ++c) {
        const uint8_t* q = px + c * g.sc;
        const int sum8 = q[-g.sh - g.sw] + q[-g.sh] + q[-g.sh + g.sw] + q[-g.sw] + q[g.sw] + q[g.sh - g.sw] +
                         q[g.sh] + q[g.sh + g.sw];
        y[c * g.oc] = augment::sharpen(q[0], sum8, sm.f1);
      }
    } else if (op == augment::kAffine) {
      float ix, iy;
      augment::affine_source(sm.t, i, j, g.H, g.W, ix, iy);
      if (sm.ival == 0) {
        const float rx = augment::round_even(ix), ry = augment::round_even(iy);
        const bool inside = rx >= 0.f && ry >= 0.f && rx < static_cast<float>(g.W) && ry < static_cast<float>(g.H);
        const int64_t sx = inside ? static_cast<int64_t>(rx) : 0, sy = inside ? static_cast<int64_t>(ry) : 0;
        for (int64_t c = 0; c < g.C; ++c) {
          const float v = inside ? static_cast<float>(x[c * g.sc + sy * g.sh + sx * g.sw])
                                 : (fill.has_fill ? fill.at(c) : 0.f);
          y[c * g.oc] = augment::to_u8(augment::clamp_to(augment::round_even(v), 0.f, 255.f));
        }
      } else {
        const augment::Taps tp = augment::bilinear_taps(ix, iy, g.H, g.W);
        const int64_t base = static_cast<int64_t>(tp.y0) * g.sh + static_cast<int64_t>(tp.x0) * g.sw;
        const float mask = augment::add_rn(augment::add_rn(augment::add_rn(tp.w0, tp.w1), tp.w2), tp.w3);
        for (int64_t c = 0; c < g.C; ++c) {
          const uint8_t* q = x + c * g.sc + base;  // taps outside: not read, value 0 (weight 0)
          const float v0 = tp.k0 ? static_cast<float>(q[0]) : 0.f, v1 = tp.k1 ? static_cast<float>(q[g.sw]) : 0.f;
          const float v2 = tp.k2 ? static_cast<float>(q[g.sh]) : 0.f;
          const float v3 = tp.k3 ? static_cast<float>(q[g.sh + g.sw]) : 0.f;
          y[c * g.oc] = augment::bilinear_finish(augment::bilinear_sum(v0, v1, v2, v3, tp.w0, tp.w1, tp.w2, tp.w3),
                                                 mask, fill.has_fill, fill.has_fill ? fill.at(c) : 0.f);
        }
      }
    } else if (op == augment::kAffinePil) {
      uint32_t f = 0;  // channel c's fill in byte c
      if (fill.has_fill)
        for (int64_t c = 0; c < g.C; ++c)
          f |= static_cast<uint32_t>(augment::to_u8(augment::clamp_to(augment::round_even(fill.at(c)), 0.f, 255.f)))
               << (8 * c);
      augment::pil_affine_pixel(sm, x, g.sc, g.sh, g.sw, g.C, g.H, g.W, i, j, f, y, g.oc);
    } else if (op == augment::kRot90 || op == augment::kRot180 || op == augment::kRot270) {
      int64_t si, sj;
      augment::rot_source(op, i, j, g.H, g.W, si, sj);
      const uint8_t* q = x + si * g.sh + sj * g.sw;
      for (int64_t c = 0; c < g.C; ++c) y[c * g.oc] = q[c * g.sc];
    } else {  // identity, a colour op on one channel (torchvision returns it as it is), sharpness's borders
      for (int64_t c = 0; c < g.C; ++c) y[c * g.oc] = px[c * g.sc];
    }
  }
}

// boxes: N x 4 (top, left, bottom, right), clipped; value: (N, C) contiguous, or per-pixel with the batch's
// strides (vs*).
__global__ void augment_erase_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, const AugmentImage g,
                                     const int64_t* __restrict__ boxes, const uint8_t* __restrict__ value,
                                     const bool per_pixel, const int64_t vn, const int64_t vc, const int64_t vh,
                                     const int64_t vw) {
  const int64_t chw = g.C * g.H * g.W, hw = g.H * g.W, total = g.N * chw;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t n = p / chw, r = p - n * chw, c = r / hw, r2 = r - c * hw, i = r2 / g.W, j = r2 - i * g.W;
    const int64_t* b = boxes + 4 * n;
    const bool inside = i >= b[0] && j >= b[1] && i < b[2] && j < b[3];
    uint8_t v;
    if (!inside) v = in[n * g.sn + c * g.sc + i * g.sh + j * g.sw];
    else if (per_pixel) v = value[n * vn + c * vc + i * vh + j * vw];
    else v = value[n * g.C + c];
    out[n * g.on + c * g.oc + i * g.oh + j * g.ow] = v;
  }
}

struct MixInputs {
  const uint8_t* a[augment::kMaxMix];
};

// AugMix's mix: one thread per element of the dense batch (every input shares the batch's layout).
__global__ void augment_mix_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                   const MixInputs inputs, const int k, const float* __restrict__ weights,
                                   const int64_t per_sample, const int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += step) {
    const int64_t n = p / per_sample;
    const float* w = weights + n * (1 + k);
    float acc = augment::mix_first(w[0], static_cast<float>(in[p]));
    TENSOROPS_UNROLL
    for (int i = 0; i < augment::kMaxMix; ++i)  // fixed trip count, unrolled: no local copy of the pointers
      if (i < k) acc = augment::mix_add(acc, w[1 + i], static_cast<float>(inputs.a[i][p]));
    out[p] = augment::mix_end(acc);
  }
}

}  // namespace kernels
}  // namespace tensorops

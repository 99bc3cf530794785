// tensorops.augment's CPU loops: one sample's op, read and written through strides (any layout: NCHW, NHWC).
// Included once per build by augment.cpp (AVX-512, AVX2+FMA, baseline; tensorops/cpu_isa.h), so no #pragma once
// and no includes: the names resolve in the including namespace. Per-value math: math/augment.h.
// NOLINTBEGIN

inline void copy_image(const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
  const bool same = x.sc == y.sc && x.sh == y.sh && x.sw == y.sw;
  if (same && ((x.sw == 1 && x.sh == W && x.sc == H * W) || (x.sc == 1 && x.sw == C && x.sh == W * C))) {
    std::memcpy(y.p, x.p, static_cast<size_t>(C * H * W));  // both dense in the same layout (NCHW, NHWC)
    return;
  }
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H; ++i) {
      const uint8_t* xr = x.p + c * x.sc + i * x.sh;
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (x.sw == 1 && y.sw == 1) {
        std::memcpy(yr, xr, static_cast<size_t>(W));
      } else {
        for (int64_t j = 0; j < W; ++j) yr[j * y.sw] = xr[j * x.sw];
      }
    }
}

// The colour and pointwise row loops (augment_loops_colour.h) are built without trapping math: their selects
// (hue's sector table, the clamps) may then be computed on every lane. With it GCC keeps a division or comparison
// that a select guards as a branch unless it can mask it (AVX-512 only), and the AVX2 and baseline builds of hue
// and saturation stayed scalar, 8-12x the AVX-512 time. No value changes: the same operations, rounded the same; only FP exception flags are not kept.
// (Not the whole file: the bilinear taps loop vectorizes worse without trapping math.) The math they call is
// always_inline (math/augment.h), so the different options do not stop it from inlining.
#define TENSOROPS_COLOUR_LOOP __attribute__((optimize("no-trapping-math")))

#include "augment_loops_colour.h"
#include "augment_loops_geometry.h"

inline void apply_sample(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W,
                         bool has_fill, const float* fill, bool fused_grid) {
  const int32_t op = sm.op;
  const bool colour_on_gray = C == 1 && (op == augment::kSaturation || op == augment::kHue ||
                                         op == augment::kGrayscale);
  if (op == augment::kIdentity || colour_on_gray) {
    copy_image(x, y, C, H, W);  // torchvision returns a 1-channel image as it is for these
  } else if (augment::is_lut_op(op)) {
    lut_op(sm, x, y, C, H, W);
  } else if (op == augment::kSaturation || op == augment::kHue || op == augment::kGrayscale) {
    rgb_op(sm, x, y, H, W);
  } else if (op == augment::kSharpness) {
    sharpness_op(sm, x, y, C, H, W);
  } else if (op == augment::kAffine) {
    if (fused_grid) affine_op<true>(sm, x, y, C, H, W, has_fill, fill);
    else affine_op<false>(sm, x, y, C, H, W, has_fill, fill);
  } else if (op == augment::kAffinePil) {
    pil_affine_op(sm, x, y, C, H, W, has_fill, fill);
  } else {
    rot_op(op, x, y, C, H, W);
  }
}

// erase: the sample copied, then its box set to value (per channel) or to the source's pixels
inline void erase_sample(const View& x, const Dest& y, int64_t C, int64_t H, int64_t W, const int64_t* box,
                         const uint8_t* value, const View* source) {
  copy_image(x, y, C, H, W);
  // the strides in locals: the byte stores could otherwise alias the views, reloaded at every store
  const int64_t ysw = y.sw, j0 = box[1], j1 = box[3];
  const size_t len = j1 > j0 ? static_cast<size_t>(j1 - j0) : 0;
  const int64_t ssw = source != nullptr ? source->sw : 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = box[0]; i < box[2]; ++i) {
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (source != nullptr) {
        const uint8_t* sr = source->p + c * source->sc + i * source->sh;
        if (ysw == 1 && ssw == 1) std::memcpy(yr + j0, sr + j0, len);
        else for (int64_t j = j0; j < j1; ++j) yr[j * ysw] = sr[j * ssw];
      } else {
        const uint8_t v = value[c];
        if (ysw == 1) std::memset(yr + j0, v, len);
        else for (int64_t j = j0; j < j1; ++j) yr[j * ysw] = v;
      }
    }
}

// AugMix's mix of one sample (dense, `per` elements): chains added one at a time over the whole sample, in
// v2's order (the float sums stay in a small buffer), so each pass vectorizes
inline void mix_sample(const uint8_t* __restrict x, const uint8_t* const* a, int k, int64_t offset,
                       const float* w, uint8_t* __restrict y, int64_t per) {
  constexpr int64_t kChunk = 1024;
  alignas(64) float acc[kChunk];
  for (int64_t j0 = 0; j0 < per; j0 += kChunk) {
    const int64_t m = std::min(kChunk, per - j0);
    const float w0 = w[0];
    for (int64_t t = 0; t < m; ++t) acc[t] = augment::mix_first(w0, static_cast<float>(x[j0 + t]));
    for (int i = 0; i < k; ++i) {
      const uint8_t* __restrict ai = a[i] + offset + j0;
      const float wi = w[1 + i];
      for (int64_t t = 0; t < m; ++t) acc[t] = augment::mix_add(acc[t], wi, static_cast<float>(ai[t]));
    }
    for (int64_t t = 0; t < m; ++t) y[j0 + t] = augment::mix_end(acc[t]);
  }
}

#undef TENSOROPS_COLOUR_LOOP
// NOLINTEND

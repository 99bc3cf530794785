// tensorops.augment's CPU loops: one sample's op, read and written through strides (any layout: NCHW, NHWC).
// Included once per build by augment.cpp (AVX-512, AVX2+FMA, baseline; tensorops/cpu_isa.h), so no #pragma once
// and no includes: the names resolve in the including namespace. Per-value math: math/augment.h.
// NOLINTBEGIN

inline void copy_image(const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
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

// The colour and pointwise row loops are built without trapping math: their selects (hue's sector table, the clamps) may then be
// computed on every lane. With it GCC keeps a division or comparison that a select guards as a branch unless it
// can mask it (AVX-512 only), and the AVX2 and baseline builds of hue and saturation stayed scalar, 8-12x the
// AVX-512 time. No value changes: the same operations, rounded the same; only FP exception flags are not kept.
// (Not the whole file: the bilinear taps loop vectorizes worse without trapping math.) The math they call is
// always_inline (math/augment.h), so the different options do not stop it from inlining.
#define TENSOROPS_COLOUR_LOOP __attribute__((optimize("no-trapping-math")))

// ---- unit-stride rows (NCHW planes, or an NHWC row read as W * C values where every channel is treated alike):
// plain loops over __restrict pointers that the compiler vectorizes (the strided loops below do not).
TENSOROPS_COLOUR_LOOP inline void row_pointwise(const augment::Sample& sm, const uint8_t* __restrict x,
                                                uint8_t* __restrict y, int64_t n, float mean, float lo, float hi) {
  int64_t j0 = 0;
#if TENSOROPS_CPU_AVX2
  if constexpr (kAvx2Pointwise) j0 = pointwise_row_avx2(sm, x, y, n, mean, lo, hi);
#endif
  switch (sm.op) {
    case augment::kBrightness: {
      const float f = sm.f0;
      for (int64_t j = j0; j < n; ++j) y[j] = augment::brightness(static_cast<float>(x[j]), f);
      break;
    }
    case augment::kContrast: {
      const float f = sm.f0, a = sm.f1;
      for (int64_t j = j0; j < n; ++j) y[j] = augment::blend(static_cast<float>(x[j]), mean, f, a);
      break;
    }
    case augment::kPosterize: {
      const uint8_t m = static_cast<uint8_t>(sm.ival);
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] & m;
      break;
    }
    case augment::kSolarize: {
      const float t = sm.f0;
      for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(x[j]) >= t ? static_cast<uint8_t>(255 - x[j]) : x[j];
      break;
    }
    case augment::kSolarizeAdd: {
      const int a = sm.ival;
      for (int64_t j = 0; j < n; ++j) y[j] = augment::solarize_add(x[j], a);
      break;
    }
    case augment::kInvert:
      for (int64_t j = 0; j < n; ++j) y[j] = static_cast<uint8_t>(255 - x[j]);
      break;
    case augment::kAutocontrast:
      for (int64_t j = j0; j < n; ++j) y[j] = augment::autocontrast(static_cast<float>(x[j]), lo, hi);
      break;
    default:
      std::memcpy(y, x, static_cast<size_t>(n));
  }
}

// the floored luma of a row, summed (contrast's mean)
TENSOROPS_COLOUR_LOOP inline int64_t row_luma_sum(const uint8_t* __restrict r, const uint8_t* __restrict g, const uint8_t* __restrict b,
                            int64_t n) {
  int32_t sum = 0;  // at most 255 * n: n < 2^23 per row
  for (int64_t j = 0; j < n; ++j)
    sum += static_cast<int32_t>(augment::luma(static_cast<float>(r[j]), static_cast<float>(g[j]),
                                              static_cast<float>(b[j])));
  return sum;
}

inline void row_extremes(const uint8_t* __restrict x, int64_t n, uint8_t& mn, uint8_t& mx) {
  uint8_t a = mn, b = mx;
  for (int64_t j = 0; j < n; ++j) {
    a = x[j] < a ? x[j] : a;
    b = x[j] > b ? x[j] : b;
  }
  mn = a;
  mx = b;
}


TENSOROPS_COLOUR_LOOP inline void row_saturation(const uint8_t* __restrict r, const uint8_t* __restrict g, const uint8_t* __restrict b,
                           uint8_t* __restrict yr, uint8_t* __restrict yg, uint8_t* __restrict yb, int64_t n,
                           float f0, float f1) {
  int64_t j0 = 0;
#if TENSOROPS_CPU_AVX2
  if constexpr (kAvx2Pointwise) j0 = saturation_row_avx2(r, g, b, yr, yg, yb, n, f0, f1);
#endif
  for (int64_t j = j0; j < n; ++j) {
    const float R = r[j], G = g[j], B = b[j];
    const float gray = augment::floor_small(augment::luma(R, G, B));
    yr[j] = augment::blend(R, gray, f0, f1);
    yg[j] = augment::blend(G, gray, f0, f1);
    yb[j] = augment::blend(B, gray, f0, f1);
  }
}

inline void row_grayscale(const uint8_t* __restrict r, const uint8_t* __restrict g, const uint8_t* __restrict b,
                          uint8_t* __restrict yr, uint8_t* __restrict yg, uint8_t* __restrict yb, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t l = augment::to_u8(augment::luma(static_cast<float>(r[j]), static_cast<float>(g[j]),
                                                   static_cast<float>(b[j])));
    yr[j] = l;
    yg[j] = l;
    yb[j] = l;
  }
}

TENSOROPS_COLOUR_LOOP inline void row_hue(const uint8_t* __restrict r, const uint8_t* __restrict g, const uint8_t* __restrict b,
                    uint8_t* __restrict yr, uint8_t* __restrict yg, uint8_t* __restrict yb, int64_t n, float hf) {
  int64_t j0 = 0;
#if TENSOROPS_CPU_AVX2
  if constexpr (kAvx2Pointwise) j0 = hue_row_avx2(r, g, b, yr, yg, yb, n, hf);
#endif
  for (int64_t j = j0; j < n; ++j) {
    uint8_t ro, go, bo;
    augment::hue(r[j], g[j], b[j], hf, ro, go, bo);
    yr[j] = ro;
    yg[j] = go;
    yb[j] = bo;
  }
}

TENSOROPS_COLOUR_LOOP inline void row_sharpen(const uint8_t* __restrict up, const uint8_t* __restrict xr, const uint8_t* __restrict dn,
                                              uint8_t* __restrict yr, int64_t w, float alpha) {
  yr[0] = xr[0];
  int64_t j0 = 1;
#if TENSOROPS_CPU_AVX2
  if constexpr (kAvx2Pointwise) j0 = sharpen_row_avx2(up, xr, dn, yr, w, alpha);
#endif
  for (int64_t j = j0; j < w - 1; ++j) {
    const int sum8 = up[j - 1] + up[j] + up[j + 1] + xr[j - 1] + xr[j + 1] + dn[j - 1] + dn[j] + dn[j + 1];
    yr[j] = augment::sharpen(xr[j], sum8, alpha);
  }
  yr[w - 1] = xr[w - 1];
}

// ---- table ops: statistics, one table per channel, then a lookup pass -------------------------------------
inline void lut_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
  const bool planar = x.sw == 1 && y.sw == 1;                                           // NCHW rows
  const bool pixel_rows = x.sc == 1 && x.sw == C && y.sc == 1 && y.sw == C;             // NHWC rows
  uint8_t lut[3][256];
  bool keep[3] = {false, false, false};
  float mean = 0.f;
  float lo[3] = {0.f, 0.f, 0.f}, hi[3] = {0.f, 0.f, 0.f};
  if (sm.op == augment::kEqualize) {
    for (int64_t c = 0; c < C; ++c) {
      int64_t hist[256] = {0};
      int32_t part[4][256] = {};  // four counters per value: consecutive equal pixels do not wait on each other
      for (int64_t i = 0; i < H; ++i) {
        const uint8_t* xr = x.p + c * x.sc + i * x.sh;
        const int64_t s = x.sw;
        int64_t j = 0;
        for (; j + 4 <= W; j += 4) {
          ++part[0][xr[j * s]];
          ++part[1][xr[(j + 1) * s]];
          ++part[2][xr[(j + 2) * s]];
          ++part[3][xr[(j + 3) * s]];
        }
        for (; j < W; ++j) ++part[0][xr[j * s]];
        if (i % 4096 == 4095 || i == H - 1) {  // flushed before an int32 counter could overflow
          for (int v = 0; v < 256; ++v) {
            hist[v] += static_cast<int64_t>(part[0][v]) + part[1][v] + part[2][v] + part[3][v];
            part[0][v] = part[1][v] = part[2][v] = part[3][v] = 0;
          }
        }
      }
      keep[c] = !augment::equalize_lut(hist, H * W, lut[c]);
    }
  } else if (sm.op == augment::kContrast) {
    int64_t sum = 0;
    for (int64_t i = 0; i < H; ++i) {
      const uint8_t* xr = x.p + i * x.sh;
      if (C == 3 && x.sw == 1) {
        sum += row_luma_sum(xr, xr + x.sc, xr + 2 * x.sc, W);
      } else if (C == 3) {
        for (int64_t j = 0; j < W; ++j)
          sum += static_cast<int32_t>(augment::luma(static_cast<float>(xr[j * x.sw]),
                                                    static_cast<float>(xr[x.sc + j * x.sw]),
                                                    static_cast<float>(xr[2 * x.sc + j * x.sw])));
      } else {
        int64_t row = 0;
        for (int64_t j = 0; j < W; ++j) row += xr[j * x.sw];
        sum += row;
      }
    }
    mean = augment::contrast_mean(sum, H * W, false);
  } else if (sm.op == augment::kAutocontrast) {
    for (int64_t c = 0; c < C; ++c) {
      uint8_t mn = 255, mx = 0;
      for (int64_t i = 0; i < H; ++i) {
        const uint8_t* xr = x.p + c * x.sc + i * x.sh;
        if (x.sw == 1) {
          row_extremes(xr, W, mn, mx);
        } else {
          for (int64_t j = 0; j < W; ++j) {
            const uint8_t v = xr[j * x.sw];
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
          }
        }
      }
      lo[c] = static_cast<float>(mn);
      hi[c] = static_cast<float>(mx);
    }
  }
  const bool same_for_channels = sm.op != augment::kEqualize && sm.op != augment::kAutocontrast;
  if (sm.op != augment::kEqualize && (planar || (pixel_rows && same_for_channels))) {
    if (planar) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < H; ++i)
          row_pointwise(sm, x.p + c * x.sc + i * x.sh, y.p + c * y.sc + i * y.sh, W, mean, lo[c], hi[c]);
    } else {
      for (int64_t i = 0; i < H; ++i) row_pointwise(sm, x.p + i * x.sh, y.p + i * y.sh, W * C, mean, 0.f, 0.f);
    }
    return;
  }
  if (sm.op != augment::kEqualize)
    for (int64_t c = 0; c < C; ++c)
      for (int v = 0; v < 256; ++v) lut[c][v] = augment::lut_entry(sm, v, mean, lo[c], hi[c]);
  for (int64_t c = 0; c < C; ++c) {
    const uint8_t* t = lut[c];
    for (int64_t i = 0; i < H; ++i) {
      const uint8_t* xr = x.p + c * x.sc + i * x.sh;
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (keep[c]) {
        for (int64_t j = 0; j < W; ++j) yr[j * y.sw] = xr[j * x.sw];
      } else if (x.sw == 1 && y.sw == 1) {
        lut_row(xr, yr, W, t);
      } else {
        for (int64_t j = 0; j < W; ++j) yr[j * y.sw] = t[xr[j * x.sw]];
      }
    }
  }
}

// ---- pixel ops on the three channels: saturation, hue, grayscale ------------------------------------------
inline void rgb_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t H, int64_t W) {
  for (int64_t i = 0; i < H; ++i) {
    const uint8_t* r = x.p + i * x.sh;
    const uint8_t* g = r + x.sc;
    const uint8_t* b = g + x.sc;
    uint8_t* yr = y.p + i * y.sh;
    uint8_t* yg = yr + y.sc;
    uint8_t* yb = yg + y.sc;
    const int64_t xs = x.sw, ys = y.sw;
    if (xs == 1 && ys == 1) {
      if (sm.op == augment::kSaturation) row_saturation(r, g, b, yr, yg, yb, W, sm.f0, sm.f1);
      else if (sm.op == augment::kGrayscale) row_grayscale(r, g, b, yr, yg, yb, W);
      else row_hue(r, g, b, yr, yg, yb, W, sm.f0);
      continue;
    }
    if (sm.op == augment::kSaturation) {
      const float f0 = sm.f0, f1 = sm.f1;
      for (int64_t j = 0; j < W; ++j) {
        const float R = r[j * xs], G = g[j * xs], B = b[j * xs];
        const float gray = augment::floor_small(augment::luma(R, G, B));
        yr[j * ys] = augment::blend(R, gray, f0, f1);
        yg[j * ys] = augment::blend(G, gray, f0, f1);
        yb[j * ys] = augment::blend(B, gray, f0, f1);
      }
    } else if (sm.op == augment::kGrayscale) {
      for (int64_t j = 0; j < W; ++j) {
        const uint8_t l = augment::to_u8(augment::luma(r[j * xs], g[j * xs], b[j * xs]));
        yr[j * ys] = l;
        yg[j * ys] = l;
        yb[j * ys] = l;
      }
    } else {  // hue
      const float hf = sm.f0;
      for (int64_t j = 0; j < W; ++j)
        augment::hue(r[j * xs], g[j * xs], b[j * xs], hf, yr[j * ys], yg[j * ys], yb[j * ys]);
    }
  }
}

// ---- sharpness: the borders as they are, inner pixels blended with the 3x3 blur ---------------------------
inline void sharpness_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
  if (H <= 2 || W <= 2) {
    copy_image(x, y, C, H, W);
    return;
  }
  const float alpha = sm.f1;
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t i = 0; i < H; ++i) {
      const uint8_t* xr = x.p + c * x.sc + i * x.sh;
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (i == 0 || i == H - 1) {
        for (int64_t j = 0; j < W; ++j) yr[j * y.sw] = xr[j * x.sw];
        continue;
      }
      const uint8_t* up = xr - x.sh;
      const uint8_t* dn = xr + x.sh;
      const int64_t s = x.sw;
      if (s == 1 && y.sw == 1) {
        row_sharpen(up, xr, dn, yr, W, alpha);
        continue;
      }
      yr[0] = xr[0];
      yr[(W - 1) * y.sw] = xr[(W - 1) * s];
      for (int64_t j = 1; j < W - 1; ++j) {
        const int sum8 = up[(j - 1) * s] + up[j * s] + up[(j + 1) * s] + xr[(j - 1) * s] + xr[(j + 1) * s] +
                         dn[(j - 1) * s] + dn[j * s] + dn[(j + 1) * s];
        yr[j * y.sw] = augment::sharpen(xr[j * s], sum8, alpha);
      }
    }
  }
}

// ---- geometry -------------------------------------------------------------------------------------------------
// Per output row, in chunks: the source coordinates (the float work, vectorized) into small arrays, then a gather
// per channel.
// kFusedGrid: the grid rounded as torch's CPU bmm rounds it here (math/augment.h affine_source), a constant in the
// loops.
template <bool kFusedGrid>
void affine_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W,
               bool has_fill, const float* fill) {
  constexpr int64_t kChunk = 256;
  uint8_t fill_u8[3];
  for (int64_t c = 0; c < C; ++c)
    fill_u8[c] = augment::to_u8(augment::clamp_to(augment::round_even(has_fill ? fill[c] : 0.f), 0.f, 255.f));
  alignas(64) int64_t off[4][kChunk];
  alignas(64) float wt[4][kChunk];
  alignas(64) uint8_t ok[4][kChunk];
  alignas(64) int32_t tap_x[kChunk], tap_y[kChunk];
  alignas(64) uint8_t res[3][kChunk];
  // bilinear with AVX-512 or AVX2 gathers: each plane copied once, contiguous and padded by 4 bytes on both sides
  // (a gather reads a 32-bit word at a tap pair's byte offset, from one byte before the image)
  std::vector<uint8_t> padded;
  if (sm.ival != 0 && bilinear_row_fast() && H * W + 8 < (int64_t{1} << 31)) {
    // 4 bytes before each plane and 4 after, and 16 more at the end (the AVX2 rows read 16 bytes from a tap)
    padded.assign(static_cast<size_t>(C * (H * W + 8) + 16), 0);
    for (int64_t c = 0; c < C; ++c) {
      uint8_t* pc = padded.data() + c * (H * W + 8) + 4;
      for (int64_t i = 0; i < H; ++i) {
        const uint8_t* xr = x.p + c * x.sc + i * x.sh;
        if (x.sw == 1) {
          std::memcpy(pc + i * W, xr, static_cast<size_t>(W));
        } else {
          for (int64_t j = 0; j < W; ++j) pc[i * W + j] = xr[j * x.sw];
        }
      }
    }
  }
  const float fw = static_cast<float>(W), fh = static_cast<float>(H);
  const float tt[6] = {sm.t[0], sm.t[1], sm.t[2], sm.t[3], sm.t[4], sm.t[5]};  // locals: no aliasing with off[]
  const int64_t xsh = x.sh, xsw = x.sw;
  // every offset a pixel of the image can have fits int32 (the nearest loop's int32 form)
  const bool offsets32 = xsh >= 0 && xsw >= 0 && (H - 1) * xsh + (W - 1) * xsw < (int64_t{1} << 31);
  const int32_t sh32 = static_cast<int32_t>(xsh), sw32 = static_cast<int32_t>(xsw);
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j0 = 0; j0 < W; j0 += kChunk) {
      const int64_t m = std::min(kChunk, W - j0);
      if (sm.ival == 0) {  // nearest
        if (offsets32) {  // int32 arithmetic, the coordinates selected before their conversion: vectorizes on AVX2
          for (int64_t t = 0; t < m; ++t) {
            float ix, iy;
            augment::affine_source(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
            const float rx = augment::round_even(ix), ry = augment::round_even(iy);
            const bool in = (rx >= 0.f) & (ry >= 0.f) & (rx < fw) & (ry < fh);
            const int32_t sx = static_cast<int32_t>(in ? rx : 0.f), sy = static_cast<int32_t>(in ? ry : 0.f);
            off[0][t] = sy * sh32 + sx * sw32;  // 0 outside: a pixel that exists, replaced by the fill below
            ok[0][t] = in;
          }
        } else {
          for (int64_t t = 0; t < m; ++t) {
            float ix, iy;
            augment::affine_source(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
            const float rx = augment::round_even(ix), ry = augment::round_even(iy);
            const bool in = (rx >= 0.f) & (ry >= 0.f) & (rx < fw) & (ry < fh);
            const int64_t sx = in ? static_cast<int64_t>(rx) : 0, sy = in ? static_cast<int64_t>(ry) : 0;
            off[0][t] = in ? sy * xsh + sx * xsw : 0;  // 0: a pixel that exists, replaced by the fill below
            ok[0][t] = in;
          }
        }
        // per pixel: its source offset's three channel loads through locals
        uint8_t* yr = y.p + i * y.sh + j0 * y.sw;
        const int64_t ysc = y.sc, ysw = y.sw, xsc = x.sc;
        const uint8_t* const xp = x.p;
        if (C == 3) {
          const uint8_t f0 = fill_u8[0], f1 = fill_u8[1], f2 = fill_u8[2];
          for (int64_t t = 0; t < m; ++t) {
            const uint8_t* q = xp + off[0][t];
            const bool in = ok[0][t] != 0;
            const uint8_t v0 = in ? q[0] : f0, v1 = in ? q[xsc] : f1, v2 = in ? q[2 * xsc] : f2;
            uint8_t* yt = yr + t * ysw;
            yt[0] = v0;
            yt[ysc] = v1;
            yt[2 * ysc] = v2;
          }
        } else {
          for (int64_t t = 0; t < m; ++t) {
            const uint8_t* q = xp + off[0][t];
            const bool in = ok[0][t] != 0;
            for (int64_t c = 0; c < C; ++c) yr[t * ysw + c * ysc] = in ? q[c * xsc] : fill_u8[c];
          }
        }
      } else {  // bilinear: weights, the north-west tap and the inside flags per column, then a gather per channel
        int64_t done = 0;
#if TENSOROPS_CPU_AVX2
        if constexpr (kAvx2Taps)
          done = bilinear_taps_avx2(tt, i, j0, m, H, W, kFusedGrid, wt[0], ok[0], kChunk, tap_x, tap_y);
#endif
        for (int64_t t = done; t < m; ++t) {
          float ix, iy;
          augment::affine_source(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
          const augment::Taps tp = augment::bilinear_taps(ix, iy, H, W);
          wt[0][t] = tp.w0;
          wt[1][t] = tp.w1;
          wt[2][t] = tp.w2;
          wt[3][t] = tp.w3;
          tap_x[t] = static_cast<int32_t>(tp.x0);
          tap_y[t] = static_cast<int32_t>(tp.y0);
          ok[0][t] = tp.k0;
          ok[1][t] = tp.k1;
          ok[2][t] = tp.k2;
          ok[3][t] = tp.k3;
        }
        if (!padded.empty()) {  // AVX-512 or AVX2: 16 or 8 outputs at a time from the padded planes
          const uint8_t* oks[4] = {ok[0], ok[1], ok[2], ok[3]};
          const float* wts[4] = {wt[0], wt[1], wt[2], wt[3]};
          const uint8_t* planes[3];
          uint8_t* rows[3];
          float fills[3] = {0.f, 0.f, 0.f};
          for (int64_t c = 0; c < C; ++c) {
            planes[c] = padded.data() + c * (H * W + 8) + 4;
            rows[c] = y.sw == 1 ? y.p + c * y.sc + i * y.sh + j0 : res[c];
            if (has_fill) fills[c] = fill[c];
          }
          bilinear_row(planes, rows, C, H, W, tap_x, tap_y, oks, wts, m, has_fill, fills);
          if (y.sw != 1)
            for (int64_t c = 0; c < C; ++c)
              for (int64_t t = 0; t < m; ++t) y.p[c * y.sc + i * y.sh + (j0 + t) * y.sw] = res[c][t];
          continue;
        }
        // each tap's offset, 0 (a pixel that exists) where the tap is outside, where its weight is 0 instead:
        // v * 0 = 0 = 0 * w for the finite, non-negative values and weights here, so the sum is torchvision's
        for (int64_t t = 0; t < m; ++t) {
          const int64_t base = static_cast<int64_t>(tap_y[t]) * xsh + static_cast<int64_t>(tap_x[t]) * xsw;
          off[0][t] = ok[0][t] ? base : 0;
          off[1][t] = ok[1][t] ? base + xsw : 0;
          off[2][t] = ok[2][t] ? base + xsh : 0;
          off[3][t] = ok[3][t] ? base + xsh + xsw : 0;
        }
        uint8_t* yr = y.p + i * y.sh + j0 * y.sw;
        for (int64_t t = 0; t < m; ++t) {
          const int64_t o0 = off[0][t], o1 = off[1][t], o2 = off[2][t], o3 = off[3][t];
          const float w0 = wt[0][t], w1 = wt[1][t], w2 = wt[2][t], w3 = wt[3][t];
          const float mask = augment::add_rn(augment::add_rn(augment::add_rn(w0, w1), w2), w3);
          for (int64_t c = 0; c < C; ++c) {
            const uint8_t* xc = x.p + c * x.sc;
            const float out = augment::bilinear_sum(xc[o0], xc[o1], xc[o2], xc[o3], w0, w1, w2, w3);
            yr[t * y.sw + c * y.sc] = augment::bilinear_finish(out, mask, has_fill, has_fill ? fill[c] : 0.f);
          }
        }
      }
    }
  }
}

// torch.rot90 of a (square for quarter turns) image: out[i][j] = in[map(i, j)]
inline void rot_op(int32_t op, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H; ++i) {
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      const uint8_t* xc = x.p + c * x.sc;
      for (int64_t j = 0; j < W; ++j) {
        int64_t si, sj;
        augment::rot_source(op, i, j, H, W, si, sj);
        yr[j * y.sw] = xc[si * x.sh + sj * x.sw];
      }
    }
}

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
  } else {
    rot_op(op, x, y, C, H, W);
  }
}

// erase: the sample copied, then its box set to value (per channel) or to the source's pixels
inline void erase_sample(const View& x, const Dest& y, int64_t C, int64_t H, int64_t W, const int64_t* box,
                         const uint8_t* value, const View* source) {
  copy_image(x, y, C, H, W);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = box[0]; i < box[2]; ++i) {
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (source != nullptr) {
        const uint8_t* sr = source->p + c * source->sc + i * source->sh;
        for (int64_t j = box[1]; j < box[3]; ++j) yr[j * y.sw] = sr[j * source->sw];
      } else {
        for (int64_t j = box[1]; j < box[3]; ++j) yr[j * y.sw] = value[c];
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

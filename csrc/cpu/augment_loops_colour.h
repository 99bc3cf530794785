// tensorops.augment's CPU loops: the colour, table and sharpness ops. augment_loops.h includes it once per build: no
// #pragma once, no includes; the names resolve in the including namespace. Per-value math: math/augment.h.

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
      for (int64_t j = j0; j < n; ++j) y[j] = augment::blend<kHardFma>(static_cast<float>(x[j]), mean, f, a);
      break;
    }
    case augment::kPosterize: {
      const uint8_t m = static_cast<uint8_t>(sm.ival);
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] & m;
      break;
    }
    case augment::kSolarize: {
      // float(x) >= t for a byte x is x >= ceil(t): none where t > 255 or NaN, all where t <= 0 (inf included),
      // so the loop compares bytes (32 a register on AVX2, 16 on SSE2 and NEON), not floats of them
      const float t = sm.f0;
      const int ti = !(t <= 255.f) ? 256 : t <= 0.f ? 0 : static_cast<int>(std::ceil(t));
      if (ti > 255) {
        std::memcpy(y, x, static_cast<size_t>(n));
      } else {
        const uint8_t tb = static_cast<uint8_t>(ti);
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] >= tb ? static_cast<uint8_t>(255 - x[j]) : x[j];
      }
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
    sum += static_cast<int32_t>(augment::luma<kHardFma>(static_cast<float>(r[j]), static_cast<float>(g[j]),
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
    const float gray = augment::floor_small(augment::luma<kHardFma>(R, G, B));
    yr[j] = augment::blend<kHardFma>(R, gray, f0, f1);
    yg[j] = augment::blend<kHardFma>(G, gray, f0, f1);
    yb[j] = augment::blend<kHardFma>(B, gray, f0, f1);
  }
}

inline void row_grayscale(const uint8_t* __restrict r, const uint8_t* __restrict g, const uint8_t* __restrict b,
                          uint8_t* __restrict yr, uint8_t* __restrict yg, uint8_t* __restrict yb, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t l = augment::to_u8(augment::luma<kHardFma>(static_cast<float>(r[j]), static_cast<float>(g[j]),
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
  // a chunk at a time: the blur in 16-bit integers (8 or 16 a vector), then the float blend (4 or 8): in one loop
  // GCC widened everything to the floats' 32 bits
  constexpr int64_t kChunk = 256;
  uint16_t bl[kChunk];
  for (int64_t c0 = j0; c0 < w - 1; c0 += kChunk) {
    const int64_t m = std::min(kChunk, w - 1 - c0);
    const uint8_t *u = up + c0, *x = xr + c0, *d = dn + c0;
    for (int64_t j = 0; j < m; ++j) {
      const int sum8 = u[j - 1] + u[j] + u[j + 1] + x[j - 1] + x[j + 1] + d[j - 1] + d[j] + d[j + 1];
      bl[j] = augment::sharpen_blur(x[j], sum8);
    }
    for (int64_t j = 0; j < m; ++j) yr[c0 + j] = augment::sharpen_apply<kHardFma>(x[j], bl[j], alpha);
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
          sum += static_cast<int32_t>(augment::luma<kHardFma>(static_cast<float>(xr[j * x.sw]),
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
  // The baseline builds look contrast and autocontrast up in their tables (256 values computed, then a load a
  // byte): their 128-bit float loops (SSE2, NEON) cost more a byte than the lookup (contrast: 2x)
  const bool by_table = sm.op == augment::kEqualize ||
                        (!kAvx2Pointwise && (sm.op == augment::kContrast || sm.op == augment::kAutocontrast));
  if (!by_table && (planar || (pixel_rows && same_for_channels))) {
    if (planar) {
      const bool whole = x.sh == W && y.sh == W;  // each plane one row of H * W
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < (whole ? 1 : H); ++i)
          row_pointwise(sm, x.p + c * x.sc + i * x.sh, y.p + c * y.sc + i * y.sh, whole ? H * W : W, mean, lo[c],
                        hi[c]);
    } else {
      for (int64_t i = 0; i < H; ++i) row_pointwise(sm, x.p + i * x.sh, y.p + i * y.sh, W * C, mean, 0.f, 0.f);
    }
    return;
  }
  if (sm.op != augment::kEqualize)
    for (int64_t c = 0; c < C; ++c)
      for (int v = 0; v < 256; ++v) lut[c][v] = augment::lut_entry<kHardFma>(sm, v, mean, lo[c], hi[c]);
  if (pixel_rows && same_for_channels) {  // one table for every channel: a row of W * C values
    for (int64_t i = 0; i < H; ++i) lut_row(x.p + i * x.sh, y.p + i * y.sh, W * C, lut[0]);
    return;
  }
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
        const float gray = augment::floor_small(augment::luma<kHardFma>(R, G, B));
        yr[j * ys] = augment::blend<kHardFma>(R, gray, f0, f1);
        yg[j * ys] = augment::blend<kHardFma>(G, gray, f0, f1);
        yb[j * ys] = augment::blend<kHardFma>(B, gray, f0, f1);
      }
    } else if (sm.op == augment::kGrayscale) {
      for (int64_t j = 0; j < W; ++j) {
        const uint8_t l = augment::to_u8(augment::luma<kHardFma>(r[j * xs], g[j * xs], b[j * xs]));
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
        yr[j * y.sw] = augment::sharpen<kHardFma>(xr[j * s], sum8, alpha);
      }
    }
  }
}

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

// ---- table ops: statistics, one table per channel, then a lookup pass -------------------------------------
inline void lut_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W) {
  uint8_t lut[3][256];
  bool keep[3] = {false, false, false};
  if (sm.op == augment::kEqualize) {
    for (int64_t c = 0; c < C; ++c) {
      int64_t hist[256] = {0};
      for (int64_t i = 0; i < H; ++i) {
        const uint8_t* xr = x.p + c * x.sc + i * x.sh;
        for (int64_t j = 0; j < W; ++j) ++hist[xr[j * x.sw]];
      }
      keep[c] = !augment::equalize_lut(hist, H * W, lut[c]);
    }
  } else {
    float mean = 0.f;
    float lo[3] = {0.f, 0.f, 0.f}, hi[3] = {0.f, 0.f, 0.f};
    if (sm.op == augment::kContrast) {
      int64_t sum = 0;
      for (int64_t i = 0; i < H; ++i) {
        const uint8_t* xr = x.p + i * x.sh;
        if (C == 3) {
          int64_t row = 0;  // floor of the luma, an integer in [0, 255]
          for (int64_t j = 0; j < W; ++j)
            row += static_cast<int32_t>(augment::luma(static_cast<float>(xr[j * x.sw]),
                                                      static_cast<float>(xr[x.sc + j * x.sw]),
                                                      static_cast<float>(xr[2 * x.sc + j * x.sw])));
          sum += row;
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
          for (int64_t j = 0; j < W; ++j) {
            const uint8_t v = xr[j * x.sw];
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
          }
        }
        lo[c] = static_cast<float>(mn);
        hi[c] = static_cast<float>(mx);
      }
    }
    for (int64_t c = 0; c < C; ++c)
      for (int v = 0; v < 256; ++v) lut[c][v] = augment::lut_entry(sm, v, mean, lo[c], hi[c]);
  }
  for (int64_t c = 0; c < C; ++c) {
    const uint8_t* t = lut[c];
    for (int64_t i = 0; i < H; ++i) {
      const uint8_t* xr = x.p + c * x.sc + i * x.sh;
      uint8_t* yr = y.p + c * y.sc + i * y.sh;
      if (keep[c]) {
        for (int64_t j = 0; j < W; ++j) yr[j * y.sw] = xr[j * x.sw];
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
    if (sm.op == augment::kSaturation) {
      const float f0 = sm.f0, f1 = sm.f1;
      for (int64_t j = 0; j < W; ++j) {
        const float R = r[j * xs], G = g[j * xs], B = b[j * xs];
        const float gray = std::floor(augment::luma(R, G, B));
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
inline void affine_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W,
                      bool has_fill, const float* fill) {
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j = 0; j < W; ++j) {
      float ix, iy;
      augment::affine_source(sm.t, i, j, H, W, ix, iy);
      uint8_t* yp = y.p + i * y.sh + j * y.sw;
      if (sm.ival == 0) {  // nearest
        const float rx = augment::round_even(ix), ry = augment::round_even(iy);
        const bool in = rx >= 0.f && ry >= 0.f && rx < static_cast<float>(W) && ry < static_cast<float>(H);
        const int64_t sx = in ? static_cast<int64_t>(rx) : 0, sy = in ? static_cast<int64_t>(ry) : 0;
        for (int64_t c = 0; c < C; ++c) {
          const float v = in ? static_cast<float>(x.p[c * x.sc + sy * x.sh + sx * x.sw])
                             : (has_fill ? fill[c] : 0.f);
          yp[c * y.sc] = augment::to_u8(augment::clamp_to(augment::round_even(v), 0.f, 255.f));
        }
      } else {  // bilinear
        float w[4];
        int64_t off[4];
        bool ok[4];
        augment::bilinear_taps(ix, iy, H, W, x.sh, x.sw, w, off, ok);
        for (int64_t c = 0; c < C; ++c) {
          const uint8_t* xc = x.p + c * x.sc;
          float v[4];
          for (int q = 0; q < 4; ++q) v[q] = ok[q] ? static_cast<float>(xc[off[q]]) : 0.f;
          yp[c * y.sc] = augment::bilinear_value(v, w, ok, has_fill, has_fill ? fill[c] : 0.f);
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
                         bool has_fill, const float* fill) {
  const int32_t op = sm.op;
  const bool colour_on_gray = C == 1 && (op == augment::kSaturation || op == augment::kHue ||
                                         op == augment::kGrayscale);
  if (op == augment::kIdentity || colour_on_gray) {
    copy_image(x, y, C, H, W);  // torchvision returns a 1-channel image as it is for these
  } else if (augment::is_lut_op(op) || op == augment::kEqualize) {
    lut_op(sm, x, y, C, H, W);
  } else if (op == augment::kSaturation || op == augment::kHue || op == augment::kGrayscale) {
    rgb_op(sm, x, y, H, W);
  } else if (op == augment::kSharpness) {
    sharpness_op(sm, x, y, C, H, W);
  } else if (op == augment::kAffine) {
    affine_op(sm, x, y, C, H, W, has_fill, fill);
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

// NOLINTEND

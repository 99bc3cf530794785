// tensorops.augment's CPU loops: the geometric ops (affine, quarter turns). augment_loops.h includes it once per build: no
// #pragma once, no includes; the names resolve in the including namespace. Per-value math: math/augment.h.

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
  alignas(64) uint8_t tv[4][kChunk];  // the baseline build's bilinear: one channel's tap values
  // Where the AVX2 rows run (kAvx2Taps), the image copied once into a per-thread buffer, `padded`, for their
  // windows and gathers: each plane contiguous and padded by 4 bytes on both sides (a gather reads a 32-bit word at
  // a tap pair's byte offset, from one byte before the image); for bilinear rows whose source row changes along the
  // row (rotations) pair planes instead (augment_bilinear_simd.h pair_plane_avx2: one gather per channel where the
  // padded planes take two); for nearest of 3 channels the image interleaved (augment_nearest_simd.h rgbx_avx2:
  // one gather for the three).
  std::vector<uint8_t> own;  // (images past thread_scratch's size)
  uint8_t* padded = nullptr;
  const bool rows_fast = kAvx2Taps && bilinear_row_fast();
  const int64_t pair_bytes = pair_plane_bytes(H, W);
  const bool pairs = rows_fast && sm.ival != 0 && sm.t[3] != 0.f && x.sw == 1 && pair_bytes < (int64_t{1} << 31);
  const bool rgbx = rows_fast && sm.ival == 0 && C == 3 && x.sw == 1 && 4 * H * W < (int64_t{1} << 31);
#if TENSOROPS_CPU_AVX2
  if constexpr (kAvx2Taps) {
    if (pairs) {
      padded = thread_scratch(own, static_cast<size_t>(C * pair_bytes));
      for (int64_t c = 0; c < C; ++c) pair_plane_avx2(x.p + c * x.sc, x.sh, H, W, padded + c * pair_bytes + 2);
    } else if (rgbx) {
      padded = thread_scratch(own, static_cast<size_t>(4 * H * W));
      rgbx_avx2(x.p, x.p + x.sc, x.p + 2 * x.sc, x.sh, H, W, reinterpret_cast<uint32_t*>(padded));
    }
  }
#endif
  if (!pairs && !rgbx && rows_fast && H * W + 8 < (int64_t{1} << 31)) {
    // 4 bytes before each plane and 4 after, and 16 more at the end (the AVX2 rows read 16 bytes from a tap)
    padded = thread_scratch(own, static_cast<size_t>(C * (H * W + 8) + 16));
    std::memset(padded + C * (H * W + 8), 0, 16);
    for (int64_t c = 0; c < C; ++c) {
      uint8_t* pc = padded + c * (H * W + 8) + 4;
      std::memset(pc - 4, 0, 4);
      std::memset(pc + H * W, 0, 4);
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
      // the padded planes and the output rows, where the vector rows run (AVX-512, AVX2)
      const uint8_t* planes[3] = {nullptr, nullptr, nullptr};
      uint8_t* rows[3] = {nullptr, nullptr, nullptr};
      if (padded != nullptr)
        for (int64_t c = 0; c < C; ++c) {
          planes[c] = pairs ? padded + c * pair_bytes + 2 : rgbx ? padded : padded + c * (H * W + 8) + 4;
          rows[c] = y.sw == 1 ? y.p + c * y.sc + i * y.sh + j0 : res[c];
        }
      if (sm.ival == 0) {  // nearest
        int64_t start = 0;  // outputs [0, start) written by the AVX2 rows
#if TENSOROPS_CPU_AVX2
        if constexpr (kAvx2Taps)
          if (padded != nullptr) {
            start = nearest_affine_row(tt, i, j0, m, kFusedGrid, planes, rows, C, H, W, fill_u8, rgbx);
            if (y.sw != 1)
              for (int64_t c = 0; c < C; ++c)
                for (int64_t t = 0; t < start; ++t) y.p[c * y.sc + i * y.sh + (j0 + t) * y.sw] = res[c][t];
          }
#endif
        if (offsets32) {  // int32 arithmetic, the coordinates selected before their conversion: vectorizes on AVX2
          for (int64_t t = start; t < m; ++t) {
            float ix, iy;
            augment::affine_source<kHardFma>(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
            const float rx = augment::round_even(ix), ry = augment::round_even(iy);
            const bool in = (rx >= 0.f) & (ry >= 0.f) & (rx < fw) & (ry < fh);
            const int32_t sx = static_cast<int32_t>(in ? rx : 0.f), sy = static_cast<int32_t>(in ? ry : 0.f);
            off[0][t] = sy * sh32 + sx * sw32;  // 0 outside: a pixel that exists, replaced by the fill below
            ok[0][t] = in;
          }
        } else {
          for (int64_t t = start; t < m; ++t) {
            float ix, iy;
            augment::affine_source<kHardFma>(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
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
          for (int64_t t = start; t < m; ++t) {
            const uint8_t* q = xp + off[0][t];
            const bool in = ok[0][t] != 0;
            const uint8_t v0 = in ? q[0] : f0, v1 = in ? q[xsc] : f1, v2 = in ? q[2 * xsc] : f2;
            uint8_t* yt = yr + t * ysw;
            yt[0] = v0;
            yt[ysc] = v1;
            yt[2 * ysc] = v2;
          }
        } else {
          for (int64_t t = start; t < m; ++t) {
            const uint8_t* q = xp + off[0][t];
            const bool in = ok[0][t] != 0;
            for (int64_t c = 0; c < C; ++c) yr[t * ysw + c * ysc] = in ? q[c * xsc] : fill_u8[c];
          }
        }
      } else {  // bilinear: weights, the north-west tap and the inside flags per column, then a gather per channel
        float fills[3] = {0.f, 0.f, 0.f};
        if (has_fill)
          for (int64_t c = 0; c < C; ++c) fills[c] = fill[c];
        int64_t start = 0;  // outputs [0, start) written with their taps in registers (the AVX2 rows)
#if TENSOROPS_CPU_AVX2
        if constexpr (kAvx2Taps)
          if (padded != nullptr)
            start = bilinear_affine_row(tt, i, j0, m, kFusedGrid, planes, rows, C, H, W, has_fill, fills, pairs);
#endif
        for (int64_t t = start; t < m; ++t) {
          float ix, iy;
          augment::affine_source<kHardFma>(tt, i, j0 + t, H, W, ix, iy, kFusedGrid);
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
        if (padded != nullptr) {  // the AVX2 rows' tail, from the padded planes
          if (start < m) {
            const uint8_t* oks[4] = {ok[0] + start, ok[1] + start, ok[2] + start, ok[3] + start};
            const float* wts[4] = {wt[0] + start, wt[1] + start, wt[2] + start, wt[3] + start};
            uint8_t* rest[3] = {nullptr, nullptr, nullptr};
            for (int64_t c = 0; c < C; ++c) rest[c] = rows[c] + start;
            bilinear_row(planes, rest, C, H, W, tap_x + start, tap_y + start, oks, wts, m - start, has_fill, fills);
          }
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
        // per channel: the taps' values gathered (scalar loads), then the sums in a loop of their own, which
        // vectorizes (SSE2, NEON), into the row or a contiguous buffer
        alignas(64) float mask[kChunk];
        for (int64_t t = 0; t < m; ++t)
          mask[t] = augment::add_rn(augment::add_rn(augment::add_rn(wt[0][t], wt[1][t]), wt[2][t]), wt[3][t]);
        uint8_t* yr = y.p + i * y.sh + j0 * y.sw;
        for (int64_t c = 0; c < C; ++c) {
          const uint8_t* xc = x.p + c * x.sc;
          for (int64_t t = 0; t < m; ++t) {
            tv[0][t] = xc[off[0][t]];
            tv[1][t] = xc[off[1][t]];
            tv[2][t] = xc[off[2][t]];
            tv[3][t] = xc[off[3][t]];
          }
          uint8_t* out = y.sw == 1 ? yr + c * y.sc : res[0];
          const float fc = has_fill ? fill[c] : 0.f;
          for (int64_t t = 0; t < m; ++t)
            out[t] = augment::bilinear_finish(augment::bilinear_sum<kHardFma>(tv[0][t], tv[1][t], tv[2][t], tv[3][t],
                                                                             wt[0][t], wt[1][t], wt[2][t], wt[3][t]),
                                              mask[t], has_fill, fc);
          if (y.sw != 1)
            for (int64_t t = 0; t < m; ++t) yr[t * y.sw + c * y.sc] = res[0][t];
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

// Pillow's affine (timm's geometric ops: math/augment.h pil_affine_pixel, the same operations in the same order),
// in chunks of a row: the source points (double arithmetic, vectorized); then per channel each tap row's 2 or 4
// bytes packed in a word (one unaligned load where the taps lie inside the image and a row's pixels are adjacent,
// else byte by byte with the columns clamped), and Pillow's bilinear or cubic polynomials over the chunk's pixels
// (vectorized).
inline void pil_affine_op(const augment::Sample& sm, const View& x, const Dest& y, int64_t C, int64_t H, int64_t W,
                          bool has_fill, const float* fill) {
  constexpr int64_t kChunk = 64;
  uint8_t fill_u8[3] = {0, 0, 0};
  for (int64_t c = 0; c < C; ++c)
    fill_u8[c] = augment::to_u8(augment::clamp_to(augment::round_even(has_fill ? fill[c] : 0.f), 0.f, 255.f));
  alignas(64) double dxs[kChunk], dys[kChunk], res[kChunk];
  alignas(64) int64_t rows[4][kChunk];
  alignas(64) int32_t left[kChunk], top[kChunk], safe[kChunk];
  alignas(64) uint8_t ins[kChunk];
  alignas(64) uint32_t word[4][kChunk];
  alignas(64) double line[4][kChunk];
  const double a0 = sm.a[0], a1 = sm.a[1], a2 = sm.a[2], a3 = sm.a[3], a4 = sm.a[4], a5 = sm.a[5];
  const double fw = static_cast<double>(W), fh = static_cast<double>(H);
  const bool cubic = sm.ival != 1;
  const int taps = cubic ? 4 : 2, first = cubic ? -1 : 0;
  const bool adjacent = x.sw == 1;
  const int32_t H32 = static_cast<int32_t>(H), W32 = static_cast<int32_t>(W);
  for (int64_t i = 0; i < H; ++i) {
    const double yi = static_cast<double>(i) + 0.5;
    for (int64_t j0 = 0; j0 < W; j0 += kChunk) {
      const int64_t m = std::min(kChunk, W - j0);
      // (int32 coordinates: inside points only, outside ones read pixel (0, 0) and are replaced by the fill)
      for (int64_t t = 0; t < m; ++t) {
        const double xi = static_cast<double>(static_cast<int32_t>(j0 + t)) + 0.5;
        const double xs = augment::dadd_rn(augment::dadd_rn(augment::dmul_rn(a0, xi), augment::dmul_rn(a1, yi)), a2);
        const double ys = augment::dadd_rn(augment::dadd_rn(augment::dmul_rn(a3, xi), augment::dmul_rn(a4, yi)), a5);
        const bool in = (xs >= 0.0) & (xs < fw) & (ys >= 0.0) & (ys < fh);
        // (an outside point reads taps inside the image, replaced by the fill)
        const double xm = in ? augment::dsub_rn(xs, 0.5) : 1.0, ym = in ? augment::dsub_rn(ys, 0.5) : 1.0;
        const double fx = std::floor(xm), fy = std::floor(ym);
        dxs[t] = augment::dsub_rn(xm, fx);
        dys[t] = augment::dsub_rn(ym, fy);
        left[t] = static_cast<int32_t>(fx) + first;
        top[t] = static_cast<int32_t>(fy) + first;
        ins[t] = in;
      }
      for (int k = 0; k < taps; ++k)
        for (int64_t t = 0; t < m; ++t) {
          const int32_t r = top[t] + k;
          rows[k][t] = static_cast<int64_t>(r < 0 ? 0 : (r < H32 ? r : H32 - 1)) * x.sh;
        }
      // a row's taps as one load at a column kept inside the image (a loop without branches), then the pixels
      // whose taps reach past an edge (clamped columns) packed byte by byte
      int64_t edge[kChunk];
      int64_t edges = 0;
      for (int64_t t = 0; t < m; ++t) {
        const bool w = (left[t] >= 0) & (left[t] + taps <= W32);
        safe[t] = w ? left[t] : (left[t] < 0 ? 0 : W32 - taps);
        edge[edges] = t;
        edges += !w;
      }
      const bool loads = adjacent && W >= taps;
      for (int64_t c = 0; c < C; ++c) {
        const uint8_t* q = x.p + c * x.sc;
        for (int k = 0; k < taps; ++k) {
          if (loads) {
            if (cubic) {
              for (int64_t t = 0; t < m; ++t) std::memcpy(&word[k][t], q + rows[k][t] + safe[t], 4);
            } else {
              for (int64_t t = 0; t < m; ++t) {
                uint16_t two;
                std::memcpy(&two, q + rows[k][t] + safe[t], 2);
                word[k][t] = two;
              }
            }
          }
          for (int64_t e = 0, n = loads ? edges : m; e < n; ++e) {
            const int64_t t = loads ? edge[e] : e;
            const uint8_t* r = q + rows[k][t];
            uint32_t packed = 0;
            for (int l = 0; l < taps; ++l)
              packed |= static_cast<uint32_t>(r[augment::clamp_index(left[t] + l, W) * x.sw]) << (8 * l);
            word[k][t] = packed;
          }
        }
        if (cubic) {
          for (int k = 0; k < 4; ++k)
            for (int64_t t = 0; t < m; ++t) {
              const int32_t w4 = static_cast<int32_t>(word[k][t]);
              line[k][t] = augment::pil_cubic_u8(w4 & 0xFF, (w4 >> 8) & 0xFF, (w4 >> 16) & 0xFF,
                                                 static_cast<int32_t>(word[k][t] >> 24), dxs[t]);
            }
          for (int64_t t = 0; t < m; ++t) {
            const double out = augment::pil_cubic(line[0][t], line[1][t], line[2][t], line[3][t], dys[t]);
            res[t] = out <= 0.0 ? 0.0 : (out >= 255.0 ? 255.0 : out);
          }
        } else {
          for (int64_t t = 0; t < m; ++t) {
            const uint32_t top = word[0][t], bottom = word[1][t];
            res[t] = augment::pil_linear(
                augment::pil_linear(static_cast<double>(top & 0xFF), static_cast<double>(top >> 8), dxs[t]),
                augment::pil_linear(static_cast<double>(bottom & 0xFF), static_cast<double>(bottom >> 8), dxs[t]),
                dys[t]);
          }
        }
        uint8_t* yr = y.p + c * y.sc + i * y.sh + j0 * y.sw;
        const uint8_t f = fill_u8[c];
        for (int64_t t = 0; t < m; ++t) yr[t * y.sw] = ins[t] ? static_cast<uint8_t>(static_cast<int>(res[t])) : f;
      }
    }
  }
}

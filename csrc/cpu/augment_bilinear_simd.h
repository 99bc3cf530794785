// tensorops.augment's bilinear affine rows with AVX2 (the AVX2 and AVX-512 builds: AVX-512's own 16-wide rows
// measured no faster than these): 8 outputs at a time, their taps computed in registers (taps8) and read by
// byte shuffles of one 16-byte window per row where the 8 outputs' taps lie on one row pair (shears along x,
// translations), else by gathers: one per channel from pair planes (rotations, pair_plane_avx2), two from the
// padded planes. Then math/augment.h's bilinear_sum and bilinear_finish as vector operations, rounded as they
// round (fp-contract is off: fused only where written). Included once by augment.cpp, inside its namespace,
// after augment_avx2.h.
// NOLINTBEGIN
#if TENSOROPS_CPU_AVX2
struct BilinearRow {
  const uint8_t* const* planes;  // C padded planes (or pair planes: pairs)
  uint8_t* const* out;           // C output rows (unit stride)
  int64_t C, W, H;
  const int32_t* tx;  // bilinear_row_avx2's taps from arrays: the north-west tap, whether each tap is inside,
  const int32_t* ty;  // the weights
  const uint8_t* const* ok;
  const float* const* wt;
  bool has_fill;
  const float* fill;
  bool pairs = false;  // the planes are pair planes (pair_plane_avx2)
};

// outputs t..m - 1 from the taps' arrays, one at a time (the padded planes)
void bilinear_tail(const BilinearRow& r, int64_t t, int64_t m) {
  for (; t < m; ++t) {
    const int64_t o = static_cast<int64_t>(r.ty[t]) * r.W + r.tx[t];
    const float w0 = r.wt[0][t], w1 = r.wt[1][t], w2 = r.wt[2][t], w3 = r.wt[3][t];
    const float mask = augment::add_rn(augment::add_rn(augment::add_rn(w0, w1), w2), w3);
    for (int64_t c = 0; c < r.C; ++c) {
      const uint8_t* plane = r.planes[c];
      const float v0 = r.ok[0][t] ? plane[o] : 0.f, v1 = r.ok[1][t] ? plane[o + 1] : 0.f;
      const float v2 = r.ok[2][t] ? plane[o + r.W] : 0.f, v3 = r.ok[3][t] ? plane[o + r.W + 1] : 0.f;
      r.out[c][t] = augment::bilinear_finish(augment::bilinear_sum(v0, v1, v2, v3, w0, w1, w2, w3), mask, r.has_fill,
                                             r.fill[c]);
    }
  }
}

// The taps of 8 outputs in registers: the north-west tap's column and row, whether any tap of the north pair and
// of the south pair is inside (all ones), each tap's weight (+0 outside).
struct Taps8 {
  __m256i tx, ty;
  __m256i k[2];
  __m256 w[4];
};

// Outputs t..t+7 of the row from their taps: the taps' bytes by a window's byte shuffles, or each tap pair's 32-bit
// word gathered where either tap is inside (a tap outside has weight 0), then bilinear_sum and bilinear_finish in
// math/augment.h's order (fp-contract off: fused where written).
// same_row: the taps' rows are known to be one (bilinear_affine_avx2's rows whose source row is constant).
// pairs: the planes are pair planes (pair_plane_avx2): one gather per channel reads all four taps.
TENSOROPS_AVX2_INLINE void bilinear8_avx2(const BilinearRow& r, int64_t t, const Taps8& tp, bool same_row = false,
                                          bool pairs = false) {
  const __m256i vw = _mm256_set1_epi32(static_cast<int32_t>(r.W)), byte = _mm256_set1_epi32(0xFF);
  const __m256i zero = _mm256_setzero_si256();
  const __m256 magic = _mm256_set1_ps(12582912.f), lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.f);
  const __m256i tx = tp.tx, ty = tp.ty;
  const __m256i* k = tp.k;  // per tap pair
  const __m256* w = tp.w;
  // (locals: the byte stores below may alias anything the row's struct points to)
  const int64_t C = r.C, W = r.W;
  const bool has_fill = r.has_fill;
  const uint8_t* planes[3] = {nullptr, nullptr, nullptr};
  uint8_t* outs[3] = {nullptr, nullptr, nullptr};
  for (int64_t c = 0; c < C && c < 3; ++c) planes[c] = r.planes[c], outs[c] = r.out[c] + t;
  const int32_t y0 = _mm256_cvtsi256_si32(ty);
  const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(ty, vw), tx);
  const __m256i o2 = _mm256_add_epi32(o, vw);
  // The 8 outputs' taps on one row pair inside the image, within 16 bytes (shears along x, translations, small
  // scales): each row's 16 bytes read once and the taps picked by byte shuffles instead of gathers.
  bool window = !pairs && y0 >= 0 && y0 + 1 < r.H &&
                (same_row || _mm256_movemask_epi8(_mm256_cmpeq_epi32(ty, _mm256_set1_epi32(y0))) == -1);
  __m256i west = zero, east = zero;
  int32_t x0 = 0;
  if (window) {
    // An affine row's tap columns are monotonic in the output column (every operation of affine_source, the
    // clamp and the floor are monotonic): the least and the greatest are the first's and the last's.
    const int32_t first = _mm256_cvtsi256_si32(tx), last = _mm256_extract_epi32(tx, 7);
    x0 = std::min(first, last);
    // (x0 >= -2: the clamped source; a NaN source converts to INT_MIN and takes the gathers, masked off)
    window = x0 >= -2 && std::max(first, last) - x0 <= 14;
    // the window's shuffle controls: each 32-bit lane's tap byte (tx - x0, 0..14; +1 for the east tap) in its
    // low byte, the others zeroed (0x80): one byte shuffle of the row, in both 128-bit halves, gives the taps as
    // zero-extended 32-bit values
    const __m256i zeros_above = _mm256_set1_epi32(static_cast<int32_t>(0x80808000u));
    west = _mm256_or_si256(_mm256_sub_epi32(tx, _mm256_set1_epi32(x0)), zeros_above);
    east = _mm256_add_epi32(west, _mm256_set1_epi32(1));
  }
  // pair planes: the byte offset of element (ty, tx), read where any tap is inside
  const __m256i po = _mm256_slli_epi32(_mm256_add_epi32(_mm256_mullo_epi32(_mm256_add_epi32(ty, _mm256_set1_epi32(1)),
                                                                          vw), tx), 1);
  const __m256i any = _mm256_or_si256(k[0], k[1]);
  // each 32-bit lane's byte q of its word, zero-extended (a pair word holds nw, sw, ne, se): byte shuffles, whose
  // indices count from the lane's 128-bit half
  const __m256i lane = _mm256_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12);
  const __m256i nw = _mm256_or_si256(lane, _mm256_set1_epi32(static_cast<int32_t>(0x80808000u)));
  const __m256i sw = _mm256_add_epi32(nw, _mm256_set1_epi32(1)), ne = _mm256_add_epi32(nw, _mm256_set1_epi32(2));
  const __m256i se = _mm256_add_epi32(nw, _mm256_set1_epi32(3));
  for (int64_t c = 0; c < C; ++c) {
    const int* plane = reinterpret_cast<const int*>(planes[c]);
    __m256 v[4];
    if (pairs) {  // (a lane with no tap inside reads nothing: 0; a tap outside has weight 0)
      const __m256i word = _mm256_mask_i32gather_epi32(zero, plane, po, any, 1);
      v[0] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(word, nw));
      v[1] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(word, ne));
      v[2] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(word, sw));
      v[3] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(word, se));
    } else if (window) {  // weights of taps outside are 0 (math/augment.h bilinear_taps): their bytes need no mask
      const uint8_t* base = planes[c] + static_cast<int64_t>(y0) * W + x0;
      for (int p = 0; p < 2; ++p) {
        const __m256i row = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + p * W)));
        v[2 * p] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(row, west));
        v[2 * p + 1] = _mm256_cvtepi32_ps(_mm256_shuffle_epi8(row, east));
      }
    } else {
      for (int p = 0; p < 2; ++p) {
        const __m256i word = _mm256_mask_i32gather_epi32(zero, plane, p ? o2 : o, k[p], 1);
        // (a lane whose two taps are outside read nothing: 0; one tap outside has weight 0, as above)
        v[2 * p] = _mm256_cvtepi32_ps(_mm256_and_si256(word, byte));
        v[2 * p + 1] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(word, 8), byte));
      }
    }
    __m256 sum = _mm256_fmadd_ps(v[3], w[3], _mm256_fmadd_ps(v[2], w[2], _mm256_fmadd_ps(v[1], w[1],
                                                                                          _mm256_mul_ps(v[0], w[0]))));
    __m256i q32;
    if (has_fill) {
      const __m256 vf = _mm256_set1_ps(r.fill[c]);
      const __m256 mask = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(w[0], w[1]), w[2]), w[3]);
      sum = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(sum, vf), mask), vf);
      __m256 qv = _mm256_sub_ps(_mm256_add_ps(sum, magic), magic);  // round half to even (augment.h round_even)
      q32 = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(qv, lo), hi));
    } else {
      // without a fill the sum of the taps' values times their weights (each in [0, 1], summing to at most one
      // and a few ulps) lies in [+0, 255.5): the conversion's own rounding (to nearest, ties to even: round_even)
      // needs no clamp
      q32 = _mm256_cvtps_epi32(sum);
    }
    const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(outs[c]), _mm_packus_epi16(q16, q16));
  }
}

__attribute__((target("avx2,fma"))) void bilinear_row_avx2(const BilinearRow& r, int64_t m) {
  const __m256i zero = _mm256_setzero_si256();
  int64_t t = 0;
  for (; t + 8 <= m; t += 8) {
    Taps8 tp;
    for (int p = 0; p < 2; ++p) {
      const __m128i west = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.ok[2 * p] + t));
      const __m128i east = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.ok[2 * p + 1] + t));
      // all ones where either tap of the pair is inside
      tp.k[p] = _mm256_cmpgt_epi32(_mm256_cvtepu8_epi32(_mm_or_si128(west, east)), zero);
    }
    for (int q = 0; q < 4; ++q) tp.w[q] = _mm256_loadu_ps(r.wt[q] + t);
    tp.ty = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.ty + t));
    tp.tx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.tx + t));
    bilinear8_avx2(r, t, tp);
  }
  bilinear_tail(r, t, m);
}

// The bilinear taps of outputs j0 + [0, m) of row i, 8 at a time (AVX2), as math/augment.h's affine_source and
// bilinear_taps compute them, operation for operation (fp-contract off: fused where written).
struct TapsRow8 {
  AffineRow8 a;
  __m256 vfw, vfh, lo, hix, hiy;
};
TENSOROPS_AVX2_INLINE TapsRow8 taps_row8(const float* tt, int64_t i, int64_t H, int64_t W, bool fused) {
  const float fw = static_cast<float>(W), fh = static_cast<float>(H);
  TapsRow8 s;
  s.a = affine_row8(tt, i, H, W, fused);
  s.vfw = _mm256_set1_ps(fw);
  s.vfh = _mm256_set1_ps(fh);
  s.lo = _mm256_set1_ps(-2.f);
  s.hix = _mm256_set1_ps(fw + 1.f);
  s.hiy = _mm256_set1_ps(fh + 1.f);
  return s;
}
// the rows' half of the taps of 8 outputs at source rows sy: the north-west tap's row, its distances north and
// south, whether each tap row is inside
struct TapsY8 {
  __m256 y0, no, so, yn, ys;  // no and so: +0 where the tap row is outside
};
TENSOROPS_AVX2_INLINE TapsY8 taps_y8(const TapsRow8& s, __m256 sy) {
  const __m256 iy = clamp8(sy, s.lo, s.hiy);
  TapsY8 y;
  // (floor: iy is clamped to small values, where floor8's truncation and the rounding's floor agree; NaN, from a
  // matrix with a NaN, floors to NaN here and to -2^31 there: the taps are outside either way)
  y.y0 = _mm256_floor_ps(iy);
  y.yn = inside8(y.y0, s.vfh);
  y.ys = inside8(_mm256_add_ps(y.y0, s.a.one), s.vfh);
  const __m256 no = _mm256_sub_ps(iy, y.y0);
  y.so = _mm256_and_ps(y.yn, _mm256_sub_ps(s.a.one, no));
  y.no = _mm256_and_ps(y.ys, no);
  return y;
}
// the taps of 8 outputs at source columns sx, with their rows' half. A weight is the product of its row's and its
// column's distance, each +0 where that row or column is outside: the product of two non-negative finite
// distances where the tap is inside (math/augment.h bilinear_taps' weight), else +0 (its zeroed weight).
TENSOROPS_AVX2_INLINE Taps8 taps8(const TapsRow8& s, __m256 sx, const TapsY8& y) {
  const __m256 ix = clamp8(sx, s.lo, s.hix);
  const __m256 x0 = _mm256_floor_ps(ix);  // (as taps_y8's floor)
  const __m256 one = s.a.one;
  const __m256 xw = inside8(x0, s.vfw), xe = inside8(_mm256_add_ps(x0, one), s.vfw);
  const __m256 d = _mm256_sub_ps(ix, x0);
  const __m256 we = _mm256_and_ps(xe, d), ea = _mm256_and_ps(xw, _mm256_sub_ps(one, d));
  const __m256 xa = _mm256_or_ps(xw, xe);
  Taps8 tp;
  tp.k[0] = _mm256_castps_si256(_mm256_and_ps(y.yn, xa));
  tp.k[1] = _mm256_castps_si256(_mm256_and_ps(y.ys, xa));
  tp.w[0] = _mm256_mul_ps(y.so, ea);
  tp.w[1] = _mm256_mul_ps(y.so, we);
  tp.w[2] = _mm256_mul_ps(y.no, ea);
  tp.w[3] = _mm256_mul_ps(y.no, we);
  tp.tx = _mm256_cvttps_epi32(x0);
  tp.ty = _mm256_cvttps_epi32(y.y0);
  return tp;
}

// Outputs j0 + [0, m) of row i, 8 at a time, the taps computed in registers and used at once (no arrays between
// the two: 2-5% faster than storing the taps and reading them back, measured on rotate and AugMix); returns how
// many it did (from pair planes all of them; else the rest: the portable taps loop into arrays, then bilinear_row).
__attribute__((target("avx2,fma"))) int64_t bilinear_affine_avx2(const float* tt, int64_t i, int64_t j0, int64_t m,
                                                                 bool fused, const BilinearRow& r) {
  const TapsRow8 s = taps_row8(tt, i, r.H, r.W, fused);
  int64_t t = 0;
  __m256 sx, sy;
  if (r.pairs) {
    for (; t + 8 <= m; t += 8) {
      affine_source8(s.a, j0 + t, sx, sy);
      bilinear8_avx2(r, t, taps8(s, sx, taps_y8(s, sy)), false, true);
    }
    for (; t < m; ++t) {  // the tail: math/augment.h's taps and sums, the taps read from the pair planes
      float ix, iy;
      augment::affine_source(tt, i, j0 + t, r.H, r.W, ix, iy, fused);
      const augment::Taps tp = augment::bilinear_taps(ix, iy, r.H, r.W);
      const bool any = tp.k0 || tp.k1 || tp.k2 || tp.k3;
      const int64_t e = 2 * ((static_cast<int64_t>(tp.y0) + 1) * r.W + static_cast<int64_t>(tp.x0));
      const float mask = augment::add_rn(augment::add_rn(augment::add_rn(tp.w0, tp.w1), tp.w2), tp.w3);
      for (int64_t c = 0; c < r.C; ++c) {
        const uint8_t* q = r.planes[c] + (any ? e : 0);
        const float v0 = any ? q[0] : 0.f, v2 = any ? q[1] : 0.f, v1 = any ? q[2] : 0.f, v3 = any ? q[3] : 0.f;
        r.out[c][t] = augment::bilinear_finish(augment::bilinear_sum(v0, v1, v2, v3, tp.w0, tp.w1, tp.w2, tp.w3),
                                               mask, r.has_fill, r.fill[c]);
      }
    }
    return t;
  }
  if (tt[3] == 0.f) {
    // (x-shears, translations, scales) the source row is one along the output row: every column's
    // bx * t[3] is a zero, which leaves the row's sums as they are (a zero's sign is lost at the + 1), so the
    // first 8 outputs' row half serves the whole row, bit for bit
    affine_source8(s.a, j0, sx, sy);
    const TapsY8 y = taps_y8(s, sy);
    for (; t + 8 <= m; t += 8) {
      affine_source8(s.a, j0 + t, sx, sy);
      bilinear8_avx2(r, t, taps8(s, sx, y), true);
    }
    return t;
  }
  for (; t + 8 <= m; t += 8) {
    affine_source8(s.a, j0 + t, sx, sy);
    bilinear8_avx2(r, t, taps8(s, sx, taps_y8(s, sy)));
  }
  return t;
}
#endif

// The AVX2 rows' pair planes (rotations, whose taps seldom share a row): element (y, x) of a plane, y in
// [-1, H), is the 16-bit pair of source pixels (y, x) and (y + 1, x), rows outside the image 0, so that one 32-bit
// gather at element (y0, x0) reads an output's four taps (nw, sw, ne, se) where the padded planes take two. Element
// (y, x) lies at byte 2 * ((y + 1) * W + x) of the plane, which has 2 bytes before it and 2 after (columns -1
// and W read there or from the neighbouring rows: taps outside, weight 0).
int64_t pair_plane_bytes(int64_t H, int64_t W) { return 2 * (H + 1) * W + 4; }

#if TENSOROPS_CPU_AVX2
// Source plane p (row stride sh, unit column stride) into the pair plane whose element (-1, 0) is at `out`.
__attribute__((target("avx2"))) void pair_plane_avx2(const uint8_t* p, int64_t sh, int64_t H, int64_t W,
                                                     uint8_t* out) {
  std::memset(out - 2, 0, 2);
  std::memset(out + 2 * (H + 1) * W, 0, 2);
  for (int64_t y = -1; y < H; ++y) {
    const uint8_t* top = y >= 0 ? p + y * sh : nullptr;
    const uint8_t* bottom = y + 1 < H ? p + (y + 1) * sh : nullptr;
    uint8_t* o = out + 2 * (y + 1) * W;
    int64_t x = 0;
    for (; x + 32 <= W; x += 32) {
      const __m256i a = top ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(top + x)) : _mm256_setzero_si256();
      const __m256i b = bottom ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bottom + x))
                               : _mm256_setzero_si256();
      const __m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);  // (within 128-bit halves)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2 * x), _mm256_permute2x128_si256(lo, hi, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 2 * x + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
    }
    for (; x < W; ++x) {
      o[2 * x] = top ? top[x] : 0;
      o[2 * x + 1] = bottom ? bottom[x] : 0;
    }
  }
}
#endif

// Whether the AVX2 bilinear rows run (the AVX2 and AVX-512 builds on a CPU with AVX2): the planes are then copied,
// padded or as pair planes, for their windows and gathers.
bool bilinear_row_fast() {
#if TENSOROPS_CPU_AVX2
  static const bool on = cpu_isa_level() >= 1;
  return on;
#else
  return false;
#endif
}

// The row of outputs j0 + [0, m) of row i with the taps in registers (bilinear_affine_avx2) where the AVX2 rows run;
// returns how many it did (all of them from pair planes). 0 elsewhere.
int64_t bilinear_affine_row(const float* tt, int64_t i, int64_t j0, int64_t m, bool fused,
                            const uint8_t* const* planes, uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                            bool has_fill, const float* fill, bool pairs) {
#if TENSOROPS_CPU_AVX2
  if (cpu_isa_level() < 1) return 0;
  const BilinearRow r{planes, out, C, W, H, nullptr, nullptr, nullptr, nullptr, has_fill, fill, pairs};
  return bilinear_affine_avx2(tt, i, j0, m, fused, r);
#else
  (void)tt, (void)i, (void)j0, (void)m, (void)fused, (void)planes, (void)out, (void)C, (void)H, (void)W;
  (void)has_fill, (void)fill, (void)pairs;
  return 0;
#endif
}

void bilinear_row(const uint8_t* const* planes, uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                  const int32_t* tx, const int32_t* ty, const uint8_t* const* ok, const float* const* wt, int64_t m,
                  bool has_fill, const float* fill) {
#if TENSOROPS_CPU_AVX2
  const BilinearRow r{planes, out, C, W, H, tx, ty, ok, wt, has_fill, fill};
  bilinear_row_avx2(r, m);
#else
  (void)planes, (void)out, (void)C, (void)H, (void)W, (void)tx, (void)ty, (void)ok, (void)wt, (void)m;
  (void)has_fill, (void)fill;
#endif
}
// NOLINTEND

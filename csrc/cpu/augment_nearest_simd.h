// tensorops.augment's nearest affine rows with AVX2 (the AVX2 and AVX-512 builds): 8 outputs at a time, their
// source points computed in registers (augment_avx2.h affine_source8) and rounded as math/augment.h's round_even
// rounds them, the 8 pixels read by masked gathers (outputs outside the image keep the fill and read nothing): of
// 3 channels, one gather from the image interleaved once per sample (rgbx_avx2: a pixel's 3 bytes in a 32-bit
// word); of 1, from the plane augment_loops_geometry.h copies padded. Included once by augment.cpp, inside its
// namespace, after augment_avx2.h.
// NOLINTBEGIN
#if TENSOROPS_CPU_AVX2
// Planes r, g, b (row stride sh, unit column stride) interleaved into 32-bit words r | g << 8 | b << 16, row
// after row (W words a row).
__attribute__((target("avx2"))) void rgbx_avx2(const uint8_t* r, const uint8_t* g, const uint8_t* b, int64_t sh,
                                               int64_t H, int64_t W, uint32_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  for (int64_t i = 0; i < H; ++i) {
    const uint8_t *ri = r + i * sh, *gi = g + i * sh, *bi = b + i * sh;
    uint32_t* o = out + i * W;
    int64_t j = 0;
    for (; j + 32 <= W; j += 32) {
      const __m256i vr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ri + j));
      const __m256i vg = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gi + j));
      const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bi + j));
      // (unpacks work within 128-bit halves: pixels 0-7 | 16-23 and 8-15 | 24-31, then four each)
      const __m256i rg_lo = _mm256_unpacklo_epi8(vr, vg), rg_hi = _mm256_unpackhi_epi8(vr, vg);
      const __m256i b_lo = _mm256_unpacklo_epi8(vb, zero), b_hi = _mm256_unpackhi_epi8(vb, zero);
      // p0..p3: pixels 0-3|16-19, 4-7|20-23, 8-11|24-27, 12-15|28-31
      const __m256i p0 = _mm256_unpacklo_epi16(rg_lo, b_lo), p1 = _mm256_unpackhi_epi16(rg_lo, b_lo);
      const __m256i p2 = _mm256_unpacklo_epi16(rg_hi, b_hi), p3 = _mm256_unpackhi_epi16(rg_hi, b_hi);
      __m256i* q = reinterpret_cast<__m256i*>(o + j);
      _mm256_storeu_si256(q, _mm256_permute2x128_si256(p0, p1, 0x20));
      _mm256_storeu_si256(q + 1, _mm256_permute2x128_si256(p2, p3, 0x20));
      _mm256_storeu_si256(q + 2, _mm256_permute2x128_si256(p0, p1, 0x31));
      _mm256_storeu_si256(q + 3, _mm256_permute2x128_si256(p2, p3, 0x31));
    }
    for (; j < W; ++j) o[j] = ri[j] | static_cast<uint32_t>(gi[j]) << 8 | static_cast<uint32_t>(bi[j]) << 16;
  }
}

// Outputs j0 + [0, m) of row i, 8 at a time; returns how many it did (the rest: the portable loop). rgbx: planes[0]
// is rgbx_avx2's interleaved image (C == 3), else planes are the padded planes.
__attribute__((target("avx2,fma"))) int64_t nearest_affine_avx2(const float* tt, int64_t i, int64_t j0, int64_t m,
                                                                bool fused, const uint8_t* const* planes,
                                                                uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                                                                const uint8_t* fill, bool rgbx) {
  const AffineRow8 s = affine_row8(tt, i, H, W, fused);
  const __m256 magic = _mm256_set1_ps(12582912.f), zero = _mm256_setzero_ps();
  const __m256 vfw = _mm256_set1_ps(static_cast<float>(W)), vfh = _mm256_set1_ps(static_cast<float>(H));
  const __m256i vw = _mm256_set1_epi32(static_cast<int32_t>(W));
  // each 32-bit lane's low byte to the low 4 bytes of its 128-bit half
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                             12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i fills[3];
  for (int64_t c = 0; c < C; ++c) fills[c] = _mm256_set1_epi32(fill[c]);
  const __m256i fill_rgbx = _mm256_set1_epi32(static_cast<int32_t>(
      rgbx ? fill[0] | static_cast<uint32_t>(fill[1]) << 8 | static_cast<uint32_t>(fill[2]) << 16 : 0));
  const __m256i by_channel = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, -1, -1, -1, -1, 0, 4, 8, 12,
                                              1, 5, 9, 13, 2, 6, 10, 14, -1, -1, -1, -1);
  const __m256i halves = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t t = 0;
  for (; t + 8 <= m; t += 8) {
    __m256 ix, iy;
    affine_source8(s, j0 + t, ix, iy);
    const __m256 rx = _mm256_sub_ps(_mm256_add_ps(ix, magic), magic);  // round_even
    const __m256 ry = _mm256_sub_ps(_mm256_add_ps(iy, magic), magic);
    const __m256 in = _mm256_and_ps(
        _mm256_and_ps(_mm256_cmp_ps(rx, zero, _CMP_GE_OQ), _mm256_cmp_ps(ry, zero, _CMP_GE_OQ)),
        _mm256_and_ps(_mm256_cmp_ps(rx, vfw, _CMP_LT_OQ), _mm256_cmp_ps(ry, vfh, _CMP_LT_OQ)));
    // (lanes outside read nothing: their offsets may be anything)
    const __m256i off = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(ry), vw), _mm256_cvttps_epi32(rx));
    if (rgbx) {
      // the fill where outside; each half's 4 words to r0-3 g0-3 b0-3, then the halves' r, g and b side by side
      const __m256i word = _mm256_mask_i32gather_epi32(fill_rgbx, reinterpret_cast<const int*>(planes[0]), off,
                                                       _mm256_castps_si256(in), 4);
      const __m256i rgb = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(word, by_channel), halves);
      const __m128i rg = _mm256_castsi256_si128(rgb);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out[0] + t), rg);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out[1] + t), _mm_unpackhi_epi64(rg, rg));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out[2] + t), _mm256_extracti128_si256(rgb, 1));
      continue;
    }
    for (int64_t c = 0; c < C; ++c) {
      const __m256i word = _mm256_mask_i32gather_epi32(fills[c], reinterpret_cast<const int*>(planes[c]), off,
                                                       _mm256_castps_si256(in), 1);
      const __m256i b = _mm256_shuffle_epi8(word, low_bytes);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out[c] + t),
                       _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    }
  }
  return t;
}
#endif

// The nearest row of outputs j0 + [0, m) of row i (nearest_affine_avx2) on a CPU with AVX2; returns how many it
// did. 0 elsewhere.
int64_t nearest_affine_row(const float* tt, int64_t i, int64_t j0, int64_t m, bool fused,
                           const uint8_t* const* planes, uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                           const uint8_t* fill, bool rgbx) {
#if TENSOROPS_CPU_AVX2
  if (cpu_isa_level() < 1 || C > 3) return 0;
  return nearest_affine_avx2(tt, i, j0, m, fused, planes, out, C, H, W, fill, rgbx);
#else
  (void)tt, (void)i, (void)j0, (void)m, (void)fused, (void)planes, (void)out, (void)C, (void)H, (void)W, (void)fill;
  (void)rgbx;
  return 0;
#endif
}
// NOLINTEND

// tensorops.augment's nearest affine rows with AVX2 (the AVX2 build): 8 outputs at a time, their source points
// computed in registers (augment_avx2.h affine_source8) and rounded as math/augment.h's round_even rounds them, each
// channel's 8 pixels read by one masked gather (outputs outside the image keep the fill's byte and read nothing)
// from the planes augment_loops_geometry.h copies padded. Included once by augment.cpp, inside its namespace,
// after augment_avx2.h.
// NOLINTBEGIN
#if TENSOROPS_CPU_AVX2
// Outputs j0 + [0, m) of row i, 8 at a time; returns how many it did (the rest: the portable loop).
__attribute__((target("avx2,fma"))) int64_t nearest_affine_avx2(const float* tt, int64_t i, int64_t j0, int64_t m,
                                                                bool fused, const uint8_t* const* planes,
                                                                uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                                                                const uint8_t* fill) {
  const AffineRow8 s = affine_row8(tt, i, H, W, fused);
  const __m256 magic = _mm256_set1_ps(12582912.f), zero = _mm256_setzero_ps();
  const __m256 vfw = _mm256_set1_ps(static_cast<float>(W)), vfh = _mm256_set1_ps(static_cast<float>(H));
  const __m256i vw = _mm256_set1_epi32(static_cast<int32_t>(W));
  // each 32-bit lane's low byte to the low 4 bytes of its 128-bit half
  const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                             12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  __m256i fills[3];
  for (int64_t c = 0; c < C; ++c) fills[c] = _mm256_set1_epi32(fill[c]);
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

// The AVX2 build's nearest row of outputs j0 + [0, m) of row i (nearest_affine_avx2); returns how many it did. 0
// elsewhere (the AVX-512 build's portable loop vectorizes with its masked gathers; the baseline has none).
int64_t nearest_affine_row(const float* tt, int64_t i, int64_t j0, int64_t m, bool fused,
                           const uint8_t* const* planes, uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                           const uint8_t* fill) {
#if TENSOROPS_CPU_AVX2
  if (cpu_isa_level() != 1 || C > 3) return 0;
  return nearest_affine_avx2(tt, i, j0, m, fused, planes, out, C, H, W, fill);
#else
  (void)tt, (void)i, (void)j0, (void)m, (void)fused, (void)planes, (void)out, (void)C, (void)H, (void)W, (void)fill;
  return 0;
#endif
}
// NOLINTEND

// tensorops.augment's AVX2 vector helpers (x86 builds with AVX2 code in them: TENSOROPS_CPU_AVX2), for the
// colour and bilinear rows of augment_colour_simd.h and augment_bilinear_simd.h. Included once by augment.cpp,
// inside its namespace: no includes of its own.
// NOLINTBEGIN
#if TENSOROPS_CPU_AVX2
#define TENSOROPS_AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline
// clamp_to: v < a ? a : v, then v > b ? b : v (NaN stays NaN)
TENSOROPS_AVX2_INLINE __m256 clamp8(__m256 v, __m256 a, __m256 b) {
  v = _mm256_blendv_ps(v, a, _mm256_cmp_ps(v, a, _CMP_LT_OQ));
  return _mm256_blendv_ps(v, b, _mm256_cmp_ps(v, b, _CMP_GT_OQ));
}
// floor_small: the truncation, minus one where that rounded up
TENSOROPS_AVX2_INLINE __m256 floor8(__m256 v) {
  const __m256 t = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(v));
  return _mm256_blendv_ps(t, _mm256_sub_ps(t, _mm256_set1_ps(1.f)), _mm256_cmp_ps(t, v, _CMP_GT_OQ));
}
// (v > -1) & (v < size), as an all-ones mask
TENSOROPS_AVX2_INLINE __m256 inside8(__m256 v, __m256 size) {
  return _mm256_and_ps(_mm256_cmp_ps(v, _mm256_set1_ps(-1.f), _CMP_GT_OQ), _mm256_cmp_ps(v, size, _CMP_LT_OQ));
}
// Eight bytes of a float vector of values in [0, 255]: truncated (to_u8) and packed
TENSOROPS_AVX2_INLINE __m128i bytes_of8(__m256 v) {
  const __m256i q = _mm256_cvttps_epi32(v);
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packus_epi16(h, h);
}
TENSOROPS_AVX2_INLINE __m256 floats8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
TENSOROPS_AVX2_INLINE void store8(uint8_t* p, __m128i v) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), v); }
#endif
// NOLINTEND

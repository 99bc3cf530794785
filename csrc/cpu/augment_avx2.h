// tensorops.augment's AVX2 vector helpers (x86 builds with AVX2 code in them: TENSOROPS_CPU_AVX2), for the
// colour, bilinear and nearest rows of augment_colour_simd.h, augment_bilinear_simd.h and augment_nearest_simd.h.
// Included once by augment.cpp, inside its namespace: no includes of its own.
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

// The source points of 8 outputs of an affine row, as math/augment.h's affine_source computes them, operation for
// operation (fp-contract off: fused where written): the row's constants, then the points of columns j .. j + 7.
struct AffineRow8 {
  __m256 one, halfw, t0, t2, t3, t5, sw, sh, mhalf, by, t1, t4, by_t1, by_t4;
  bool fused;
};
TENSOROPS_AVX2_INLINE AffineRow8 affine_row8(const float* tt, int64_t i, int64_t H, int64_t W, bool fused) {
  AffineRow8 s;
  s.one = _mm256_set1_ps(1.f);
  s.halfw = _mm256_set1_ps(static_cast<float>(W - 1) * 0.5f);
  s.by = _mm256_set1_ps(static_cast<float>(static_cast<int32_t>(i)) - static_cast<float>(H - 1) * 0.5f);
  s.t0 = _mm256_set1_ps(tt[0]);
  s.t1 = _mm256_set1_ps(tt[1]);
  s.t2 = _mm256_set1_ps(tt[2]);
  s.t3 = _mm256_set1_ps(tt[3]);
  s.t4 = _mm256_set1_ps(tt[4]);
  s.t5 = _mm256_set1_ps(tt[5]);
  s.sw = _mm256_set1_ps(static_cast<float>(W) * 0.5f);
  s.sh = _mm256_set1_ps(static_cast<float>(H) * 0.5f);
  s.mhalf = _mm256_set1_ps(-0.5f);
  s.by_t1 = _mm256_mul_ps(s.by, s.t1);
  s.by_t4 = _mm256_mul_ps(s.by, s.t4);
  s.fused = fused;
  return s;
}
TENSOROPS_AVX2_INLINE void affine_source8(const AffineRow8& s, int64_t j, __m256& ix, __m256& iy) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 jv = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(j)), iota));
  const __m256 bx = _mm256_sub_ps(jv, s.halfw);
  const __m256 px = _mm256_mul_ps(bx, s.t0), py = _mm256_mul_ps(bx, s.t3);
  const __m256 sx = s.fused ? _mm256_fmadd_ps(s.by, s.t1, px) : _mm256_add_ps(px, s.by_t1);
  const __m256 sy = s.fused ? _mm256_fmadd_ps(s.by, s.t4, py) : _mm256_add_ps(py, s.by_t4);
  const __m256 gx = _mm256_add_ps(sx, s.t2), gy = _mm256_add_ps(sy, s.t5);
  ix = _mm256_fmadd_ps(_mm256_add_ps(gx, s.one), s.sw, s.mhalf);
  iy = _mm256_fmadd_ps(_mm256_add_ps(gy, s.one), s.sh, s.mhalf);
}
#endif
// NOLINTEND

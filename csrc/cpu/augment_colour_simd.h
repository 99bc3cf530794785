// tensorops.augment's colour rows with x86 vector instructions: the table lookup (AVX-512 VBMI byte permutes)
// and the AVX2 rows of brightness, contrast, autocontrast, sharpness, saturation and hue, each the same
// operations and roundings as math/augment.h (augment_loops.h calls them in the x86 vector builds). Included
// once by augment.cpp, inside its namespace, after augment_avx2.h.
// NOLINTBEGIN

// y[j] = lut[x[j]] for a unit-stride row: 64 bytes per step with AVX-512 VBMI's byte permutes (two 128-entry
// halves, picked by the top bit), where the CPU has them and the AVX-512 build is in use; else 8 bytes a step
// (one 64-bit load and store, the lookups by shifts: the same bytes on either endianness).
#if TENSOROPS_CPU_AVX2
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void lut_row_vbmi(const uint8_t* x, uint8_t* y, int64_t n,
                                                                         const uint8_t* lut) {
  const __m512i t0 = _mm512_loadu_si512(lut), t1 = _mm512_loadu_si512(lut + 64);
  const __m512i t2 = _mm512_loadu_si512(lut + 128), t3 = _mm512_loadu_si512(lut + 192);
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    const __m512i v = _mm512_loadu_si512(x + j);
    const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
    const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
    _mm512_storeu_si512(y + j, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
  }
  for (; j < n; ++j) y[j] = lut[x[j]];
}
#endif

void lut_row(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* lut) {
#if TENSOROPS_CPU_AVX2
  if (cpu_vbmi()) {
    lut_row_vbmi(x, y, n, lut);
    return;
  }
#endif
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {  // 8 bytes in one load and one store, each looked up from its shift
    uint64_t v, o = 0;
    std::memcpy(&v, x + j, sizeof(v));
    for (int b = 0; b < 8; ++b) o |= static_cast<uint64_t>(lut[(v >> (8 * b)) & 255]) << (8 * b);
    std::memcpy(y + j, &o, sizeof(o));
  }
  for (; j < n; ++j) y[j] = lut[x[j]];
}

#if TENSOROPS_CPU_AVX2
// Brightness, contrast and autocontrast on a unit-stride row, 32 values per step (AVX2): math/augment.h's
// brightness, blend and autocontrast as vector operations, rounded as they round (fp-contract off: fused only
// where written); the clamp as max/min, which gives the same byte for a NaN (to_u8 turns NaN into 0 too). GCC's
// own loop kept the clamp's selects as compare-and-blend pairs and ran at a third of this speed. One loop per op
// (the op a template argument); the four 8-value results packed to bytes in one 32-byte register (two packs, one
// lane permute). Returns how many it did (the rest: those functions).
template <int32_t kOp>
__attribute__((target("avx2,fma"))) int64_t pointwise_row_avx2_op(const uint8_t* x, uint8_t* y, int64_t n,
                                                                  __m256 a, __m256 b, __m256 c) {
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  auto eight = [&](const uint8_t* p) {
    const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    __m256 r;
    if constexpr (kOp == augment::kBrightness) r = _mm256_mul_ps(v, a);                             // a: factor
    else if constexpr (kOp == augment::kContrast) r = _mm256_fmadd_ps(b, c, _mm256_mul_ps(v, a));  // b: mean
    else r = _mm256_div_ps(_mm256_sub_ps(v, a), b);                                                 // a: min
    return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, zero), top));
  };
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m256i lo = _mm256_packus_epi32(eight(x + j), eight(x + j + 8));
    const __m256i hi = _mm256_packus_epi32(eight(x + j + 16), eight(x + j + 24));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + j),
                        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(lo, hi), order));
  }
  return j;
}
__attribute__((target("avx2,fma"))) int64_t pointwise_row_avx2(const augment::Sample& sm, const uint8_t* x,
                                                               uint8_t* y, int64_t n, float mean, float lo,
                                                               float hi) {
  switch (sm.op) {
    case augment::kBrightness:
      return pointwise_row_avx2_op<augment::kBrightness>(x, y, n, _mm256_set1_ps(sm.f0), _mm256_setzero_ps(),
                                                         _mm256_setzero_ps());
    case augment::kContrast:
      return pointwise_row_avx2_op<augment::kContrast>(x, y, n, _mm256_set1_ps(sm.f0), _mm256_set1_ps(mean),
                                                       _mm256_set1_ps(sm.f1));
    case augment::kAutocontrast: {
      float minimum = lo, inv_scale = augment::mul_rn(augment::sub_rn(hi, lo), augment::k(1.0 / 255.0));
      if (hi == lo) {
        minimum = 0.f;
        inv_scale = 1.f;
      }
      return pointwise_row_avx2_op<augment::kAutocontrast>(x, y, n, _mm256_set1_ps(minimum),
                                                           _mm256_set1_ps(inv_scale), _mm256_setzero_ps());
    }
    default:
      return 0;
  }
}

// Sharpness's inner pixels of one row, 16 at a time from j = 1 (AVX2): math/augment.h's sharpen as vector
// operations. The eight neighbours summed in 16 bits (at most 2,040), the blur's rounding floor((2 S + 13) / 26)
// as a multiply-high by ceil(2^19 / 26) and a shift (equal to the division for every 2 S + 13 up to 6,643, the
// largest there is: checked for each value), then the float blend and clamp as sharpen rounds them.
// Returns the first column it did not do.
__attribute__((target("avx2,fma"))) int64_t sharpen_row_avx2(const uint8_t* up, const uint8_t* xr,
                                                             const uint8_t* dn, uint8_t* yr, int64_t w, float alpha) {
  const __m256 va = _mm256_set1_ps(alpha), zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.f);
  const __m256i five = _mm256_set1_epi16(5), thirteen = _mm256_set1_epi16(13), magic = _mm256_set1_epi16(20165);
  auto wide = [](const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  };
  auto eight = [&](__m128i blurred16, __m128i centre16) {
    const __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(blurred16));
    const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(centre16));
    const __m256 r = _mm256_fmadd_ps(_mm256_sub_ps(b, x), va, x);
    const __m256i q = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, zero), top));
    return _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  };
  int64_t j = 1;
  for (; j + 16 <= w - 1; j += 16) {
    const __m256i c = wide(xr + j);
    __m256i sum = _mm256_add_epi16(_mm256_add_epi16(wide(up + j - 1), wide(up + j)), wide(up + j + 1));
    sum = _mm256_add_epi16(sum, _mm256_add_epi16(wide(xr + j - 1), wide(xr + j + 1)));
    sum = _mm256_add_epi16(sum, _mm256_add_epi16(wide(dn + j - 1), wide(dn + j)));
    sum = _mm256_add_epi16(sum, wide(dn + j + 1));
    const __m256i t = _mm256_add_epi16(_mm256_slli_epi16(_mm256_add_epi16(sum, _mm256_mullo_epi16(c, five)), 1),
                                       thirteen);
    const __m256i blurred = _mm256_srli_epi16(_mm256_mulhi_epu16(t, magic), 3);
    const __m128i lo = eight(_mm256_castsi256_si128(blurred), _mm256_castsi256_si128(c));
    const __m128i hi = eight(_mm256_extracti128_si256(blurred, 1), _mm256_extracti128_si256(c, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(yr + j), _mm_packus_epi16(lo, hi));
  }
  return j;
}

// Saturation and hue on planar rows, 8 pixels at a time (AVX2): math/augment.h's luma + blend and hue as vector
// operations in the same order and roundings (fp-contract off: fused only where written). Their selects are
// blends of both sides (no operand can trap: every divisor is 1 or positive); max/min stand for the float
// comparisons' selects where the two agree (equal operands are equal values: no NaN, no -0 from bytes), and clamp
// to [0, 1] as max/min gives the same bytes (a -0 becomes +0 before the truncation to 0). GCC's own loops ran at
// 12 (hue) and 4 (saturation) cycles a pixel here. Return how many pixels they did (the rest: those functions).
__attribute__((target("avx2,fma"))) int64_t saturation_row_avx2(const uint8_t* r, const uint8_t* g,
                                                                const uint8_t* b, uint8_t* yr, uint8_t* yg,
                                                                uint8_t* yb, int64_t n, float f0, float f1) {
  const __m256 kr = _mm256_set1_ps(augment::k(0.2989)), kg = _mm256_set1_ps(augment::k(0.587));
  const __m256 kb = _mm256_set1_ps(augment::k(0.114));
  const __m256 vf0 = _mm256_set1_ps(f0), vf1 = _mm256_set1_ps(f1);
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.f);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 R = floats8(r + j), G = floats8(g + j), B = floats8(b + j);
    const __m256 gray = floor8(_mm256_fmadd_ps(B, kb, _mm256_fmadd_ps(G, kg, _mm256_mul_ps(R, kr))));
    auto blend = [&](__m256 x) {  // fma(gray, f1, x * f0): one rounding for the sum
      const __m256 v = _mm256_fmadd_ps(gray, vf1, _mm256_mul_ps(x, vf0));
      return bytes_of8(_mm256_min_ps(_mm256_max_ps(v, zero), top));
    };
    store8(yr + j, blend(R));
    store8(yg + j, blend(G));
    store8(yb + j, blend(B));
  }
  return j;
}

__attribute__((target("avx2,fma"))) int64_t hue_row_avx2(const uint8_t* r8, const uint8_t* g8, const uint8_t* b8,
                                                         uint8_t* yr, uint8_t* yg, uint8_t* yb, int64_t n,
                                                         float hf) {
  const __m256 s255 = _mm256_set1_ps(augment::k(1.0 / 255.0)), one = _mm256_set1_ps(1.f);
  const __m256 zero = _mm256_setzero_ps();
  const __m256 two = _mm256_set1_ps(2.f), four = _mm256_set1_ps(4.f), six = _mm256_set1_ps(6.f);
  const __m256 sixth = _mm256_set1_ps(augment::k(1.0 / 6.0)), vhf = _mm256_set1_ps(hf);
  const __m256 up = _mm256_set1_ps(augment::k(255.0 + 1.0 - 1e-3));
  const __m256 i1 = one, i2 = two, i3 = _mm256_set1_ps(3.f), i4 = four, i5 = _mm256_set1_ps(5.f);
  auto eq = [](__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); };
  auto pick = [](__m256 mask, __m256 yes, __m256 no) { return _mm256_blendv_ps(no, yes, mask); };
  auto unit = [&](__m256 v) { return _mm256_min_ps(_mm256_max_ps(v, zero), one); };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 r = _mm256_mul_ps(floats8(r8 + j), s255), g = _mm256_mul_ps(floats8(g8 + j), s255);
    const __m256 b = _mm256_mul_ps(floats8(b8 + j), s255);
    const __m256 maxc = _mm256_max_ps(_mm256_max_ps(r, g), b), minc = _mm256_min_ps(_mm256_min_ps(r, g), b);
    const __m256 eqc = eq(maxc, minc);
    const __m256 range = _mm256_sub_ps(maxc, minc);
    const __m256 s = _mm256_div_ps(range, pick(eqc, one, maxc));
    const __m256 divisor = pick(eqc, one, range);
    // The sector's term of hue: hr = bc - gc where maxc == r, else hg = (rc + 2) - bc where maxc == g, else
    // hb = (gc + 4) - rc; the other two terms are zeros (times 0), which leave the sum as it is. Each term divides
    // the two channels other than the sector's own (whose quotient is 0): X and Y below, two divisions, not three.
    const __m256 sr = eq(maxc, r), sg = _mm256_andnot_ps(sr, eq(maxc, g));
    const __m256 X = pick(sr, b, pick(sg, r, g)), Y = pick(sr, g, pick(sg, b, r));
    const __m256 K = _mm256_or_ps(_mm256_and_ps(sg, two), _mm256_andnot_ps(_mm256_or_ps(sr, sg), four));
    const __m256 xc = _mm256_div_ps(_mm256_sub_ps(maxc, X), divisor);
    const __m256 yc = _mm256_div_ps(_mm256_sub_ps(maxc, Y), divisor);
    // (xc + 0 is xc: a non-negative quotient)
    __m256 h = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_add_ps(xc, K), yc), sixth), one);
    // (floors of values in [-1, 12]: the rounding's floor is floor_small's)
    h = _mm256_sub_ps(h, _mm256_floor_ps(h));
    h = _mm256_add_ps(h, vhf);
    h = _mm256_sub_ps(h, _mm256_floor_ps(h));
    const __m256 h6 = _mm256_mul_ps(h, six);
    const __m256 fi = _mm256_floor_ps(h6);
    const __m256 f = _mm256_sub_ps(h6, fi);
    const __m256 i = pick(_mm256_cmp_ps(fi, six, _CMP_GE_OQ), _mm256_sub_ps(fi, six), fi);
    const __m256 sxf = _mm256_mul_ps(s, f), oms = _mm256_sub_ps(one, s), v = maxc;
    const __m256 q = unit(_mm256_mul_ps(_mm256_sub_ps(one, sxf), v));
    const __m256 t = unit(_mm256_mul_ps(_mm256_add_ps(sxf, oms), v));
    const __m256 p = unit(_mm256_mul_ps(oms, v));
    __m256 R = t, G = p, B = p;
    R = pick(_mm256_or_ps(eq(i, i2), eq(i, i3)), p, R);
    R = pick(eq(i, i1), q, R);
    R = pick(_mm256_or_ps(eq(i, zero), eq(i, i5)), v, R);
    G = pick(eq(i, i3), q, G);
    G = pick(eq(i, zero), t, G);
    G = pick(_mm256_or_ps(eq(i, i1), eq(i, i2)), v, G);
    B = pick(eq(i, i2), t, B);
    B = pick(eq(i, i5), q, B);
    B = pick(_mm256_or_ps(eq(i, i3), eq(i, i4)), v, B);
    store8(yr + j, bytes_of8(_mm256_mul_ps(R, up)));
    store8(yg + j, bytes_of8(_mm256_mul_ps(G, up)));
    store8(yb + j, bytes_of8(_mm256_mul_ps(B, up)));
  }
  return j;
}
#endif
// NOLINTEND

// resized_crop_mirror_normalize's vertical pass (each output row: a weighted sum of the source rows it reads).
// Included once per build by resized_crop_mirror_normalize.cpp (AVX-512, AVX2+FMA, baseline; see
// tensorops/cpu_isa.h), before resize_loops.h, so no #pragma once and no includes: the names resolve in the
// including namespace (kPermute16, kF16C).
// NOLINTBEGIN

// Vertical pass: out[t] = sum_k w[k] * rows[k][t * es] for t < L. Contiguous rows (es == 1) into float go one
// register a vector (kVecFloats, below), two vectors a step, every tap into registers (the source converted on the
// way: loadv) and one store, so the accumulator never goes through memory.
typedef float F16 __attribute__((vector_size(64)));

// 16 source values as floats: uint8 with the build's widening loads (one vpmovzxbd + vcvtdq2ps on AVX-512;
// GCC 12 turns __builtin_convertvector of bytes into scalar code), other types one by one (vectorized by GCC).
template <typename in_t>
inline F16 load16(const in_t* p) {
  F16 r;
#if TENSOROPS_CPU_AVX2
  if constexpr (std::is_same_v<in_t, uint8_t>) {
    if constexpr (kPermute16) {
      const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
      std::memcpy(&r, &v, sizeof(r));
      return r;
    } else if constexpr (kF16C) {  // the AVX2 build
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
      const __m256 hi =
          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8))));
      std::memcpy(&r, &lo, sizeof(lo));
      std::memcpy(reinterpret_cast<char*>(&r) + sizeof(lo), &hi, sizeof(hi));
      return r;
    }
  }
#endif
  float t[16];
  for (int i = 0; i < 16; ++i) t[i] = static_cast<float>(p[i]);
  std::memcpy(&r, t, sizeof(r));
  return r;
}

// One register of floats in this build (the vertical pass' vectors: wider ones, which GCC lowers for a smaller
// register through the stack, one float at a time, made the AVX2 pass 10x the AVX-512 one), and that many source
// values as floats.
constexpr int kVecFloats = kPermute16 ? 16 : kF16C ? 8 : 4;
typedef float FV __attribute__((vector_size(kVecFloats * 4)));

template <typename in_t>
inline FV loadv(const in_t* p) {
  if constexpr (kVecFloats == 16) {
    return load16(p);
  } else {
    FV r;
#if TENSOROPS_CPU_AVX2
    if constexpr (kVecFloats == 8 && std::is_same_v<in_t, uint8_t>) {
      const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
      std::memcpy(&r, &v, sizeof(r));
      return r;
    }
#endif
    if constexpr (kVecFloats == 4 && std::is_same_v<in_t, uint8_t>) {
      // the baseline build (SSE2, and NEON on aarch64): 4 bytes widened by two interleaves with zero (punpcklbw
      // and punpcklwd; zip1 twice) and converted as one vector (one by one, the conversions made this pass 4x
      // the horizontal one's time)
      typedef uint8_t B16 __attribute__((vector_size(16)));
      typedef uint16_t H8 __attribute__((vector_size(16)));
      typedef int32_t I4 __attribute__((vector_size(16)));
      uint32_t x;
      std::memcpy(&x, p, sizeof(x));
      const I4 x4 = {static_cast<int32_t>(x), 0, 0, 0};
      B16 b;
      std::memcpy(&b, &x4, sizeof(b));
      b = __builtin_shuffle(b, B16{}, B16{0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23});
      H8 h;
      std::memcpy(&h, &b, sizeof(h));
      h = __builtin_shuffle(h, H8{}, H8{0, 8, 1, 9, 2, 10, 3, 11});
      I4 i;
      std::memcpy(&i, &h, sizeof(i));
      typedef float F4 __attribute__((vector_size(16)));
      const F4 f = __builtin_convertvector(i, F4);
      std::memcpy(&r, &f, sizeof(f));
      return r;
    }
    float t[kVecFloats];
    for (int i = 0; i < kVecFloats; ++i) t[i] = static_cast<float>(p[i]);
    std::memcpy(&r, t, sizeof(r));
    return r;
  }
}

// The rows the next output row reads first (`ahead`: the two past this row's last tap) are prefetched as this
// one is summed: measured on 32 decoded photos at 1 thread, the first reads of each source row waited on memory.
template <typename in_t>
inline void prefetch_ahead(const in_t* const* ahead, int64_t t) {
  __builtin_prefetch(reinterpret_cast<const char*>(ahead[0] + t) + 256);
  __builtin_prefetch(reinterpret_cast<const char*>(ahead[1] + t) + 256);
}

template <typename in_t, typename acc_t>
void vertical(const in_t* const* rows, const acc_t* w, int64_t K, int64_t L, int64_t es, acc_t* __restrict out,
              const in_t* const* ahead) {
  int64_t t = 0;
  if constexpr (std::is_same_v<acc_t, float>) {
    if (es == 1) {
      constexpr int V = kVecFloats;
      for (; t + 2 * V <= L; t += 2 * V) {
        prefetch_ahead(ahead, t);
        FV a0 = {}, a1 = {};
        for (int64_t k = 0; k < K; ++k) {
          const float wk = w[k];
          a0 += wk * loadv(rows[k] + t);
          a1 += wk * loadv(rows[k] + t + V);
        }
        std::memcpy(out + t, &a0, sizeof(FV));
        std::memcpy(out + t + V, &a1, sizeof(FV));
      }
    }
  }
  if (t == 0) {  // double, strided or short rows: a tap at a time over the row (GCC vectorizes what it can)
    for (int64_t u = 0; u < L; ++u) out[u] = acc_t(0);
    for (int64_t k = 0; k < K; ++k) {
      const in_t* r = rows[k];
      const acc_t wk = w[k];
      for (int64_t u = 0; u < L; ++u) out[u] += wk * static_cast<acc_t>(r[u * es]);
    }
    return;
  }
  for (; t < L; ++t) {
    acc_t a = acc_t(0);
    for (int64_t k = 0; k < K; ++k) a += w[k] * static_cast<acc_t>(rows[k][t * es]);
    out[t] = a;
  }
}

// The three vectors of 3 * kVecFloats interleaved values (kVecFloats pixels) as one vector per channel.
// AVX-512: two two-register permutes a channel (channel c of pixel q, lane q, is value 3q + c of the 48: first from
// a|b, lanes 0-31, then the rest from c). AVX2: each channel's 8 values sit in distinct lanes of the three
// (channel 0: lanes 0, 3, 6 of a, 1, 4, 7 of b, 2, 5 of c), so two blends gather them into one vector and one
// vpermps puts them in pixel order.
// (V: this build's FV, a template parameter so that only this build's branch is compiled)
template <typename V>
inline void split3(const V& a, const V& b, const V& c, V& x0, V& x1, V& x2) {
  if constexpr (sizeof(V) == 64) {
    typedef int32_t M __attribute__((vector_size(64)));
    constexpr M ab0 = {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0, 0, 0, 0, 0};
    constexpr M ab1 = {1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 0, 0, 0, 0, 0};
    constexpr M ab2 = {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0, 0};
    constexpr M c0 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 20, 23, 26, 29};
    constexpr M c1 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 18, 21, 24, 27, 30};
    constexpr M c2 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 19, 22, 25, 28, 31};
    x0 = __builtin_shuffle(__builtin_shuffle(a, b, ab0), c, c0);
    x1 = __builtin_shuffle(__builtin_shuffle(a, b, ab1), c, c1);
    x2 = __builtin_shuffle(__builtin_shuffle(a, b, ab2), c, c2);
  } else {
#if TENSOROPS_CPU_AVX2
    static_assert(sizeof(V) == 32, "split3: the AVX2 build's 8 floats");
    __m256 va, vb, vc;
    std::memcpy(&va, &a, sizeof(va));
    std::memcpy(&vb, &b, sizeof(vb));
    std::memcpy(&vc, &c, sizeof(vc));
    const __m256 y0 = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(va, vb, 0x92), vc, 0x24),
                                               _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
    const __m256 y1 = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(va, vb, 0x24), vc, 0x49),
                                               _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6));
    const __m256 y2 = _mm256_permutevar8x32_ps(_mm256_blend_ps(_mm256_blend_ps(va, vb, 0x49), vc, 0x92),
                                               _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
    std::memcpy(&x0, &y0, sizeof(x0));
    std::memcpy(&x1, &y1, sizeof(x1));
    std::memcpy(&x2, &y2, sizeof(x2));
#endif
  }
}

// The vertical pass of 3 interleaved channels (HWC rows, n pixels) straight into 3 planes `ps` apart (the planar
// horizontal pass of the AVX-512 and AVX2 builds reads planes): kVecFloats pixels a step, their values accumulated
// in three vectors, then split into one vector per channel (split3). Not in the baseline build (its horizontal
// pass reads interleaved pixels).
template <typename in_t, typename acc_t>
void vertical_planes3(const in_t* const* rows, const acc_t* w, int64_t K, int64_t n, acc_t* __restrict p,
                      int64_t ps, const in_t* const* ahead) {
  int64_t t = 0;
  if constexpr (std::is_same_v<acc_t, float> && kVecFloats >= 8) {
    constexpr int V = kVecFloats;
    for (; t + V <= n; t += V) {
      prefetch_ahead(ahead, t * 3);
      FV a = {}, b = {}, c = {};
      for (int64_t k = 0; k < K; ++k) {
        const float wk = w[k];
        const in_t* r = rows[k] + t * 3;
        a += wk * loadv(r);
        b += wk * loadv(r + V);
        c += wk * loadv(r + 2 * V);
      }
      FV x0, x1, x2;
      split3<FV>(a, b, c, x0, x1, x2);
      std::memcpy(p + t, &x0, sizeof(FV));
      std::memcpy(p + ps + t, &x1, sizeof(FV));
      std::memcpy(p + 2 * ps + t, &x2, sizeof(FV));
    }
  }
  for (; t < n; ++t)
    for (int64_t c = 0; c < 3; ++c) {
      acc_t a = acc_t(0);
      for (int64_t k = 0; k < K; ++k) a += w[k] * static_cast<acc_t>(rows[k][t * 3 + c]);
      p[c * ps + t] = a;
    }
}

// NOLINTEND

// tensorops.augment on the CPU: one task per sample (its op read from the table), over threads where parallel.h's
// policy says they pay. Each op's loops (augment_loops.h) are built for AVX-512, AVX2+FMA and baseline x86-64
// (cpu_isa.h). fp-contract off: torch rounds every op of these compositions on its own (math/augment.h), so g++
// must not fuse a multiply and an add that torch rounds twice; the fused ones are explicit std::fma.
#pragma GCC optimize("fp-contract=off")
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>
#include <type_traits>  // the loop headers

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/augment_entries.h"
#include "tensorops/augment_host.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/math/augment.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

// one sample's image: its first element and its channel, row and column strides
struct View {
  const uint8_t* p;
  int64_t sc, sh, sw;
};
struct Dest {
  uint8_t* p;
  int64_t sc, sh, sw;
};

// y[j] = lut[x[j]] for a unit-stride row: 64 bytes per step with AVX-512 VBMI's byte permutes (two 128-entry
// halves, picked by the top bit), where the CPU has them and the AVX-512 build is in use; else one at a time.
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
  for (int64_t j = 0; j < n; ++j) y[j] = lut[x[j]];
}

// Bilinear affine's tap reads and arithmetic, 16 outputs at a time (AVX-512): each pair of horizontal taps read as
// one 32-bit word at the left tap's byte offset in a plane padded by 4 bytes on both sides (taps outside: value 0),
// then math/augment.h's bilinear_sum and bilinear_finish as vector operations, rounded as they round (fp-contract
// is off in this file: fused only where written), the tail through those functions themselves. With AVX-512 VBMI,
// 16 outputs whose taps sit on one source row pair within 64 bytes (shears along x, translations: every chunk;
// small rotations: some) read two 64-byte windows and pick their taps with byte permutes instead of gathers (the
// same bytes: a gather costs as much as a dozen permutes on the CPUs measured).
#if TENSOROPS_CPU_AVX2
#define TENSOROPS_BILINEAR_ISA "avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"

// (g++ 12's headers start some AVX-512 intrinsics from an undefined vector: false may-be-uninitialized warnings)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
struct BilinearRow {
  const uint8_t* const* planes;  // C padded planes
  uint8_t* const* out;           // C output rows (unit stride)
  int64_t C, W, H;
  const int32_t* tx;
  const int32_t* ty;
  const uint8_t* const* ok;
  const float* const* wt;
  bool has_fill;
  const float* fill;
};

// The taps of outputs t..t+15 from their tap masks k: the 4 values per channel, v[c][q]
struct Taps16 {
  __mmask16 k[4];
  __m512 w[4];
};

__attribute__((target(TENSOROPS_BILINEAR_ISA), always_inline)) inline void bilinear_taps16(const BilinearRow& r,
                                                                                      int64_t t, Taps16& tp) {
  const __m128i zero8 = _mm_setzero_si128();
  for (int q = 0; q < 4; ++q) {
    tp.k[q] = _mm_cmpneq_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r.ok[q] + t)), zero8);
    tp.w[q] = _mm512_loadu_ps(r.wt[q] + t);
  }
}

// one 32-bit word per tap pair (nw, ne at o; sw, se at o + W), loaded where either tap is inside; each tap's byte
// kept where that tap is inside, else 0 (the plane has 4 readable bytes before and after it)
__attribute__((target(TENSOROPS_BILINEAR_ISA), always_inline)) inline void bilinear_gather(const uint8_t* plane,
                                                                                      __m512i o, __m512i vw,
                                                                                      const Taps16& tp, __m512* v) {
  const __m512i byte = _mm512_set1_epi32(0xFF), zero = _mm512_setzero_si512();
  for (int p = 0; p < 2; ++p) {
    const __m512i word = _mm512_mask_i32gather_epi32(zero, static_cast<__mmask16>(tp.k[2 * p] | tp.k[2 * p + 1]),
                                                     p ? _mm512_add_epi32(o, vw) : o, plane, 1);
    v[2 * p] = _mm512_cvtepi32_ps(_mm512_maskz_and_epi32(tp.k[2 * p], word, byte));
    v[2 * p + 1] = _mm512_cvtepi32_ps(_mm512_maskz_and_epi32(tp.k[2 * p + 1], _mm512_srli_epi32(word, 8), byte));
  }
}

// bilinear_sum and bilinear_finish of 16 outputs, stored as bytes
__attribute__((target(TENSOROPS_BILINEAR_ISA), always_inline)) inline void bilinear_store(const Taps16& tp,
                                                                                     const __m512* v, bool has_fill,
                                                                                     float fill, uint8_t* out) {
  const __m512 magic = _mm512_set1_ps(12582912.f), lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.f);
  __m512 sum = _mm512_fmadd_ps(v[3], tp.w[3],
                               _mm512_fmadd_ps(v[2], tp.w[2], _mm512_fmadd_ps(v[1], tp.w[1], _mm512_mul_ps(v[0], tp.w[0]))));
  if (has_fill) {
    const __m512 vf = _mm512_set1_ps(fill);
    const __m512 mask = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(tp.w[0], tp.w[1]), tp.w[2]), tp.w[3]);
    sum = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(sum, vf), mask), vf);
  }
  __m512 q = _mm512_sub_ps(_mm512_add_ps(sum, magic), magic);  // round half to even (augment.h round_even)
  q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(q)));
}

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

__attribute__((target(TENSOROPS_BILINEAR_ISA))) void bilinear_row_avx512(const BilinearRow& r, int64_t m) {
  const __m512i vw = _mm512_set1_epi32(static_cast<int32_t>(r.W));
  int64_t t = 0;
  for (; t + 16 <= m; t += 16) {
    Taps16 tp;
    bilinear_taps16(r, t, tp);
    const __m512i o = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_loadu_si512(r.ty + t), vw),
                                       _mm512_loadu_si512(r.tx + t));
    for (int64_t c = 0; c < r.C; ++c) {
      __m512 v[4];
      bilinear_gather(r.planes[c], o, vw, tp, v);
      bilinear_store(tp, v, r.has_fill, r.fill[c], r.out[c] + t);
    }
  }
  bilinear_tail(r, t, m);
}

__attribute__((target(TENSOROPS_BILINEAR_ISA ",avx512vbmi"))) void bilinear_row_vbmi(const BilinearRow& r, int64_t m) {
  const __m512i vw = _mm512_set1_epi32(static_cast<int32_t>(r.W));
  const __m512i byte = _mm512_set1_epi32(0xFF), one = _mm512_set1_epi32(1);
  int64_t t = 0;
  for (; t + 16 <= m; t += 16) {
    Taps16 tp;
    bilinear_taps16(r, t, tp);
    const __m512i vx = _mm512_loadu_si512(r.tx + t), vy = _mm512_loadu_si512(r.ty + t);
    const int32_t y0 = _mm512_reduce_min_epi32(vy), x0 = _mm512_reduce_min_epi32(vx);
    if (y0 == _mm512_reduce_max_epi32(vy) && _mm512_reduce_max_epi32(vx) - x0 <= 62) {
      // rows y0 and y0 + 1 (a row outside the image is read clamped: its taps are masked off), 64 bytes from x0,
      // masked to the padded plane (masked-off bytes are not read)
      const __m512i a_idx = _mm512_sub_epi32(vx, _mm512_set1_epi32(x0)), b_idx = _mm512_add_epi32(a_idx, one);
      int64_t start[2];
      __mmask64 in[2];
      for (int p = 0; p < 2; ++p) {
        const int64_t row = std::min<int64_t>(std::max<int64_t>(y0 + p, 0), r.H - 1);
        start[p] = row * r.W + x0;
        const int64_t first = std::max<int64_t>(-4 - start[p], 0), last = std::min<int64_t>(r.H * r.W + 4 - start[p], 64);
        in[p] = first >= last ? 0 : ((last >= 64 ? ~__mmask64{0} : (__mmask64{1} << last) - 1) &
                                     ~((__mmask64{1} << first) - 1));
      }
      for (int64_t c = 0; c < r.C; ++c) {
        __m512 v[4];
        for (int p = 0; p < 2; ++p) {
          const __m512i window = _mm512_maskz_loadu_epi8(in[p], r.planes[c] + start[p]);
          v[2 * p] = _mm512_cvtepi32_ps(_mm512_maskz_and_epi32(tp.k[2 * p], _mm512_permutexvar_epi8(a_idx, window),
                                                                byte));
          v[2 * p + 1] = _mm512_cvtepi32_ps(
              _mm512_maskz_and_epi32(tp.k[2 * p + 1], _mm512_permutexvar_epi8(b_idx, window), byte));
        }
        bilinear_store(tp, v, r.has_fill, r.fill[c], r.out[c] + t);
      }
    } else {
      const __m512i o = _mm512_add_epi32(_mm512_mullo_epi32(vy, vw), vx);
      for (int64_t c = 0; c < r.C; ++c) {
        __m512 v[4];
        bilinear_gather(r.planes[c], o, vw, tp, v);
        bilinear_store(tp, v, r.has_fill, r.fill[c], r.out[c] + t);
      }
    }
  }
  bilinear_tail(r, t, m);
}
#pragma GCC diagnostic pop
#undef TENSOROPS_BILINEAR_ISA

// The same 8 outputs at a time with AVX2's gathers (vector masks instead of mask registers): each tap pair's
// 32-bit word where either tap is inside, each tap's byte kept where it is inside, bilinear_sum and
// bilinear_finish in the AVX-512 path's order (fp-contract off: fused where written), the tail as it is there.
__attribute__((target("avx2,fma"))) void bilinear_row_avx2(const BilinearRow& r, int64_t m) {
  const __m256i vw = _mm256_set1_epi32(static_cast<int32_t>(r.W)), byte = _mm256_set1_epi32(0xFF);
  const __m256i zero = _mm256_setzero_si256();
  const __m256 magic = _mm256_set1_ps(12582912.f), lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.f);
  int64_t t = 0;
  for (; t + 8 <= m; t += 8) {
    __m256i k[4];
    __m256 w[4];
    for (int q = 0; q < 4; ++q) {
      const __m256i okq = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.ok[q] + t)));
      k[q] = _mm256_cmpgt_epi32(okq, zero);  // all ones where the tap is inside
      w[q] = _mm256_loadu_ps(r.wt[q] + t);
    }
    const __m256i ty = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.ty + t));
    const __m256i tx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.tx + t));
    const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(ty, vw), tx);
    const __m256i o2 = _mm256_add_epi32(o, vw);
    // The 8 outputs' taps on one row pair inside the image, within 16 bytes (shears along x, translations, small
    // scales): each row's 16 bytes read once and the taps picked by byte shuffles instead of gathers.
    const int32_t y0 = r.ty[t];
    __m256i lo8 = _mm256_min_epi32(tx, _mm256_permute2x128_si256(tx, tx, 1)), hi8 = _mm256_max_epi32(tx, tx);
    hi8 = _mm256_max_epi32(tx, _mm256_permute2x128_si256(tx, tx, 1));
    lo8 = _mm256_min_epi32(lo8, _mm256_shuffle_epi32(lo8, 0x4E));
    hi8 = _mm256_max_epi32(hi8, _mm256_shuffle_epi32(hi8, 0x4E));
    lo8 = _mm256_min_epi32(lo8, _mm256_shuffle_epi32(lo8, 0xB1));  // every lane: the least tap column
    hi8 = _mm256_max_epi32(hi8, _mm256_shuffle_epi32(hi8, 0xB1));
    const int32_t x0 = _mm256_cvtsi256_si32(lo8), x1 = _mm256_cvtsi256_si32(hi8);
    const bool window = y0 >= 0 && y0 + 1 < r.H && x1 - x0 <= 14 &&
                        _mm256_movemask_epi8(_mm256_cmpeq_epi32(ty, _mm256_set1_epi32(y0))) == -1;
    __m128i left = _mm_setzero_si128(), right = left;
    if (window) {  // tx - x0 (0..14) as 8 bytes: byte 0 of each lane's dwords, then the two lanes' first dwords
      const __m256i d = _mm256_shuffle_epi8(_mm256_sub_epi32(tx, lo8),
                                            _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                             -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                                             -1, -1));
      left = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(d, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1)));
      left = _mm_move_epi64(left);  // the upper 8 indices: byte 0's value is irrelevant, kept in range
      right = _mm_add_epi8(left, _mm_set1_epi8(1));
    }
    for (int64_t c = 0; c < r.C; ++c) {
      const int* plane = reinterpret_cast<const int*>(r.planes[c]);
      __m256 v[4];
      if (window) {
        const uint8_t* base = r.planes[c] + static_cast<int64_t>(y0) * r.W + x0;
        for (int p = 0; p < 2; ++p) {
          const __m128i row = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + p * r.W));
          v[2 * p] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_cvtepu8_epi32(_mm_shuffle_epi8(row, left)), k[2 * p]));
          v[2 * p + 1] = _mm256_cvtepi32_ps(
              _mm256_and_si256(_mm256_cvtepu8_epi32(_mm_shuffle_epi8(row, right)), k[2 * p + 1]));
        }
      } else {
        for (int p = 0; p < 2; ++p) {
          const __m256i word = _mm256_mask_i32gather_epi32(zero, plane, p ? o2 : o,
                                                           _mm256_or_si256(k[2 * p], k[2 * p + 1]), 1);
          v[2 * p] = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_and_si256(word, byte), k[2 * p]));
          v[2 * p + 1] = _mm256_cvtepi32_ps(
              _mm256_and_si256(_mm256_and_si256(_mm256_srli_epi32(word, 8), byte), k[2 * p + 1]));
        }
      }
      __m256 sum = _mm256_fmadd_ps(v[3], w[3], _mm256_fmadd_ps(v[2], w[2], _mm256_fmadd_ps(v[1], w[1],
                                                                                            _mm256_mul_ps(v[0], w[0]))));
      if (r.has_fill) {
        const __m256 vf = _mm256_set1_ps(r.fill[c]);
        const __m256 mask = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(w[0], w[1]), w[2]), w[3]);
        sum = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(sum, vf), mask), vf);
      }
      __m256 qv = _mm256_sub_ps(_mm256_add_ps(sum, magic), magic);  // round half to even (augment.h round_even)
      qv = _mm256_min_ps(_mm256_max_ps(qv, lo), hi);
      const __m256i q32 = _mm256_cvttps_epi32(qv);
      const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q32), _mm256_extracti128_si256(q32, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(r.out[c] + t), _mm_packus_epi16(q16, q16));
    }
  }
  bilinear_tail(r, t, m);
}
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
// 8 lanes of all-ones / zero as 8 bytes of 1 / 0
TENSOROPS_AVX2_INLINE __m128i bytes8(__m256 mask) {
  const __m256i b = _mm256_and_si256(_mm256_castps_si256(mask), _mm256_set1_epi32(1));
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  return _mm_packus_epi16(h, h);
}

// The bilinear taps of outputs j0 + [0, m) of row i, 8 at a time (AVX2; GCC leaves that loop scalar there: the
// int64 column and the floor's guarded select), as math/augment.h's affine_source and bilinear_taps compute them,
// operation for operation (fp-contract off: fused where written); returns how many it did (the rest: those
// functions). wt, ok: 4 rows of `stride` values.
__attribute__((target("avx2,fma"))) int64_t bilinear_taps_avx2(const float* tt, int64_t i, int64_t j0, int64_t m,
                                                               int64_t H, int64_t W, bool fused, float* wt,
                                                               uint8_t* ok, int64_t stride, int32_t* tap_x,
                                                               int32_t* tap_y) {
  const float fw = static_cast<float>(W), fh = static_cast<float>(H);
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 vfw = _mm256_set1_ps(fw), vfh = _mm256_set1_ps(fh);
  const __m256 lo = _mm256_set1_ps(-2.f), hix = _mm256_set1_ps(fw + 1.f), hiy = _mm256_set1_ps(fh + 1.f);
  const __m256 halfw = _mm256_set1_ps(static_cast<float>(W - 1) * 0.5f);
  const __m256 by = _mm256_set1_ps(static_cast<float>(static_cast<int32_t>(i)) - static_cast<float>(H - 1) * 0.5f);
  const __m256 t0 = _mm256_set1_ps(tt[0]), t1 = _mm256_set1_ps(tt[1]), t2 = _mm256_set1_ps(tt[2]);
  const __m256 t3 = _mm256_set1_ps(tt[3]), t4 = _mm256_set1_ps(tt[4]), t5 = _mm256_set1_ps(tt[5]);
  const __m256 sw = _mm256_set1_ps(fw * 0.5f), sh = _mm256_set1_ps(fh * 0.5f), mhalf = _mm256_set1_ps(-0.5f);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 by_t1 = _mm256_mul_ps(by, t1), by_t4 = _mm256_mul_ps(by, t4);
  int64_t t = 0;
  for (; t + 8 <= m; t += 8) {
    const __m256 j = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(j0 + t)), iota));
    const __m256 bx = _mm256_sub_ps(j, halfw);
    const __m256 px = _mm256_mul_ps(bx, t0), py = _mm256_mul_ps(bx, t3);
    const __m256 sx = fused ? _mm256_fmadd_ps(by, t1, px) : _mm256_add_ps(px, by_t1);
    const __m256 sy = fused ? _mm256_fmadd_ps(by, t4, py) : _mm256_add_ps(py, by_t4);
    const __m256 gx = _mm256_add_ps(sx, t2), gy = _mm256_add_ps(sy, t5);
    const __m256 ix = clamp8(_mm256_fmadd_ps(_mm256_add_ps(gx, one), sw, mhalf), lo, hix);
    const __m256 iy = clamp8(_mm256_fmadd_ps(_mm256_add_ps(gy, one), sh, mhalf), lo, hiy);
    const __m256 x0 = floor8(ix), y0 = floor8(iy);
    const __m256 we = _mm256_sub_ps(ix, x0), ea = _mm256_sub_ps(one, we);
    const __m256 no = _mm256_sub_ps(iy, y0), so = _mm256_sub_ps(one, no);
    const __m256 x1 = _mm256_add_ps(x0, one), y1 = _mm256_add_ps(y0, one);
    const __m256 xw = inside8(x0, vfw), xe = inside8(x1, vfw), yn = inside8(y0, vfh), ys = inside8(y1, vfh);
    const __m256 k[4] = {_mm256_and_ps(yn, xw), _mm256_and_ps(yn, xe), _mm256_and_ps(ys, xw), _mm256_and_ps(ys, xe)};
    const __m256 w[4] = {_mm256_mul_ps(so, ea), _mm256_mul_ps(so, we), _mm256_mul_ps(no, ea), _mm256_mul_ps(no, we)};
    for (int q = 0; q < 4; ++q) {
      _mm256_storeu_ps(wt + q * stride + t, _mm256_and_ps(k[q], w[q]));  // the weight where inside, else +0
      _mm_storel_epi64(reinterpret_cast<__m128i*>(ok + q * stride + t), bytes8(k[q]));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tap_x + t), _mm256_cvttps_epi32(x0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tap_y + t), _mm256_cvttps_epi32(y0));
  }
  return t;
}

// Brightness, contrast and autocontrast on a unit-stride row, 16 values per step (AVX2): math/augment.h's
// brightness, blend and autocontrast as vector operations, rounded as they round (fp-contract off: fused only
// where written); the clamp as max/min, which gives the same byte for a NaN (to_u8 turns NaN into 0 too). GCC's
// own loop kept the clamp's selects as compare-and-blend pairs and ran at a third of this speed. Returns how many
// it did (the rest: those functions).
__attribute__((target("avx2,fma"))) int64_t pointwise_row_avx2(const augment::Sample& sm, const uint8_t* x,
                                                               uint8_t* y, int64_t n, float mean, float lo,
                                                               float hi) {
  const int32_t op = sm.op;
  if (op != augment::kBrightness && op != augment::kContrast && op != augment::kAutocontrast) return 0;
  float minimum = lo, inv_scale = augment::mul_rn(augment::sub_rn(hi, lo), augment::k(1.0 / 255.0));
  if (hi == lo) {
    minimum = 0.f;
    inv_scale = 1.f;
  }
  const __m256 ratio = _mm256_set1_ps(sm.f0), other = _mm256_set1_ps(mean), alpha = _mm256_set1_ps(sm.f1);
  const __m256 vmin = _mm256_set1_ps(minimum), vscale = _mm256_set1_ps(inv_scale);
  const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.f);
  auto eight = [&](__m128i bytes) {
    const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    __m256 r;
    if (op == augment::kBrightness) r = _mm256_mul_ps(v, ratio);
    else if (op == augment::kContrast) r = _mm256_fmadd_ps(other, alpha, _mm256_mul_ps(v, ratio));
    else r = _mm256_div_ps(_mm256_sub_ps(v, vmin), vscale);
    const __m256i q = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(r, zero), top));
    return _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  };
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j), _mm_packus_epi16(eight(b), eight(_mm_srli_si128(b, 8))));
  }
  return j;
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
    const __m256 rc = _mm256_div_ps(_mm256_sub_ps(maxc, r), divisor);
    const __m256 gc = _mm256_div_ps(_mm256_sub_ps(maxc, g), divisor);
    const __m256 bc = _mm256_div_ps(_mm256_sub_ps(maxc, b), divisor);
    const __m256 neq_r = _mm256_cmp_ps(maxc, r, _CMP_NEQ_UQ), eq_g = eq(maxc, g);
    // the sectors' 0/1 factors as the masks' bits of 1.0
    const __m256 in_g = _mm256_and_ps(_mm256_and_ps(eq_g, neq_r), one), in_r = _mm256_andnot_ps(neq_r, one);
    const __m256 in_b = _mm256_andnot_ps(eq_g, _mm256_and_ps(neq_r, one));
    const __m256 hg = _mm256_mul_ps(_mm256_sub_ps(_mm256_add_ps(rc, two), bc), in_g);
    const __m256 hr = _mm256_mul_ps(_mm256_sub_ps(bc, gc), in_r);
    const __m256 hb = _mm256_mul_ps(_mm256_sub_ps(_mm256_add_ps(gc, four), rc), in_b);
    __m256 h = _mm256_add_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(hr, hg), hb), sixth), one);
    h = _mm256_sub_ps(h, floor8(h));
    h = _mm256_add_ps(h, vhf);
    h = _mm256_sub_ps(h, floor8(h));
    const __m256 h6 = _mm256_mul_ps(h, six);
    const __m256 fi = floor8(h6);
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
#undef TENSOROPS_AVX2_INLINE
#endif

// Whether this build has a vector bilinear row (AVX-512, AVX2): the planes are then copied padded for its gathers.
bool bilinear_row_fast() {
#if TENSOROPS_CPU_AVX2
  static const bool on = cpu_isa_level() >= 1;
  return on;
#else
  return false;
#endif
}

void bilinear_row(const uint8_t* const* planes, uint8_t* const* out, int64_t C, int64_t H, int64_t W,
                  const int32_t* tx, const int32_t* ty, const uint8_t* const* ok, const float* const* wt, int64_t m,
                  bool has_fill, const float* fill) {
#if TENSOROPS_CPU_AVX2
  const BilinearRow r{planes, out, C, W, H, tx, ty, ok, wt, has_fill, fill};
  if (cpu_vbmi()) bilinear_row_vbmi(r, m);
  else if (cpu_isa_level() == 2) bilinear_row_avx512(r, m);
  else bilinear_row_avx2(r, m);
#else
  (void)planes, (void)out, (void)C, (void)H, (void)W, (void)tx, (void)ty, (void)ok, (void)wt, (void)m;
  (void)has_fill, (void)fill;
#endif
}

// kAvx2Taps: the AVX2 build computes the bilinear taps with bilinear_taps_avx2 (the AVX-512 build's loop
// vectorizes as written; the baseline's stays scalar).
// kAvx2Pointwise: the x86 vector builds run brightness, contrast and autocontrast through pointwise_row_avx2
// sharpness's inner pixels through sharpen_row_avx2, saturation and hue through saturation_row_avx2 and
// hue_row_avx2.
TENSOROPS_AVX512_BUILD
constexpr bool kAvx2Taps = false;
constexpr bool kAvx2Pointwise = true;
#include "augment_loops.h"
TENSOROPS_AVX2_BUILD
constexpr bool kAvx2Taps = true;
constexpr bool kAvx2Pointwise = true;
#include "augment_loops.h"
TENSOROPS_BASE_BUILD
constexpr bool kAvx2Taps = false;
constexpr bool kAvx2Pointwise = false;
#include "augment_loops.h"
TENSOROPS_END_BUILDS

template <typename V, typename T>
V view_of(T* base, const at::Tensor& t, int64_t n) {
  return V{base + n * t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// Whether torch's CPU bmm rounds torchvision's affine grid of an h x w image as fma(y, t1, x * t0) + t2 (else
// (x * t0 + y * t1) + t2): MKL picks its kernel by the grid's size and the CPU, so torch is asked, once per number
// of grid points, with _affine_grid's own call (a (1, h * w, 3) base grid times a transposed (1, 3, 2) theta).
// TENSOROPS_AFFINE_GRID=plain|fma decides instead (the emulated tier compares the CUDA kernels, which round as
// plain, with the CPU kernels).
bool grid_fuses(int64_t h, int64_t w) {
  if (const char* force = std::getenv("TENSOROPS_AFFINE_GRID")) {
    if (std::strcmp(force, "plain") == 0) return false;
    if (std::strcmp(force, "fma") == 0) return true;
  }
  static std::mutex mu;
  static std::map<int64_t, bool> known;
  const int64_t m = h * w;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(m);
    if (it != known.end()) return it->second;
  }
  at::NoGradGuard no_grad;
  const at::Tensor j = at::arange(w, at::kFloat).sub_(static_cast<float>(w - 1) * 0.5f);
  const at::Tensor i = at::arange(h, at::kFloat).sub_(static_cast<float>(h - 1) * 0.5f);
  const at::Tensor base = at::stack({j.view({1, w}).expand({h, w}), i.view({h, 1}).expand({h, w}),
                                     at::ones({h, w}, at::kFloat)}, -1).view({1, m, 3});
  const float a = 0.3f, c = std::cos(a), sn = std::sin(a);  // a rotation with a translation: both orders differ
  const at::Tensor theta = at::tensor({c, -sn, 0.37f, sn, c, -1.3f}, at::kFloat).view({1, 2, 3});
  const at::Tensor scale = at::tensor({0.5f * static_cast<float>(w), 0.5f * static_cast<float>(h)}, at::kFloat);
  const at::Tensor rescaled = theta.transpose(1, 2).div(scale);  // (1, 3, 2), torchvision's layout
  const at::Tensor grid = at::bmm(base, rescaled).contiguous();
  const at::Tensor tc = rescaled.contiguous();
  const float* tv = tc.const_data_ptr<float>();  // [k][d]: t_k of output coordinate d
  const float t[6] = {tv[0], tv[2], tv[4], tv[1], tv[3], tv[5]};
  const float* g = grid.const_data_ptr<float>();
  int64_t fused_off = 0, plain_off = 0;
  for (int64_t ii = 0; ii < h; ++ii)
    for (int64_t jj = 0; jj < w; ++jj) {
      const float* gp = g + 2 * (ii * w + jj);
      float fused[2], plain[2];
      augment::affine_grid_point(t, ii, jj, h, w, true, fused[0], fused[1]);
      augment::affine_grid_point(t, ii, jj, h, w, false, plain[0], plain[1]);
      for (int d = 0; d < 2; ++d) {
        fused_off += fused[d] != gp[d];
        plain_off += plain[d] != gp[d];
      }
    }
  const bool fuses = fused_off == 0 && plain_off > 0;
  std::lock_guard<std::mutex> lock(mu);
  known[m] = fuses;
  return fuses;
}

// One sample's K ops in order, through two scratch images of the sample (contiguous, cache-sized for photos):
// identities skipped, the last op written to the output, nothing written back to memory in between.
void run_apply(augment_host::Setup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const int64_t bytes = 2 * s.out.numel() * s.K;
  const int64_t C = s.C, H = s.H, W = s.W, K = s.K;
  bool any_affine = false;
  for (const augment::Sample& sm : s.samples) any_affine = any_affine || sm.op == augment::kAffine;
  const bool fused_grid = any_affine && grid_fuses(H, W);
  parallel_for_bytes(0, s.N, bytes, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> scratch;  // one allocation per task, two images
    for (int64_t n = begin; n < end; ++n) {
      const augment::Sample* ops = s.samples.data() + n * K;
      int64_t last = -1, count = 0;
      for (int64_t k = 0; k < K; ++k)
        if (ops[k].op != augment::kIdentity) last = k, ++count;
      const View src0 = view_of<View>(x, s.in, n);
      const Dest dst = view_of<Dest>(y, s.out, n);
      if (count == 0) {
        // identity: a copy
        TENSOROPS_CPU_DISPATCH(apply_sample)(ops[0], src0, dst, C, H, W, s.has_fill, s.fill, fused_grid);
        continue;
      }
      if (count > 1 && scratch.empty()) scratch.resize(static_cast<size_t>(2 * C * H * W));
      View src = src0;
      int64_t turn = 0;
      for (int64_t k = 0; k <= last; ++k) {
        if (ops[k].op == augment::kIdentity) continue;
        Dest to = dst;
        if (k != last) {
          uint8_t* buf = scratch.data() + (turn++ % 2) * C * H * W;
          to = Dest{buf, H * W, W, 1};
        }
        TENSOROPS_CPU_DISPATCH(apply_sample)(ops[k], src, to, C, H, W, s.has_fill, s.fill, fused_grid);
        src = View{to.p, to.sc, to.sh, to.sw};
      }
    }
  });
}

void run_erase(augment_host::EraseSetup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const uint8_t* v = s.value.const_data_ptr<uint8_t>();
  parallel_for_bytes(0, s.N, 2 * s.out.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const View src = s.per_pixel ? view_of<View>(v, s.value, n) : View{nullptr, 0, 0, 0};
      TENSOROPS_CPU_DISPATCH(erase_sample)(view_of<View>(x, s.in, n), view_of<Dest>(y, s.out, n), s.C, s.H, s.W,
                         s.boxes.data() + 4 * n, s.per_pixel ? nullptr : v + n * s.value.stride(0),
                         s.per_pixel ? &src : nullptr);
    }
  });
}

void run_mix(augment_host::MixSetup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const float* w = s.weights.const_data_ptr<float>();
  const int k = static_cast<int>(s.augmented.size());
  const uint8_t* a[augment::kMaxMix] = {};
  for (int i = 0; i < k; ++i) a[i] = s.augmented[i].const_data_ptr<uint8_t>();
  const int64_t per = s.per_sample;
  parallel_for_bytes(0, s.N, (2 + k) * s.out.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      TENSOROPS_CPU_DISPATCH(mix_sample)(x + n * per, a, k, n * per, w + n * (1 + k), y + n * per, per);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  augment_entries::register_ops<&run_apply, &run_erase, &run_mix>(m);
}

}  // namespace tensorops

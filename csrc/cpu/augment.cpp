// tensorops.augment on the CPU: one task per sample (its op read from the table), over threads where parallel.h's
// policy says they pay. Each op's loops (augment_loops.h) are built for AVX-512, AVX2+FMA and baseline x86-64
// (cpu_isa.h). fp-contract off: torch rounds every op of these compositions on its own (math/augment.h), so g++
// must not fuse a multiply and an add that torch rounds twice; the fused ones are explicit std::fma.
#pragma GCC optimize("fp-contract=off")
#include <algorithm>
#include <cmath>
#include <cstring>
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
  static const bool vbmi = cpu_isa_level() == 2 && __builtin_cpu_supports("avx512vbmi");
  if (vbmi) {
    lut_row_vbmi(x, y, n, lut);
    return;
  }
#endif
  for (int64_t j = 0; j < n; ++j) y[j] = lut[x[j]];
}

// Bilinear affine's gathers and arithmetic, 16 outputs at a time (AVX-512): each pair of horizontal taps read as one
// 32-bit word at the left tap's byte offset in a plane padded by 4 bytes on both sides (taps outside: value 0), then
// math/augment.h's bilinear_sum and bilinear_finish as vector operations, rounded as they round (fp-contract is
// off in this file: fused only where written), the tail through those functions themselves.
#if TENSOROPS_CPU_AVX2
__attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq"))) void bilinear_row_avx512(
    const uint8_t* plane, int64_t W, const int32_t* tx, const int32_t* ty, const uint8_t* const* ok,
    const float* const* wt, int64_t m, bool has_fill, float fill, uint8_t* out) {
  const __m512i vw = _mm512_set1_epi32(static_cast<int32_t>(W));
  const __m512i byte = _mm512_set1_epi32(0xFF);
  const __m512 magic = _mm512_set1_ps(12582912.f), lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.f);
  const __m512 vf = _mm512_set1_ps(fill);
  const __m128i zero8 = _mm_setzero_si128();
  // one 32-bit word per tap pair (nw, ne at o; sw, se at o + W), loaded where either tap is inside; each tap's
  // byte kept where that tap is inside, else 0 (the plane has 4 readable bytes before and after it)
  const __m512i zero = _mm512_setzero_si512();
  auto pair = [&](__mmask16 ka, __mmask16 kb, __m512i off, __m512& a, __m512& b) {
    const __m512i word = _mm512_mask_i32gather_epi32(zero, static_cast<__mmask16>(ka | kb), off, plane, 1);
    a = _mm512_cvtepi32_ps(_mm512_maskz_and_epi32(ka, word, byte));
    b = _mm512_cvtepi32_ps(_mm512_maskz_and_epi32(kb, _mm512_srli_epi32(word, 8), byte));
  };
  int64_t t = 0;
  for (; t + 16 <= m; t += 16) {
    const __m512i o = _mm512_add_epi32(
        _mm512_mullo_epi32(_mm512_loadu_si512(ty + t), vw), _mm512_loadu_si512(tx + t));
    const __mmask16 k0 = _mm_cmpneq_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ok[0] + t)), zero8);
    const __mmask16 k1 = _mm_cmpneq_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ok[1] + t)), zero8);
    const __mmask16 k2 = _mm_cmpneq_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ok[2] + t)), zero8);
    const __mmask16 k3 = _mm_cmpneq_epi8_mask(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ok[3] + t)), zero8);
    __m512 v0, v1, v2, v3;
    pair(k0, k1, o, v0, v1);
    pair(k2, k3, _mm512_add_epi32(o, vw), v2, v3);
    const __m512 w0 = _mm512_loadu_ps(wt[0] + t), w1 = _mm512_loadu_ps(wt[1] + t), w2 = _mm512_loadu_ps(wt[2] + t),
                 w3 = _mm512_loadu_ps(wt[3] + t);
    __m512 sum = _mm512_fmadd_ps(v3, w3, _mm512_fmadd_ps(v2, w2, _mm512_fmadd_ps(v1, w1, _mm512_mul_ps(v0, w0))));
    if (has_fill) {
      const __m512 mask = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(w0, w1), w2), w3);
      sum = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(sum, vf), mask), vf);
    }
    __m512 r = _mm512_sub_ps(_mm512_add_ps(sum, magic), magic);  // round half to even (augment.h round_even)
    r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + t), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(r)));
  }
  for (; t < m; ++t) {
    const int64_t o = static_cast<int64_t>(ty[t]) * W + tx[t];
    const float v0 = ok[0][t] ? plane[o] : 0.f, v1 = ok[1][t] ? plane[o + 1] : 0.f;
    const float v2 = ok[2][t] ? plane[o + W] : 0.f, v3 = ok[3][t] ? plane[o + W + 1] : 0.f;
    const float w0 = wt[0][t], w1 = wt[1][t], w2 = wt[2][t], w3 = wt[3][t];
    const float mask = augment::add_rn(augment::add_rn(augment::add_rn(w0, w1), w2), w3);
    out[t] = augment::bilinear_finish(augment::bilinear_sum(v0, v1, v2, v3, w0, w1, w2, w3), mask, has_fill, fill);
  }
}
#endif

bool bilinear_row_fast() {
#if TENSOROPS_CPU_AVX2
  static const bool on = cpu_isa_level() == 2;
  return on;
#else
  return false;
#endif
}

void bilinear_row(const uint8_t* plane, int64_t W, const int32_t* tx, const int32_t* ty, const uint8_t* const* ok,
                  const float* const* wt, int64_t m, bool has_fill, float fill, uint8_t* out) {
#if TENSOROPS_CPU_AVX2
  bilinear_row_avx512(plane, W, tx, ty, ok, wt, m, has_fill, fill, out);
#else
  (void)plane, (void)W, (void)tx, (void)ty, (void)ok, (void)wt, (void)m, (void)has_fill, (void)fill, (void)out;
#endif
}

TENSOROPS_AVX512_BUILD
#include "augment_loops.h"
TENSOROPS_AVX2_BUILD
#include "augment_loops.h"
TENSOROPS_BASE_BUILD
#include "augment_loops.h"
TENSOROPS_END_BUILDS

template <typename V, typename T>
V view_of(T* base, const at::Tensor& t, int64_t n) {
  return V{base + n * t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// One sample's K ops in order, through two scratch images of the sample (contiguous, cache-sized for photos):
// identities skipped, the last op written to the output, nothing written back to memory in between.
void run_apply(augment_host::Setup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const int64_t bytes = 2 * s.out.numel() * s.K;
  const int64_t C = s.C, H = s.H, W = s.W, K = s.K;
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
        TENSOROPS_CPU_DISPATCH(apply_sample)(ops[0], src0, dst, C, H, W, s.has_fill, s.fill);  // identity: a copy
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
        TENSOROPS_CPU_DISPATCH(apply_sample)(ops[k], src, to, C, H, W, s.has_fill, s.fill);
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

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
#endif

bool bilinear_row_fast() {
#if TENSOROPS_CPU_AVX2
  static const bool on = cpu_isa_level() == 2;
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
  else bilinear_row_avx512(r, m);
#else
  (void)planes, (void)out, (void)C, (void)H, (void)W, (void)tx, (void)ty, (void)ok, (void)wt, (void)m;
  (void)has_fill, (void)fill;
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
      const float bx = static_cast<float>(jj) - static_cast<float>(w - 1) * 0.5f;
      const float by = static_cast<float>(ii) - static_cast<float>(h - 1) * 0.5f;
      const float* gp = g + 2 * (ii * w + jj);
      for (int d = 0; d < 2; ++d) {
        const float px = augment::mul_rn(bx, t[3 * d]);
        const float fused = augment::add_rn(augment::fma_rn(by, t[3 * d + 1], px), t[3 * d + 2]);
        const float plain = augment::add_rn(augment::add_rn(px, augment::mul_rn(by, t[3 * d + 1])), t[3 * d + 2]);
        fused_off += fused != gp[d];
        plain_off += plain != gp[d];
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

// crop_mirror_normalize on the CPU: one pass over the output batch. Work is split into output rows (sample,
// channel, crop row), over threads only where parallel.h's policy says they pay; each row is a fill, a run of image
// pixels and a fill, and the run is one of normalize's multiply-add loops (forward, reversed for a mirrored
// crop, or strided for HWC images) compiled for AVX2+FMA and baseline x86-64. The coefficients
// a = scale / std and b = -mean / std are computed once per (sample, channel) with math.h.
#include <algorithm>
#include <type_traits>  // the loop headers
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "tensorops/cmn_entries.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/dispatch.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/normalize.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

// ---- inner loops, built for AVX-512, for AVX2+FMA and for baseline x86-64 (cpu_isa.h) --------------------
TENSOROPS_AVX512_BUILD
#include "normalize_loops.h"
#include "crop_mirror_normalize_loops.h"
TENSOROPS_AVX2_BUILD
#include "normalize_loops.h"
#include "crop_mirror_normalize_loops.h"
TENSOROPS_BASE_BUILD
#include "normalize_loops.h"
#include "crop_mirror_normalize_loops.h"
TENSOROPS_END_BUILDS

// Bytes a pass moves: each output element written once and (at most) one input element read for it. Whether
// that pass uses threads is parallel.h's policy.
template <typename in_t, typename out_t>
int64_t pass_bytes(const cmn_host::Setup& s) {
  return s.N * s.Cp * s.h * s.w * static_cast<int64_t>(sizeof(in_t) + sizeof(out_t));
}

template <typename in_t, typename out_t, typename acc_t>
void run_typed(cmn_host::Setup& s, acc_t scale, acc_t fill) {
  const int64_t N = s.N, C = s.C, Cp = s.Cp, h = s.h, w = s.w;
  // per (sample, channel): a, b, and whether they are finite (else the formula itself is evaluated)
  std::vector<acc_t> A(N * C), B(N * C), M(N * C), S(N * C);
  std::vector<char> finite(N * C);
  const acc_t* mean = s.mean.const_data_ptr<acc_t>();
  const acc_t* std = s.std.const_data_ptr<acc_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t k = n * C + c;
      M[k] = mean[n * s.mean_sn + c * s.mean_sc];
      S[k] = std[n * s.std_sn + c * s.std_sc];
      A[k] = math::normalize_coef_a(scale, S[k]);
      B[k] = math::normalize_coef_b(M[k], S[k]);
      finite[k] = math::normalize_coefs_finite(A[k], B[k]);
    }
  out_t* out = s.out.mutable_data_ptr<out_t>();
  const int64_t os_n = s.out.stride(0), os_c = s.out.stride(1), os_h = s.out.stride(2), os_w = s.out.stride(3);
  const out_t fill_out = math::cast_out<out_t>(fill);
  // HWC images (channels interleaved, C of 2-4) into a channels-first output: one task row is a whole pixel row
  // of one sample, read once and written to its C planes (normalize's deinterleave loops).
  bool interleaved = os_w == 1 && C >= 2 && C <= 4;
  for (int64_t n = 0; n < N && interleaved; ++n) interleaved = s.samples[n].sc == 1 && s.samples[n].sx == C;
  for (int64_t k = 0; k < N * C && interleaved; ++k) interleaved = finite[k];
  if (interleaved) {
    const int64_t prow = N * h;
    parallel_for_bytes(0, prow, pass_bytes<in_t, out_t>(s), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % h, n = r / h;
        const cmn::Sample& sm = s.samples[n];
        out_t* y = out + n * os_n + i * os_h;
        const int64_t yy = sm.y0 + i;
        int64_t lo = 0, hi = 0;
        if (yy >= 0 && yy < sm.H) cmn::inside_columns(sm, w, lo, hi);
        for (int64_t c = 0; c < Cp; ++c) {
          out_t* yc = y + c * os_c;
          const bool real = c < C && hi > lo;
          for (int64_t j = 0; j < (real ? lo : w); ++j) yc[j] = fill_out;
          for (int64_t j = real ? hi : w; j < w; ++j) yc[j] = fill_out;
        }
        if (hi <= lo) continue;
        const in_t* x = reinterpret_cast<const in_t*>(sm.src) + yy * sm.sy + cmn::source_x(sm, lo, w) * C;
        const acc_t* a = A.data() + n * C;
        const acc_t* b = B.data() + n * C;
        const int64_t m = hi - lo;
        out_t* y0 = y + lo;
#define TENSOROPS_CMN_DEINTERLEAVE(KC)                                                                         \
  (sm.mirror ? TENSOROPS_CPU_DISPATCH(affine_deinterleave_reversed<KC, in_t, out_t, acc_t>)(x, y0, os_c, m, a, b) \
             : TENSOROPS_CPU_DISPATCH(affine_deinterleave<KC, in_t, out_t, acc_t>)(x, y0, os_c, m, a, b))
        switch (C) {
          case 2: TENSOROPS_CMN_DEINTERLEAVE(2); break;
          case 3: TENSOROPS_CMN_DEINTERLEAVE(3); break;
          default: TENSOROPS_CMN_DEINTERLEAVE(4); break;
        }
#undef TENSOROPS_CMN_DEINTERLEAVE
      }
    });
    return;
  }

  const int64_t rows = N * Cp * h;
  parallel_for_bytes(0, rows, pass_bytes<in_t, out_t>(s), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i = r % h, c = (r / h) % Cp, n = r / (h * Cp);
      const cmn::Sample& sm = s.samples[n];
      out_t* y = out + n * os_n + c * os_c + i * os_h;
      const int64_t yy = sm.y0 + i;
      int64_t lo = 0, hi = 0;
      if (c < C && yy >= 0 && yy < sm.H) cmn::inside_columns(sm, w, lo, hi);
      for (int64_t j = 0; j < lo; ++j) y[j * os_w] = fill_out;
      for (int64_t j = hi; j < w; ++j) y[j * os_w] = fill_out;
      if (hi <= lo) continue;
      const int64_t k = n * C + c;
      const in_t* x = reinterpret_cast<const in_t*>(sm.src) + c * sm.sc + yy * sm.sy + cmn::source_x(sm, lo, w) * sm.sx;
      const int64_t step = sm.mirror ? -sm.sx : sm.sx, m = hi - lo;
      if (os_w != 1 || !finite[k]) {  // channels_last output, or a std too small for the coefficients
        for (int64_t j = 0; j < m; ++j)
          y[(lo + j) * os_w] = math::cast_out<out_t>(
              cmn::value<acc_t>(true, static_cast<acc_t>(x[j * step]), scale, M[k], S[k], fill));
      } else if (step == 1) {
        TENSOROPS_CPU_DISPATCH(affine_contiguous<in_t, out_t, acc_t>)(x, y + lo, m, A[k], B[k]);
      } else if (step == -1) {
        TENSOROPS_CPU_DISPATCH(affine_reversed<in_t, out_t, acc_t>)(x, y + lo, m, A[k], B[k]);
      } else {
        TENSOROPS_CPU_DISPATCH(affine_step<in_t, out_t, acc_t>)(x, step, y + lo, m, A[k], B[k]);
      }
    }
  });
}

void run(cmn_host::Setup& s, double scale, double fill) {
  if (s.out.numel() == 0) return;
  TENSOROPS_DISPATCH_CMN_INPUT(s.in_dtype, "crop_mirror_normalize", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_FLOATING(s.out.scalar_type(), "crop_mirror_normalize_out", [&] {
      using out_t = scalar_t;
      using acc_t = float_acc_t<out_t>;  // as s.acc
      run_typed<in_t, out_t, acc_t>(s, static_cast<acc_t>(scale), static_cast<acc_t>(fill));
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  cmn_entries::register_ops<&run>(m);
}

}  // namespace tensorops

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

// tensorops.augment on the CPU: one task per sample (its op read from the table), over threads where parallel.h's
// policy says they pay. Each op's loops (augment_loops.h) are built for AVX-512, AVX2+FMA and baseline x86-64, and
// the baseline once more with FMA (cpu_isa.h): the baseline build without it rounds torch's fused multiply-adds in
// double arithmetic (math/augment.h's fma_soft). fp-contract off: torch rounds every op of these compositions on
// its own (math/augment.h), so g++ must not fuse a multiply and an add that torch rounds twice; the fused ones are
// explicit (fma_rn).
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

// A per-thread buffer of at least n bytes, kept between calls up to 8 MiB (the affine ops' padded planes of a photo:
// no allocation, no page faults per sample); larger requests in the caller's `own`.
uint8_t* thread_scratch(std::vector<uint8_t>& own, size_t n) {
  static thread_local std::vector<uint8_t> kept;
  std::vector<uint8_t>& buf = n <= (size_t{8} << 20) ? kept : own;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// the x86 vector rows (each header says what it holds)
#include "augment_avx2.h"
#include "augment_colour_simd.h"
#include "augment_bilinear_simd.h"
#include "augment_nearest_simd.h"
#undef TENSOROPS_AVX2_INLINE

// kAvx2Taps: the AVX2 and AVX-512 builds run the affine rows 8 outputs at a time with their source points in
// registers (augment_bilinear_simd.h, augment_nearest_simd.h: AVX2 code, which measured at least as fast as the
// AVX-512 build's own 16-wide rows on an AVX-512 CPU); the baseline builds, and those rows' tails, run the portable
// loops, which GCC vectorizes in every build.
// kAvx2Pointwise: the x86 vector builds run brightness, contrast and autocontrast through pointwise_row_avx2
// sharpness's inner pixels through sharpen_row_avx2, saturation and hue through saturation_row_avx2 and
// hue_row_avx2.
TENSOROPS_AVX512_BUILD
constexpr bool kAvx2Taps = true;
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
#if TENSOROPS_CPU_AVX2
TENSOROPS_BASE_FMA_BUILD
constexpr bool kAvx2Taps = false;
constexpr bool kAvx2Pointwise = false;
#include "augment_loops.h"
TENSOROPS_END_BASE_FMA_BUILD
#endif

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
        TENSOROPS_CPU_DISPATCH_FMA(apply_sample)(ops[0], src0, dst, C, H, W, s.has_fill, s.fill, fused_grid);
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
        TENSOROPS_CPU_DISPATCH_FMA(apply_sample)(ops[k], src, to, C, H, W, s.has_fill, s.fill, fused_grid);
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
      TENSOROPS_CPU_DISPATCH_FMA(erase_sample)(view_of<View>(x, s.in, n), view_of<Dest>(y, s.out, n), s.C, s.H, s.W,
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
      TENSOROPS_CPU_DISPATCH_FMA(mix_sample)(x + n * per, a, k, n * per, w + n * (1 + k), y + n * per, per);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  augment_entries::register_ops<&run_apply, &run_erase, &run_mix>(m);
}

}  // namespace tensorops

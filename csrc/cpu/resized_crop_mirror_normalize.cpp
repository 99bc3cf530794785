// resized_crop_mirror_normalize on the CPU: separable resampling with the normalize fused into the store.
//
// Per call, each distinct axis becomes a weight table (resize.h's windows and weights, computed once in double,
// divided by their sums, every window padded to the axis' widest), shared by the samples with that axis. Work is
// split into output rows (sample, row), over threads only where parallel.h's policy says they pay. One output row
// is three plain loops (resize_loops.h): the vertical pass (a weighted sum of the K source rows it reads, over the
// box's columns, all channels), the horizontal pass (each output pixel a K-tap dot product, its channels one small
// vector), and the store (normalize's multiply-add, mirrored or not, into the channel planes; or uint8 rounding).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "tensorops/cpu_isa.h"
#include "tensorops/dispatch.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/normalize.h"
#include "tensorops/parallel.h"
#include "tensorops/resize.h"
#include "tensorops/resize_entries.h"
#include "tensorops/resize_host.h"
#include "resize_cpu.h"

namespace tensorops {
namespace {

// One axis of one sample as tables: output k reads source pixels base + first[k] + [0, K) with weights
// w[k * K + t] (zero past its window); fill[k]: out_of_bounds="pad" puts `fill` there.
template <typename acc_t>
struct AxisTaps {
  int64_t K = 0, base = 0, span = 0;  // the source pixels [base, base + span) any output reads
  std::vector<int64_t> first, count;
  std::vector<acc_t> w;
  std::vector<char> fill;
  bool any_fill = false;

  void build(const resize::Axis& a, int64_t out) {
    first.assign(out, 0);
    count.assign(out, 0);
    fill.assign(out, 0);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    K = 1;
    for (int64_t k = 0; k < out; ++k) {
      resize::window(a, k, first[k], count[k]);
      fill[k] = resize::outside(a, k) || count[k] == 0;
      any_fill = any_fill || fill[k];
      if (fill[k]) continue;
      lo = std::min(lo, first[k]);
      hi = std::max(hi, first[k] + count[k]);
      K = std::max(K, count[k]);
    }
    if (lo > hi) lo = hi = 0;  // nothing readable
    base = lo;
    span = hi - lo;
    w.assign(out * K, acc_t(0));
    std::vector<double> wk(K);  // one window's weights, each evaluated once
    for (int64_t k = 0; k < out; ++k) {
      if (fill[k]) {
        first[k] = 0;
        count[k] = 1;  // a window of zero weight on the first pixel: the value is replaced by fill
        continue;
      }
      double sum = 0;
      for (int64_t t = 0; t < count[k]; ++t) sum += wk[t] = resize::weight(a, k, first[k] + t);
      const double inv = sum > 0 ? 1.0 / sum : 0.0;
      for (int64_t t = 0; t < count[k]; ++t) w[k * K + t] = static_cast<acc_t>(wk[t] * inv);
      first[k] -= base;
    }
    if constexpr (std::is_same_v<acc_t, float>) blocks(out, cpu_isa_level() == 2 ? 16 : 8);
  }

  // The horizontal pass' blocks of bw outputs (one register of floats: 16 in the AVX-512 loops, 8 in the AVX2
  // ones), blk_fit: 2, every window lies within the 2 * bw source pixels from the block's first one (blk_base),
  // loaded once, and each tap is one two-register permute and multiply-add (blk_idx: each output's first pixel
  // from blk_base; blk_w: the weights, tap-major); 1, the windows start within those 2 * bw (downscaling by
  // ~1.6-2x), and tap k permutes the 2 * bw pixels from blk_base + k, loaded for it; 0, a dot product per output.
  std::vector<int64_t> blk_base;
  std::vector<char> blk_fit;
  std::vector<int32_t> blk_idx;
  std::vector<acc_t> blk_w;

  void blocks(int64_t out, int64_t bw) {
    const int64_t nb = (out + bw - 1) / bw;
    blk_base.assign(nb, 0);
    blk_fit.assign(nb, 0);
    blk_idx.assign(nb * bw, 0);
    blk_w.assign(nb * K * bw, acc_t(0));
    for (int64_t bk = 0; bk < nb; ++bk) {
      const int64_t j0 = bk * bw, j1 = std::min(j0 + bw, out);
      int64_t lo = first[j0], hi = first[j0];
      for (int64_t j = j0; j < j1; ++j) {
        lo = std::min(lo, first[j]);
        hi = std::max(hi, first[j]);
      }
      blk_base[bk] = lo;
      blk_fit[bk] = hi + K - lo <= 2 * bw ? 2 : hi - lo < 2 * bw ? 1 : 0;
      for (int64_t j = j0; j < j1; ++j) {
        blk_idx[j] = static_cast<int32_t>(std::min<int64_t>(first[j] - lo, 2 * bw - 1));
        for (int64_t t = 0; t < K; ++t) blk_w[(bk * K + t) * bw + (j - j0)] = w[j * K + t];
      }
    }
  }
};

// Outputs of at least this many bytes are written with non-temporal stores (AVX-512 builds, float): a batch
// this large does not stay in the caches for its consumer anyway, and writing it through them evicted the
// source rows still to be read (measured on 32 photo-like 300-500 px images at 1 thread, 19 MB of float
// output: 12-18% faster; a 4.8 MB batch of 8 images: within the noise).
constexpr int64_t kStreamStoreBytes = int64_t(8) << 20;

// One sample's two axes (tables Plan::tables owns: samples with the same axis share one).
template <typename acc_t>
struct SampleTaps {
  const AxisTaps<acc_t>& y;
  const AxisTaps<acc_t>& x;
};

// An axis as a key: samples whose boxes sit alike on the same size of image (a batch tensor; evaluation boxes of
// same-size images) have bit-identical axes and outputs, so one weight table serves them all.
struct AxisKey {
  resize::Axis a;
  int64_t out;
  bool operator<(const AxisKey& o) const {
    static_assert(sizeof(AxisKey) == sizeof(resize::Axis) + sizeof(int64_t), "no padding to compare");
    return std::memcmp(this, &o, sizeof(AxisKey)) < 0;
  }
};

// Everything the row pass reads.
template <typename out_t, typename acc_t>
struct Plan {
  int64_t C, Cp, h, w;
  bool packed;  // every image HWC with its channels innermost (one contiguous run per row)
  const resize::Sample* samples;
  std::vector<AxisTaps<acc_t>> tables;  // one per distinct axis
  std::vector<int64_t> ty, tx;          // per sample: its axes' tables
  SampleTaps<acc_t> taps(int64_t n) const { return {tables[ty[n]], tables[tx[n]]}; }
  int64_t max_span = 0, max_kx = 1, max_ky = 1;
  std::vector<acc_t> A, B, M, S;  // per (sample, channel)
  std::vector<char> finite;       // per sample: every channel's coefficients finite
  acc_t scale;
  acc_t vmax;  // > 0: resampled values clamped to [0, vmax] (resize_host::Setup::vmax)
  bool stream;  // the output is written with non-temporal stores (kStreamStoreBytes)
  out_t* out;
  out_t fill_out;
  int64_t os_n, os_c, os_h, os_w;
};

// ---- inner loops, built for AVX-512, for AVX2+FMA and for baseline x86-64 (cpu_isa.h) --------------------
// kPermute16: the build has 16-float registers and a two-register permute (AVX-512: stream stores, 16 pixels a
// step in the 3-channel vertical pass into planes). kPermuteWidth: the floats of one register that the planar horizontal pass permutes
// (16 AVX-512, 8 AVX2 with vpermps; 0: the baseline build, whose SSE2 has no variable permute, runs the
// interleaved pass).
TENSOROPS_AVX512_BUILD
constexpr bool kPermute16 = true;
constexpr int kPermuteWidth = 16;
#include "normalize_loops.h"
#include "resize_vertical.h"
#include "resize_loops.h"
TENSOROPS_AVX2_BUILD
constexpr bool kPermute16 = false;
constexpr int kPermuteWidth = 8;
#include "normalize_loops.h"
#include "resize_vertical.h"
#include "resize_loops.h"
TENSOROPS_BASE_BUILD
constexpr bool kPermute16 = false;
constexpr int kPermuteWidth = 0;
#include "normalize_loops.h"
#include "resize_vertical.h"
#include "resize_loops.h"
TENSOROPS_END_BUILDS

template <int kC, typename in_t, typename out_t, typename acc_t>
void pass(const Plan<out_t, acc_t>& P, int64_t begin, int64_t end) {
  TENSOROPS_CPU_DISPATCH(rows_pass<kC, in_t, out_t, acc_t>)(P, begin, end);
}

// Output sample n, every channel, as fill (a sample its source could not read).
template <typename out_t, typename acc_t>
void fill_sample(const Plan<out_t, acc_t>& P, int64_t n) {
  for (int64_t c = 0; c < P.Cp; ++c)
    for (int64_t i = 0; i < P.h; ++i)
      for (int64_t j = 0; j < P.w; ++j) P.out[n * P.os_n + c * P.os_c + i * P.os_h + j * P.os_w] = P.fill_out;
}

template <typename in_t, typename out_t, typename acc_t>
void run_typed(resize_host::Setup& r, acc_t scale, double fill, resize_cpu::SampleSource* source) {
  const cmn_host::Setup& s = r.base;
  const int64_t N = s.N, C = s.C;
  Plan<out_t, acc_t> P;
  P.C = C;
  P.Cp = s.Cp;
  P.h = s.h;
  P.w = s.w;
  P.samples = r.samples.data();
  P.scale = scale;
  P.vmax = static_cast<acc_t>(r.vmax);
  P.out = s.out.mutable_data_ptr<out_t>();
  P.fill_out = resize::store<out_t>(static_cast<acc_t>(fill));
  P.os_n = s.out.stride(0);
  P.os_c = s.out.stride(1);
  P.os_h = s.out.stride(2);
  P.os_w = s.out.stride(3);
  P.stream = s.out.nbytes() >= kStreamStoreBytes;
  P.packed = true;
  for (const resize::Sample& sm : r.samples) P.packed = P.packed && sm.sc == 1 && sm.sx == C;
  // coefficients per (sample, channel), as crop_mirror_normalize's; uint8 outputs are not normalized
  P.A.resize(N * C);
  P.B.resize(N * C);
  P.M.resize(N * C);
  P.S.resize(N * C);
  P.finite.assign(N, 1);
  const acc_t* mean = s.mean.const_data_ptr<acc_t>();
  const acc_t* std = s.std.const_data_ptr<acc_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t k = n * C + c;
      P.M[k] = mean[n * s.mean_sn + c * s.mean_sc];
      P.S[k] = std[n * s.std_sn + c * s.std_sc];
      P.A[k] = math::normalize_coef_a(scale, P.S[k]);
      P.B[k] = math::normalize_coef_b(P.M[k], P.S[k]);
      if (!math::normalize_coefs_finite(P.A[k], P.B[k])) P.finite[n] = 0;
    }
  // the weight tables, one per distinct axis (an axis of out outputs is out windows), built in parallel when many
  std::map<AxisKey, int64_t> index;
  std::vector<AxisKey> keys;
  const auto table_of = [&](const resize::Axis& a, int64_t out) {
    const auto [it, added] = index.emplace(AxisKey{a, out}, static_cast<int64_t>(keys.size()));
    if (added) keys.push_back(it->first);
    return it->second;
  };
  P.ty.resize(N);
  P.tx.resize(N);
  for (int64_t n = 0; n < N; ++n) {
    P.ty[n] = table_of(r.samples[n].y, s.h);
    P.tx[n] = table_of(r.samples[n].x, s.w);
  }
  const int64_t n_tables = static_cast<int64_t>(keys.size());
  P.tables.resize(n_tables);
  parallel_for_bytes(0, n_tables, n_tables * std::max(s.h, s.w) * 256, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) P.tables[k].build(keys[k].a, keys[k].out);
  });
  int64_t work = 0;  // bytes the row pass touches: the vertical pass' source and accumulator, the output
  for (int64_t n = 0; n < N; ++n) {
    const SampleTaps<acc_t> T = P.taps(n);
    P.max_span = std::max(P.max_span, T.x.span);
    P.max_kx = std::max(P.max_kx, T.x.K);
    P.max_ky = std::max(P.max_ky, T.y.K);
    work += s.h * (T.y.K * T.x.span * C * static_cast<int64_t>(sizeof(in_t) + sizeof(acc_t)) +
                   s.Cp * s.w * static_cast<int64_t>(sizeof(out_t)));
  }
  const auto body = [&](int64_t begin, int64_t end) {
    switch (C) {
      case 1: pass<1, in_t, out_t, acc_t>(P, begin, end); break;
      case 2: pass<2, in_t, out_t, acc_t>(P, begin, end); break;
      case 3: pass<3, in_t, out_t, acc_t>(P, begin, end); break;
      case 4: pass<4, in_t, out_t, acc_t>(P, begin, end); break;
      default: pass<0, in_t, out_t, acc_t>(P, begin, end); break;
    }
  };
  if (source == nullptr) {
    parallel_for_bytes(0, N * s.h, work, body);
    return;
  }
  // a source: each sample prepared (decoded) on the thread that then resamples it, samples in parallel
  for (int64_t n = 0; n < N; ++n) {
    const SampleTaps<acc_t> T = P.taps(n);
    work += source->cost(n, T.y.span * T.x.span);
  }
  parallel_for_bytes(0, N, work, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> scratch;
    for (int64_t n = begin; n < end; ++n) {
      const SampleTaps<acc_t> T = P.taps(n);
      if (source->prepare(n, r.samples[n], T.y.base, T.y.base + T.y.span, T.x.base, T.x.base + T.x.span, scratch))
        body(n * s.h, (n + 1) * s.h);
      else
        fill_sample(P, n);
    }
  });
}

void run_with(resize_host::Setup& r, double scale, double fill, resize_cpu::SampleSource* source) {
  if (r.base.out.numel() == 0) return;
  TENSOROPS_DISPATCH_NORMALIZE_INPUT(r.base.in_dtype, "resized_crop_mirror_normalize", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_RESIZE_OUT(r.base.out.scalar_type(), "resized_crop_mirror_normalize_out", [&] {
      using out_t = scalar_t;
      using acc_t = std::conditional_t<std::is_same_v<out_t, double>, double, float>;  // as r.base.acc
      run_typed<in_t, out_t, acc_t>(r, static_cast<acc_t>(scale), fill, source);
    });
  });
}

void run(resize_host::Setup& r, double scale, double fill) { run_with(r, scale, fill, nullptr); }

}  // namespace

void resize_cpu::run_from(resize_host::Setup& r, double scale, double fill, resize_cpu::SampleSource& source) {
  run_with(r, scale, fill, &source);
}

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  resize_entries::register_ops<&run>(m);
}

}  // namespace tensorops

// resized_crop_mirror_normalize's CPU pass over a range of output rows. Included once per build by resized_crop_mirror_normalize.cpp
// (AVX-512, AVX2+FMA, baseline; see tensorops/cpu_isa.h), after normalize_loops.h (whose `emit` it stores
// floating rows with) and resize_vertical.h (the vertical pass, F16), so no #pragma once and no includes. The
// names it uses from resized_crop_mirror_normalize.cpp: Plan, AxisTaps, kPermute16, kPermuteWidth.
// NOLINTBEGIN

// Channel counts: kC, a compile-time constant for 1-4 channels (so strided accesses become shuffles), or 0 and
// the run-time count nc.
#define TENSOROPS_NC (kC > 0 ? static_cast<int64_t>(kC) : nc)

// nc planes of n values (`ps` apart) interleaved into x[t * nc + c].
template <int kC, typename acc_t>
void interleave(const acc_t* __restrict p, int64_t ps, int64_t n, acc_t* __restrict x, int64_t nc) {
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < TENSOROPS_NC; ++c) x[t * TENSOROPS_NC + c] = p[c * ps + t];
}

// Horizontal pass over an interleaved row v (pixel t's channel c at v[t * C + c]): o[j * C + c] = sum_k
// wt[j * K + k] * v[(first[j] + k) * C + c]. For 2-4 channels one pixel's channels are one 4-lane vector (the
// lanes past C read the next pixel and are overwritten by the next output's store); v holds K pixels of zero
// padding past its span and o 4 values past its end.
template <typename T>
struct Lanes4 {
  typedef T type __attribute__((vector_size(4 * sizeof(T))));
};

template <int kC, typename acc_t>
void horizontal(const acc_t* __restrict v, acc_t* __restrict o, int64_t w, int64_t K, const int64_t* __restrict first,
                const acc_t* __restrict wt, int64_t nc) {
  if constexpr (kC >= 2 && kC <= 4) {
    using V = typename Lanes4<acc_t>::type;
    int64_t j = 0;
    // four output pixels at a time: four independent accumulators hide the multiply-add latency that one
    // pixel's K-tap chain would wait on (measured: the one-pixel loop was latency-bound, ~4 cycles a tap)
    for (; j + 4 <= w; j += 4) {
      const acc_t* p0 = v + first[j] * kC;
      const acc_t* p1 = v + first[j + 1] * kC;
      const acc_t* p2 = v + first[j + 2] * kC;
      const acc_t* p3 = v + first[j + 3] * kC;
      const acc_t* q = wt + j * K;
      V a0 = {acc_t(0), acc_t(0), acc_t(0), acc_t(0)}, a1 = a0, a2 = a0, a3 = a0;
      for (int64_t k = 0; k < K; ++k) {
        V x0, x1, x2, x3;
        std::memcpy(&x0, p0 + k * kC, sizeof(V));
        std::memcpy(&x1, p1 + k * kC, sizeof(V));
        std::memcpy(&x2, p2 + k * kC, sizeof(V));
        std::memcpy(&x3, p3 + k * kC, sizeof(V));
        a0 += q[k] * x0;
        a1 += q[K + k] * x1;
        a2 += q[2 * K + k] * x2;
        a3 += q[3 * K + k] * x3;
      }
      // in order: each store's lanes past kC are overwritten by the next pixel's
      std::memcpy(o + j * kC, &a0, sizeof(V));
      std::memcpy(o + (j + 1) * kC, &a1, sizeof(V));
      std::memcpy(o + (j + 2) * kC, &a2, sizeof(V));
      std::memcpy(o + (j + 3) * kC, &a3, sizeof(V));
    }
    for (; j < w; ++j) {
      const acc_t* p = v + first[j] * kC;
      const acc_t* q = wt + j * K;
      V acc = {acc_t(0), acc_t(0), acc_t(0), acc_t(0)};
      for (int64_t k = 0; k < K; ++k) {
        V x;
        std::memcpy(&x, p + k * kC, sizeof(V));
        acc += q[k] * x;
      }
      std::memcpy(o + j * kC, &acc, sizeof(V));
    }
  } else {
    for (int64_t j = 0; j < w; ++j) {
      const acc_t* p = v + first[j] * TENSOROPS_NC;
      const acc_t* q = wt + j * K;
      for (int64_t c = 0; c < TENSOROPS_NC; ++c) {
        acc_t acc = acc_t(0);
        for (int64_t k = 0; k < K; ++k) acc += q[k] * p[k * TENSOROPS_NC + c];
        o[j * TENSOROPS_NC + c] = acc;
      }
    }
  }
}

// Resampled values (interleaved, kC channels) to kC output planes `ys` apart, normalized with per-channel
// a, b (or, for uint8 outputs, rounded); `mirror` reverses the row.
template <int kC, typename out_t, typename acc_t>
void store_planes(const acc_t* __restrict x, out_t* __restrict y, int64_t ys, int64_t n, const acc_t* a,
                  const acc_t* b, bool mirror, int64_t nc) {
  constexpr int64_t kS = kC;  // the stride as a constant where it is one
  const int64_t st = kS > 0 ? kS : nc;
  for (int64_t c = 0; c < st; ++c) {
    const acc_t ac = a[c], bc = b[c];
    out_t* __restrict yc = y + c * ys;
    if constexpr (sizeof(out_t) == 1) {
      if (mirror)
        for (int64_t t = 0; t < n; ++t) yc[t] = resize::store<out_t>(x[(n - 1 - t) * st + c]);
      else
        for (int64_t t = 0; t < n; ++t) yc[t] = resize::store<out_t>(x[t * st + c]);
    } else if (mirror) {
      const acc_t* xr = x + (n - 1) * st + c;
      emit<out_t, acc_t>(yc, n, [&](int64_t t) { return math::normalize_apply(xr[-t * st], ac, bc); });
    } else {
      emit<out_t, acc_t>(yc, n, [&](int64_t t) { return math::normalize_apply(x[t * st + c], ac, bc); });
    }
  }
}

#if TENSOROPS_CPU_AVX2
// One block of 8 outputs of the planar horizontal pass in the AVX2 build (vpermps permutes one register): a tap's
// two-register permute is two vpermps and a blend on bit 3 of the index (shifted into the sign bit). The kC
// channels go together: each tap's index, blend mask and weights serve them all, and their kC multiply-add
// chains overlap (a channel at a time waited on each chain's latency). `fit2`: every tap's pixels lie in the 16
// from b, tap k's index is idx + k; else tap k reads the 16 from b + k at idx (AxisTaps::blocks).
template <int kC>
inline void block8_avx2(const float* __restrict b, int64_t vs, float* __restrict o, int64_t os,
                        const int32_t* __restrict idx, const float* __restrict wk, int64_t K, bool fit2) {
  __m256 acc[kC];
  for (int c = 0; c < kC; ++c) acc[c] = _mm256_setzero_ps();
  __m256i ik = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx));
  const __m256i step = fit2 ? _mm256_set1_epi32(1) : _mm256_setzero_si256();
  const int64_t shift = fit2 ? 0 : 1;  // tap k's pixels from b + k * shift
  for (int64_t k = 0; k < K; ++k) {
    const __m256 m = _mm256_castsi256_ps(_mm256_slli_epi32(ik, 28));
    const __m256 wv = _mm256_loadu_ps(wk + k * 8);
    const float* bk = b + k * shift;
    for (int c = 0; c < kC; ++c) {
      const __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(bk + c * vs), ik);
      const __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(bk + c * vs + 8), ik);
      acc[c] = _mm256_fmadd_ps(wv, _mm256_blendv_ps(lo, hi, m), acc[c]);
    }
    ik = _mm256_add_epi32(ik, step);
  }
  for (int c = 0; c < kC; ++c) _mm256_storeu_ps(o + c * os, acc[c]);
}
#endif

// The planar horizontal pass (AVX-512 and AVX2 builds, float): kC channels' rows (channel c at v + c * vs,
// zero-padded 32 past its span) to w outputs each (at o + c * os, padded to whole blocks of 16), a block of VW
// outputs at a time (AxisTaps::blocks; VW = kPermuteWidth, one register). The channels share each tap's weights
// and permute indices, so they go together: one index update and weight load a tap for all of them, and kC
// independent multiply-add chains.
template <int kC, typename acc_t>
void horizontal_planar(const acc_t* __restrict v, int64_t vs, acc_t* __restrict o, int64_t os, int64_t w,
                       const AxisTaps<acc_t>& X) {
  constexpr int VW = kPermuteWidth > 0 ? kPermuteWidth : 16;
  typedef float FV __attribute__((vector_size(VW * 4)));
  typedef int32_t IV __attribute__((vector_size(VW * 4)));
  const int64_t K = X.K, nb = (w + VW - 1) / VW;
  for (int64_t bk = 0; bk < nb; ++bk) {
    const int64_t j0 = bk * VW;
#if TENSOROPS_CPU_AVX2
    if constexpr (VW == 8 && std::is_same_v<acc_t, float>) {
      if (X.blk_fit[bk] != 0) {
        block8_avx2<kC>(v + X.blk_base[bk], vs, o + j0, os, X.blk_idx.data() + j0, X.blk_w.data() + bk * K * VW, K,
                        X.blk_fit[bk] == 2);
        continue;
      }
    }
#endif
    if (X.blk_fit[bk] == 2) {  // every tap's pixels in the 2 * VW from blk_base: two registers a channel
      FV lo[kC], hi[kC], acc[kC];
      for (int c = 0; c < kC; ++c) {
        std::memcpy(&lo[c], v + c * vs + X.blk_base[bk], sizeof(FV));
        std::memcpy(&hi[c], v + c * vs + X.blk_base[bk] + VW, sizeof(FV));
        acc[c] = FV{};
      }
      IV idx;
      std::memcpy(&idx, X.blk_idx.data() + j0, sizeof(IV));
      const acc_t* wk = X.blk_w.data() + bk * K * VW;
      for (int64_t k = 0; k < K; ++k) {
        FV wv;
        std::memcpy(&wv, wk + k * VW, sizeof(FV));
        for (int c = 0; c < kC; ++c) acc[c] += wv * __builtin_shuffle(lo[c], hi[c], idx + int32_t(k));
      }
      for (int c = 0; c < kC; ++c) std::memcpy(o + c * os + j0, &acc[c], sizeof(FV));
    } else if (X.blk_fit[bk] == 1) {  // each tap's pixels in the 2 * VW from blk_base + k: two loads a tap
      FV acc[kC];
      for (int c = 0; c < kC; ++c) acc[c] = FV{};
      IV idx;
      std::memcpy(&idx, X.blk_idx.data() + j0, sizeof(IV));
      const acc_t* wk = X.blk_w.data() + bk * K * VW;
      const acc_t* vk = v + X.blk_base[bk];
      for (int64_t k = 0; k < K; ++k, ++vk) {  // tap k: the 2 * VW source pixels from blk_base + k
        FV wv;
        std::memcpy(&wv, wk + k * VW, sizeof(FV));
        for (int c = 0; c < kC; ++c) {
          FV lo, hi;
          std::memcpy(&lo, vk + c * vs, sizeof(FV));
          std::memcpy(&hi, vk + c * vs + VW, sizeof(FV));
          acc[c] += wv * __builtin_shuffle(lo, hi, idx);
        }
      }
      for (int c = 0; c < kC; ++c) std::memcpy(o + c * os + j0, &acc[c], sizeof(FV));
    } else {
      const int64_t j1 = std::min<int64_t>(j0 + VW, w);
      for (int c = 0; c < kC; ++c)
        for (int64_t j = j0; j < j1; ++j) {
          const acc_t* p = v + c * vs + X.first[j];
          const acc_t* q = X.w.data() + j * K;
          acc_t a = acc_t(0);
          for (int64_t k = 0; k < K; ++k) a += q[k] * p[k];
          o[c * os + j] = a;
        }
    }
  }
}

// nc interleaved channels of n pixels to nc planes `ps` apart.
template <int kC, typename acc_t>
void deinterleave(const acc_t* __restrict x, int64_t n, acc_t* __restrict p, int64_t ps, int64_t nc) {
  for (int64_t c = 0; c < TENSOROPS_NC; ++c)
    for (int64_t t = 0; t < n; ++t) p[c * ps + t] = x[t * TENSOROPS_NC + c];
}

// x[n - 1 - t] for t < n into r: one register of floats a step, each reversed by one permute (GCC leaves such a
// loop scalar).
template <typename acc_t>
inline void reversed(const acc_t* __restrict x, int64_t n, acc_t* __restrict r) {
  int64_t t = 0;
  if constexpr (std::is_same_v<acc_t, float>) {
    constexpr int V = kVecFloats;
    typedef int32_t M __attribute__((vector_size(V * 4)));
    M rev;
    for (int i = 0; i < V; ++i) rev[i] = V - 1 - i;
    for (; t + V <= n; t += V) {
      FV v;
      std::memcpy(&v, x + n - V - t, sizeof(v));
      v = __builtin_shuffle(v, rev);
      std::memcpy(r + t, &v, sizeof(v));
    }
  }
  for (; t < n; ++t) r[t] = x[n - 1 - t];
}

// y[t] = x[t] * a + b for t < n, float; `stream`: with non-temporal stores where y is 64-byte aligned (a batch
// too large for the caches then costs no read of its lines before they are written, and evicts no source rows:
// Plan::stream).
inline void affine_row(const float* __restrict x, float* __restrict y, int64_t n, float a, float b, bool stream) {
  int64_t t = 0;
#if TENSOROPS_CPU_AVX2
  if constexpr (kPermute16) {
    if (stream) {
      for (; t < n && (reinterpret_cast<uintptr_t>(y + t) & 63) != 0; ++t) y[t] = math::normalize_apply(x[t], a, b);
      for (; t + 16 <= n; t += 16) {
        F16 v;
        std::memcpy(&v, x + t, sizeof(v));
        v = math::normalize_apply(v, F16{} + a, F16{} + b);
        __m512 m;
        std::memcpy(&m, &v, sizeof(m));
        _mm512_stream_ps(y + t, m);
      }
    }
  }
#endif
  for (; t < n; ++t) y[t] = math::normalize_apply(x[t], a, b);
}

// Planar resampled rows (channel c at x + c * xs) to the output planes `ys` apart: normalize's multiply-add (or
// uint8 rounding), read backwards for a mirrored row (reversed into `tmp`, n values, first).
template <typename out_t, typename acc_t>
void store_planar(const acc_t* __restrict x, int64_t xs, out_t* __restrict y, int64_t ys, int64_t n, const acc_t* a,
                  const acc_t* b, bool mirror, int64_t nc, acc_t* __restrict tmp, bool stream) {
  for (int64_t c = 0; c < nc; ++c) {
    const acc_t ac = a[c], bc = b[c];
    const acc_t* __restrict xc = x + c * xs;
    out_t* __restrict yc = y + c * ys;
    if (mirror) {
      reversed<acc_t>(xc, n, tmp);
      xc = tmp;
    }
    if constexpr (sizeof(out_t) == 1) {
      for (int64_t t = 0; t < n; ++t) yc[t] = resize::store<out_t>(xc[t]);
    } else if constexpr (std::is_same_v<out_t, float> && std::is_same_v<acc_t, float>) {
      affine_row(xc, yc, n, ac, bc, stream);
    } else {
      emit<out_t, acc_t>(yc, n, [&](int64_t t) { return math::normalize_apply(xc[t], ac, bc); });
    }
  }
}

// Bicubic of integer images: the resampled values clamped to [0, vmax] before the store.
template <typename acc_t>
void clamp_range(acc_t* __restrict v, int64_t n, acc_t vmax) {
  for (int64_t k = 0; k < n; ++k) v[k] = std::min(std::max(v[k], acc_t(0)), vmax);
}

// Output rows [begin, end) of the batch (row r: sample r / h, output row r % h), every channel of each.
template <int kC, typename in_t, typename out_t, typename acc_t>
void rows_pass(const Plan<out_t, acc_t>& P, int64_t begin, int64_t end) {
  const int64_t C = P.C, w = P.w, h = P.h;
  constexpr bool kPlanar = kPermuteWidth > 0 && std::is_same_v<acc_t, float>;
  // plane strides: source (zero past its span for the widest window and a 32-float permute), output
  const int64_t ps = P.max_span + P.max_kx + 32, wp = (w + 15) / 16 * 16;
  std::vector<acc_t> planes(ps * C), vrow((P.max_span + P.max_kx) * C + 4), orow(wp * C + 4), rev(wp);
  std::vector<const in_t*> rows(P.max_ky);
  int64_t last_n = -1;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r / h, i = r % h;
    const SampleTaps<acc_t> T = P.taps(n);
    const resize::Sample& sm = P.samples[n];
    out_t* y = P.out + n * P.os_n + i * P.os_h;
    const acc_t* a = P.A.data() + n * C;
    const acc_t* b = P.B.data() + n * C;
    if (T.y.fill[i] || T.x.span == 0) {  // out_of_bounds="pad": the whole row is fill
      for (int64_t c = 0; c < P.Cp; ++c)
        for (int64_t j = 0; j < w; ++j) y[c * P.os_c + j * P.os_w] = P.fill_out;
      continue;
    }
    const in_t* src = reinterpret_cast<const in_t*>(sm.src);
    if (n != last_n) {  // a new sample: the padding past its span must not hold another's values
      std::fill(vrow.begin(), vrow.end(), acc_t(0));
      std::fill(planes.begin(), planes.end(), acc_t(0));
      last_n = n;
    }
    const int64_t K = T.y.count[i], span = T.x.span;
    const acc_t* wy = T.y.w.data() + i * T.y.K;
    const int64_t y0 = T.y.base + T.y.first[i];
    // vertical pass: HWC images with the channels innermost as one run of span * C values, else per channel
    // (3 channels into planes for the planar horizontal pass: split as they are summed)
    constexpr bool kSplit3 = kPlanar && kC == 3;
    const int64_t y_last = T.y.base + T.y.span - 1;  // the rows to prefetch: the two after this row's last tap
    const int64_t ya[2] = {std::min(y0 + K, y_last), std::min(y0 + K + 1, y_last)};
    const in_t* ahead[2];
    if (P.packed) {
      for (int64_t k = 0; k < K; ++k) rows[k] = src + (y0 + k) * sm.sy + T.x.base * C;
      for (int64_t k = 0; k < 2; ++k) ahead[k] = src + ya[k] * sm.sy + T.x.base * C;
      if constexpr (kSplit3)
        vertical_planes3<in_t, acc_t>(rows.data(), wy, K, span, planes.data(), ps, ahead);
      else
        vertical<in_t, acc_t>(rows.data(), wy, K, span * C, 1, vrow.data(), ahead);
    } else {
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t k = 0; k < K; ++k) rows[k] = src + c * sm.sc + (y0 + k) * sm.sy + T.x.base * sm.sx;
        for (int64_t k = 0; k < 2; ++k) ahead[k] = src + c * sm.sc + ya[k] * sm.sy + T.x.base * sm.sx;
        vertical<in_t, acc_t>(rows.data(), wy, K, span, sm.sx, planes.data() + c * ps, ahead);
      }
    }
    // horizontal pass, into orow: planar (channel c at c * wp + j) with one register's permutes, else interleaved
    if constexpr (kPlanar) {
      if (P.packed && !kSplit3) deinterleave<kC, acc_t>(vrow.data(), span, planes.data(), ps, C);
      if constexpr (kC >= 1 && kC <= 4)
        horizontal_planar<kC, acc_t>(planes.data(), ps, orow.data(), wp, w, T.x);
      else
        for (int64_t c = 0; c < C; ++c)
          horizontal_planar<1, acc_t>(planes.data() + c * ps, ps, orow.data() + c * wp, wp, w, T.x);
    } else {
      if (!P.packed) interleave<kC, acc_t>(planes.data(), ps, span, vrow.data(), C);
      horizontal<kC, acc_t>(vrow.data(), orow.data(), w, T.x.K, T.x.first.data(), T.x.w.data(), C);
    }
    if (P.vmax > acc_t(0)) clamp_range<acc_t>(orow.data(), kPlanar ? C * wp : w * C, P.vmax);
    const int64_t opx = kPlanar ? 1 : C, opc = kPlanar ? wp : 1;  // orow's pixel and channel strides
    if (P.os_w == 1 && P.finite[n]) {
      if constexpr (kPlanar)
        store_planar<out_t, acc_t>(orow.data(), wp, y, P.os_c, w, a, b, sm.mirror != 0, C, rev.data(), P.stream);
      else
        store_planes<kC, out_t, acc_t>(orow.data(), y, P.os_c, w, a, b, sm.mirror != 0, C);
    } else {  // channels_last output, or a std too small for the coefficients: the formula per element
      const acc_t* M = P.M.data() + n * C;
      const acc_t* S = P.S.data() + n * C;
      for (int64_t j = 0; j < w; ++j) {
        const int64_t jj = sm.mirror ? w - 1 - j : j;
        for (int64_t c = 0; c < C; ++c) {
          const acc_t v = orow[jj * opx + c * opc];
          y[c * P.os_c + j * P.os_w] = resize::store<out_t>(
              sizeof(out_t) == 1 ? v : math::normalize_value(v, a[c], b[c], P.scale, M[c], S[c]));
        }
      }
    }
    for (int64_t c = C; c < P.Cp; ++c)
      for (int64_t j = 0; j < w; ++j) y[c * P.os_c + j * P.os_w] = P.fill_out;
    if (T.x.any_fill)
      for (int64_t j = 0; j < w; ++j)
        if (T.x.fill[j]) {
          const int64_t jj = sm.mirror ? w - 1 - j : j;
          for (int64_t c = 0; c < C; ++c) y[c * P.os_c + jj * P.os_w] = P.fill_out;
        }
  }
#if TENSOROPS_CPU_AVX2
  if (P.stream) _mm_sfence();  // the non-temporal stores are visible before the pass is done
#endif
}

#undef TENSOROPS_NC
// NOLINTEND

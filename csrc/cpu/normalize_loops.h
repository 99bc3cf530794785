// normalize's CPU inner loops. Included once per build by normalize.cpp (AVX-512, AVX2+FMA, baseline; see
// tensorops/cpu_isa.h), so no #pragma once and no includes: the names resolve in the including namespace.
// The including namespace defines `constexpr bool kF16C`: whether store_half_f16c may be used.
// NOLINTBEGIN

// Writes value(t) for t < n to y. Half outputs in the AVX2 build go through a float buffer and the F16C
// conversion; everything else is a plain loop the compiler vectorizes.
template <typename out_t, typename acc_t, typename F>
inline void emit(out_t* __restrict y, int64_t n, const F& value) {
#if TENSOROPS_CPU_AVX2
  if constexpr (kF16C && std::is_same_v<out_t, c10::Half> && std::is_same_v<acc_t, float>) {
    constexpr int64_t kBuf = 256;
    float buf[kBuf];
    for (int64_t s = 0; s < n; s += kBuf) {
      const int64_t m = std::min(kBuf, n - s);
      for (int64_t t = 0; t < m; ++t) buf[t] = value(s + t);
      store_half_f16c(y + s, buf, m);
    }
    return;
  }
#endif
  for (int64_t t = 0; t < n; ++t) y[t] = math::cast_out<out_t>(value(t));
}
template <typename in_t, typename out_t, typename acc_t>
void affine_contiguous(const in_t* __restrict x, out_t* __restrict y, int64_t n, acc_t a,
                                            acc_t b) {
  emit<out_t, acc_t>(y, n, [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(x[t]), a, b); });
}

// Coefficients that repeat with a short period (channels-last input, channel dim innermost): `pa`/`pb` hold
// the pattern unrolled to a multiple of the period, so the loop is again a plain vectorizable multiply-add.
template <typename in_t, typename out_t, typename acc_t>
void affine_pattern(const in_t* __restrict x, out_t* __restrict y, int64_t n,
                                         const acc_t* __restrict pa, const acc_t* __restrict pb, int64_t len) {
  for (int64_t start = 0; start < n; start += len) {
    const int64_t m = std::min(len, n - start);
    const in_t* __restrict xs = x + start;
    out_t* __restrict ys = y + start;
    emit<out_t, acc_t>(ys, m, [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(xs[t]), pa[t], pb[t]); });
  }
}

template <typename in_t, typename out_t, typename acc_t>
void affine_strided(const in_t* x, int64_t sx, out_t* y, int64_t n, const acc_t* a, const acc_t* b, int64_t sc) {
  for (int64_t t = 0; t < n; ++t)
    y[t] = math::cast_out<out_t>(math::normalize_apply(static_cast<acc_t>(x[t * sx]), a[t * sc], b[t * sc]));
}

// NOLINTEND

// Channels-last input written channels-first (the HWC -> CHW transpose fused into the pass): kC interleaved
// channels of n pixels go to kC planes `ys` elements apart. kC is a compile-time constant so the strided loads
// become shuffles.
template <int kC, typename in_t, typename out_t, typename acc_t>
void affine_deinterleave(const in_t* __restrict x, out_t* __restrict y, int64_t ys, int64_t n,
                         const acc_t* __restrict a, const acc_t* __restrict b) {
  for (int c = 0; c < kC; ++c) {
    const acc_t ac = a[c], bc = b[c];
    out_t* __restrict yc = y + c * ys;
    emit<out_t, acc_t>(yc, n, [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(x[t * kC + c]), ac, bc); });
  }
}

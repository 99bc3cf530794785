// clamp's CPU inner loops. Included once per build by clamp.cpp (AVX-512, AVX2+FMA, baseline; see
// tensorops/cpu_isa.h), so no #pragma once and no includes: the names resolve in the including namespace.
// Every value and gradient weight comes from math.h (the same functions the CUDA kernels call).
//
// `#pragma GCC ivdep`: the output may be the input itself (clamp_), always at the same index, which is safe to
// vectorize; without the pragma GCC's run-time alias check would send the in-place case to scalar code.
// NOLINTBEGIN

// y = clamp(x) over a contiguous run with bounds fixed for the run (scalar bounds, or tensor bounds broadcast
// along it and checked not to be NaN by the caller).
template <typename in_t, typename acc_t, bool HasLo, bool HasHi>
void clamp_run_const(const in_t* x, in_t* y, int64_t n, acc_t lo, acc_t hi) {
#pragma GCC ivdep
  for (int64_t t = 0; t < n; ++t) {
    acc_t v = static_cast<acc_t>(x[t]);
    if (HasLo) v = math::clamp_lower(v, lo);
    if (HasHi) v = math::clamp_upper(v, hi);
    y[t] = math::cast_out<in_t>(v);
  }
}

// float16 / bfloat16 with bounds fixed for the run, on the raw bits (math::clamp_bits16).
template <uint16_t kInfBits, bool HasLo, bool HasHi>
void clamp_run_const_bits16(const uint16_t* x, uint16_t* y, int64_t n, uint16_t lo, uint16_t hi) {
  const int16_t klo = math::clamp_key16(lo), khi = math::clamp_key16(hi);
#pragma GCC ivdep
  for (int64_t t = 0; t < n; ++t) y[t] = math::clamp_bits16<kInfBits, HasLo, HasHi>(x[t], lo, klo, hi, khi);
}

// The run above for any dtype: float16 / bfloat16 on the raw bits, everything else in the compute type acc_t.
template <typename in_t, typename acc_t, bool HasLo, bool HasHi>
void clamp_run_fixed(const in_t* x, in_t* y, int64_t n, in_t lo, in_t hi) {
  if constexpr (std::is_same_v<in_t, c10::Half> || std::is_same_v<in_t, c10::BFloat16>) {
    constexpr uint16_t kInf = std::is_same_v<in_t, c10::Half> ? 0x7C00 : 0x7F80;
    clamp_run_const_bits16<kInf, HasLo, HasHi>(reinterpret_cast<const uint16_t*>(x), reinterpret_cast<uint16_t*>(y),
                                               n, lo.x, hi.x);
  } else {
    clamp_run_const<in_t, acc_t, HasLo, HasHi>(x, y, n, static_cast<acc_t>(lo), static_cast<acc_t>(hi));
  }
}

// Contiguous run with a bound value per element (NaN bounds propagate).
template <typename in_t, typename acc_t, bool HasLo, bool HasHi>
void clamp_run_tensor_contig(const in_t* x, const in_t* lo, const in_t* hi, in_t* y, int64_t n) {
#pragma GCC ivdep
  for (int64_t t = 0; t < n; ++t) {
    acc_t v = static_cast<acc_t>(x[t]);
    if (HasLo && HasHi)
      v = math::clamp_both_nan(v, static_cast<acc_t>(lo[t]), static_cast<acc_t>(hi[t]));
    else if (HasLo)
      v = math::clamp_lower_nan(v, static_cast<acc_t>(lo[t]));
    else
      v = math::clamp_upper_nan(v, static_cast<acc_t>(hi[t]));
    y[t] = math::cast_out<in_t>(v);
  }
}

// Any strides (bound strides are 0 where they broadcast).
template <typename in_t, typename acc_t, bool HasLo, bool HasHi>
void clamp_run_tensor_strided(const in_t* x, int64_t sx, const in_t* lo, int64_t slo, const in_t* hi,
                              int64_t shi, in_t* y, int64_t sy, int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    acc_t v = static_cast<acc_t>(x[t * sx]);
    if (HasLo && HasHi)
      v = math::clamp_both_nan(v, static_cast<acc_t>(lo[t * slo]), static_cast<acc_t>(hi[t * shi]));
    else if (HasLo)
      v = math::clamp_lower_nan(v, static_cast<acc_t>(lo[t * slo]));
    else
      v = math::clamp_upper_nan(v, static_cast<acc_t>(hi[t * shi]));
    y[t * sy] = math::cast_out<in_t>(v);
  }
}

template <typename in_t, typename acc_t, bool HasLo, bool HasHi>
void clamp_run_const_strided(const in_t* x, int64_t sx, in_t* y, int64_t sy, int64_t n, acc_t lo, acc_t hi) {
  for (int64_t t = 0; t < n; ++t) {
    acc_t v = static_cast<acc_t>(x[t * sx]);
    if (HasLo) v = math::clamp_lower(v, lo);
    if (HasHi) v = math::clamp_upper(v, hi);
    y[t * sy] = math::cast_out<in_t>(v);
  }
}

// Backward over a contiguous run whose bounds are fixed for the run: grad_input (when WantGi) and the sums of
// the gradient that goes to min and to max (when WantSums). The sums use kLanes independent float
// accumulators (vectorizable without reassociating a single sum), flushed into sum_t (double) every block.
// GradConst: the incoming gradient is broadcast along the run (stride 0, e.g. from out.sum().backward()).
template <typename in_t, typename acc_t, typename sum_t, bool HasLo, bool HasHi, bool ScalarBounds, bool WantGi,
          bool WantSums, bool GradConst>
void clamp_backward_run_const(const in_t* g, const in_t* x, in_t* gi, int64_t n, acc_t lo, acc_t hi,
                              sum_t* sum_lo, sum_t* sum_hi) {
  constexpr int64_t kLanes = 16;
  constexpr int64_t kBlock = 2048;
  int64_t t = 0;
  sum_t total_lo = 0, total_hi = 0;
  for (; t + kBlock <= n; t += kBlock) {
    acc_t alo[kLanes] = {}, ahi[kLanes] = {};
    for (int64_t b = 0; b < kBlock; b += kLanes) {
#pragma GCC ivdep
      for (int64_t j = 0; j < kLanes; ++j) {
        const int64_t i = t + b + j;
        const acc_t v = static_cast<acc_t>(x[i]);
        const acc_t gv = static_cast<acc_t>(g[GradConst ? 0 : i]);
        if (WantGi)
          gi[i] = math::cast_out<in_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, ScalarBounds>(gv, v, lo, hi));
        if (WantSums && HasLo) alo[j] += math::clamp_grad_min<acc_t, HasHi>(gv, v, lo, hi);
        if (WantSums && HasHi) ahi[j] += math::clamp_grad_max<acc_t, HasLo>(gv, v, lo, hi);
      }
    }
    if (WantSums) {
      for (int64_t j = 0; j < kLanes; ++j) {
        total_lo += static_cast<sum_t>(alo[j]);
        total_hi += static_cast<sum_t>(ahi[j]);
      }
    }
  }
  for (; t < n; ++t) {
    const acc_t v = static_cast<acc_t>(x[t]);
    const acc_t gv = static_cast<acc_t>(g[GradConst ? 0 : t]);
    if (WantGi)
      gi[t] = math::cast_out<in_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, ScalarBounds>(gv, v, lo, hi));
    if (WantSums && HasLo) total_lo += static_cast<sum_t>(math::clamp_grad_min<acc_t, HasHi>(gv, v, lo, hi));
    if (WantSums && HasHi) total_hi += static_cast<sum_t>(math::clamp_grad_max<acc_t, HasLo>(gv, v, lo, hi));
  }
  if (WantSums && HasLo) *sum_lo += total_lo;
  if (WantSums && HasHi) *sum_hi += total_hi;
}

// Backward over a contiguous run with a bound entry per element, also contiguous (bounds as large as the
// output): grad_input and the bounds' gradient sums, accumulated straight into sum_t buffers.
template <typename in_t, typename acc_t, typename sum_t, bool HasLo, bool HasHi, bool WantGi, bool WantSums,
          bool GradConst>
void clamp_backward_run_tensor_contig(const in_t* g, const in_t* x, in_t* gi, int64_t n, const in_t* lo,
                                      const in_t* hi, sum_t* slo, sum_t* shi) {
#pragma GCC ivdep
  for (int64_t t = 0; t < n; ++t) {
    const acc_t v = static_cast<acc_t>(x[t]);
    const acc_t gv = static_cast<acc_t>(g[GradConst ? 0 : t]);
    const acc_t l = HasLo ? static_cast<acc_t>(lo[t]) : acc_t(0);
    const acc_t h = HasHi ? static_cast<acc_t>(hi[t]) : acc_t(0);
    if (WantGi) gi[t] = math::cast_out<in_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, false>(gv, v, l, h));
    if (WantSums && HasLo) slo[t] += static_cast<sum_t>(math::clamp_grad_min<acc_t, HasHi>(gv, v, l, h));
    if (WantSums && HasHi) shi[t] += static_cast<sum_t>(math::clamp_grad_max<acc_t, HasLo>(gv, v, l, h));
  }
}

// Backward over a contiguous run whose bounds repeat with a short period (channels_last input with (1, C, 1, 1)
// bounds): pl/ph hold the bound values for `len` positions (a multiple of the period: PeriodicPattern,
// tensorops/cpu_loop.h), and the gradient sums go to per-position float accumulators, flushed into dl/dh
// (sum_t, len entries) every kFlush repetitions; the caller folds positions back onto the bound's entries.
template <typename in_t, typename acc_t, typename sum_t, bool HasLo, bool HasHi, bool WantGi, bool WantSums>
void clamp_backward_run_pattern(const in_t* g, const in_t* x, in_t* gi, int64_t n, const acc_t* pl, const acc_t* ph,
                                int64_t len, sum_t* dl, sum_t* dh) {
  constexpr int64_t kFlush = 32;
  acc_t al[kPatternCapacity], ah[kPatternCapacity];
  for (int64_t j = 0; j < len; ++j) al[j] = ah[j] = acc_t(0);
  int64_t reps = 0;
  for (int64_t start = 0; start < n; start += len) {
    const int64_t m = std::min(len, n - start);
    const in_t* gs = g + start;
    const in_t* xs = x + start;
    in_t* gis = gi + (WantGi ? start : 0);
#pragma GCC ivdep
    for (int64_t j = 0; j < m; ++j) {
      const acc_t v = static_cast<acc_t>(xs[j]);
      const acc_t gv = static_cast<acc_t>(gs[j]);
      const acc_t l = pl[j], h = ph[j];
      if (WantGi) gis[j] = math::cast_out<in_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, false>(gv, v, l, h));
      if (WantSums && HasLo) al[j] += math::clamp_grad_min<acc_t, HasHi>(gv, v, l, h);
      if (WantSums && HasHi) ah[j] += math::clamp_grad_max<acc_t, HasLo>(gv, v, l, h);
    }
    if (WantSums && (++reps == kFlush || start + len >= n)) {
      for (int64_t j = 0; j < len; ++j) {
        dl[j] += static_cast<sum_t>(al[j]);
        dh[j] += static_cast<sum_t>(ah[j]);
        al[j] = ah[j] = acc_t(0);
      }
      reps = 0;
    }
  }
}

// Backward with any strides and a bound entry per element: `lo`/`hi` and `sums_lo`/`sums_hi` are indexed by
// the bound's entry k = klo + t * slo (the same index for the value and for its gradient sum).
template <typename in_t, typename acc_t, typename sum_t, bool HasLo, bool HasHi, bool ScalarBounds>
void clamp_backward_run_strided(const in_t* g, int64_t sg, const in_t* x, int64_t sx, in_t* gi, int64_t sgi,
                                const in_t* lo, int64_t klo, int64_t slo, const in_t* hi, int64_t khi,
                                int64_t shi, sum_t* sums_lo, sum_t* sums_hi, int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    const acc_t v = static_cast<acc_t>(x[t * sx]);
    const acc_t gv = static_cast<acc_t>(g[t * sg]);
    const int64_t a = klo + t * slo, b = khi + t * shi;
    const acc_t l = HasLo ? static_cast<acc_t>(lo[a]) : acc_t(0);
    const acc_t h = HasHi ? static_cast<acc_t>(hi[b]) : acc_t(0);
    if (gi) gi[t * sgi] = math::cast_out<in_t>(math::clamp_grad_input<acc_t, HasLo, HasHi, ScalarBounds>(gv, v, l, h));
    if (sums_lo) sums_lo[a] += static_cast<sum_t>(math::clamp_grad_min<acc_t, HasHi>(gv, v, l, h));
    if (sums_hi) sums_hi[b] += static_cast<sum_t>(math::clamp_grad_max<acc_t, HasLo>(gv, v, l, h));
  }
}

// NOLINTEND

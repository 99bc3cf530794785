// clamp's per-element math: value rules and gradient weights, shared by the CPU and CUDA kernels. Part of math.h.
#pragma once
#include <cstdint>

#include "tensorops/macros.h"

namespace tensorops {
namespace math {

// clamp: torch.clamp's value rules and gradient weights. T is the compute type: the result dtype itself, or float
// for float16/bfloat16 (exact: a clamp returns one of its operands, and every half/bfloat16 value is a float).
//
// Values (CPU and CUDA torch agree on these; checked empirically against torch 2.x):
//  * a NaN input stays NaN;
//  * a NaN bound makes the result NaN. A NaN *tensor* bound does so where it is NaN (elementwise); a NaN
//    *scalar* bound makes the whole result NaN, which the host code handles once with a fill
//    (clamp_scalar_is_nan), so the per-element scalar rule below never sees one;
//  * min > max gives max everywhere (the max is applied last);
//  * integer types have no NaN: the NaN tests compile away (v != v is false).

template <typename T>
TENSOROPS_HD bool clamp_isnan(T v) {
  return v != v;  // NOLINT: false for integers, true only for NaN
}

// Scalar bounds, or tensor bounds already known not to be NaN (checked once per run of elements).
// Written as selects, so they vectorize to compare+blend (or max/min) instructions.
template <typename T>
TENSOROPS_HD T clamp_lower(T x, T lo) {
  return x < lo ? lo : x;  // NaN x: the comparison is false and x (NaN) is kept
}
template <typename T>
TENSOROPS_HD T clamp_upper(T x, T hi) {
  return hi < x ? hi : x;
}
template <typename T>
TENSOROPS_HD T clamp_both(T x, T lo, T hi) {
  return clamp_upper(clamp_lower(x, lo), hi);  // min > max: the result is hi
}

// Tensor bounds read per element: a NaN in x, lo or hi gives NaN (torch's maximum/minimum/clamp kernels).
template <typename T>
TENSOROPS_HD T clamp_lower_nan(T x, T lo) {
  const T r = clamp_lower(x, lo);
  return clamp_isnan(lo) ? lo : r;
}
template <typename T>
TENSOROPS_HD T clamp_upper_nan(T x, T hi) {
  const T r = clamp_upper(x, hi);
  return clamp_isnan(hi) ? hi : r;
}
template <typename T>
TENSOROPS_HD T clamp_both_nan(T x, T lo, T hi) {
  T r = clamp_both(x, lo, hi);
  r = clamp_isnan(hi) ? hi : r;
  return clamp_isnan(lo) ? lo : r;
}

// The value for the bounds present: NanBounds, tensor bounds read per element (NaN propagates); else number
// bounds, or tensor bounds known not to be NaN.
template <typename T, bool HasLo, bool HasHi, bool NanBounds>
TENSOROPS_HD T clamp_value(T v, T lo, T hi) {
  if (NanBounds) {
    if (HasLo && HasHi) return clamp_both_nan(v, lo, hi);
    if (HasLo) return clamp_lower_nan(v, lo);
    return clamp_upper_nan(v, hi);
  }
  if (HasLo) v = clamp_lower(v, lo);
  if (HasHi) v = clamp_upper(v, hi);
  return v;
}

// A NaN scalar bound (given as double by the host): the whole result is NaN, whatever the input.
TENSOROPS_HD bool clamp_scalar_is_nan(bool has, double v) { return has && v != v; }  // NOLINT

// float16 / bfloat16 bounds fixed for a run (number bounds, per-channel bounds) on the CPU: compare in the
// integer domain and select the original bit patterns, so a loop needs no half<->float conversions (c10's do
// not vectorize) and compiles to 16-bit integer vector code. key() maps a 16-bit float to an int16 with the
// same order for every non-NaN value and with -0 == +0; kInfBits is the format's +inf (0x7C00 for float16,
// 0x7F80 for bfloat16), anything above it in magnitude is NaN. Same results as clamp_lower/upper in float.
TENSOROPS_HD int16_t clamp_key16(uint16_t h) {
  const int16_t mag = static_cast<int16_t>(h & 0x7FFF);
  return (h & 0x8000) ? static_cast<int16_t>(-mag) : mag;
}
template <uint16_t kInfBits, bool HasLo, bool HasHi>
TENSOROPS_HD uint16_t clamp_bits16(uint16_t x, uint16_t lo, int16_t klo, uint16_t hi, int16_t khi) {
  const int16_t kx = clamp_key16(x);
  uint16_t r = x;
  int16_t kr = kx;
  if (HasLo) {
    r = kx < klo ? lo : r;
    kr = kx < klo ? klo : kr;
  }
  if (HasHi) r = khi < kr ? hi : r;
  return (x & 0x7FFF) > kInfBits ? x : r;  // NaN input stays NaN
}

// Gradients. torch's clamp backward, as this torch (2.14) computes it, measured with torch.autograd over every
// combination of x, min, max in {-inf, -1, 0, 0.5, 1, inf, NaN} (tests/test_clamp.py checks the same grid).
// It is not the textbook "input where min <= x <= max": ties split the gradient in halves and NaN rules differ
// between tensor and number bounds. With g the incoming gradient:
//
//  tensor min and max (lt = min < max, le = min <= max):
//    input  g * [!(x < min) && !(x > max)], halved when x ties a bound and lt (x == min == max: all of g)
//    min    g * [x < min && le]      + g/2 * [x == min && lt]
//    max    g * [max < min || (x > max && le)] + g/2 * [x == max && lt]
//    (a NaN x sends g to input; a NaN bound stops the "< / >" terms that involve it)
//  tensor min only (torch's maximum backward):  input g * (x < min ? 0 : x == min ? 1/2 : 1),
//                                               min   g * (x > min ? 0 : x == min ? 1/2 : 1)  (NaN: both get g)
//  tensor max only (minimum backward):          input g * (x > max ? 0 : x == max ? 1/2 : 1),
//                                               max   g * (x < max ? 0 : x == max ? 1/2 : 1)
//  number bounds: input g * [x > min] * [x < max] (strict: ties and NaN get 0).
//
// The weights are 0, 1/2 or 1 and are applied with selects, never multiplications by 0, so an inf or NaN
// gradient stays out of the elements it does not reach (torch uses where / masked_fill).
// Each function picks a weight w in {0, 1/2, 1} through a chain of selects between constants (each select
// is a compare and a blend in vector code, with no branch: GCC turns conditions combined with && / || / & on
// bools back into control flow and then refuses to vectorize), and returns g * w, or 0 when w is 0 so that an
// inf or NaN gradient stays out of the elements it does not reach (torch uses where / masked_fill).
template <typename T>
TENSOROPS_HD T clamp_apply_weight(T g, T w) {
  const T gw = g * w;  // exact: w is 1 or 1/2
  return w == T(0) ? T(0) : gw;
}

template <typename T, bool HasLo, bool HasHi, bool ScalarBounds>
TENSOROPS_HD T clamp_grad_input(T g, T x, T lo, T hi) {
  const T zero(0), half(0.5), one(1);
  T w = one;
  if (ScalarBounds) {
    if (HasLo) w = x > lo ? w : zero;
    if (HasHi) w = x < hi ? w : zero;
  } else if (HasLo && HasHi) {
    const T tie = lo < hi ? half : one;  // a tie with a bound halves the gradient only when min < max
    w = x == lo ? tie : w;
    w = x == hi ? tie : w;
    w = x < lo ? zero : w;
    w = x > hi ? zero : w;
  } else if (HasLo) {
    w = x == lo ? half : w;
    w = x < lo ? zero : w;
  } else {
    w = x == hi ? half : w;
    w = x > hi ? zero : w;
  }
  return clamp_apply_weight(g, w);
}

// The weight of the gradient that goes to one bound b (lo, or hi when Upper), written once for both: "past"
// is the side where b clamps x (x < lo for min, x > hi for max). With the other bound present (HasOther):
// all of g past b when lo <= hi, half of it on a tie when lo < hi, and for max also all of g where hi < lo
// (the output is max everywhere). Alone: torch's maximum / minimum backward (NaN sends g to both).
template <typename T, bool Upper>
TENSOROPS_HD bool clamp_past(T x, T b) {
  if constexpr (Upper)
    return x > b;
  else
    return x < b;
}

template <typename T, bool Upper, bool HasOther>
TENSOROPS_HD T clamp_grad_bound(T g, T x, T b, T lo, T hi) {
  const T zero(0), half(0.5), one(1);
  T w;
  if (HasOther) {
    const T tie = lo < hi ? half : zero;
    const T past = lo <= hi ? one : zero;
    w = zero;
    w = x == b ? tie : w;
    w = clamp_past<T, Upper>(x, b) ? past : w;
    if (Upper) w = hi < lo ? one : w;  // min > max: the output is max everywhere
  } else {
    w = one;
    w = x == b ? half : w;
    w = clamp_past<T, !Upper>(x, b) ? zero : w;
  }
  return clamp_apply_weight(g, w);
}

template <typename T, bool HasHi>
TENSOROPS_HD T clamp_grad_min(T g, T x, T lo, T hi) {
  return clamp_grad_bound<T, false, HasHi>(g, x, lo, lo, hi);
}

template <typename T, bool HasLo>
TENSOROPS_HD T clamp_grad_max(T g, T x, T lo, T hi) {
  return clamp_grad_bound<T, true, HasLo>(g, x, hi, lo, hi);
}

}  // namespace math
}  // namespace tensorops

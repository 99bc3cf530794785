// Per-element math, written once and called from both the CPU and the CUDA kernels, so the CPU tests exercise
// the exact expressions the GPU runs. Only plain arithmetic lives here: no memory access, no launch logic.
#pragma once
#include <cstdint>
#include <cstring>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "tensorops/macros.h"

namespace tensorops {
namespace math {

// ---------------------------------------------------------------------------------------------------------
// Storing a float result. On the GPU the c10 conversions use hardware instructions. On the CPU c10's
// conversions to half/bfloat16 do not vectorize, so these branch-free round-to-nearest-even versions (same
// results, NaN kept as a quiet NaN) let a whole loop compile to vector code.
template <typename out_t, typename acc_t>
TENSOROPS_HD out_t cast_out(acc_t v) {
  return static_cast<out_t>(v);
}

#if !defined(__CUDA_ARCH__)
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// all-ones when cond holds: selects written as masks keep the loops branch-free for the vectorizer
inline uint32_t mask_if(bool cond) { return 0u - static_cast<uint32_t>(cond); }

template <>
inline c10::BFloat16 cast_out<c10::BFloat16, float>(float v) {
  const uint32_t u = float_bits(v);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = mask_if((u & 0x7FFFFFFFu) > 0x7F800000u);
  return c10::BFloat16(static_cast<uint16_t>((nan & 0x7FC0u) | (~nan & rounded)), c10::BFloat16::from_bits());
}

template <>
inline c10::Half cast_out<c10::Half, float>(float v) {
  // Scale so that one float addition rounds the mantissa to half precision (subnormal halves included), then
  // read the half's exponent and mantissa off the rounded float. |v| past the half range overflows to inf.
  const uint32_t w = float_bits(v);
  const uint32_t twice = w + w;  // the sign shifted out
  const uint32_t sign = w & 0x80000000u;
  float base = (bits_float(w & 0x7FFFFFFFu) * 0x1.0p+112f) * 0x1.0p-110f;
  uint32_t bias = twice & 0xFF000000u;
  bias = bias > 0x71000000u ? bias : 0x71000000u;
  base = bits_float((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t value = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  const uint32_t nan = mask_if(twice > 0xFF000000u);
  return c10::Half(static_cast<uint16_t>((sign >> 16) | (nan & 0x7E00u) | (~nan & value)), c10::Half::from_bits());
}
#endif

// ---------------------------------------------------------------------------------------------------------
// normalize: y = (x * scale - mean) / std, evaluated as y = x * a + b with
//   a = scale / std and b = -mean / std,
// so the pass over the data is one multiply-add per element. The coefficients are computed per statistics
// entry (per channel, or per sample and channel), never per element on the CPU.
template <typename acc_t>
TENSOROPS_HD acc_t normalize_coef_a(acc_t scale, acc_t std) {
  return scale / std;
}
template <typename acc_t>
TENSOROPS_HD acc_t normalize_coef_b(acc_t mean, acc_t std) {
  return -mean / std;
}
template <typename acc_t>
TENSOROPS_HD acc_t normalize_apply(acc_t x, acc_t a, acc_t b) {
  return x * a + b;
}
// With a zero (or tiny) std the coefficients overflow and x * a + b would give inf - inf = NaN where the
// formula gives +-inf; then the formula itself is evaluated. Used where statistics come as tensors, whose
// values the host does not see.
template <typename acc_t>
TENSOROPS_HD bool normalize_coefs_finite(acc_t a, acc_t b) {
  return a - a == acc_t(0) && b - b == acc_t(0);  // false for inf and NaN
}
template <typename acc_t>
TENSOROPS_HD acc_t normalize_value(acc_t x, acc_t a, acc_t b, acc_t scale, acc_t mean, acc_t std) {
  return normalize_coefs_finite(a, b) ? normalize_apply(x, a, b) : (x * scale - mean) / std;
}

// Backward, per element, with g the incoming gradient and y the recomputed output:
//   d input = g * a,   d mean = -g / std,   d std = -g * y / std.
// The statistics' gradients are sums over the elements that share one statistics entry; the kernels
// accumulate g and g * y per entry and finish with these two functions.
template <typename acc_t>
TENSOROPS_HD acc_t normalize_grad_mean(acc_t sum_g, acc_t std) {
  return -sum_g / std;
}
template <typename acc_t>
TENSOROPS_HD acc_t normalize_grad_std(acc_t sum_gy, acc_t std) {
  return -sum_gy / std;
}

// =========================================================================================================
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

template <typename T, bool HasHi>
TENSOROPS_HD T clamp_grad_min(T g, T x, T lo, T hi) {
  const T zero(0), half(0.5), one(1);
  T w;
  if (HasHi) {
    const T tie = lo < hi ? half : zero;
    const T below = lo <= hi ? one : zero;
    w = zero;
    w = x == lo ? tie : w;
    w = x < lo ? below : w;
  } else {  // torch's maximum backward: NaN sends the gradient to both
    w = one;
    w = x == lo ? half : w;
    w = x > lo ? zero : w;
  }
  return clamp_apply_weight(g, w);
}

template <typename T, bool HasLo>
TENSOROPS_HD T clamp_grad_max(T g, T x, T lo, T hi) {
  const T zero(0), half(0.5), one(1);
  T w;
  if (HasLo) {
    const T tie = lo < hi ? half : zero;
    const T above = lo <= hi ? one : zero;
    w = zero;
    w = x == hi ? tie : w;
    w = x > hi ? above : w;
    w = hi < lo ? one : w;  // min > max: the output is max everywhere
  } else {  // torch's minimum backward
    w = one;
    w = x == hi ? half : w;
    w = x < hi ? zero : w;
  }
  return clamp_apply_weight(g, w);
}

}  // namespace math
}  // namespace tensorops

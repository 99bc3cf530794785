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

}  // namespace math
}  // namespace tensorops

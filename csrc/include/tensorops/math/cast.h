// Storing a float result (math::cast_out), shared by every family's CPU and CUDA kernels. Part of math.h.
#pragma once
#include <cstdint>
#include <cstring>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include "tensorops/macros.h"

namespace tensorops {
namespace math {

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

}  // namespace math
}  // namespace tensorops

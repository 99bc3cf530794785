// Run-time choice between the AVX2+FMA and the baseline build of a family's CPU loops.
//
// A family keeps its inner loops in a header with no includes of its own (e.g. cpu/normalize_loops.h) and
// includes it twice from its .cpp, once per build:
//
//   TENSOROPS_AVX2_BUILD
//   #include "normalize_loops.h"
//   TENSOROPS_BASE_BUILD
//   #include "normalize_loops.h"
//   TENSOROPS_END_BUILDS
//
// then calls TENSOROPS_CPU_DISPATCH(fn)(args...). Both builds compute the same values from math.h. Each build
// sits in its own namespace (avx2, base) that defines `constexpr bool kF16C`: whether the loops may store
// half outputs with the F16C instruction (store_half_f16c, below; normalize_loops.h's `emit` does so).
#pragma once
#include <cstdint>

#include "tensorops/macros.h"
#include "tensorops/math/cast.h"

#if TENSOROPS_CPU_AVX2
#include <immintrin.h>
#endif

namespace tensorops {

inline bool cpu_has_avx2() {
#if TENSOROPS_CPU_AVX2
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
  return yes;
#else
  return false;
#endif
}

#if TENSOROPS_CPU_AVX2
// float -> half with the F16C instruction (round to nearest even, as torch rounds), 8 values at a time.
__attribute__((target("avx2,fma,f16c"))) inline void store_half_f16c(c10::Half* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = math::cast_out<c10::Half>(src[i]);
}
#endif

}  // namespace tensorops

#if TENSOROPS_CPU_AVX2
#define TENSOROPS_BEGIN_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
#define TENSOROPS_END_AVX2 _Pragma("GCC pop_options")
#define TENSOROPS_CPU_DISPATCH(...) (::tensorops::cpu_has_avx2() ? avx2::__VA_ARGS__ : base::__VA_ARGS__)
#else
#define TENSOROPS_BEGIN_AVX2
#define TENSOROPS_END_AVX2
#define TENSOROPS_CPU_DISPATCH(...) (base::__VA_ARGS__)
#endif

// The two builds of a loop header (see the top of this file).
#define TENSOROPS_AVX2_BUILD \
  TENSOROPS_BEGIN_AVX2       \
  namespace avx2 {           \
  constexpr bool kF16C = true;
#define TENSOROPS_BASE_BUILD \
  }                          \
  TENSOROPS_END_AVX2         \
  namespace base {           \
  constexpr bool kF16C = false;
#define TENSOROPS_END_BUILDS }

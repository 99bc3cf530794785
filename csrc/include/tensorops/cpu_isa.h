// Run-time choice between the AVX2+FMA and the baseline build of a family's CPU loops.
//
// A family keeps its inner loops in a header with no includes of its own (e.g. cpu/normalize_loops.h) and
// includes it twice from its .cpp:
//
//   TENSOROPS_BEGIN_AVX2            namespace avx2 { #include "normalize_loops.h" }   TENSOROPS_END_AVX2
//   namespace base { #include "normalize_loops.h" }
//
// then calls TENSOROPS_CPU_DISPATCH(fn)(args...). Both builds compute the same values from math.h.
#pragma once
#include "tensorops/macros.h"

namespace tensorops {

inline bool cpu_has_avx2() {
#if TENSOROPS_CPU_AVX2
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
#else
  return false;
#endif
}

}  // namespace tensorops

#if TENSOROPS_CPU_AVX2
#define TENSOROPS_BEGIN_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define TENSOROPS_END_AVX2 _Pragma("GCC pop_options")
#define TENSOROPS_CPU_DISPATCH(...) (::tensorops::cpu_has_avx2() ? avx2::__VA_ARGS__ : base::__VA_ARGS__)
#else
#define TENSOROPS_BEGIN_AVX2
#define TENSOROPS_END_AVX2
#define TENSOROPS_CPU_DISPATCH(...) (base::__VA_ARGS__)
#endif

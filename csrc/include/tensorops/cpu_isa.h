// Run-time choice between the AVX-512, the AVX2+FMA and the baseline build of a family's CPU loops.
//
// A family keeps its inner loops in a header with no includes of its own (e.g. cpu/normalize_loops.h) and
// includes it once per build:
//
//   TENSOROPS_AVX512_BUILD
//   #include "normalize_loops.h"
//   TENSOROPS_AVX2_BUILD
//   #include "normalize_loops.h"
//   TENSOROPS_BASE_BUILD
//   #include "normalize_loops.h"
//   TENSOROPS_END_BUILDS
//
// then calls TENSOROPS_CPU_DISPATCH(fn)(args...). Every build computes the same values from math.h (no
// fast-math, no reassociation: wider vectors change no result), except that the AVX2 and AVX-512 builds, like
// the CUDA kernels, fuse normalize's x * a + b into one rounding (FMA) where the baseline build rounds twice
// (one unit in the last place at most). Each build sits in its own namespace (avx512, avx2, base) that defines
// `constexpr bool kF16C`: whether the loops may store half outputs with the F16C instruction (store_half_f16c,
// below; normalize_loops.h's `emit` does so), and `constexpr bool kHardFma`: whether the build has the FMA
// instruction (the augment loops' fused operations are exact either way: math/augment.h's fma_rn).
//
// Why a third build: torch's own CPU kernels run AVX-512 where the CPU has it, and on the memory-bound passes
// (clamp of a (32, 3, 224, 224) batch, 38.5 MB of traffic, much of it in the 32 MB L3) the AVX2 loops were a few
// percent behind them. Measured 2026-12-03 on the 2-core build machine (AMD EPYC with AVX-512), one thread, 15
// interleaved rounds, torch time / tensorops time, medians of two runs: float32 number bounds 0.96x-1.00x with
// AVX2 loops, 1.06x-1.08x with AVX-512 loops; int32 0.91x-0.92x and 0.96x-0.99x.
//
// TENSOROPS_CPU_ISA=base|avx2|avx512 (read once) caps the build used, so the tests run every build on a
// machine that has them all (tests/test_cpu_isa.py); tensorops._C.cpu_isa() names the build in use.
// TENSOROPS_CPU_ISA=avx512-novbmi runs the AVX-512 build without its AVX-512 VBMI byte-permute paths (cpu_vbmi()).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tensorops/macros.h"
#include "tensorops/math/cast.h"

#if TENSOROPS_CPU_AVX2
#include <immintrin.h>
#endif

namespace tensorops {

// The build the loops run: 2 AVX-512 (F, BW, VL, DQ, on top of the AVX2 set), 1 AVX2+FMA+F16C, 0 baseline; the
// best the CPU has, capped by TENSOROPS_CPU_ISA.
inline int cpu_isa_level() {
#if TENSOROPS_CPU_AVX2
  static const int level = [] {
    int best = 0;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
      best = 1;
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        best = 2;
    }
    const char* cap = std::getenv("TENSOROPS_CPU_ISA");
    if (cap != nullptr) {
      const std::string c(cap);
      if (c == "base" || c == "base-nofma") best = 0;
      else if (c == "avx2" && best > 1) best = 1;
    }
    return best;
  }();
  return level;
#else
  return 0;
#endif
}
// Whether the AVX-512 build may use AVX-512 VBMI's byte permutes (vpermb): the CPU has them, the AVX-512 build
// runs, and TENSOROPS_CPU_ISA is not avx512-novbmi.
inline bool cpu_vbmi() {
#if TENSOROPS_CPU_AVX2
  static const bool on = [] {
    const char* cap = std::getenv("TENSOROPS_CPU_ISA");
    return cpu_isa_level() == 2 && __builtin_cpu_supports("avx512vbmi") &&
           !(cap != nullptr && std::string(cap) == "avx512-novbmi");
  }();
  return on;
#else
  return false;
#endif
}

// Whether the baseline build may run its FMA variant (x86 only; TENSOROPS_BASE_FMA_BUILD below): the baseline build
// runs, the CPU has FMA (and so AVX: AMD's Piledriver to Excavator have them without AVX2, and every AVX2 CPU capped
// at base), and TENSOROPS_CPU_ISA is not base-nofma (which runs the build as a CPU without FMA does).
inline bool cpu_base_fma() {
#if TENSOROPS_CPU_AVX2
  static const bool on = [] {
    const char* cap = std::getenv("TENSOROPS_CPU_ISA");
    return cpu_isa_level() == 0 && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx") &&
           !(cap != nullptr && std::string(cap) == "base-nofma");
  }();
  return on;
#else
  return false;
#endif
}

inline const char* cpu_isa_name() {
  static const char* const names[] = {"base", "avx2", "avx512"};
  return names[cpu_isa_level()];
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
#define TENSOROPS_BEGIN_AVX512 \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq\")")
#define TENSOROPS_BEGIN_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
#define TENSOROPS_END_ISA _Pragma("GCC pop_options")
#define TENSOROPS_CPU_DISPATCH(...)                                                       \
  (::tensorops::cpu_isa_level() == 2   ? avx512::__VA_ARGS__                            \
   : ::tensorops::cpu_isa_level() == 1 ? avx2::__VA_ARGS__                              \
                                       : base::__VA_ARGS__)
#else
#define TENSOROPS_BEGIN_AVX512
#define TENSOROPS_BEGIN_AVX2
#define TENSOROPS_END_ISA
#define TENSOROPS_CPU_DISPATCH(...) (base::__VA_ARGS__)
#endif

// Whether the baseline build has a fused multiply-add instruction: on aarch64 (and the other 64-bit targets torch
// builds for) it does; x86-64's baseline has none, so there math/augment.h's fma_rn<false> rounds once in double
// arithmetic instead of calling libm's fmaf per value.
#if defined(__x86_64__) && !defined(__FMA__)
#define TENSOROPS_BASE_HARD_FMA false
#else
#define TENSOROPS_BASE_HARD_FMA true
#endif

// The three builds of a loop header (see the top of this file). Each defines kF16C and kHardFma (whether the
// build has the FMA instruction; the loops pass it to math/augment.h's fused operations).
#define TENSOROPS_AVX512_BUILD \
  TENSOROPS_BEGIN_AVX512       \
  namespace avx512 {           \
  constexpr bool kF16C = true; \
  constexpr bool kHardFma = true;
#define TENSOROPS_AVX2_BUILD \
  }                          \
  TENSOROPS_END_ISA          \
  TENSOROPS_BEGIN_AVX2       \
  namespace avx2 {           \
  constexpr bool kF16C = true; \
  constexpr bool kHardFma = true;
#define TENSOROPS_BASE_BUILD \
  }                          \
  TENSOROPS_END_ISA          \
  namespace base {           \
  constexpr bool kF16C = false; \
  constexpr bool kHardFma = TENSOROPS_BASE_HARD_FMA;
#define TENSOROPS_END_BUILDS }

// x86's baseline build once more with FMA, for a family whose math fuses multiply-adds (augment: math/augment.h's
// fma_rn, which the plain baseline build emulates in double arithmetic), after TENSOROPS_END_BUILDS:
//
//   TENSOROPS_BASE_FMA_BUILD
//   #include "augment_loops.h"
//   TENSOROPS_END_BASE_FMA_BUILD
//
// (inside #if TENSOROPS_CPU_AVX2) and TENSOROPS_CPU_DISPATCH_FMA(fn) in place of TENSOROPS_CPU_DISPATCH(fn).
// 128-bit vectors, as the baseline build's (and NEON's) are. Where the baseline build has the instruction already
// (aarch64) there is no variant.
#if TENSOROPS_CPU_AVX2
#define TENSOROPS_BASE_FMA_BUILD                                                                  \
  _Pragma("GCC push_options") _Pragma("GCC target(\"fma,prefer-vector-width=128\")") namespace base_fma { \
  constexpr bool kF16C = false;                                                                   \
  constexpr bool kHardFma = true;
#define TENSOROPS_END_BASE_FMA_BUILD \
  }                                  \
  TENSOROPS_END_ISA
#define TENSOROPS_CPU_DISPATCH_FMA(...) \
  (::tensorops::cpu_base_fma() ? base_fma::__VA_ARGS__ : TENSOROPS_CPU_DISPATCH(__VA_ARGS__))
#else
#define TENSOROPS_CPU_DISPATCH_FMA(...) TENSOROPS_CPU_DISPATCH(__VA_ARGS__)
#endif

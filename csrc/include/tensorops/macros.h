// Portability macros shared by CPU and CUDA translation units.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TENSOROPS_HD __host__ __device__ __forceinline__
#define TENSOROPS_UNROLL _Pragma("unroll")
#else
#define TENSOROPS_HD inline
#define TENSOROPS_UNROLL
#endif

// Hot CPU loops are compiled for AVX-512, for AVX2+FMA and for baseline x86-64, and picked at run time (cpu_isa.h),
// so a build made on one machine stays correct on any x86-64 and still uses wide vectors where it can.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__) && \
    !defined(TENSOROPS_NO_AVX2)
#define TENSOROPS_CPU_AVX2 1
#else
#define TENSOROPS_CPU_AVX2 0
#endif

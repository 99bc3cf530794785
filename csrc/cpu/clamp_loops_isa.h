// clamp's inner loops (clamp_loops.h) built for AVX-512, for AVX2+FMA and for baseline x86-64 (cpu_isa.h), for the
// two files that call them (clamp.cpp, clamp_backward.cpp). Included inside their anonymous namespace.
TENSOROPS_AVX512_BUILD
#include "clamp_loops.h"
TENSOROPS_AVX2_BUILD
#include "clamp_loops.h"
TENSOROPS_BASE_BUILD
#include "clamp_loops.h"
TENSOROPS_END_BUILDS

// Per-element math, written once and called from both the CPU and the CUDA kernels, so the CPU tests exercise
// the exact expressions the GPU runs. Only plain arithmetic lives here: no memory access, no launch logic.
// One header per op family under math/; this one includes them all.
#pragma once

#include "tensorops/math/cast.h"
#include "tensorops/math/clamp.h"
#include "tensorops/math/normalize.h"

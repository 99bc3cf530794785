// The headers nearly every C++ source of tensorops includes, parsed once per build: setup.py precompiles this file
// (GCC) and gives it to every C++ source with -include, as tests/_emulated.py does for the emulated builds. Parsing
// torch's headers was most of a host source's compile time (10 s of 12 at -O3 on the 2-core CI machine).
#pragma once
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

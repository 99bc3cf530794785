// A strided iteration plan shared by the CPU and CUDA launchers of elementwise ops.
//
// Operand 0 is the output, which is always dense (non-overlapping, no gaps). The plan orders the dimensions by
// the output's strides (innermost first), drops size-1 dimensions and merges neighbours that every operand
// walks contiguously. The output's offset is then the linear index itself, and every other operand's offset is
// a sum of index * stride over at most kMaxPlanDims dimensions. Broadcast operands have stride 0.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>

#include "tensorops/fast_divide.h"
#include "tensorops/macros.h"

namespace tensorops {

constexpr int kMaxPlanDims = 16;

template <int N>
struct Plan {
  int ndim = 1;
  int64_t numel = 0;
  int64_t sizes[kMaxPlanDims] = {};       // innermost first
  int64_t strides[N][kMaxPlanDims] = {};  // in elements, strides[0] belongs to the output

  // Offsets of every operand for a linear index (the output's offset is the index itself).
  template <typename index_t>
  TENSOROPS_HD void offsets(index_t linear, index_t (&off)[N]) const {
TENSOROPS_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
    // unrolled over the maximum with an early exit, so every array index is a compile-time constant and a
    // kernel reads the plan straight from its parameters instead of copying it to local memory
    TENSOROPS_UNROLL
    for (int d = 0; d < kMaxPlanDims; ++d) {
      if (d == ndim) break;
      const index_t size = static_cast<index_t>(sizes[d]);
      const index_t q = linear / size;
      const index_t i = linear - q * size;
      linear = q;
TENSOROPS_UNROLL
      for (int k = 0; k < N; ++k) off[k] += i * static_cast<index_t>(strides[k][d]);
    }
  }

  // Largest offset (in elements) any operand reaches, to pick 32- or 64-bit index math.
  int64_t max_offset() const {
    int64_t best = numel;
    for (int k = 0; k < N; ++k) {
      int64_t m = 0;
      for (int d = 0; d < ndim; ++d) m += (sizes[d] - 1) * std::abs(strides[k][d]);
      best = std::max(best, m);
    }
    return best;
  }
};

// A Plan prepared for one launch with index_t (int32_t or int64_t) index math, built on the host: every size but
// the outermost as a fast divisor (fast_divide.h: a multiply-high and a shift instead of a division per dimension
// and element), the strides in index_t. The GPU kernels walk this; Plan::offsets is the plain reference (tests
// compare the two on the CPU). Valid for linear indices in [0, numel) that fit index_t (cuda_utils.cuh's
// launches pick index_t so that they do).
template <int N, typename index_t>
struct LaunchPlan {
  int ndim = 1;
  index_t numel = 0;
  IntDivider<index_t> sizes[kMaxPlanDims];  // sizes[d].divisor: the size of dimension d
  index_t strides[N][kMaxPlanDims] = {};

  LaunchPlan() = default;
  explicit LaunchPlan(const Plan<N>& p) : ndim(p.ndim), numel(static_cast<index_t>(p.numel)) {
    for (int d = 0; d < p.ndim; ++d) {
      sizes[d] = IntDivider<index_t>(static_cast<index_t>(p.sizes[d]));
      for (int k = 0; k < N; ++k) strides[k][d] = static_cast<index_t>(p.strides[k][d]);
    }
  }

  // Offsets of every operand for a linear index (0 <= linear < numel); returns its index along dimension 0.
  TENSOROPS_HD index_t offsets(index_t linear, index_t (&off)[N]) const {
TENSOROPS_UNROLL
    for (int k = 0; k < N; ++k) off[k] = 0;
    index_t inner = linear;
    // unrolled over the maximum with an early exit, as Plan::offsets, so the plan stays in the parameter space
    TENSOROPS_UNROLL
    for (int d = 0; d < kMaxPlanDims; ++d) {
      if (d == ndim) break;
      // the outermost dimension's index is all that is left (linear < numel): no division
      const index_t i = d + 1 < ndim ? sizes[d].divmod(linear) : linear;
      if (d == 0) inner = i;
TENSOROPS_UNROLL
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
    return inner;
  }

  // From the offsets of linear - 1 (whose index along dimension 0 is `inner`) to those of `linear`: a step along
  // dimension 0 while it lasts, a full decomposition when it wraps. For threads that walk neighbouring elements.
  TENSOROPS_HD void next(index_t linear, index_t& inner, index_t (&off)[N]) const {
    if (++inner == sizes[0].divisor) {
      inner = offsets(linear, off);
    } else {
TENSOROPS_UNROLL
      for (int k = 0; k < N; ++k) off[k] += strides[k][0];
    }
  }
};

// `strides[k]` are operand k's strides, already broadcast to `sizes` (stride 0 on broadcast dims).
template <int N>
Plan<N> make_plan(c10::IntArrayRef sizes, const std::array<c10::IntArrayRef, N>& strides) {
  Plan<N> p;
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  p.numel = 1;
  for (auto s : sizes) p.numel *= s;
  // Dimensions that matter, ordered innermost first by the output's stride (ties: the later dim is inner).
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (sizes[d] != 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) {
    const int64_t sa = strides[0][a], sb = strides[0][b];
    return sa != sb ? sa < sb : a > b;
  });
  p.ndim = 0;
  for (int64_t d : dims) {
    if (p.ndim > 0) {
      const int cur = p.ndim - 1;
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        mergeable = mergeable && strides[k][d] == p.strides[k][cur] * p.sizes[cur];
      if (mergeable) {
        p.sizes[cur] *= sizes[d];
        continue;
      }
    }
    TORCH_CHECK(p.ndim < kMaxPlanDims, "tensorops: input: more than ", kMaxPlanDims,
                " dimensions that cannot be merged are not supported");
    for (int k = 0; k < N; ++k) p.strides[k][p.ndim] = strides[k][d];
    p.sizes[p.ndim++] = sizes[d];
  }
  if (p.ndim == 0) {  // every dim has size 1: one element
    p.ndim = 1;
    p.sizes[0] = 1;
    for (int k = 0; k < N; ++k) p.strides[k][0] = 0;
  }
  return p;
}

// Channels-last inputs with per-channel operands (normalize's statistics, clamp's (1, C, 1, 1) bounds) give a
// short innermost dimension (C) along which those operands vary, and a next one along which they do not. Fold
// the two into one long run when every other operand walks both contiguously: the CPU loops then see long
// runs and read the varying operands as a pattern repeating with the period C.
//
// `may_vary[k]`: operand k may be such a pattern operand (it must then be constant along the next dim); every
// other operand must be contiguous across both dims. On success the pattern operands have stride 0 along the
// merged run, their original inner strides are in `pattern_strides`, and the period (C) is returned; the phase
// of a position in a run is its output offset % period, since every outer output stride is a multiple of the
// period (checked). Returns 0 and leaves `p` as it was otherwise.
// The CUDA kernels do not fold: a GPU thread walks 4 elements, not a long run, and folding would trade one
// fast-divisor digit of LaunchPlan::offsets for a modulo by the period (no saving in index math).
template <int N>
int64_t fold_periodic_inner(Plan<N>& p, int64_t max_period, const std::array<bool, N>& may_vary,
                            int64_t (&pattern_strides)[N]) {
  if (p.ndim < 2 || p.sizes[0] > max_period) return 0;
  const int64_t period = p.sizes[0];
  bool varies = false;
  for (int k = 0; k < N; ++k) {
    pattern_strides[k] = 0;
    if (may_vary[k]) {
      if (p.strides[k][1] != 0) return 0;
      pattern_strides[k] = p.strides[k][0];
      varies = varies || p.strides[k][0] != 0;
    } else if (p.strides[k][0] != 1 || p.strides[k][1] != period) {
      return 0;
    }
  }
  if (!varies) return 0;
  for (int d = 2; d < p.ndim; ++d)
    if (p.strides[0][d] % period != 0) return 0;
  p.sizes[0] *= p.sizes[1];
  for (int k = 0; k < N; ++k) p.strides[k][0] = may_vary[k] ? 0 : 1;
  for (int d = 1; d + 1 < p.ndim; ++d) {
    p.sizes[d] = p.sizes[d + 1];
    for (int k = 0; k < N; ++k) p.strides[k][d] = p.strides[k][d + 1];
  }
  p.ndim -= 1;
  return period;
}

}  // namespace tensorops

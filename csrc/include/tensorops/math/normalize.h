// normalize's per-element math (also crop_mirror_normalize's), shared by the CPU and CUDA kernels. Part of math.h.
#pragma once

#include "tensorops/macros.h"

namespace tensorops {
namespace math {

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

// normalize's CPU pieces shared by the forward (normalize.cpp) and the backward (normalize_backward.cpp): the
// statistics' buffers and coefficients, and the backward entry point that normalize.cpp registers.
#pragma once
#include <array>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>

#include "tensorops/math/normalize.h"

namespace tensorops {
namespace cpu_normalize {

// Statistics tensors broadcast to a common shape, as contiguous acc_t buffers.
template <typename acc_t>
void stat_buffers(const at::Tensor& mean, const at::Tensor& std, c10::IntArrayRef shape, at::Tensor& m,
                  at::Tensor& s) {
  const auto acc = c10::CppTypeToScalarType<acc_t>::value;
  m = mean.to(acc).expand(shape).contiguous();
  s = std.to(acc).expand(shape).contiguous();
}

// Coefficients per statistics entry; false if any is not finite (a zero or tiny std).
template <typename acc_t>
bool coefficients(const at::Tensor& m, const at::Tensor& s, double scale, std::vector<acc_t>& A,
                  std::vector<acc_t>& B) {
  const int64_t K = m.numel();
  const acc_t* mp = m.const_data_ptr<acc_t>();
  const acc_t* sp = s.const_data_ptr<acc_t>();
  A.resize(K);
  B.resize(K);
  bool finite = true;
  for (int64_t k = 0; k < K; ++k) {
    A[k] = math::normalize_coef_a<acc_t>(scale, sp[k]);
    B[k] = math::normalize_coef_b<acc_t>(mp[k], sp[k]);
    finite = finite && math::normalize_coefs_finite(A[k], B[k]);
  }
  return finite;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> normalize_tensor_backward_cpu(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std, double scale,
    std::array<bool, 3> mask);

}  // namespace cpu_normalize
}  // namespace tensorops

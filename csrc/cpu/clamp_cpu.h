// clamp's CPU backward entry points, defined in clamp_backward.cpp and registered with the forward ops in clamp.cpp
// (two translation units, so that a parallel build compiles the forward and backward instantiations at once).
#pragma once
#include <array>
#include <optional>
#include <tuple>

#include <ATen/ATen.h>

namespace tensorops {
namespace cpu_clamp {

at::Tensor clamp_scalar_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                     const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max);

std::tuple<at::Tensor, at::Tensor, at::Tensor> clamp_backward_cpu(const at::Tensor& grad, const at::Tensor& input,
                                                                  const std::optional<at::Tensor>& min,
                                                                  const std::optional<at::Tensor>& max,
                                                                  std::array<bool, 3> mask);

}  // namespace cpu_clamp
}  // namespace tensorops

// clamp's entry points, the same on every device: the functional and in-place op of each signature (tensor
// bounds, number bounds) made from a device's two implementations impl(inplace, input, min, max), where
// `inplace` is the tensor written in place (undefined: a new output); and the registration of the family's ops.
#pragma once
#include <optional>

#include <ATen/ATen.h>
#include <torch/library.h>

namespace tensorops {
namespace clamp_entries {

template <auto Impl, typename Bound>
at::Tensor functional(const at::Tensor& input, const std::optional<Bound>& min, const std::optional<Bound>& max) {
  return Impl(at::Tensor(), input, min, max);
}

template <auto Impl, typename Bound>
void inplace(const at::Tensor& input, const std::optional<Bound>& min, const std::optional<Bound>& max) {
  Impl(input, input, min, max);
}

// Registers a device's clamp ops in its TORCH_LIBRARY_IMPL block: the four forward ops from the two
// implementations, and the two backward ops (each half on its own where a device keeps them in two files).
template <auto TensorImpl, auto ScalarImpl>
void register_forward(torch::Library& m) {
  m.impl("clamp", &functional<TensorImpl, at::Tensor>);
  m.impl("clamp_", &inplace<TensorImpl, at::Tensor>);
  m.impl("clamp_scalar", &functional<ScalarImpl, at::Scalar>);
  m.impl("clamp_scalar_", &inplace<ScalarImpl, at::Scalar>);
}

template <auto Backward, auto ScalarBackward>
void register_backward(torch::Library& m) {
  m.impl("clamp_backward", Backward);
  m.impl("clamp_scalar_backward", ScalarBackward);
}

template <auto TensorImpl, auto ScalarImpl, auto Backward, auto ScalarBackward>
void register_ops(torch::Library& m) {
  register_forward<TensorImpl, ScalarImpl>(m);
  register_backward<Backward, ScalarBackward>(m);
}

}  // namespace clamp_entries
}  // namespace tensorops

// normalize's host steps around a device's pass and the registration of its ops, the same on every device.
#pragma once
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/normalize_host.h"

namespace tensorops {
namespace normalize_entries {

// normalize_tensor: checks, the statistics' broadcast shape, the output; then pass(out, shape) unless the output
// is empty.
template <typename Pass>
at::Tensor normalize_tensor_with(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 at::ScalarType dtype, at::MemoryFormat memory_format, const Pass& pass) {
  normalize_host::check_input(input, dtype);
  const std::vector<int64_t> shape = normalize_host::tensor_stat_shape(input, mean, std);
  at::Tensor out = normalize_host::make_output(input, dtype, memory_format);
  if (out.numel() != 0) pass(out, shape);
  return out;
}

// Registers a device's normalize ops in its TORCH_LIBRARY_IMPL block (each half on its own where a device keeps
// the forward and the backward in two files).
template <auto Normalize, auto NormalizeTensor>
void register_forward(torch::Library& m) {
  m.impl("normalize", Normalize);
  m.impl("normalize_tensor", NormalizeTensor);
}

template <auto NormalizeTensorBackward>
void register_backward(torch::Library& m) {
  m.impl("normalize_tensor_backward", NormalizeTensorBackward);
}

template <auto Normalize, auto NormalizeTensor, auto NormalizeTensorBackward>
void register_ops(torch::Library& m) {
  register_forward<Normalize, NormalizeTensor>(m);
  register_backward<NormalizeTensorBackward>(m);
}

}  // namespace normalize_entries
}  // namespace tensorops

// normalize's host steps around a device's pass and the registration of its ops, the same on every device.
#pragma once
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/normalize_host.h"
#include "tensorops/out_host.h"

namespace tensorops {
namespace normalize_entries {

// normalize_tensor: checks, the statistics' broadcast shape, the output (fresh, or `out` checked first); then
// pass(y, shape) unless the output is empty. Returns the result (out itself for out=).
template <typename Pass>
at::Tensor normalize_tensor_with(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                 at::ScalarType dtype, at::MemoryFormat memory_format, const at::Tensor* out,
                                 const Pass& pass) {
  normalize_host::check_input(input, dtype);
  const std::vector<int64_t> shape = normalize_host::tensor_stat_shape(input, mean, std);
  at::Tensor y = normalize_host::output(input, dtype, memory_format, out, {input, mean, std});
  if (y.numel() != 0) pass(y, shape);
  return out == nullptr ? y : out_host::finish(*out, y);
}

// A device's normalize is Normalize(input, mean, std, dim, scale, dtype, memory_format, out) and its normalize_tensor
// NormalizeTensor(input, mean, std, scale, dtype, memory_format, out), with out nullptr for the functional ops:
// these are the functional ops and their _out ops (the result written into `out`, no full-size temporary).
template <auto Normalize>
at::Tensor normalize_op(const at::Tensor& input, c10::ArrayRef<double> mean, c10::ArrayRef<double> std, int64_t dim,
                        double scale, at::ScalarType dtype, at::MemoryFormat memory_format) {
  return Normalize(input, mean, std, dim, scale, dtype, memory_format, nullptr);
}

template <auto Normalize>
at::Tensor& normalize_out(const at::Tensor& input, c10::ArrayRef<double> mean, c10::ArrayRef<double> std,
                          int64_t dim, double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                          at::Tensor& out) {
  Normalize(input, mean, std, dim, scale, dtype, memory_format, &out);
  return out;
}

template <auto NormalizeTensor>
at::Tensor normalize_tensor_op(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std, double scale,
                               at::ScalarType dtype, at::MemoryFormat memory_format) {
  return NormalizeTensor(input, mean, std, scale, dtype, memory_format, nullptr);
}

template <auto NormalizeTensor>
at::Tensor& normalize_tensor_out(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std, double scale,
                                 at::ScalarType dtype, at::MemoryFormat memory_format, at::Tensor& out) {
  NormalizeTensor(input, mean, std, scale, dtype, memory_format, &out);
  return out;
}

// Registers a device's normalize ops in its TORCH_LIBRARY_IMPL block (each half on its own where a device keeps
// the forward and the backward in two files).
template <auto Normalize, auto NormalizeTensor>
void register_forward(torch::Library& m) {
  m.impl("normalize", &normalize_op<Normalize>);
  m.impl("normalize_out", &normalize_out<Normalize>);
  m.impl("normalize_tensor", &normalize_tensor_op<NormalizeTensor>);
  m.impl("normalize_tensor_out", &normalize_tensor_out<NormalizeTensor>);
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

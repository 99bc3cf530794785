// Host side of normalize shared by the CPU and CUDA launchers and compiled once (host/normalize_host.cpp):
// argument checks, output allocation and the layout of the statistics. Nothing here touches tensor data.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tensorops/math/normalize.h"

namespace tensorops {
namespace normalize_host {

// float16, bfloat16, float32 or float64.
bool is_float_dtype(at::ScalarType t);

// float64 output is computed in float64, everything else in float32.
at::ScalarType acc_dtype(at::ScalarType out);

// input: at least 1-d, uint8, uint16 or floating; dtype (the output's): floating.
void check_input(const at::Tensor& input, at::ScalarType dtype);

at::Tensor make_output(const at::Tensor& input, at::ScalarType dtype, at::MemoryFormat memory_format);

// The tensor a pass writes: a fresh output (out == nullptr), or out= checked against input and `inputs`
// (out_host::check) and the tensor that stands for it (out_host::target: itself when dense, else a temporary
// that out_host::finish copies into it). `memory_format` is the functional op's; out='s own layout wins.
at::Tensor output(const at::Tensor& input, at::ScalarType dtype, at::MemoryFormat memory_format,
                  const at::Tensor* out, at::ArrayRef<at::Tensor> inputs);

// normalize's entry with statistics given as numbers: check_input(input, dtype), then C = max(len(mean),
// len(std)) into `channels`; each has 1 or C values and C must be 1 or input.size(dim). Returns the
// coefficient-index strides over input's dims (1 at `dim` when C > 1).
std::vector<int64_t> list_stat_strides(const at::Tensor& input, at::ScalarType dtype, c10::ArrayRef<double> mean,
                                       c10::ArrayRef<double> std, int64_t& dim, int64_t& channels);

// Statistics tensors: same rank as input, broadcasting to input's shape. Returns their broadcast shape.
std::vector<int64_t> tensor_stat_shape(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std);

// Strides over input's dims that index a contiguous buffer of `stat_shape` (0 where it broadcasts).
std::vector<int64_t> broadcast_strides(c10::IntArrayRef stat_shape);

// Strides of t broadcast to `shape` (0 where t has size 1).
std::vector<int64_t> expanded_strides(const at::Tensor& t, c10::IntArrayRef shape);

// What both backward launchers start from: checked arguments, the outputs, and a dense layout to walk
// (grad_input's when it is written; a meta tensor's otherwise, so nothing is allocated for it).
struct Backward {
  at::ScalarType acc;
  std::vector<int64_t> shape;  // broadcast shape of mean and std (input's rank)
  at::Tensor grad_input, grad_mean, grad_std, dense;
  bool stats;  // statistics' gradients wanted
};

// Number statistics as the kernels take them: a[c] * x + b[c] per channel c < channels (math/normalize.h), a
// single mean or std serving every channel.
template <typename acc_t>
void list_coefs(c10::ArrayRef<double> mean, c10::ArrayRef<double> std, double scale, int64_t channels, acc_t* a,
                acc_t* b) {
  for (int64_t c = 0; c < channels; ++c) {
    const acc_t m = mean[mean.size() == 1 ? 0 : c], s = std[std.size() == 1 ? 0 : c];
    a[c] = math::normalize_coef_a<acc_t>(scale, s);
    b[c] = math::normalize_coef_b<acc_t>(m, s);
  }
}

Backward backward_setup(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean,
                        const at::Tensor& std, std::array<bool, 3> mask);

}  // namespace normalize_host
}  // namespace tensorops

// Host side of normalize shared by the CPU and CUDA launchers and compiled once (host/normalize_host.cpp):
// argument checks, output allocation and the layout of the statistics. Nothing here touches tensor data.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

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

// Per-channel statistics given as numbers: C = max(len(mean), len(std)); each has 1 or C values and C must
// be 1 or input.size(dim). Returns the coefficient-index strides over input's dims (1 at `dim` when C > 1).
std::vector<int64_t> list_stat_strides(const at::Tensor& input, c10::ArrayRef<double> mean,
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

Backward backward_setup(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean,
                        const at::Tensor& std, std::array<bool, 3> mask);

}  // namespace normalize_host
}  // namespace tensorops

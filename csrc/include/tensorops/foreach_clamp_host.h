// Host side of the many-tensor clamp (foreach_clamp_scalar / foreach_clamp_scalar_), shared by the CPU and CUDA
// launchers and compiled once (host/foreach_clamp_host.cpp): argument checks, the per-tensor decision "kernel
// or torch", the outputs, and the work table.
//
// A tensor goes to the kernel when its memory is one dense block (is_non_overlapping_and_dense: contiguous,
// channels_last, transposed...), its dtype is one the kernels cover and the numbers keep it (torch.clamp's
// promotion: an integer tensor with a float bound would become float), and no bound is NaN. Then the clamp is
// elementwise over that block in memory order, and the output (empty_like: the same strides) is the same block
// shape. Every other tensor (sliced views, bool, an int tensor with a float bound, a NaN bound) is done by torch's
// own clamp / clamp_, which gives its exact values and errors. Nothing here touches tensor data.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tensorops/clamp_host.h"  // clamp_host::Acc, the compute type the kernels use

namespace tensorops {
namespace foreach_clamp_host {

// One dense block for the kernel. lo / hi hold the bounds converted to the tensor's dtype (torch's checked
// conversion, Scalar::to<scalar_t>), as raw bytes.
struct Item {
  const void* x;
  void* y;
  int64_t numel;
  at::ScalarType dtype;
  uint64_t lo, hi;
};

struct Prepared {
  std::vector<at::Tensor> outs;  // out-of-place results (empty for the in-place op)
  std::vector<Item> items;       // the kernel's work, in list order
  bool has_min = false, has_max = false;
};

// A bound of Item back in the tensor's dtype.
template <typename scalar_t>
scalar_t from_bits(uint64_t bits) {
  scalar_t v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

Prepared prepare(at::TensorList tensors, bool inplace, const std::optional<at::Scalar>& min,
                 const std::optional<at::Scalar>& max);

}  // namespace foreach_clamp_host
}  // namespace tensorops

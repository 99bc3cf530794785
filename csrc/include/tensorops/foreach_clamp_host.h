// Host side of the many-tensor clamp (foreach_clamp_scalar / foreach_clamp_scalar_), shared by the CPU and CUDA
// launchers: argument checks, the per-tensor decision "kernel or torch", the outputs, and the work table.
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

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "tensorops/checks.h"
#include "tensorops/clamp_host.h"

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

inline bool kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
      return true;
    default:
      return false;
  }
}

template <typename scalar_t>
uint64_t to_bits(const std::optional<at::Scalar>& s) {
  uint64_t bits = 0;
  if (s) {
    const scalar_t v = s->to<scalar_t>();  // raises for a number out of the dtype's range, as torch does
    static_assert(sizeof(scalar_t) <= sizeof(bits), "bounds fit in 8 bytes");
    std::memcpy(&bits, &v, sizeof(v));
  }
  return bits;
}

template <typename scalar_t>
scalar_t from_bits(uint64_t bits) {
  scalar_t v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

inline Prepared prepare(at::TensorList tensors, bool inplace, const std::optional<at::Scalar>& min,
                        const std::optional<at::Scalar>& max) {
  TENSOROPS_CHECK(min.has_value() || max.has_value(), "min, max",
                  "at least one of 'min' or 'max' must not be None");
  TORCH_CHECK_NOT_IMPLEMENTED(!(min && min->isComplex()) && !(max && max->isComplex()),
                              "tensorops: foreach clamp: a bound is complex; clamp is not supported for complex types");
  Prepared p;
  p.has_min = min.has_value();
  p.has_max = max.has_value();
  const bool nan_bound = clamp_host::scalar_is_nan(min) || clamp_host::scalar_is_nan(max);
  if (!inplace) p.outs.reserve(tensors.size());
  p.items.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    TENSOROPS_CHECK_VALUE(t.device() == tensors[0].device(), "tensors", "tensors[", i, "] is on ", t.device(),
                          " but tensors[0] is on ", tensors[0].device(), " (one call takes one device)");
    TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(t.scalar_type()), "tensorops: foreach clamp: tensors[", i,
                                "] is ", t.scalar_type(), "; clamp is not supported for complex types");
    const bool fast = !nan_bound && kernel_dtype(t.scalar_type()) &&
                      clamp_host::scalar_result_type(t, min, max) == t.scalar_type() &&
                      t.is_non_overlapping_and_dense();
    if (!fast) {  // torch's own clamp: its values, layout and errors
      if (inplace) {
        at::Tensor self = t;
        at::clamp_(self, min, max);
      } else {
        p.outs.push_back(at::clamp(t, min, max));
      }
      continue;
    }
    at::Tensor out = inplace ? t : at::empty_like(t);
    if (!inplace) p.outs.push_back(out);
    if (t.numel() == 0) continue;
    Item item{t.const_data_ptr(), out.mutable_data_ptr(), t.numel(), t.scalar_type(), 0, 0};
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "tensorops_foreach_clamp_bounds", [&] {
      item.lo = to_bits<scalar_t>(min);
      item.hi = to_bits<scalar_t>(max);
    });
    p.items.push_back(item);
  }
  return p;
}

}  // namespace foreach_clamp_host
}  // namespace tensorops

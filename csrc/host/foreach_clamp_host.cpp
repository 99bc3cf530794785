// Host side of the many-tensor clamp (foreach_clamp_host.h): compiled once, by the C++ compiler, for the CPU and
// CUDA ops.
#include "tensorops/foreach_clamp_host.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include "tensorops/checks.h"
#include "tensorops/clamp_host.h"

namespace tensorops {
namespace foreach_clamp_host {
namespace {

bool kernel_dtype(at::ScalarType t) {
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

}  // namespace

Prepared prepare(at::TensorList tensors, bool inplace, const std::optional<at::Scalar>& min,
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

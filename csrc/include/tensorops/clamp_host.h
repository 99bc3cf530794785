// Host-side pieces of clamp shared by the CPU and CUDA launchers: argument checks, torch.clamp's type promotion
// and output layout, bound preparation. Nothing here touches tensor data.
//
// The output is allocated by a TensorIterator configured like torch's own clamp (structured kernel in
// ATen/native/TensorCompare.cpp), so dtype, broadcast shape, strides/memory format and the in-place checks
// (broadcast shape, safe cast back, internal and partial overlap) are exactly torch's; only the data pass is ours.
#pragma once
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/TypeProperties.h>

#include "tensorops/checks.h"

namespace tensorops {
namespace clamp_host {

inline void check_not_complex(const at::Tensor& t, const char* arg) {
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(t.scalar_type()), "tensorops: clamp: ", arg, " is ",
                              t.scalar_type(), "; clamp is not supported for complex types");
}

inline void check_bounds_given(bool has_min, bool has_max) {
  TORCH_CHECK(has_min || has_max, "tensorops: clamp: min, max: at least one of 'min' or 'max' must not be None");
}

inline void check_tensor_args(const at::Tensor& input, const std::optional<at::Tensor>& min,
                              const std::optional<at::Tensor>& max) {
  const bool has_min = min.has_value() && min->defined(), has_max = max.has_value() && max->defined();
  check_bounds_given(has_min, has_max);
  check_not_complex(input, "input");
  if (has_min) {
    check_not_complex(*min, "min");
    TENSOROPS_CHECK_VALUE(min->device() == input.device(), "min", "is on ", min->device(), " but input is on ",
                          input.device());
  }
  if (has_max) {
    check_not_complex(*max, "max");
    TENSOROPS_CHECK_VALUE(max->device() == input.device(), "max", "is on ", max->device(), " but input is on ",
                          input.device());
  }
}

inline void check_scalar_args(const at::Tensor& input, const std::optional<at::Scalar>& min,
                              const std::optional<at::Scalar>& max) {
  check_bounds_given(min.has_value(), max.has_value());
  check_not_complex(input, "input");
  TORCH_CHECK_NOT_IMPLEMENTED(!(min && min->isComplex()), "tensorops: clamp: min is complex; clamp is not "
                              "supported for complex types");
  TORCH_CHECK_NOT_IMPLEMENTED(!(max && max->isComplex()), "tensorops: clamp: max is complex; clamp is not "
                              "supported for complex types");
}

// torch.clamp(input, Scalar? min, Scalar? max): a floating input keeps its dtype; otherwise the numbers take
// part in promotion (int input with a float bound gives the default float dtype).
inline at::ScalarType scalar_result_type(const at::Tensor& input, const std::optional<at::Scalar>& min,
                                         const std::optional<at::Scalar>& max) {
  if (at::isFloatingType(input.scalar_type())) return input.scalar_type();
  at::native::ResultTypeState state = {};
  state = at::native::update_result_type_state(input, state);
  if (min) state = at::native::update_result_type_state(*min, state);
  if (max) state = at::native::update_result_type_state(*max, state);
  return at::native::result_type(state);
}

// A TensorIterator set up like torch's clamp.Tensor: promotion over every operand, broadcast, the output's
// layout and, for in-place (out = input), torch's checks. `out` undefined: the iterator allocates it.
inline at::TensorIterator tensor_iter(const at::Tensor& out, const at::Tensor& input,
                                      const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max) {
  auto config = at::TensorIteratorConfig();
  config.set_check_mem_overlap(true)
      .resize_outputs(!out.defined())
      .add_output(out)
      .add_const_input(input)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true);
  if (min.has_value() && min->defined()) config.add_const_input(*min);
  if (max.has_value() && max->defined()) config.add_const_input(*max);
  return config.build();
}

// The output of torch.clamp(input, Scalar?, Scalar?): torch converts input to the result dtype first
// (input.to(result_type), which makes a non-dense input dense) and then runs a unary TensorIterator.
inline at::Tensor scalar_output(const at::Tensor& input_as_result) {
  at::Tensor undefined;
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(true)
                  .add_output(undefined)
                  .add_const_input(input_as_result)
                  .build();
  return iter.output();
}

// Strides over `shape` (the output's) that index a contiguous buffer of `bound_sizes` (right-aligned, like
// broadcasting), with 0 where the bound has size 1: the bound's entry for each output element.
inline std::vector<int64_t> entry_strides(c10::IntArrayRef bound_sizes, c10::IntArrayRef shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), bd = static_cast<int64_t>(bound_sizes.size());
  std::vector<int64_t> strides(nd, 0);
  int64_t s = 1;
  for (int64_t i = bd - 1; i >= 0; --i) {
    const int64_t d = nd - bd + i;
    strides[d] = bound_sizes[i] == 1 ? 0 : s;
    s *= bound_sizes[i];
  }
  return strides;
}

// The compute type for a result dtype: float for float16/bfloat16, the dtype itself otherwise.
template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<c10::Half> {
  using type = float;
};
template <>
struct Acc<c10::BFloat16> {
  using type = float;
};

}  // namespace clamp_host
}  // namespace tensorops

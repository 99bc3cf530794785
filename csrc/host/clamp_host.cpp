// Host side of clamp (clamp_host.h): compiled once, by the C++ compiler, for the CPU and CUDA ops.
#include "tensorops/clamp_host.h"

#include <limits>

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/TypeProperties.h>

#include "tensorops/checks.h"
#include "tensorops/math/clamp.h"

namespace tensorops {
namespace clamp_host {
namespace {

void check_not_complex(const at::Tensor& t, const char* arg) {
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isComplexType(t.scalar_type()), "tensorops: clamp: ", arg, " is ",
                              t.scalar_type(), "; clamp is not supported for complex types");
}

void check_bounds_given(bool has_min, bool has_max) {
  TORCH_CHECK(has_min || has_max, "tensorops.clamp: At least one of 'min' or 'max' must not be None");
}

void check_tensor_args(const at::Tensor& input, const std::optional<at::Tensor>& min,
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

void check_scalar_args(const at::Tensor& input, const std::optional<at::Scalar>& min,
                       const std::optional<at::Scalar>& max) {
  check_bounds_given(min.has_value(), max.has_value());
  check_not_complex(input, "input");
  TORCH_CHECK_NOT_IMPLEMENTED(!(min && min->isComplex()), "tensorops: clamp: min is complex; clamp is not "
                              "supported for complex types");
  TORCH_CHECK_NOT_IMPLEMENTED(!(max && max->isComplex()), "tensorops: clamp: max is complex; clamp is not "
                              "supported for complex types");
}

// A TensorIterator set up like torch's clamp.Tensor: promotion over every operand, broadcast, the output's
// layout and, for in-place (out = input), torch's checks. `out` undefined: the iterator allocates it.
at::TensorIterator tensor_iter(const at::Tensor& out, const at::Tensor& input,
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
at::Tensor scalar_output(const at::Tensor& input_as_result) {
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
std::vector<int64_t> entry_strides(c10::IntArrayRef bound_sizes, c10::IntArrayRef shape) {
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

void check_bool_result(at::ScalarType t, bool has_min, bool has_max, bool scalar) {
  // torch has no bool kernel for clamp with both tensor bounds, nor for any scalar clamp ("clamp_cpu" /
  // "clamp_scalar_cpu" not implemented for 'Bool'); one tensor bound is maximum/minimum, which exists.
  TORCH_CHECK_NOT_IMPLEMENTED(t != at::kBool || (!scalar && !(has_min && has_max)), "tensorops: clamp: ",
                              scalar ? "min/max are numbers" : "min and max are both given",
                              " and the result dtype is bool: not implemented for 'Bool' (as in torch)");
}

}  // namespace

// torch.clamp(input, Scalar? min, Scalar? max): a floating input keeps its dtype; otherwise the numbers take
// part in promotion (int input with a float bound gives the default float dtype).
at::ScalarType scalar_result_type(const at::Tensor& input, const std::optional<at::Scalar>& min,
                                  const std::optional<at::Scalar>& max) {
  if (at::isFloatingType(input.scalar_type())) return input.scalar_type();
  at::native::ResultTypeState state = {};
  state = at::native::update_result_type_state(input, state);
  if (min) state = at::native::update_result_type_state(*min, state);
  if (max) state = at::native::update_result_type_state(*max, state);
  return at::native::result_type(state);
}

bool scalar_is_nan(const std::optional<at::Scalar>& s) {
  return math::clamp_scalar_is_nan(s.has_value(), s.has_value() ? s->toDouble() : 0.0);
}

void TensorForward::finish() {
  if (!done && !target.is_same(out)) out.copy_(target);
}

TensorForward prepare_tensor_forward(const at::Tensor& inplace, const at::Tensor& input,
                                     const std::optional<at::Tensor>& min,
                                     const std::optional<at::Tensor>& max) {
  check_tensor_args(input, min, max);
  TensorForward f;
  f.has_min = min.has_value() && min->defined();
  f.has_max = max.has_value() && max->defined();
  if (inplace.defined()) {
    std::vector<int64_t> shape = input.sizes().vec();
    if (f.has_min) shape = at::infer_size(shape, min->sizes());
    if (f.has_max) shape = at::infer_size(shape, max->sizes());
    // RuntimeError, like torch's in-place ops
    TENSOROPS_CHECK(c10::IntArrayRef(shape) == input.sizes(), "min/max", "in-place clamp_: input has shape ",
                    input.sizes(), " but the bounds broadcast it to ", c10::IntArrayRef(shape));
    std::vector<at::Tensor> operands{input};
    if (f.has_min) operands.push_back(*min);
    if (f.has_max) operands.push_back(*max);
    const at::ScalarType result = at::native::result_type(operands);
    TENSOROPS_CHECK(at::canCast(result, input.scalar_type()), "min/max", "in-place clamp_: result type ", result,
                    " can't be cast to the desired output type ", input.scalar_type(), " of input");
  }
  auto iter = tensor_iter(inplace, input, min, max);
  f.T = iter.common_dtype();
  f.out = inplace.defined() ? inplace : iter.output();
  check_bool_result(f.T, f.has_min, f.has_max, false);
  f.done = f.out.numel() == 0;
  if (f.done) return f;
  // compute in T; an in-place input of another dtype gets the result cast back (torch allows safe casts only)
  f.target = f.out.scalar_type() == f.T ? f.out : at::empty_like(f.out, f.out.options().dtype(f.T));
  const auto shape = f.out.sizes();
  f.x = input.to(f.T).expand(shape);
  if (f.has_min) f.lo = min->to(f.T).expand(shape);
  if (f.has_max) f.hi = max->to(f.T).expand(shape);
  return f;
}

ScalarForward prepare_scalar_forward(const at::Tensor& inplace, const at::Tensor& input,
                                     const std::optional<at::Scalar>& min,
                                     const std::optional<at::Scalar>& max) {
  check_scalar_args(input, min, max);
  ScalarForward f;
  f.T = scalar_result_type(input, min, max);
  if (inplace.defined()) {
    TORCH_CHECK(f.T == input.scalar_type(), "tensorops: clamp_: min/max: result type ", f.T,
                " can't be cast to the desired output type ", input.scalar_type(), " of input");
    at::assert_no_internal_overlap(input);
  }
  f.x = input.scalar_type() == f.T ? input : input.to(f.T);
  f.out = inplace.defined() ? inplace : scalar_output(f.x);
  f.done = f.out.numel() == 0;
  if (!f.done && (scalar_is_nan(min) || scalar_is_nan(max))) {
    f.out.fill_(std::numeric_limits<double>::quiet_NaN());  // torch's clamp_out does the same
    f.done = true;
  }
  if (!f.done) check_bool_result(f.T, min.has_value(), max.has_value(), true);
  return f;
}

TensorBackward prepare_tensor_backward(const at::Tensor& grad, const at::Tensor& input,
                                       const std::optional<at::Tensor>& min,
                                       const std::optional<at::Tensor>& max, std::array<bool, 3> mask) {
  check_tensor_args(input, min, max);
  TensorBackward b;
  b.has_min = min.has_value() && min->defined();
  b.has_max = max.has_value() && max->defined();
  std::vector<at::Tensor> operands{input};
  std::vector<int64_t> shape = input.sizes().vec();
  if (b.has_min) {
    operands.push_back(*min);
    shape = at::infer_size(shape, min->sizes());
  }
  if (b.has_max) {
    operands.push_back(*max);
    shape = at::infer_size(shape, max->sizes());
  }
  b.T = at::native::result_type(operands);
  TENSOROPS_CHECK_TYPE(at::isFloatingType(b.T), "input", "clamp_backward needs a floating result dtype, got ", b.T);
  TENSOROPS_CHECK_VALUE(grad.sizes() == c10::IntArrayRef(shape), "grad", "has shape ", grad.sizes(),
                        " but the clamp output has shape ", c10::IntArrayRef(shape));
  TENSOROPS_CHECK_VALUE(grad.device() == input.device(), "grad", "is on ", grad.device(), " but input is on ",
                        input.device());
  const auto opts = input.options().dtype(b.T);
  if (mask[0]) {
    b.grad_input = input.sizes() == c10::IntArrayRef(shape) ? at::empty_like(input, opts) : at::empty(shape, opts);
  } else {
    b.grad_input = at::empty({0}, opts);
  }
  b.want_lo = mask[1] && b.has_min;
  b.want_hi = mask[2] && b.has_max;
  // the kernels write every entry of the bounds' gradients; only an empty pass leaves them to be zeroed
  b.grad_min = b.want_lo ? at::empty(min->sizes(), opts) : at::empty({0}, opts);
  b.grad_max = b.want_hi ? at::empty(max->sizes(), opts) : at::empty({0}, opts);
  b.done = grad.numel() == 0;
  if (b.done) {
    b.grad_min.zero_();
    b.grad_max.zero_();
    return b;
  }
  b.g = grad.to(b.T);
  b.x = input.to(b.T).expand(shape);
  if (b.has_min) b.lo = min->to(b.T).contiguous();
  if (b.has_max) b.hi = max->to(b.T).contiguous();
  b.lo_idx = b.has_min ? entry_strides(min->sizes(), shape) : std::vector<int64_t>(shape.size(), 0);
  b.hi_idx = b.has_max ? entry_strides(max->sizes(), shape) : std::vector<int64_t>(shape.size(), 0);
  b.dense = mask[0] ? b.grad_input : at::empty_like(b.g, b.g.options().device(at::kMeta));
  return b;
}

ScalarBackward prepare_scalar_backward(const at::Tensor& grad, const at::Tensor& input,
                                       const std::optional<at::Scalar>& min,
                                       const std::optional<at::Scalar>& max) {
  check_scalar_args(input, min, max);
  const at::ScalarType T = input.scalar_type();
  TENSOROPS_CHECK_TYPE(at::isFloatingType(T), "input", "clamp_scalar_backward needs a floating input, got ", T);
  TENSOROPS_CHECK_VALUE(grad.sizes() == input.sizes(), "grad", "has shape ", grad.sizes(), " but input has ",
                        input.sizes());
  TENSOROPS_CHECK_VALUE(grad.device() == input.device(), "grad", "is on ", grad.device(), " but input is on ",
                        input.device());
  ScalarBackward b;
  b.grad_input = at::empty_like(input);
  b.done = input.numel() == 0;
  if (!b.done && (scalar_is_nan(min) || scalar_is_nan(max))) {
    b.grad_input.zero_();  // x > NaN and x < NaN are false: no gradient anywhere
    b.done = true;
  }
  if (!b.done) b.g = grad.to(T);
  return b;
}

}  // namespace clamp_host
}  // namespace tensorops

// Host side of clamp shared by the CPU and CUDA launchers and compiled once (host/clamp_host.cpp): argument
// checks, torch.clamp's type promotion and output layout, bound preparation. Nothing here touches tensor data.
//
// The output is allocated by a TensorIterator configured like torch's own clamp (structured kernel in
// ATen/native/TensorCompare.cpp), so dtype, broadcast shape, strides/memory format and the in-place checks
// (broadcast shape, safe cast back, internal and partial overlap) are exactly torch's; only the data pass is ours.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

namespace tensorops {
namespace clamp_host {

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

// torch.clamp(input, Scalar? min, Scalar? max)'s result dtype: a floating input keeps its dtype; otherwise the
// numbers take part in promotion (int input with a float bound gives the default float dtype).
at::ScalarType scalar_result_type(const at::Tensor& input, const std::optional<at::Scalar>& min,
                                  const std::optional<at::Scalar>& max);

// A bound that is a NaN number (torch.clamp's Scalar overload then fills the whole result with NaN).
bool scalar_is_nan(const std::optional<at::Scalar>& s);

// ---- the steps before and after a kernel, shared by the CPU and CUDA ops ---------------------------------
// Forward with tensor bounds. `inplace` undefined: a new output; else the tensor to overwrite (= input).
struct TensorForward {
  at::Tensor out;     // what the op returns / overwrote
  at::Tensor target;  // what the kernel writes: out, or a result-dtype buffer copied into out by finish()
  at::Tensor x, lo, hi;  // operands in the result dtype, viewed with out's shape (0 strides where broadcast)
  at::ScalarType T;
  bool has_min, has_max, done;  // done: nothing for a kernel to do (empty output)
  void finish();
};

TensorForward prepare_tensor_forward(const at::Tensor& inplace, const at::Tensor& input,
                                     const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max);

// Forward with number bounds.
struct ScalarForward {
  at::Tensor out, x;  // x: input in the result dtype
  at::ScalarType T;
  bool done;  // empty, or filled with NaN (a NaN bound)
};

ScalarForward prepare_scalar_forward(const at::Tensor& inplace, const at::Tensor& input,
                                     const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max);

// Backward with tensor bounds: grad_input has grad's shape, in input's layout when input has that shape.
struct TensorBackward {
  at::Tensor grad_input, grad_min, grad_max;  // outputs (empty when not asked for)
  at::Tensor g, x;                            // grad and input in the result dtype, x viewed with grad's shape
  at::Tensor lo, hi;                          // contiguous bounds in the result dtype, their own shapes
  std::vector<int64_t> lo_idx, hi_idx;        // entry_strides of the bounds over grad's shape
  at::Tensor dense;                           // a dense layout of grad's shape to walk (grad_input when written)
  at::ScalarType T;
  bool has_min, has_max, want_lo, want_hi, done;
};

TensorBackward prepare_tensor_backward(const at::Tensor& grad, const at::Tensor& input,
                                       const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max,
                                       std::array<bool, 3> mask);

// Backward with number bounds: (grad_input, grad in input's dtype, done). A NaN bound: zeros, done.
struct ScalarBackward {
  at::Tensor grad_input, g;
  bool done;
};

ScalarBackward prepare_scalar_backward(const at::Tensor& grad, const at::Tensor& input,
                                       const std::optional<at::Scalar>& min, const std::optional<at::Scalar>& max);

}  // namespace clamp_host
}  // namespace tensorops

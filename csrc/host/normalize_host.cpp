// Host side of normalize (normalize_host.h): compiled once, by the C++ compiler, for the CPU and CUDA ops.
#include "tensorops/normalize_host.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "tensorops/batch_cache.h"
#include "tensorops/checks.h"
#include "tensorops/out_host.h"

namespace tensorops {
namespace normalize_host {

bool is_float_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// float64 output is computed in float64, everything else in float32.
at::ScalarType acc_dtype(at::ScalarType out) { return out == at::kDouble ? at::kDouble : at::kFloat; }

void check_input(const at::Tensor& input, at::ScalarType dtype) {
  TENSOROPS_CHECK_VALUE(input.dim() >= 1, "input", "must have at least 1 dimension, got a 0-dim tensor");
  TENSOROPS_CHECK_TYPE(input.scalar_type() == at::kByte || input.scalar_type() == at::kUInt16 ||
                           is_float_dtype(input.scalar_type()),
                       "input", "must be uint8 or floating (float16, bfloat16, float32, float64), or uint16, got ",
                       input.scalar_type());
  TENSOROPS_CHECK_TYPE(is_float_dtype(dtype), "dtype", "must be float16, bfloat16, float32 or float64, got ",
                       dtype);
}

at::Tensor make_output(const at::Tensor& input, at::ScalarType dtype, at::MemoryFormat memory_format) {
  return batch_cache::empty_like(input, input.options().dtype(dtype), memory_format);
}

at::Tensor output(const at::Tensor& input, at::ScalarType dtype, at::MemoryFormat memory_format,
                  const at::Tensor* out, at::ArrayRef<at::Tensor> inputs) {
  if (out == nullptr) return make_output(input, dtype, memory_format);
  out_host::check(*out, input.sizes(), dtype, input.device(), inputs);
  return out_host::target(*out, out_host::dense(*out), out->suggest_memory_format());
}

// normalize's entry with statistics given as numbers: check_input(input, dtype), then C = max(len(mean),
// len(std)) into `channels`; each has 1 or C values and C must be 1 or input.size(dim). Returns the
// coefficient-index strides over input's dims (1 at `dim` when C > 1).
std::vector<int64_t> list_stat_strides(const at::Tensor& input, at::ScalarType dtype, c10::ArrayRef<double> mean,
                                       c10::ArrayRef<double> std, int64_t& dim, int64_t& channels) {
  check_input(input, dtype);
  const int64_t ndim = input.dim();
  TENSOROPS_CHECK_INDEX(dim >= -ndim && dim < ndim, "dim", "is out of range for input with ", ndim,
                        " dimensions (got ", dim, ")");
  if (dim < 0) dim += ndim;
  const int64_t nm = static_cast<int64_t>(mean.size()), ns = static_cast<int64_t>(std.size());
  TENSOROPS_CHECK_VALUE(nm >= 1, "mean", "needs at least one value");
  TENSOROPS_CHECK_VALUE(ns >= 1, "std", "needs at least one value");
  channels = std::max(nm, ns);
  TENSOROPS_CHECK_VALUE(channels == 1 || channels == input.size(dim), "mean/std", "have ", channels,
                        " values but input has ", input.size(dim), " channels along dim ", dim);
  TENSOROPS_CHECK_VALUE(nm == 1 || nm == channels, "mean", "has ", nm, " values but std has ", ns);
  TENSOROPS_CHECK_VALUE(ns == 1 || ns == channels, "std", "has ", ns, " values but mean has ", nm);
  std::vector<int64_t> strides(ndim, 0);
  if (channels > 1) strides[dim] = 1;
  return strides;
}

// Statistics tensors: same rank as input, broadcasting to input's shape. Returns their broadcast shape.
std::vector<int64_t> tensor_stat_shape(const at::Tensor& input, const at::Tensor& mean,
                                       const at::Tensor& std) {
  TENSOROPS_CHECK_VALUE(mean.dim() == input.dim(), "mean", "must have input's rank ", input.dim(), ", got ",
                        mean.dim());
  TENSOROPS_CHECK_VALUE(std.dim() == input.dim(), "std", "must have input's rank ", input.dim(), ", got ",
                        std.dim());
  TENSOROPS_CHECK_TYPE(is_float_dtype(mean.scalar_type()), "mean", "must be floating, got ", mean.scalar_type());
  TENSOROPS_CHECK_TYPE(is_float_dtype(std.scalar_type()), "std", "must be floating, got ", std.scalar_type());
  TENSOROPS_CHECK_VALUE(mean.device() == input.device(), "mean", "is on ", mean.device(), " but input is on ",
                        input.device());
  TENSOROPS_CHECK_VALUE(std.device() == input.device(), "std", "is on ", std.device(), " but input is on ",
                        input.device());
  std::vector<int64_t> shape(input.dim());
  for (int64_t d = 0; d < input.dim(); ++d) {
    const int64_t m = mean.size(d), s = std.size(d), n = input.size(d);
    TENSOROPS_CHECK_VALUE(m == 1 || m == n, "mean", "of shape ", mean.sizes(), " does not broadcast to input ",
                          input.sizes());
    TENSOROPS_CHECK_VALUE(s == 1 || s == n, "std", "of shape ", std.sizes(), " does not broadcast to input ",
                          input.sizes());
    shape[d] = std::max(m, s);
    if (n == 0) shape[d] = (m == 1 && s == 1) ? 1 : 0;
  }
  return shape;
}

// Strides over input's dims that index a contiguous buffer of `stat_shape` (0 where it broadcasts).
std::vector<int64_t> broadcast_strides(c10::IntArrayRef stat_shape) {
  std::vector<int64_t> strides(stat_shape.size(), 0);
  int64_t running = 1;
  for (int64_t d = static_cast<int64_t>(stat_shape.size()) - 1; d >= 0; --d) {
    strides[d] = stat_shape[d] == 1 ? 0 : running;
    running *= stat_shape[d];
  }
  return strides;
}

// Strides of t broadcast to `shape` (0 where t has size 1).
std::vector<int64_t> expanded_strides(const at::Tensor& t, c10::IntArrayRef shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) strides[d] = t.size(d) == 1 ? 0 : t.stride(d);
  return strides;
}

Backward backward_setup(const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean,
                        const at::Tensor& std, std::array<bool, 3> mask) {
  TENSOROPS_CHECK_VALUE(grad.sizes() == input.sizes(), "grad", "has shape ", grad.sizes(), " but input has ",
                        input.sizes());
  TENSOROPS_CHECK_VALUE(grad.device() == input.device(), "grad", "is on ", grad.device(), " but input is on ",
                        input.device());
  Backward b;
  b.acc = acc_dtype(grad.scalar_type());
  check_input(input, b.acc);
  b.shape = tensor_stat_shape(input, mean, std);
  b.grad_input = mask[0] ? at::empty_like(input) : at::empty({0}, input.options());
  b.grad_mean = at::zeros(b.shape, input.options().dtype(b.acc));
  b.grad_std = at::zeros(b.shape, input.options().dtype(b.acc));
  b.dense = mask[0] ? b.grad_input : at::empty_like(input, input.options().device(at::kMeta));
  b.stats = mask[1] || mask[2];
  return b;
}

}  // namespace normalize_host
}  // namespace tensorops

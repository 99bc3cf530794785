// Dispatch written once for every family, CPU and CUDA alike: the dtype lists each op serves, and the switches
// that turn run-time flags into compile-time ones (apex's BOOL_SWITCH idea, as templates).
#pragma once
#include <type_traits>

#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>

// ---- dtype lists ---------------------------------------------------------------------------------------------
// Each macro is AT_DISPATCH_*(TYPE, NAME, lambda): the lambda sees the C++ type as `scalar_t`.

// The floating dtypes: normalize / crop_mirror_normalize outputs, every gradient, clamp's backward.
#define TENSOROPS_DISPATCH_FLOATING(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// normalize's inputs: 8-bit images, 16-bit PNGs and the floating dtypes.
#define TENSOROPS_DISPATCH_NORMALIZE_INPUT(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND4(at::kByte, at::kUInt16, at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// crop_mirror_normalize's images: 8-bit and the floating dtypes.
#define TENSOROPS_DISPATCH_CMN_INPUT(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kByte, at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// resized_crop_mirror_normalize's outputs: the floating dtypes, and uint8 (resampled, rounded, not normalized).
#define TENSOROPS_DISPATCH_RESIZE_OUT(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kByte, at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// clamp's forward: every real dtype and bool.
#define TENSOROPS_DISPATCH_CLAMP(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), AT_EXPAND(AT_ALL_TYPES), at::kHalf, at::kBFloat16, at::kBool)

// clamp with number bounds: every real dtype (torch has no bool kernel for it, and neither has tensorops).
#define TENSOROPS_DISPATCH_CLAMP_NUMBER(TYPE, NAME, ...) \
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// the many-tensor clamp: every real dtype (bool lists go to torch).
#define TENSOROPS_DISPATCH_FOREACH_CLAMP(TYPE, NAME, ...) \
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

// The emulated device (csrc/emulated/, TENSOROPS_EMULATED) compiles the CUDA kernels for one dtype of each
// element size and accumulation type - uint8, int64, float16, float32, float64 (and bool where an op takes it) -
// rather than all of them: the other instantiations differ only in the element type, and the three sanitizer
// builds then compile in minutes. The shipped builds are not affected.
#ifdef TENSOROPS_EMULATED
#undef TENSOROPS_DISPATCH_FLOATING
#undef TENSOROPS_DISPATCH_NORMALIZE_INPUT
#undef TENSOROPS_DISPATCH_CMN_INPUT
#undef TENSOROPS_DISPATCH_CLAMP
#undef TENSOROPS_DISPATCH_RESIZE_OUT
#undef TENSOROPS_DISPATCH_CLAMP_NUMBER
#undef TENSOROPS_DISPATCH_FOREACH_CLAMP
#define TENSOROPS_DISPATCH_FLOATING(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kFloat, at::kDouble, at::kHalf)
#define TENSOROPS_DISPATCH_NORMALIZE_INPUT(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kFloat, at::kDouble, at::kHalf)
#define TENSOROPS_DISPATCH_CMN_INPUT(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kFloat, at::kHalf)
#define TENSOROPS_DISPATCH_RESIZE_OUT(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kFloat, at::kDouble, at::kHalf)
#define TENSOROPS_DISPATCH_CLAMP(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kLong, at::kHalf, at::kFloat, at::kDouble, at::kBool)
#define TENSOROPS_DISPATCH_CLAMP_NUMBER(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kLong, at::kHalf, at::kFloat, at::kDouble)
#define TENSOROPS_DISPATCH_FOREACH_CLAMP(TYPE, NAME, ...) \
  AT_DISPATCH_V2(TYPE, NAME, AT_WRAP(__VA_ARGS__), at::kByte, at::kLong, at::kHalf, at::kFloat, at::kDouble)
#endif

namespace tensorops {

// The accumulation type of a floating dtype: double for double, float for float / half / bfloat16.
template <typename T>
using float_acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// ---- compile-time flags --------------------------------------------------------------------------------------
// Calls f(std::true_type{}) or f(std::false_type{}): `decltype(flag)::value` is then a constant expression.
template <typename F>
void bool_switch(bool flag, const F& f) {
  if (flag)
    f(std::true_type{});
  else
    f(std::false_type{});
}

// Calls f.template operator()<A, B>() with the flags (a, b) as constants, for the three pairs in which at least
// one is set; does nothing when neither is. Used for the bounds present (clamp: min, max, or both) and for the
// outputs wanted (clamp's backward: grad_input, the bounds' sums, or both).
template <typename F>
void either_switch(bool a, bool b, const F& f) {
  if (a && b)
    f.template operator()<true, true>();
  else if (a)
    f.template operator()<true, false>();
  else if (b)
    f.template operator()<false, true>();
}

}  // namespace tensorops

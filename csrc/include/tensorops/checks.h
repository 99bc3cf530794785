// Argument checks whose messages name the argument. TORCH_CHECK_VALUE / _TYPE / _INDEX surface in Python as
// ValueError / TypeError / IndexError. The Python wrappers validate first with friendlier messages; these
// guard direct calls through torch.ops.tensorops.*.
#pragma once
#include <c10/util/Exception.h>

#define TENSOROPS_CHECK_VALUE(cond, arg, ...) TORCH_CHECK_VALUE(cond, "tensorops: ", arg, ": ", __VA_ARGS__)
#define TENSOROPS_CHECK_TYPE(cond, arg, ...) TORCH_CHECK_TYPE(cond, "tensorops: ", arg, ": ", __VA_ARGS__)
#define TENSOROPS_CHECK_INDEX(cond, arg, ...) TORCH_CHECK_INDEX(cond, "tensorops: ", arg, ": ", __VA_ARGS__)
#define TENSOROPS_CHECK(cond, arg, ...) TORCH_CHECK(cond, "tensorops: ", arg, ": ", __VA_ARGS__)

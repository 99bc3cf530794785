// out= for every op that has an `.out` overload, compiled once (host/out_host.cpp) and used by each family's entry
// points on every device: `out` is checked before any work, then the kernel writes it directly when its layout is
// one the kernel writes; any other strided `out` (a slice with gaps, a transposed view where the kernel wants
// NCHW/NHWC) gets one temporary that is copied into it at the end, since torch's own out= writes any strides.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tensorops {
namespace out_host {

// The checks of out=, in torch's order: a strided tensor of the result's shape, dtype and device, no two of whose
// elements share memory (torch's internal-overlap error) and sharing none with `inputs` (a kernel that reads
// an input while writing out would read values it has already overwritten).
void check(const at::Tensor& out, c10::IntArrayRef shape, at::ScalarType dtype, const at::Device& device,
           at::ArrayRef<at::Tensor> inputs);

// What a kernel writes for a checked `out`: out itself when `writable` (the kernel writes its layout), otherwise
// a fresh tensor of out's shape, dtype and device in `format` (what the kernel writes).
at::Tensor target(const at::Tensor& out, bool writable, at::MemoryFormat format);

// After the kernel: `written` copied into `out` where target() gave a temporary; returns out.
const at::Tensor& finish(const at::Tensor& out, const at::Tensor& written);

// A layout the normalize kernels write: dense and non-overlapping, its dims in any order.
bool dense(const at::Tensor& out);
// A layout the crop kernels write: NCHW or NHWC (channels_last) storage of a 4-d output.
bool nchw_or_nhwc(const at::Tensor& out);

}  // namespace out_host
}  // namespace tensorops

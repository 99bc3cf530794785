// out= checks and targets (out_host.h): compiled once, by the C++ compiler, for the CPU and CUDA ops.
#include "tensorops/out_host.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include "tensorops/checks.h"

namespace tensorops {
namespace out_host {

void check(const at::Tensor& out, c10::IntArrayRef shape, at::ScalarType dtype, const at::Device& device,
           at::ArrayRef<at::Tensor> inputs) {
  TENSOROPS_CHECK_VALUE(out.layout() == at::kStrided, "out", "must be a strided tensor, got ", out.layout());
  TENSOROPS_CHECK_VALUE(out.sizes() == shape, "out", "has shape ", out.sizes(), " but the result has ", shape);
  TENSOROPS_CHECK_TYPE(out.scalar_type() == dtype, "out", "is ", out.scalar_type(), " but the result is ", dtype);
  TENSOROPS_CHECK_VALUE(out.device() == device, "out", "is on ", out.device(), " but the result is on ", device);
  TENSOROPS_CHECK(at::has_internal_overlap(out) != at::MemOverlap::Yes, "out",
                  "more than one element of the written-to tensor refers to a single memory location; clone() it "
                  "first");
  for (const at::Tensor& in : inputs) {
    if (!in.defined() || in.numel() == 0 || out.numel() == 0) continue;
    const at::MemOverlapStatus st = at::get_overlap_status(out, in);
    TENSOROPS_CHECK(st != at::MemOverlapStatus::Partial && st != at::MemOverlapStatus::Full, "out",
                    "shares memory with an input (of shape ", in.sizes(), "); pass a separate tensor or clone() "
                    "the input");
  }
}

at::Tensor target(const at::Tensor& out, bool writable, at::MemoryFormat format) {
  if (writable) return out;
  return at::empty(out.sizes(), out.options(), format);
}

const at::Tensor& finish(const at::Tensor& out, const at::Tensor& written) {
  if (!written.is_same(out)) out.copy_(written);
  return out;
}

bool dense(const at::Tensor& out) { return out.is_non_overlapping_and_dense(); }

bool nchw_or_nhwc(const at::Tensor& out) {
  return out.is_contiguous() || out.is_contiguous(at::MemoryFormat::ChannelsLast);
}

}  // namespace out_host
}  // namespace tensorops

// Host side of crop_mirror_normalize shared by the CPU and CUDA launchers and compiled once
// (host/crop_mirror_normalize_host.cpp): argument checks, the per-sample table (cmn::Sample, one entry per image)
// and the output. Nothing here touches image data.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tensorops/crop_mirror_normalize.h"

namespace tensorops {
namespace cmn_host {

struct Setup {
  std::vector<cmn::Sample> samples;
  int64_t N = 0, C = 0, Cp = 0, h = 0, w = 0;
  at::ScalarType in_dtype, acc;
  at::Tensor out;   // what the kernel writes: the result, or for out= out itself or a temporary copied into it
  at::Tensor dest;  // out= (undefined for a fresh result): cmn_host::result() finishes it
  at::Tensor mean, std;  // (N or 1, C or 1), acc dtype, contiguous, on the images' device
  int64_t mean_sn = 0, mean_sc = 0, std_sn = 0, std_sc = 0;  // element strides (0 where broadcast)
};

// One image of a batch as a table entry (address, (C, H, W) strides and size; no crop yet): `dim` is 0 (CHW)
// or 2 (HWC) of the 3-d image.
cmn::Sample describe(const at::Tensor& image, int64_t dim);
// The list form's images checked (3-d, one channel count, dtype and device) and described; returns C.
int64_t describe_list(at::TensorList images, int64_t dim, std::vector<cmn::Sample>& samples);
// A (N or 1, C or 1) statistics tensor's checks.
void check_stat(const char* name, const at::Tensor& stat, int64_t N, int64_t C, const at::Device& device);
// s.mean, s.std and their strides from checked statistics (s.acc set).
void set_stats(Setup& s, const at::Tensor& mean, const at::Tensor& std);
// `dim` (-3 / -1, or 0 / 2) as the channel dim of a 3-d image (0 or 2), or torch's IndexError.
int64_t channel_dim(int64_t dim);

// s.out (s.N, s.Cp, s.h, s.w set): a fresh output in memory_format, or for out= (`out` not nullptr) out checked
// against the result and the inputs (out_host::check: `images`, mean, std) and what the kernel writes for it:
// out itself in NCHW or NHWC storage, else a contiguous temporary (s.dest keeps out). Shared with resize_host.
void set_output(Setup& s, at::TensorList images, const at::Tensor& mean, const at::Tensor& std, at::ScalarType dtype,
                at::MemoryFormat memory_format, const at::Tensor* out);
// After the pass: the fresh output, or out= with the temporary (if any) copied into it.
at::Tensor result(const Setup& s);

// The batch form: images (N, C, H, W) with dim -3 or (N, H, W, C) with dim -1. out: out=, or nullptr.
Setup setup_batch(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& top_left,
                  const at::Tensor& mirror, c10::IntArrayRef size, int64_t dim, at::ScalarType dtype,
                  at::MemoryFormat memory_format, int64_t channels, bool pad, const at::Tensor* out);

// The list form: N images (C, H_i, W_i) with dim -3 or (H_i, W_i, C) with dim -1.
Setup setup_list(at::TensorList images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& top_left,
                 const at::Tensor& mirror, c10::IntArrayRef size, int64_t dim, at::ScalarType dtype,
                 at::MemoryFormat memory_format, int64_t channels, bool pad, const at::Tensor* out);

}  // namespace cmn_host
}  // namespace tensorops

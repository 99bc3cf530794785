// Host side of crop_mirror_normalize (crop_mirror_normalize_host.h): compiled once, by the C++ compiler, for the
// CPU and CUDA ops.
#include "tensorops/crop_mirror_normalize_host.h"

#include <ATen/ATen.h>

#include "tensorops/batch_cache.h"
#include "tensorops/checks.h"
#include "tensorops/normalize_host.h"
#include "tensorops/out_host.h"

namespace tensorops {
namespace cmn_host {

// One image of the batch as (C, H, W) strides: `dim` is 0 (CHW) or 2 (HWC) of a 3-d image.
cmn::Sample describe(const at::Tensor& image, int64_t dim) {
  cmn::Sample s{};
  const int64_t ey = dim == 0 ? 1 : 0, ex = dim == 0 ? 2 : 1;
  s.src = reinterpret_cast<int64_t>(image.const_data_ptr());
  s.sc = image.stride(dim);
  s.sy = image.stride(ey);
  s.sx = image.stride(ex);
  s.H = image.size(ey);
  s.W = image.size(ex);
  return s;
}

void check_stat(const char* name, const at::Tensor& stat, int64_t N, int64_t C, const at::Device& device) {
  TENSOROPS_CHECK_VALUE(stat.dim() == 2, name, "must be a 2-d (N or 1, C or 1) tensor, got shape ", stat.sizes());
  TENSOROPS_CHECK_TYPE(normalize_host::is_float_dtype(stat.scalar_type()), name, "must be floating, got ",
                       stat.scalar_type());
  TENSOROPS_CHECK_VALUE(stat.size(0) == 1 || stat.size(0) == N, name, "has ", stat.size(0),
                        " rows but the batch has ", N, " samples");
  TENSOROPS_CHECK_VALUE(stat.size(1) == 1 || stat.size(1) == C, name, "has ", stat.size(1),
                        " values per sample but the images have ", C, " channels");
  TENSOROPS_CHECK_VALUE(stat.device() == device, name, "is on ", stat.device(), " but the images are on ", device);
}

void set_stats(Setup& s, const at::Tensor& mean, const at::Tensor& std) {
  s.mean = mean.to(s.acc).contiguous();
  s.std = std.to(s.acc).contiguous();
  s.mean_sn = s.mean.size(0) == 1 ? 0 : s.mean.size(1);
  s.mean_sc = s.mean.size(1) == 1 ? 0 : 1;
  s.std_sn = s.std.size(0) == 1 ? 0 : s.std.size(1);
  s.std_sc = s.std.size(1) == 1 ? 0 : 1;
}

void set_output(Setup& s, at::TensorList images, const at::Tensor& mean, const at::Tensor& std, at::ScalarType dtype,
                at::MemoryFormat memory_format, const at::Tensor* out) {
  const at::Tensor& first = images[0];
  if (out == nullptr) {
    s.out = batch_cache::empty({s.N, s.Cp, s.h, s.w}, first.options().dtype(dtype), memory_format);
    return;
  }
  std::vector<at::Tensor> inputs(images.begin(), images.end());
  inputs.push_back(mean);
  inputs.push_back(std);
  out_host::check(*out, {s.N, s.Cp, s.h, s.w}, dtype, first.device(), inputs);
  s.dest = *out;
  s.out = out_host::target(*out, out_host::nchw_or_nhwc(*out), at::MemoryFormat::Contiguous);
}

at::Tensor result(const Setup& s) { return s.dest.defined() ? out_host::finish(s.dest, s.out) : s.out; }

namespace {

// Checks the arguments shared by the batch and list forms, fills the crop part of `s.samples` (already
// described by describe()) and allocates the output. `images` are the image tensors (one batch tensor or the
// list) for dtype and device checks.
void finish(Setup& s, at::TensorList images, const at::Tensor& mean, const at::Tensor& std,
            const at::Tensor& top_left, const at::Tensor& mirror, c10::IntArrayRef size,
            at::ScalarType dtype, at::MemoryFormat memory_format, int64_t channels, bool pad, const at::Tensor* out) {
  const at::Tensor& first = images[0];
  s.N = static_cast<int64_t>(s.samples.size());
  s.in_dtype = first.scalar_type();
  TENSOROPS_CHECK_TYPE(s.in_dtype == at::kByte || normalize_host::is_float_dtype(s.in_dtype), "images",
                       "must be uint8 or floating (float16, bfloat16, float32, float64), got ", s.in_dtype);
  TENSOROPS_CHECK_TYPE(normalize_host::is_float_dtype(dtype), "dtype",
                       "must be float16, bfloat16, float32 or float64, got ", dtype);
  TENSOROPS_CHECK_VALUE(size.size() == 2 && size[0] >= 0 && size[1] >= 0, "size",
                        "must be two non-negative numbers (h, w), got ", size);
  TENSOROPS_CHECK_VALUE(channels >= s.C, "pad_channels", "must be at least the images' ", s.C,
                        " channels, got ", channels);
  TENSOROPS_CHECK_VALUE(memory_format == at::MemoryFormat::Contiguous || memory_format == at::MemoryFormat::ChannelsLast,
                        "memory_format", "must be torch.contiguous_format or torch.channels_last, got ", memory_format);
  TENSOROPS_CHECK_VALUE(top_left.device().is_cpu() && top_left.scalar_type() == at::kLong && top_left.dim() == 2 &&
                            top_left.size(0) == s.N && top_left.size(1) == 2,
                        "top_left", "must be an int64 CPU tensor of shape (", s.N, ", 2), got ",
                        top_left.scalar_type(), " ", top_left.sizes(), " on ", top_left.device());
  TENSOROPS_CHECK_VALUE(mirror.device().is_cpu() && mirror.scalar_type() == at::kBool && mirror.dim() == 1 &&
                            mirror.size(0) == s.N,
                        "mirror", "must be a bool CPU tensor of shape (", s.N, ",), got ", mirror.scalar_type(), " ",
                        mirror.sizes(), " on ", mirror.device());
  check_stat("mean", mean, s.N, s.C, first.device());
  check_stat("std", std, s.N, s.C, first.device());
  s.h = size[0];
  s.w = size[1];
  s.Cp = channels;
  s.acc = normalize_host::acc_dtype(dtype);
  const at::Tensor tl = top_left.contiguous(), mi = mirror.contiguous();
  const int64_t* t = tl.const_data_ptr<int64_t>();
  const bool* m = mi.const_data_ptr<bool>();
  for (int64_t n = 0; n < s.N; ++n) {
    cmn::Sample& e = s.samples[n];
    e.y0 = t[2 * n];
    e.x0 = t[2 * n + 1];
    e.mirror = m[n] ? 1 : 0;
    TENSOROPS_CHECK_VALUE(pad || cmn::crop_in_bounds(e, s.h, s.w), "top_left",
                          "sample ", n, ": the crop at top_left (", e.y0, ", ", e.x0, ") of size (", s.h, ", ", s.w,
                          ") leaves its ", e.H, "x", e.W, " image (pass out_of_bounds=\"pad\" to fill outside)");
  }
  set_stats(s, mean, std);
  set_output(s, images, mean, std, dtype, memory_format, out);
}

}  // namespace

int64_t channel_dim(int64_t dim) {
  TENSOROPS_CHECK_INDEX(dim == -3 || dim == -1 || dim == 0 || dim == 2, "dim",
                        "must be -3 (CHW images) or -1 (HWC images), got ", dim);
  return dim < 0 ? dim + 3 : dim;
}

int64_t describe_list(at::TensorList images, int64_t d, std::vector<cmn::Sample>& samples) {
  TENSOROPS_CHECK_VALUE(!images.empty(), "images", "is an empty list");
  const int64_t C = images[0].dim() == 3 ? images[0].size(d) : 0;
  for (size_t n = 0; n < images.size(); ++n) {
    const at::Tensor& im = images[n];
    TENSOROPS_CHECK_VALUE(im.dim() == 3, "images", "[", n, "] must be a 3-d image, got shape ", im.sizes());
    TENSOROPS_CHECK_VALUE(im.size(d) == C, "images", "[", n, "] has ", im.size(d), " channels but images[0] has ",
                          C);
    TENSOROPS_CHECK_TYPE(im.scalar_type() == images[0].scalar_type(), "images", "[", n, "] is ", im.scalar_type(),
                         " but images[0] is ", images[0].scalar_type());
    TENSOROPS_CHECK_VALUE(im.device() == images[0].device(), "images", "[", n, "] is on ", im.device(),
                          " but images[0] is on ", images[0].device());
    samples.push_back(describe(im, d));
  }
  return C;
}

// The batch form: images (N, C, H, W) with dim -3 or (N, H, W, C) with dim -1.
Setup setup_batch(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                  const at::Tensor& top_left, const at::Tensor& mirror, c10::IntArrayRef size, int64_t dim,
                  at::ScalarType dtype, at::MemoryFormat memory_format, int64_t channels, bool pad,
                  const at::Tensor* out) {
  TENSOROPS_CHECK_VALUE(images.dim() == 4, "images", "must be a 4-d batch, got shape ", images.sizes());
  const int64_t d = channel_dim(dim);
  Setup s;
  s.C = images.size(d + 1);
  const int64_t N = images.size(0);
  s.samples.resize(N);
  for (int64_t n = 0; n < N; ++n) s.samples[n] = describe(images.select(0, n), d);
  finish(s, images, mean, std, top_left, mirror, size, dtype, memory_format, channels, pad, out);
  return s;
}

// The list form: N images (C, H_i, W_i) with dim -3 or (H_i, W_i, C) with dim -1.
Setup setup_list(at::TensorList images, const at::Tensor& mean, const at::Tensor& std,
                 const at::Tensor& top_left, const at::Tensor& mirror, c10::IntArrayRef size, int64_t dim,
                 at::ScalarType dtype, at::MemoryFormat memory_format, int64_t channels, bool pad,
                 const at::Tensor* out) {
  const int64_t d = channel_dim(dim);
  Setup s;
  s.C = describe_list(images, d, s.samples);
  finish(s, images, mean, std, top_left, mirror, size, dtype, memory_format, channels, pad, out);
  return s;
}

}  // namespace cmn_host
}  // namespace tensorops

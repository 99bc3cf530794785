// Host side of resized_crop_mirror_normalize (resize_host.h): compiled once, by the C++ compiler, for the CPU
// and CUDA ops.
#include "tensorops/resize_host.h"

#include <cmath>

#include <ATen/ATen.h>

#include "tensorops/checks.h"
#include "tensorops/normalize_host.h"

namespace tensorops {
namespace resize_host {
namespace {

// Box edges may pass the image's by this much (boxes computed in floating point, e.g. Resize + CenterCrop's
// window, land a rounding error past the last pixel).
constexpr double kEdgeSlack = 1e-6;

void finish(Setup& r, at::TensorList images, const Args& a) {
  const at::Tensor& first = images[0];
  cmn_host::Setup& s = r.base;
  s.N = static_cast<int64_t>(s.samples.size());
  s.in_dtype = first.scalar_type();
  const bool u8_out = a.dtype == at::kByte;
  TENSOROPS_CHECK_TYPE(s.in_dtype == at::kByte || s.in_dtype == at::kUInt16 ||
                           normalize_host::is_float_dtype(s.in_dtype),
                       "images", "must be uint8, uint16 or floating (float16, bfloat16, float32, float64), got ",
                       s.in_dtype);
  TENSOROPS_CHECK_TYPE(normalize_host::is_float_dtype(a.dtype) || (u8_out && s.in_dtype == at::kByte), "dtype",
                       "must be float16, bfloat16, float32, float64 (or uint8 for uint8 images), got ", a.dtype);
  TENSOROPS_CHECK_VALUE(a.size.size() == 2 && a.size[0] >= 0 && a.size[1] >= 0, "size",
                        "must be two non-negative numbers (h, w), got ", a.size);
  TENSOROPS_CHECK_VALUE(a.channels >= s.C, "pad_channels", "must be at least the images' ", s.C, " channels, got ",
                        a.channels);
  TENSOROPS_CHECK_VALUE(
      a.memory_format == at::MemoryFormat::Contiguous || a.memory_format == at::MemoryFormat::ChannelsLast,
      "memory_format", "must be torch.contiguous_format or torch.channels_last, got ", a.memory_format);
  TENSOROPS_CHECK_VALUE(a.interpolation == resize::kNearest || a.interpolation == resize::kBilinear ||
                            a.interpolation == resize::kBicubic,
                        "interpolation", "must be 0 (nearest), 1 (bilinear) or 2 (bicubic), got ", a.interpolation);
  if (a.interpolation == resize::kBicubic && (s.in_dtype == at::kByte || s.in_dtype == at::kUInt16))
    r.vmax = s.in_dtype == at::kByte ? 255.0 : 65535.0;
  TENSOROPS_CHECK_VALUE(a.boxes.device().is_cpu() && a.boxes.scalar_type() == at::kDouble && a.boxes.dim() == 2 &&
                            a.boxes.size(0) == s.N && a.boxes.size(1) == 4,
                        "boxes", "must be a float64 CPU tensor of shape (", s.N, ", 4), got ", a.boxes.scalar_type(),
                        " ", a.boxes.sizes(), " on ", a.boxes.device());
  TENSOROPS_CHECK_VALUE(a.mirror.device().is_cpu() && a.mirror.scalar_type() == at::kBool && a.mirror.dim() == 1 &&
                            a.mirror.size(0) == s.N,
                        "mirror", "must be a bool CPU tensor of shape (", s.N, ",), got ", a.mirror.scalar_type(),
                        " ", a.mirror.sizes(), " on ", a.mirror.device());
  cmn_host::check_stat("mean", a.mean, s.N, s.C, first.device());
  cmn_host::check_stat("std", a.std, s.N, s.C, first.device());
  s.h = a.size[0];
  s.w = a.size[1];
  s.Cp = a.channels;
  s.acc = u8_out ? at::kFloat : normalize_host::acc_dtype(a.dtype);
  const at::Tensor bx = a.boxes.contiguous(), mi = a.mirror.contiguous();
  const double* b = bx.const_data_ptr<double>();
  const bool* m = mi.const_data_ptr<bool>();
  r.samples.resize(s.N);
  for (int64_t n = 0; n < s.N; ++n) {
    const cmn::Sample& im = s.samples[n];
    const double top = b[4 * n], left = b[4 * n + 1], bh = b[4 * n + 2], bw = b[4 * n + 3];
    TENSOROPS_CHECK_VALUE(std::isfinite(top) && std::isfinite(left) && std::isfinite(bh) && std::isfinite(bw) &&
                              bh > 0 && bw > 0,
                          "boxes", "sample ", n, ": the box (top, left, height, width) = (", top, ", ", left, ", ", bh,
                          ", ", bw, ") must be finite with a positive height and width");
    const bool inside = top >= -kEdgeSlack && left >= -kEdgeSlack && top + bh <= im.H + kEdgeSlack &&
                        left + bw <= im.W + kEdgeSlack;
    TENSOROPS_CHECK_VALUE(a.pad || inside, "boxes", "sample ", n, ": the box (top, left, height, width) = (", top,
                          ", ", left, ", ", bh, ", ", bw, ") leaves its ", im.H, "x", im.W,
                          " image (pass out_of_bounds=\"pad\" to fill outside)");
    resize::Sample& e = r.samples[n];
    e.src = im.src;
    e.sc = im.sc;
    e.sy = im.sy;
    e.sx = im.sx;
    e.H = im.H;
    e.W = im.W;
    e.y = resize::make_axis(top, bh, s.h, im.H, a.interpolation, a.antialias, a.crop_first);
    e.x = resize::make_axis(left, bw, s.w, im.W, a.interpolation, a.antialias, a.crop_first);
    e.mirror = m[n] ? 1 : 0;
  }
  cmn_host::set_stats(s, a.mean, a.std);
  cmn_host::set_output(s, images, a.mean, a.std, a.dtype, a.memory_format, a.out);
}

}  // namespace

Setup setup_batch(const at::Tensor& images, const Args& a) {
  TENSOROPS_CHECK_VALUE(images.dim() == 4, "images", "must be a 4-d batch, got shape ", images.sizes());
  const int64_t d = cmn_host::channel_dim(a.dim);
  Setup r;
  r.base.C = images.size(d + 1);
  const int64_t N = images.size(0);
  r.base.samples.resize(N);
  for (int64_t n = 0; n < N; ++n) r.base.samples[n] = cmn_host::describe(images.select(0, n), d);
  finish(r, images, a);
  return r;
}

Setup setup_list(at::TensorList images, const Args& a) {
  const int64_t d = cmn_host::channel_dim(a.dim);
  Setup r;
  r.base.C = cmn_host::describe_list(images, d, r.base.samples);
  finish(r, images, a);
  return r;
}

Setup setup_described(std::vector<cmn::Sample> samples, int64_t C, at::TensorList inputs, const Args& a) {
  TENSOROPS_CHECK_VALUE(!inputs.empty(), "data", "is an empty list");
  Setup r;
  r.base.C = C;
  r.base.samples = std::move(samples);
  finish(r, inputs, a);
  return r;
}

}  // namespace resize_host
}  // namespace tensorops

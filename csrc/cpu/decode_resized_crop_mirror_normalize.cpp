// decode_resized_crop_mirror_normalize on the CPU: encoded JPEGs to a normalized batch, each image decoded only
// where its box's filter reads, on the thread that resamples it right after (resize_cpu.h's SampleSource).
//
// 1. Headers (jpeg::read_info): each JPEG's size, so the boxes are checked and the filter windows built in the
//    full image's coordinates exactly as resized_crop_mirror_normalize builds them for the decoded image.
// 2. Per sample, in parallel: the rows [y0, y1) and columns [x0, x1) the windows read, one pixel wider on each
//    side (libjpeg's fancy upsampling reads chroma one pixel beyond a crop's edge, so the widened region's
//    inner pixels equal a full decode's), decoded into this thread's buffer; the sample's address is set so that
//    full-image coordinates land in that buffer, and the row pass resamples it as it would the full image.
// Samples given as 3-d uint8 HWC tensors (decoded elsewhere: PNG, WebP, a build without libjpeg) are resampled
// in place. Errors are collected per sample and raised after the pass, the lowest sample first.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/checks.h"
#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/jpeg.h"
#include "tensorops/resize_host.h"
#include "resize_cpu.h"

namespace tensorops {
namespace {

// Decoding an image costs about as much as moving this many bytes per pixel (1.2 ms for a 500x375 photo on
// one core against parallel.h's ~16 GB/s of traffic): the policy's measure of the work.
constexpr int64_t kDecodeBytesPerPixel = 64;

class JpegSource final : public resize_cpu::SampleSource {
 public:
  JpegSource(at::TensorList data, std::vector<jpeg::Info> infos, std::vector<int> denoms, int64_t max_pixels)
      : data_(data), infos_(std::move(infos)), denoms_(std::move(denoms)), max_pixels_(max_pixels),
        errors_(data.size()) {}

  bool prepare(int64_t n, resize::Sample& s, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
               std::vector<uint8_t>& scratch) override {
    if (!errors_[n].empty()) return false;  // its header failed
    if (data_[n].dim() == 3) return true;  // decoded elsewhere: described in place
    const jpeg::Info& info = infos_[n];
    if (y1 <= y0 || x1 <= x0) return true;  // nothing readable: every output is fill
    jpeg::Region r;
    r.denom = denoms_[n];
    r.y0 = std::max<int64_t>(y0 - 1, 0);
    r.y1 = std::min<int64_t>(y1 + 1, jpeg::scaled(info.height, r.denom));
    r.x0 = std::max<int64_t>(x0 - 1, 0);
    r.x1 = std::min<int64_t>(x1 + 1, jpeg::scaled(info.width, r.denom));
    r.max_pixels = max_pixels_;
    const size_t need = jpeg::capacity_for(info, r.y0, r.y1, r.x0, r.x1);
    if (scratch.size() < need) scratch.resize(need);
    r.buffer = scratch.data();
    r.capacity = scratch.size();
    char message[jpeg::kMessageBytes] = {0};
    const at::Tensor& d = data_[n];
    if (jpeg::decode_region(d.const_data_ptr<uint8_t>(), static_cast<size_t>(d.numel()), info, &r, message) != 0) {
      errors_[n] = message;
      return false;
    }
    int64_t stride = r.stride;
    if (info.components == 4) {  // CMYK rows to RGB, packed at 3 bytes a pixel in the same rows
      for (int64_t y = 0; y < r.y1 - r.y0; ++y) jpeg::cmyk_to_rgb(scratch.data() + y * r.stride, r.width);
    }
    const int64_t px = 3;
    s.sc = 1;
    s.sx = px;
    s.sy = stride;
    // pixel (0, 0) of the full image: full-image coordinates inside the region land in the buffer
    s.src = reinterpret_cast<int64_t>(scratch.data()) - r.y0 * stride - r.dx0 * px;
    return true;
  }

  int64_t cost(int64_t n, int64_t pixels) const override {
    return data_[n].dim() == 3 ? 0 : pixels * kDecodeBytesPerPixel;
  }

  std::vector<std::string>& errors() { return errors_; }

 private:
  at::TensorList data_;
  std::vector<jpeg::Info> infos_;
  std::vector<int> denoms_;  // per sample: decoded at scale 1/denom
  int64_t max_pixels_;
  std::vector<std::string> errors_;  // per sample: "" or why it failed
};

// The samples' headers and descriptions: a JPEG is described by its header (its address is set when it is
// decoded); a failed header gets a size that holds its box, so the box checks pass (its output is fill).
std::vector<cmn::Sample> describe(at::TensorList data, const at::Tensor& boxes, int64_t max_pixels,
                                  std::vector<jpeg::Info>& infos, std::vector<std::string>& errors) {
  const int64_t N = static_cast<int64_t>(data.size());
  TENSOROPS_CHECK_VALUE(N > 0, "data", "is an empty list");
  TENSOROPS_CHECK_VALUE(boxes.device().is_cpu() && boxes.scalar_type() == at::kDouble && boxes.dim() == 2 &&
                            boxes.size(0) == N && boxes.size(1) == 4,
                        "boxes", "must be a float64 CPU tensor of shape (", N, ", 4), got ", boxes.scalar_type(),
                        " ", boxes.sizes(), " on ", boxes.device());
  const at::Tensor bx = boxes.contiguous();
  const double* b = bx.const_data_ptr<double>();
  std::vector<cmn::Sample> samples(N);
  infos.assign(N, jpeg::Info{});
  errors.assign(N, std::string());
  for (int64_t n = 0; n < N; ++n) {
    const at::Tensor& d = data[n];
    TENSOROPS_CHECK_TYPE(d.scalar_type() == at::kByte && d.device().is_cpu(), "data", "[", n,
                         "] must be a uint8 CPU tensor, got ", d.scalar_type(), " on ", d.device());
    TENSOROPS_CHECK_VALUE(d.dim() == 1 || (d.dim() == 3 && d.size(2) == 3), "data", "[", n,
                          "] must be encoded bytes (1-d) or a decoded (H, W, 3) image, got shape ", d.sizes());
    cmn::Sample& s = samples[n];
    if (d.dim() == 3) {
      s = cmn_host::describe(d, 2);
      continue;
    }
    TENSOROPS_CHECK_VALUE(d.is_contiguous(), "data", "[", n, "] must be contiguous bytes");
    char message[jpeg::kMessageBytes] = {0};
    if (jpeg::read_info(d.const_data_ptr<uint8_t>(), static_cast<size_t>(d.numel()), max_pixels, &infos[n],
                        message) != 0) {
      errors[n] = message;
      s.H = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(b[4 * n] + b[4 * n + 2])));
      s.W = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(b[4 * n + 1] + b[4 * n + 3])));
    } else {
      s.H = infos[n].height;
      s.W = infos[n].width;
    }
    s.src = 0;
    s.sc = 1;
    s.sx = 3;
    s.sy = 3 * s.W;
  }
  return samples;
}

// reduced_scale: each JPEG is decoded at the smallest scale 1/d (d = 2, 4 or 8: libjpeg's fast DCT scalings)
// at which its box still covers the output size, and described as that scaled image, its box divided by d.
// Returns the boxes in the decoded images' coordinates (`boxes` itself where every d is 1).
at::Tensor reduce(std::vector<cmn::Sample>& samples, at::TensorList data, const std::vector<jpeg::Info>& infos,
                  const std::vector<std::string>& errors, const at::Tensor& boxes, at::IntArrayRef size,
                  std::vector<int>& denoms) {
  const int64_t N = static_cast<int64_t>(samples.size());
  denoms.assign(N, 1);
  at::Tensor scaled = boxes.clone();
  double* b = scaled.mutable_data_ptr<double>();
  for (int64_t n = 0; n < N; ++n) {
    if (data[n].dim() != 1 || !errors[n].empty()) continue;
    const double h = static_cast<double>(size[0]), w = static_cast<double>(size[1]);
    int d = 8;
    while (d > 1 && (b[4 * n + 2] < d * h || b[4 * n + 3] < d * w)) d /= 2;
    denoms[n] = d;
    for (int k = 0; k < 4; ++k) b[4 * n + k] /= d;
    cmn::Sample& s = samples[n];
    s.H = jpeg::scaled(infos[n].height, d);
    s.W = jpeg::scaled(infos[n].width, d);
    s.sy = 3 * s.W;
  }
  return scaled;
}

at::Tensor decode_into(at::TensorList data, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                       const at::Tensor& mirror, at::IntArrayRef size, double scale, int64_t interpolation,
                       bool antialias, bool crop_first, at::ScalarType dtype, at::MemoryFormat memory_format,
                       int64_t channels, double fill, bool pad, int64_t max_pixels, bool skip_errors,
                       bool reduced_scale, const at::Tensor* out, at::Tensor* result) {
  std::vector<jpeg::Info> infos;
  std::vector<std::string> header_errors;
  std::vector<cmn::Sample> samples = describe(data, boxes, max_pixels, infos, header_errors);
  std::vector<int> denoms(data.size(), 1);
  const at::Tensor decoded_boxes =
      reduced_scale ? reduce(samples, data, infos, header_errors, boxes.contiguous(), size, denoms) : boxes;
  const resize_host::Args a{mean, std, decoded_boxes, mirror, size, -1, interpolation, antialias, crop_first,
                            dtype, memory_format, channels, pad, out};
  resize_host::Setup r = resize_host::setup_described(std::move(samples), 3, data, a);
  JpegSource source(data, std::move(infos), std::move(denoms), max_pixels);
  source.errors() = std::move(header_errors);
  if (r.base.out.numel() > 0) resize_cpu::run_from(r, scale, fill, source);
  const std::vector<std::string>& errors = source.errors();
  const int64_t N = static_cast<int64_t>(errors.size());
  at::Tensor failed = at::zeros({N}, at::kBool);
  bool* f = failed.mutable_data_ptr<bool>();
  for (int64_t n = 0; n < N; ++n) {
    f[n] = !errors[n].empty();
    TENSOROPS_CHECK_VALUE(skip_errors || errors[n].empty(), "data", "sample ", n, ": ", errors[n]);
  }
  *result = cmn_host::result(r.base);
  return failed;
}

std::tuple<at::Tensor, at::Tensor> decode_op(at::TensorList data, const at::Tensor& mean, const at::Tensor& std,
                                             const at::Tensor& boxes, const at::Tensor& mirror, at::IntArrayRef size,
                                             double scale, int64_t interpolation, bool antialias, bool crop_first,
                                             at::ScalarType dtype, at::MemoryFormat memory_format, int64_t channels,
                                             double fill, bool pad, int64_t max_pixels, bool skip_errors,
                                             bool reduced_scale) {
  at::Tensor result;
  at::Tensor failed = decode_into(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first,
                                  dtype, memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale,
                                  nullptr, &result);
  return {result, failed};
}

at::Tensor decode_op_out(at::TensorList data, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                         const at::Tensor& mirror, at::IntArrayRef size, double scale, int64_t interpolation,
                         bool antialias, bool crop_first, at::ScalarType dtype, at::MemoryFormat memory_format,
                         int64_t channels, double fill, bool pad, int64_t max_pixels, bool skip_errors,
                         bool reduced_scale, at::Tensor& out) {
  at::Tensor result;
  return decode_into(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first, dtype,
                     memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale, &out, &result);
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("decode_resized_crop_mirror_normalize", &decode_op);
  m.impl("decode_resized_crop_mirror_normalize_out", &decode_op_out);
}

}  // namespace tensorops

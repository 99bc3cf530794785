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
// in place. Errors are collected per sample and raised after the pass, the lowest sample first. A libjpeg warning
// is not an error (unless strict): the sample decodes as decode_jpeg decodes it, and where the warning came
// from a partial decode, the sample is decoded again with every column and every row above its region (no crop,
// no skip), so nothing of the partial decode's machinery touches a damaged file's values. Each sample's status
// (decode_report.h) is the op's second output.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/checks.h"
#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/decode_report.h"
#include "tensorops/jpeg.h"
#include "tensorops/resize_host.h"
#include "resize_cpu.h"

namespace tensorops {
namespace decode_report {
std::vector<Note>& last() {
  thread_local std::vector<Note> notes;
  return notes;
}

namespace {
std::atomic<int64_t> g_redecodes{0};
}
int64_t whole_row_redecodes() { return g_redecodes.load(std::memory_order_relaxed); }
}  // namespace decode_report

namespace {

using decode_report::kFailed;
using decode_report::kOk;
using decode_report::kUnsupported;
using decode_report::kWarned;

// What happened to each sample: a status (decode_report.h) and, unless kOk, the text that says why.
struct Outcomes {
  std::vector<int8_t> status;
  std::vector<std::string> text;
  explicit Outcomes(size_t n = 0) : status(n, kOk), text(n) {}
  bool failed(int64_t n) const { return status[n] == kFailed || status[n] == kUnsupported; }
  void set(int64_t n, int rc, const char* message) {
    status[n] = rc == jpeg::kUnsupported ? kUnsupported : kFailed;
    text[n] = message;
  }
  void warned(int64_t n, const char* message) {
    if (status[n] == kOk) {
      status[n] = kWarned;
      text[n] = message;
    }
  }
};

// Decoding an image costs about as much as moving this many bytes per pixel (1.2 ms for a 500x375 photo on
// one core against parallel.h's ~16 GB/s of traffic): the policy's measure of the work.
constexpr int64_t kDecodeBytesPerPixel = 64;

class JpegSource final : public resize_cpu::SampleSource {
 public:
  JpegSource(at::TensorList data, std::vector<jpeg::Info> infos, std::vector<int> denoms, int64_t max_pixels,
             bool strict, Outcomes outcomes)
      : data_(data), infos_(std::move(infos)), denoms_(std::move(denoms)), max_pixels_(max_pixels),
        strict_(strict), outcomes_(std::move(outcomes)) {}

  bool prepare(int64_t n, resize::Sample& s, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
               std::vector<uint8_t>& scratch) override {
    if (outcomes_.failed(n)) return false;  // its header failed
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
    r.strict = strict_;
    char message[jpeg::kMessageBytes] = {0};
    int rc = decode(n, r, scratch, message);
    const bool partial = r.y0 > 0 || r.dx0 > 0 || r.width < jpeg::scaled(info.width, r.denom);
    if (rc == jpeg::kOk && r.warnings > 0 && partial) {  // again, with nothing skipped or cropped
      r.whole_rows = true;
      rc = decode(n, r, scratch, message);
      decode_report::g_redecodes.fetch_add(1, std::memory_order_relaxed);
    }
    if (rc != jpeg::kOk) {
      outcomes_.set(n, rc, message);
      return false;
    }
    if (r.warnings > 0) outcomes_.warned(n, message);
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

  const Outcomes& outcomes() const { return outcomes_; }

 private:
  int decode(int64_t n, jpeg::Region& r, std::vector<uint8_t>& scratch, char* message) {
    const size_t need = jpeg::capacity_for(infos_[n], r);
    if (scratch.size() < need) scratch.resize(need);
    r.buffer = scratch.data();
    r.capacity = scratch.size();
    const at::Tensor& d = data_[n];
    return jpeg::decode_region(d.const_data_ptr<uint8_t>(), static_cast<size_t>(d.numel()), infos_[n], &r, message);
  }

  at::TensorList data_;
  std::vector<jpeg::Info> infos_;
  std::vector<int> denoms_;  // per sample: decoded at scale 1/denom
  int64_t max_pixels_;
  bool strict_;
  Outcomes outcomes_;  // per sample (each written by the one thread that prepares it)
};

// The samples' headers and descriptions: a JPEG is described by its header (its address is set when it is
// decoded); a failed header gets a size that holds its box, so the box checks pass (its output is fill).
std::vector<cmn::Sample> describe(at::TensorList data, const at::Tensor& boxes, int64_t max_pixels, bool strict,
                                  std::vector<jpeg::Info>& infos, Outcomes& outcomes) {
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
  outcomes = Outcomes(N);
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
    const int rc = jpeg::read_info(d.const_data_ptr<uint8_t>(), static_cast<size_t>(d.numel()), max_pixels, strict,
                                   &infos[n], message);
    if (rc == jpeg::kOk && infos[n].warnings > 0) outcomes.warned(n, message);
    if (rc != jpeg::kOk) {
      outcomes.set(n, rc, message);
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
                  const Outcomes& outcomes, const at::Tensor& boxes, at::IntArrayRef size, std::vector<int>& denoms) {
  const int64_t N = static_cast<int64_t>(samples.size());
  denoms.assign(N, 1);
  at::Tensor scaled = boxes.clone();
  double* b = scaled.mutable_data_ptr<double>();
  for (int64_t n = 0; n < N; ++n) {
    if (data[n].dim() != 1 || outcomes.failed(n)) continue;
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
                       bool reduced_scale, bool strict, const at::Tensor* out, at::Tensor* result) {
  decode_report::last().clear();
  std::vector<jpeg::Info> infos;
  Outcomes header;
  std::vector<cmn::Sample> samples = describe(data, boxes, max_pixels, strict, infos, header);
  std::vector<int> denoms(data.size(), 1);
  const at::Tensor decoded_boxes =
      reduced_scale ? reduce(samples, data, infos, header, boxes.contiguous(), size, denoms) : boxes;
  const resize_host::Args a{mean, std, decoded_boxes, mirror, size, -1, interpolation, antialias, crop_first,
                            dtype, memory_format, channels, pad, out};
  resize_host::Setup r = resize_host::setup_described(std::move(samples), 3, data, a);
  JpegSource source(data, std::move(infos), std::move(denoms), max_pixels, strict, std::move(header));
  if (r.base.out.numel() > 0) resize_cpu::run_from(r, scale, fill, source);
  const Outcomes& o = source.outcomes();
  const int64_t N = static_cast<int64_t>(o.status.size());
  at::Tensor status = at::empty({N}, at::kChar);
  int8_t* st = status.mutable_data_ptr<int8_t>();
  std::vector<decode_report::Note>& notes = decode_report::last();
  for (int64_t n = 0; n < N; ++n) {
    st[n] = o.status[n];
    TENSOROPS_CHECK_VALUE(skip_errors || o.status[n] != kFailed, "data", "sample ", n, ": ", o.text[n]);
    if (o.status[n] != kOk) notes.push_back({n, o.status[n], o.text[n]});
  }
  *result = cmn_host::result(r.base);
  return status;
}

std::tuple<at::Tensor, at::Tensor> decode_op(at::TensorList data, const at::Tensor& mean, const at::Tensor& std,
                                             const at::Tensor& boxes, const at::Tensor& mirror, at::IntArrayRef size,
                                             double scale, int64_t interpolation, bool antialias, bool crop_first,
                                             at::ScalarType dtype, at::MemoryFormat memory_format, int64_t channels,
                                             double fill, bool pad, int64_t max_pixels, bool skip_errors,
                                             bool reduced_scale, bool strict) {
  at::Tensor result;
  at::Tensor status = decode_into(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first,
                                  dtype, memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale,
                                  strict, nullptr, &result);
  return {result, status};
}

at::Tensor decode_op_out(at::TensorList data, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                         const at::Tensor& mirror, at::IntArrayRef size, double scale, int64_t interpolation,
                         bool antialias, bool crop_first, at::ScalarType dtype, at::MemoryFormat memory_format,
                         int64_t channels, double fill, bool pad, int64_t max_pixels, bool skip_errors,
                         bool reduced_scale, bool strict, at::Tensor& out) {
  at::Tensor result;
  return decode_into(data, mean, std, boxes, mirror, size, scale, interpolation, antialias, crop_first, dtype,
                     memory_format, channels, fill, pad, max_pixels, skip_errors, reduced_scale, strict, &out,
                     &result);
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("decode_resized_crop_mirror_normalize", &decode_op);
  m.impl("decode_resized_crop_mirror_normalize_out", &decode_op_out);
}

}  // namespace tensorops

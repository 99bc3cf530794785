// augment's host side: checks and the per-sample table (see tensorops/augment_host.h).
// The inverse affine matrix is computed in double exactly as torchvision's _get_inverse_affine_matrix computes it
// in Python (same libm calls, same order, no contraction), so the float32 theta is torchvision's.
#pragma GCC optimize("fp-contract=off")
#include "tensorops/augment_host.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <ATen/ATen.h>

#include "tensorops/batch_cache.h"
#include "tensorops/checks.h"

namespace tensorops {
namespace augment_host {

void check_batch(const at::Tensor& self, const char* op) {
  TENSOROPS_CHECK_TYPE(self.scalar_type() == at::kByte, "batch", "must be uint8 (", op, "), got ", self.scalar_type());
  TENSOROPS_CHECK_VALUE(self.dim() == 4, "batch", "must be (N, C, H, W) (", op, "), got ", self.dim(), " dims");
  TENSOROPS_CHECK_VALUE(self.size(1) == 1 || self.size(1) == 3, "batch", "must have 1 or 3 channels (", op,
                        "), got ", self.size(1));
}

// From the batch cache (batch_cache.h): a fresh 4.8 MB output per call would page-fault its way in every time.
at::Tensor empty_like_batch(const at::Tensor& self) {
  const bool cl = self.is_contiguous(at::MemoryFormat::ChannelsLast) && !self.is_contiguous();
  return batch_cache::empty(self.sizes(), self.options(),
                            cl ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
}

namespace {

// torchvision's _get_inverse_affine_matrix (inverted=True), in Python's double arithmetic.
void inverse_affine(double cx, double cy, double angle, double tx, double ty, double scale, double shx, double shy,
                    double m[6]) {
  const double to_rad = M_PI / 180.0;  // math.radians
  const double rot = angle * to_rad, sx = shx * to_rad, sy = shy * to_rad;
  const double cos_sy = std::cos(sy), tan_sx = std::tan(sx);
  const double rot_minus_sy = rot - sy;
  const double cx_plus_tx = cx + tx, cy_plus_ty = cy + ty;
  const double a = std::cos(rot_minus_sy) / cos_sy;
  const double b = -(a * tan_sx + std::sin(rot));
  const double c = std::sin(rot_minus_sy) / cos_sy;
  const double d = std::cos(rot) - c * tan_sx;
  m[0] = d / scale;
  m[1] = -b / scale;
  m[2] = 0.0;
  m[3] = -c / scale;
  m[4] = a / scale;
  m[5] = 0.0;
  m[2] += cx - m[0] * cx_plus_tx - m[1] * cy_plus_ty;
  m[5] += cy - m[3] * cx_plus_tx - m[4] * cy_plus_ty;
}

}  // namespace

Setup setup_apply(const at::Tensor& self, const at::Tensor& ops, const at::Tensor& params, int64_t interpolation,
                  std::optional<c10::ArrayRef<double>> fill) {
  check_batch(self, "augment_apply");
  Setup s;
  s.N = self.size(0);
  s.C = self.size(1);
  s.H = self.size(2);
  s.W = self.size(3);
  TENSOROPS_CHECK_VALUE((ops.dim() == 1 || ops.dim() == 2) && ops.size(0) == s.N, "ops", "must be (N,) or (N, K) with N = ",
                        s.N, ", got ", ops.sizes());
  TENSOROPS_CHECK_TYPE(ops.scalar_type() == at::kLong, "ops", "must be int64, got ", ops.scalar_type());
  s.K = ops.dim() == 2 ? ops.size(1) : 1;
  const bool params_ok = params.dim() == ops.dim() + 1 && params.size(0) == s.N &&
                         (ops.dim() == 1 || params.size(1) == s.K) && params.size(-1) == kParams;
  TENSOROPS_CHECK_VALUE(params_ok, "params", "must be ops' shape plus a last dim of ", static_cast<int64_t>(kParams),
                        ": ops ", ops.sizes(), ", params ", params.sizes());
  TENSOROPS_CHECK_TYPE(params.scalar_type() == at::kDouble, "params", "must be float64, got ", params.scalar_type());
  TENSOROPS_CHECK_VALUE(interpolation == 0 || interpolation == 1, "interpolation",
                        "must be 0 (nearest) or 1 (bilinear), got ", interpolation);
  s.interpolation = interpolation;
  if (fill.has_value()) {
    TENSOROPS_CHECK_VALUE(fill->size() == 1 || static_cast<int64_t>(fill->size()) == s.C, "fill",
                          "must have 1 or C = ", s.C, " values, got ", fill->size());
    s.has_fill = true;
    for (int64_t c = 0; c < s.C; ++c) s.fill[c] = static_cast<float>((*fill)[fill->size() == 1 ? 0 : c]);
  }
  const at::Tensor o = ops.cpu().contiguous();
  const at::Tensor p = params.cpu().contiguous();
  const int64_t* op = o.const_data_ptr<int64_t>();
  const double* pr = p.const_data_ptr<double>();
  s.samples.resize(s.N * s.K);
  const float half_w = static_cast<float>(0.5 * static_cast<double>(s.W));
  const float half_h = static_cast<float>(0.5 * static_cast<double>(s.H));
  for (int64_t e = 0; e < s.N * s.K; ++e) {
    const int64_t n = e / s.K;  // the sample (its op e % K): what the messages name
    augment::Sample& sm = s.samples[e];
    sm = augment::Sample{};
    const double* q = pr + e * kParams;
    const double m = q[kMagnitude];
    TENSOROPS_CHECK_VALUE(op[e] >= 0 && op[e] < augment::kNumOps, "ops", "sample ", n, ": unknown op code ", op[e]);
    sm.op = static_cast<int32_t>(op[e]);
    switch (sm.op) {
      case augment::kBrightness:
      case augment::kContrast:
      case augment::kSaturation:
      case augment::kSharpness:
        TENSOROPS_CHECK_VALUE(m >= 0, "params", "sample ", n, ": factor must be non-negative, got ", m);
        sm.f0 = static_cast<float>(m);
        sm.f1 = static_cast<float>(1.0 - m);
        break;
      case augment::kHue:
        TENSOROPS_CHECK_VALUE(m >= -0.5 && m <= 0.5, "params", "sample ", n, ": hue_factor must be in [-0.5, 0.5], got ",
                              m);
        sm.f0 = static_cast<float>(m);
        break;
      case augment::kPosterize: {
        TENSOROPS_CHECK_VALUE(m >= 0 && m <= 8 && m == std::floor(m), "params", "sample ", n,
                              ": bits must be an integer in [0, 8], got ", m);
        const int bits = static_cast<int>(m);
        sm.ival = bits >= 8 ? 0xFF : (((1 << bits) - 1) << (8 - bits)) & 0xFF;
        break;
      }
      case augment::kSolarize:
        TENSOROPS_CHECK_VALUE(m <= 255.0, "params", "sample ", n,
                              ": threshold must be at most 255 (uint8's maximum), got ", m);
        sm.f0 = static_cast<float>(m);
        break;
      case augment::kSolarizeAdd:
        TENSOROPS_CHECK_VALUE(m >= 0 && m <= 255 && m == std::floor(m), "params", "sample ", n,
                              ": addend must be an integer in [0, 255], got ", m);
        sm.ival = static_cast<int32_t>(m);
        break;
      case augment::kAffine: {
        TENSOROPS_CHECK_VALUE(q[kScale] > 0, "params", "sample ", n, ": scale must be positive, got ", q[kScale]);
        double mat[6];
        inverse_affine(q[kCx], q[kCy], q[kAngle], q[kTx], q[kTy], q[kScale], q[kShearX], q[kShearY], mat);
        for (int k = 0; k < 3; ++k) {
          sm.t[k] = static_cast<float>(mat[k]) / half_w;
          sm.t[3 + k] = static_cast<float>(mat[3 + k]) / half_h;
        }
        sm.ival = static_cast<int32_t>(interpolation);
        break;
      }
      case augment::kAffinePil: {
        TENSOROPS_CHECK_VALUE(m == 1 || m == 2, "params", "sample ", n,
                              ": Pillow's filter must be 1 (bilinear) or 2 (bicubic), got ", m);
        sm.ival = static_cast<int32_t>(m);
        for (int k = 0; k < 6; ++k) {
          sm.a[k] = q[kAngle + k];
          TENSOROPS_CHECK_VALUE(std::isfinite(sm.a[k]), "params", "sample ", n,
                                ": Pillow's affine data must be finite, got ", sm.a[k]);
        }
        break;
      }
      case augment::kRot90:
      case augment::kRot270:
        TENSOROPS_CHECK_VALUE(s.H == s.W, "ops", "sample ", n, ": a quarter turn needs a square image, got ", s.H,
                              "x", s.W);
        break;
      default:
        break;
    }
  }
  s.in = self;
  s.out = empty_like_batch(self);
  return s;
}

EraseSetup setup_erase(const at::Tensor& self, const at::Tensor& boxes, const at::Tensor& value) {
  check_batch(self, "erase");
  EraseSetup s;
  s.N = self.size(0);
  s.C = self.size(1);
  s.H = self.size(2);
  s.W = self.size(3);
  TENSOROPS_CHECK_VALUE(boxes.dim() == 2 && boxes.size(0) == s.N && boxes.size(1) == 4, "boxes",
                        "must be (N, 4) = (", s.N, ", 4), got ", boxes.sizes());
  TENSOROPS_CHECK_TYPE(boxes.scalar_type() == at::kLong, "boxes", "must be int64, got ", boxes.scalar_type());
  TENSOROPS_CHECK_TYPE(value.scalar_type() == at::kByte, "value", "must be uint8, got ", value.scalar_type());
  TENSOROPS_CHECK_VALUE(value.device() == self.device(), "value", "must be on the batch's device ", self.device(),
                        ", got ", value.device());
  if (value.dim() == 4) {
    TENSOROPS_CHECK_VALUE(value.sizes() == self.sizes(), "value", "a per-pixel value must have the batch's shape ",
                          self.sizes(), ", got ", value.sizes());
    s.per_pixel = true;
    s.value = value;
  } else {
    TENSOROPS_CHECK_VALUE(value.dim() == 2 && value.size(0) == s.N && value.size(1) == s.C, "value",
                          "must be (N, C) = (", s.N, ", ", s.C, ") or the batch's shape, got ", value.sizes());
    s.value = value.contiguous();
  }
  const at::Tensor b = boxes.cpu().contiguous();
  const int64_t* bp = b.const_data_ptr<int64_t>();
  s.boxes.resize(4 * s.N);
  for (int64_t n = 0; n < s.N; ++n) {
    const int64_t top = bp[4 * n], left = bp[4 * n + 1], h = bp[4 * n + 2], w = bp[4 * n + 3];
    TENSOROPS_CHECK_VALUE(top >= 0 && left >= 0 && h >= 0 && w >= 0, "boxes", "sample ", n,
                          ": top, left, height and width must be >= 0, got ", top, ", ", left, ", ", h, ", ", w);
    // as image[..., top:top + h, left:left + w]: the box clipped to the image
    s.boxes[4 * n] = std::min(top, s.H);
    s.boxes[4 * n + 1] = std::min(left, s.W);
    s.boxes[4 * n + 2] = std::min(top + h, s.H);
    s.boxes[4 * n + 3] = std::min(left + w, s.W);
  }
  s.in = self;
  s.out = empty_like_batch(self);
  return s;
}

MixSetup setup_mix(const at::Tensor& self, at::TensorList augmented, const at::Tensor& weights) {
  check_batch(self, "augment_mix");
  const bool dense = self.is_contiguous() || self.is_contiguous(at::MemoryFormat::ChannelsLast);
  TENSOROPS_CHECK_VALUE(dense, "batch", "augment_mix needs a contiguous or channels_last batch, got strides ",
                        self.strides());
  const int64_t k = static_cast<int64_t>(augmented.size());
  TENSOROPS_CHECK_VALUE(k >= 1 && k <= augment::kMaxMix, "augmented", "must hold 1 to ",
                        static_cast<int64_t>(augment::kMaxMix), " batches, got ", k);
  for (int64_t i = 0; i < k; ++i) {
    const at::Tensor& a = augmented[i];
    TENSOROPS_CHECK_TYPE(a.scalar_type() == at::kByte, "augmented", "batch ", i, " must be uint8, got ",
                         a.scalar_type());
    TENSOROPS_CHECK_VALUE(a.sizes() == self.sizes() && a.strides() == self.strides() && a.device() == self.device(),
                          "augmented", "batch ", i, " must have the batch's shape, strides and device");
  }
  MixSetup s;
  s.N = self.size(0);
  TENSOROPS_CHECK_VALUE(weights.dim() == 2 && weights.size(0) == s.N && weights.size(1) == 1 + k, "weights",
                        "must be (N, 1 + K) = (", s.N, ", ", 1 + k, "), got ", weights.sizes());
  TENSOROPS_CHECK_TYPE(weights.scalar_type() == at::kFloat, "weights", "must be float32, got ",
                       weights.scalar_type());
  TENSOROPS_CHECK_VALUE(weights.device() == self.device(), "weights", "must be on the batch's device");
  s.per_sample = s.N > 0 ? self.numel() / s.N : 0;
  s.weights = weights.contiguous();
  s.augmented = augmented.vec();
  s.in = self;
  s.out = empty_like_batch(self);
  return s;
}

}  // namespace augment_host
}  // namespace tensorops

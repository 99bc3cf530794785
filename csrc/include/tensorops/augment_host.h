// Host side of tensorops.augment, shared by the CPU and CUDA launchers and compiled once
// (host/augment_host.cpp): argument checks, the per-sample table (augment::Sample) and the output. Nothing here
// touches image data. The Python wrappers (tensorops/augment/functional.py) check first with friendlier messages.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tensorops/math/augment.h"

namespace tensorops {
namespace augment_host {

// Columns of augment_apply's params (float64 (N, kParams)): the magnitude, then affine's arguments as torchvision's
// affine takes them (center already relative to the image centre, as affine_image's center_f).
enum Param : int64_t { kMagnitude = 0, kAngle, kTx, kTy, kScale, kShearX, kShearY, kCx, kCy, kParams };

struct Setup {
  at::Tensor in, out;  // (N, C, H, W) uint8; out fresh, in the input's memory format (contiguous or channels_last)
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t K = 1;                          // ops per sample, applied in order
  std::vector<augment::Sample> samples;  // N x K, sample-major
  int64_t interpolation = 0;  // 0 nearest, 1 bilinear
  bool has_fill = false;
  float fill[3] = {0.f, 0.f, 0.f};
};

// augment_apply's arguments checked; the table made (torchvision's inverse affine matrix in double, as Python
// computes it, then its float32 theta rescaled as _affine_grid rescales it).
Setup setup_apply(const at::Tensor& self, const at::Tensor& ops, const at::Tensor& params, int64_t interpolation,
                  std::optional<c10::ArrayRef<double>> fill);

// The batch every augment op takes: uint8 (N, C, H, W), C 1 or 3.
void check_batch(const at::Tensor& self, const char* op);

// A fresh output like `self` (same sizes, contiguous or channels_last as self is).
at::Tensor empty_like_batch(const at::Tensor& self);

// augment_erase: boxes int64 (N, 4) (top, left, height, width; clipped to the image), value uint8 (N, C) or a
// uint8 tensor of self's shape (its pixels copied inside each box).
struct EraseSetup {
  at::Tensor in, out, value;
  int64_t N = 0, C = 0, H = 0, W = 0;
  bool per_pixel = false;
  std::vector<int64_t> boxes;  // N x 4, clipped: top, left, bottom, right (exclusive)
};
EraseSetup setup_erase(const at::Tensor& self, const at::Tensor& boxes, const at::Tensor& value);

// augment_mix: the batch and K <= augment::kMaxMix augmented batches of its shape and strides (a dense layout:
// contiguous or channels_last), weights float32 (N, 1 + K).
struct MixSetup {
  at::Tensor in, out, weights;  // weights: contiguous, on the batch's device
  std::vector<at::Tensor> augmented;
  int64_t N = 0, per_sample = 0;  // elements of one sample (dense)
};
MixSetup setup_mix(const at::Tensor& self, at::TensorList augmented, const at::Tensor& weights);

}  // namespace augment_host
}  // namespace tensorops

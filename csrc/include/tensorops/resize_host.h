// Host side of resized_crop_mirror_normalize shared by the CPU and CUDA launchers and compiled once
// (host/resize_host.cpp): argument checks, the per-sample table (resize::Sample: image, two axes, mirror) and
// the output. The statistics and the output are crop_mirror_normalize's (cmn_host::Setup). Nothing here touches
// image data.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/resize.h"

namespace tensorops {
namespace resize_host {

struct Setup {
  cmn_host::Setup base;  // N, C, Cp, h, w, dtypes, out, statistics (base.samples: the images, no crop)
  std::vector<resize::Sample> samples;
  // > 0: resampled values are clamped to [0, vmax] before they are normalized or rounded. Bicubic weights can be
  // negative, and torchvision clamps its uint8 result, so bicubic of uint8 / uint16 images clamps to the type's
  // range; everything else is 0 (no clamp).
  double vmax = 0;
};

// Arguments after images: as the schema's (csrc/tensorops.cpp).
struct Args {
  const at::Tensor& mean;
  const at::Tensor& std;
  const at::Tensor& boxes;
  const at::Tensor& mirror;
  c10::IntArrayRef size;
  int64_t dim;
  int64_t interpolation;
  bool antialias, crop_first;
  at::ScalarType dtype;
  at::MemoryFormat memory_format;
  int64_t channels;
  bool pad;
  const at::Tensor* out;  // out= (cmn_host::set_output), or nullptr for a fresh output
};

Setup setup_batch(const at::Tensor& images, const Args& a);
Setup setup_list(at::TensorList images, const Args& a);
// Images the caller describes (samples: address, strides and size per image; C channels): the decode op's,
// whose pixels are not in memory yet. `inputs`: the tensors they come from (dtype, device, out='s overlaps).
Setup setup_described(std::vector<cmn::Sample> samples, int64_t C, at::TensorList inputs, const Args& a);

}  // namespace resize_host
}  // namespace tensorops

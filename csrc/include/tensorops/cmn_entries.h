// crop_mirror_normalize's entry points, the same on every device: the batch and the list op, each preparing the
// batch (crop_mirror_normalize_host.h) and handing it to the device's pass run(setup, scale, fill).
#pragma once
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/crop_mirror_normalize_host.h"

namespace tensorops {
namespace cmn_entries {

using Run = void (*)(cmn_host::Setup&, double scale, double fill);

// Images: const at::Tensor& (one batch tensor) or at::TensorList (a list of images).
template <Run run, typename Images>
at::Tensor entry(Images images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& top_left,
                 const at::Tensor& mirror, at::IntArrayRef size, int64_t dim, double scale, at::ScalarType dtype,
                 at::MemoryFormat memory_format, int64_t channels, double fill, bool pad) {
  cmn_host::Setup s = [&] {
    if constexpr (std::is_same_v<Images, at::TensorList>)
      return cmn_host::setup_list(images, mean, std, top_left, mirror, size, dim, dtype, memory_format, channels, pad);
    else
      return cmn_host::setup_batch(images, mean, std, top_left, mirror, size, dim, dtype, memory_format, channels, pad);
  }();
  run(s, scale, fill);
  return s.out;
}

// Registers crop_mirror_normalize and crop_mirror_normalize_list in a TORCH_LIBRARY_IMPL block.
template <Run run>
void register_ops(torch::Library& m) {
  m.impl("crop_mirror_normalize", &entry<run, const at::Tensor&>);
  m.impl("crop_mirror_normalize_list", &entry<run, at::TensorList>);
}

}  // namespace cmn_entries
}  // namespace tensorops

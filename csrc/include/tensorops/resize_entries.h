// resized_crop_mirror_normalize's entry points, the same on every device: the batch and the list op, each
// preparing the batch (resize_host.h) and handing it to the device's pass run(setup, scale, fill).
#pragma once
#include <type_traits>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/resize_host.h"

namespace tensorops {
namespace resize_entries {

using Run = void (*)(resize_host::Setup&, double scale, double fill);

// Images: const at::Tensor& (one batch tensor) or at::TensorList (a list of images).
// out: out= (checked before any work, written directly where its layout allows) or nullptr.
template <Run run, typename Images>
at::Tensor entry_into(Images images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                      const at::Tensor& mirror, at::IntArrayRef size, int64_t dim, double scale,
                      int64_t interpolation, bool antialias, bool crop_first, at::ScalarType dtype,
                      at::MemoryFormat memory_format, int64_t channels, double fill, bool pad, const at::Tensor* out) {
  const resize_host::Args a{mean, std, boxes, mirror, size, dim, interpolation, antialias, crop_first,
                            dtype, memory_format, channels, pad, out};
  resize_host::Setup s = [&] {
    if constexpr (std::is_same_v<Images, at::TensorList>)
      return resize_host::setup_list(images, a);
    else
      return resize_host::setup_batch(images, a);
  }();
  run(s, scale, fill);
  return cmn_host::result(s.base);
}

template <Run run, typename Images>
at::Tensor entry(Images images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                 const at::Tensor& mirror, at::IntArrayRef size, int64_t dim, double scale, int64_t interpolation,
                 bool antialias, bool crop_first, at::ScalarType dtype, at::MemoryFormat memory_format,
                 int64_t channels, double fill, bool pad) {
  return entry_into<run, Images>(images, mean, std, boxes, mirror, size, dim, scale, interpolation, antialias,
                                 crop_first, dtype, memory_format, channels, fill, pad, nullptr);
}

template <Run run, typename Images>
at::Tensor& entry_out(Images images, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& boxes,
                      const at::Tensor& mirror, at::IntArrayRef size, int64_t dim, double scale,
                      int64_t interpolation, bool antialias, bool crop_first, at::ScalarType dtype,
                      at::MemoryFormat memory_format, int64_t channels, double fill, bool pad, at::Tensor& out) {
  entry_into<run, Images>(images, mean, std, boxes, mirror, size, dim, scale, interpolation, antialias, crop_first,
                          dtype, memory_format, channels, fill, pad, &out);
  return out;
}

// Registers resized_crop_mirror_normalize and resized_crop_mirror_normalize_list, and their _out ops, in a
// TORCH_LIBRARY_IMPL block.
template <Run run>
void register_ops(torch::Library& m) {
  m.impl("resized_crop_mirror_normalize", &entry<run, const at::Tensor&>);
  m.impl("resized_crop_mirror_normalize_list", &entry<run, at::TensorList>);
  m.impl("resized_crop_mirror_normalize_out", &entry_out<run, const at::Tensor&>);
  m.impl("resized_crop_mirror_normalize_list_out", &entry_out<run, at::TensorList>);
}

}  // namespace resize_entries
}  // namespace tensorops

// tensorops.augment's entry points, the same on every device: the arguments checked and the table made
// (augment_host.h), then the device's pass. Registered by csrc/cpu/augment.cpp and csrc/cuda/augment_cuda.cu.
#pragma once
#include <optional>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/augment_host.h"

namespace tensorops {
namespace augment_entries {

using RunApply = void (*)(augment_host::Setup&);
using RunErase = void (*)(augment_host::EraseSetup&);
using RunMix = void (*)(augment_host::MixSetup&);

template <RunApply run>
at::Tensor apply(const at::Tensor& batch, const at::Tensor& ops, const at::Tensor& params, int64_t interpolation,
                 std::optional<c10::ArrayRef<double>> fill) {
  augment_host::Setup s = augment_host::setup_apply(batch, ops, params, interpolation, fill);
  if (s.out.numel() > 0) run(s);
  return s.out;
}

template <RunErase run>
at::Tensor erase(const at::Tensor& batch, const at::Tensor& boxes, const at::Tensor& value) {
  augment_host::EraseSetup s = augment_host::setup_erase(batch, boxes, value);
  if (s.out.numel() > 0) run(s);
  return s.out;
}

template <RunMix run>
at::Tensor mix(const at::Tensor& batch, at::TensorList augmented, const at::Tensor& weights) {
  augment_host::MixSetup s = augment_host::setup_mix(batch, augmented, weights);
  if (s.out.numel() > 0) run(s);
  return s.out;
}

template <RunApply run_apply, RunErase run_erase, RunMix run_mix>
void register_ops(torch::Library& m) {
  m.impl("augment_apply", &apply<run_apply>);
  m.impl("augment_erase", &erase<run_erase>);
  m.impl("augment_mix", &mix<run_mix>);
}

}  // namespace augment_entries
}  // namespace tensorops

// tensorops' table of contents: every op schema, in one TORCH_LIBRARY block. Kernels register next to their
// code with TORCH_LIBRARY_IMPL (csrc/cpu/*.cpp, csrc/cuda/*.cu); fake kernels and autograd formulas are
// registered from Python (tensorops/*.py). The Python module itself is module.cpp.
#include <torch/library.h>

// The library's name is tensorops; the emulated build (csrc/emulated/) compiles this file again as tensorops_emu,
// whose ops run the CUDA kernels on the emulated device. (TORCH_LIBRARY stringizes its argument: hence the
// indirection that expands TENSOROPS_LIBRARY first.)
#ifndef TENSOROPS_LIBRARY
#define TENSOROPS_LIBRARY tensorops
#endif
#define TENSOROPS_DEFINE_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)

// An op's out= form: `<op>_out(<the op's arguments>, *, Tensor(a!) out) -> Tensor(a!)`, tagged torch.Tag.out
// (torch.compile functionalizes it, autograd refuses it as torch refuses out= with inputs that require grad).
// The kernel writes `out` itself, after checking it (shape, dtype, device, no overlap) before any work. An op of its
// own, not an `.out` overload: Inductor (torch 2.14) swaps a functional op for an `.out` overload of its packet and
// then passes float[] arguments flattened (tensorops::normalize.out got 12 arguments), so it must not find one.
// torch.Tag.out is new in torch 2.14 (2.11, the GPU machine's, lacks it): there the op is defined untagged.
#include <torch/version.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
#define TENSOROPS_DEF_OUT(m, name, args) m.def(name "_out(" args ", *, Tensor(a!) out) -> Tensor(a!)", {at::Tag::out})
#else
#define TENSOROPS_DEF_OUT(m, name, args) m.def(name "_out(" args ", *, Tensor(a!) out) -> Tensor(a!)")
#endif

TENSOROPS_DEFINE_LIBRARY(TENSOROPS_LIBRARY, m) {
  // ----- normalize (tensorops/normalize.py) -----------------------------------------------------------------
  // (input * scale - mean) / std with per-channel statistics given as numbers, laid along `dim`
  // (mean/std have 1 or C values). No statistics tensor is created, so no host-to-device copy happens.
  m.def(
      "normalize(Tensor input, float[] mean, float[] std, int dim, float scale, ScalarType dtype, "
      "MemoryFormat memory_format) -> Tensor");
  TENSOROPS_DEF_OUT(m, "normalize",
      "Tensor input, float[] mean, float[] std, int dim, float scale, ScalarType dtype, MemoryFormat memory_format");
  // The same with statistics tensors of input's rank that broadcast to input's shape (e.g. (N, C, 1, 1)).
  m.def(
      "normalize_tensor(Tensor input, Tensor mean, Tensor std, float scale, ScalarType dtype, "
      "MemoryFormat memory_format) -> Tensor");
  TENSOROPS_DEF_OUT(m, "normalize_tensor",
      "Tensor input, Tensor mean, Tensor std, float scale, ScalarType dtype, MemoryFormat memory_format");
  // Gradients of normalize_tensor: (grad_input, grad_mean, grad_std). The statistics' gradients come in the
  // broadcast shape of mean and std and in the accumulation dtype; Python sums them to each one's shape.
  m.def(
      "normalize_tensor_backward(Tensor grad, Tensor input, Tensor mean, Tensor std, float scale, "
      "bool[3] output_mask) -> (Tensor, Tensor, Tensor)");

  // ----- clamp (tensorops/clamp.py) ---------------------------------------------------------------------------
  // torch.clamp with tensor bounds (each optional, at least one given): promotion, broadcasting (the bounds may
  // be larger than input), output layout and NaN rules exactly as torch.clamp.Tensor.
  m.def("clamp(Tensor input, Tensor? min, Tensor? max) -> Tensor");
  // The same with number bounds (torch.clamp's Scalar overload: a NaN bound makes the whole result NaN).
  m.def("clamp_scalar(Tensor input, Scalar? min, Scalar? max) -> Tensor");
  // In-place variants (Tensor.clamp_): input is overwritten; they return nothing so that torch.compile can
  // functionalize them (the Python wrapper returns input).
  m.def("clamp_(Tensor(a!) input, Tensor? min, Tensor? max) -> ()");
  m.def("clamp_scalar_(Tensor(a!) input, Scalar? min, Scalar? max) -> ()");
  // Gradients of clamp in one pass over grad: (grad_input, grad_min, grad_max) in the result dtype.
  // grad_input has the output's shape (the caller sums it to input's shape when the bounds broadcast input);
  // grad_min / grad_max have min's / max's shapes, already summed over the dims they were broadcast along.
  // Outputs not asked for by output_mask (input, min, max) are empty.
  m.def(
      "clamp_backward(Tensor grad, Tensor input, Tensor? min, Tensor? max, bool[3] output_mask) "
      "-> (Tensor, Tensor, Tensor)");
  // Gradient of clamp_scalar with respect to input.
  m.def("clamp_scalar_backward(Tensor grad, Tensor input, Scalar? min, Scalar? max) -> Tensor");
  // Many-tensor clamp (tensorops/foreach.py): torch.clamp(t, min, max) for every tensor of a list on one device
  // (any sizes and dtypes), in one pass over all of them (one launch per dtype on CUDA), like
  // torch._foreach_clamp_min_/max_ together. Dense tensors go through the kernel, any other (sliced views,
  // bool, an int tensor with a float bound, a NaN bound) through torch's clamp, with its values and errors.
  m.def("foreach_clamp_scalar(Tensor[] tensors, Scalar? min, Scalar? max) -> Tensor[]");
  m.def("foreach_clamp_scalar_(Tensor(a!)[] tensors, Scalar? min, Scalar? max) -> ()");

  // ----- cat / split (tensorops/cat_split.py) ---------------------------------------------------------------
  // torch.cat: type promotion, negative dim, the legacy skip of 1-D (0,) inputs, channels_last output when
  // every input suggests it. One pass over the output for any number of inputs (one launch on CUDA).
  m.def("cat(Tensor[] tensors, int dim) -> Tensor");
  // torch.split_with_sizes_copy: contiguous pieces of `input` along `dim`, written in one pass. It is also
  // cat's backward, and cat is its backward.
  m.def("split(Tensor input, SymInt[] sizes, int dim) -> Tensor[]");

  // ----- crop_mirror_normalize (tensorops/crop_mirror_normalize.py) -----------------------------------------
  // A batch of images cropped at per-sample origins (top_left: int64 CPU (N, 2), y then x), mirrored
  // horizontally where `mirror` (bool CPU (N,)) says, then normalized as normalize_tensor with per-sample
  // statistics (mean/std: (N or 1, C or 1)), into (N, channels, size[0], size[1]) in `memory_format`. Channels
  // past the images' C, and crop areas outside an image (when `pad`; else an error), hold `fill`. `dim` is the
  // channel dim of one image: -3 (CHW) or -1 (HWC). One pass; one launch on CUDA.
  m.def(
      "crop_mirror_normalize(Tensor images, Tensor mean, Tensor std, Tensor top_left, Tensor mirror, int[2] size, "
      "int dim, float scale, ScalarType dtype, MemoryFormat memory_format, int channels, float fill, bool pad) "
      "-> Tensor");
  TENSOROPS_DEF_OUT(m, "crop_mirror_normalize",
      "Tensor images, Tensor mean, Tensor std, Tensor top_left, Tensor mirror, int[2] size, int dim, "
      "float scale, ScalarType dtype, MemoryFormat memory_format, int channels, float fill, bool pad");
  // The same from a list of images of different sizes (what a decoder gives).
  m.def(
      "crop_mirror_normalize_list(Tensor[] images, Tensor mean, Tensor std, Tensor top_left, Tensor mirror, "
      "int[2] size, int dim, float scale, ScalarType dtype, MemoryFormat memory_format, int channels, float fill, "
      "bool pad) -> Tensor");
  TENSOROPS_DEF_OUT(m, "crop_mirror_normalize_list",
      "Tensor[] images, Tensor mean, Tensor std, Tensor top_left, Tensor mirror, int[2] size, int dim, "
      "float scale, ScalarType dtype, MemoryFormat memory_format, int channels, float fill, bool pad");

  // ----- resized_crop_mirror_normalize (tensorops/resized_crop_mirror_normalize.py) -------------------------
  // crop_mirror_normalize with a resampling step: sample n's box (boxes: float64 CPU (N, 4): top, left,
  // height, width in source pixels, fractional allowed) is resampled to size (torchvision's resized_crop,
  // align_corners=False: interpolation 0 nearest, 1 bilinear; antialias widens the filter when downscaling),
  // mirrored where `mirror` says, then normalized as crop_mirror_normalize. `crop_first`: taps stop at the box's
  // edges (resized_crop) or may read the image beyond it (Resize then crop). A uint8 `dtype` rounds and
  // saturates (mean 0, std 1, scale 1). One pass; one launch on CUDA.
  m.def(
      "resized_crop_mirror_normalize(Tensor images, Tensor mean, Tensor std, Tensor boxes, Tensor mirror, "
      "int[2] size, int dim, float scale, int interpolation, bool antialias, bool crop_first, ScalarType dtype, "
      "MemoryFormat memory_format, int channels, float fill, bool pad) -> Tensor");
  TENSOROPS_DEF_OUT(m, "resized_crop_mirror_normalize",
      "Tensor images, Tensor mean, Tensor std, Tensor boxes, Tensor mirror, int[2] size, int dim, "
      "float scale, int interpolation, bool antialias, bool crop_first, ScalarType dtype, "
      "MemoryFormat memory_format, int channels, float fill, bool pad");
  m.def(
      "resized_crop_mirror_normalize_list(Tensor[] images, Tensor mean, Tensor std, Tensor boxes, Tensor mirror, "
      "int[2] size, int dim, float scale, int interpolation, bool antialias, bool crop_first, ScalarType dtype, "
      "MemoryFormat memory_format, int channels, float fill, bool pad) -> Tensor");
  TENSOROPS_DEF_OUT(m, "resized_crop_mirror_normalize_list",
      "Tensor[] images, Tensor mean, Tensor std, Tensor boxes, Tensor mirror, int[2] size, int dim, "
      "float scale, int interpolation, bool antialias, bool crop_first, ScalarType dtype, "
      "MemoryFormat memory_format, int channels, float fill, bool pad");

  // ----- decode_resized_crop_mirror_normalize (tensorops/decode.py) ----------------------------------------
  // resized_crop_mirror_normalize from encoded images: data[n] is a JPEG's bytes (1-d uint8), decoded in part
  // (only the rows and columns its box's filter reads, libjpeg-turbo) right before it is resampled, or an image
  // already decoded elsewhere (3-d uint8 HWC, 3 channels). Boxes are in the full image's pixels; the result
  // equals resized_crop_mirror_normalize of the fully decoded RGB images. max_pixels > 0 refuses larger headers.
  // A sample that cannot be decoded raises (skip_errors false: the first such sample's error, a ValueError
  // naming it) or is filled with `fill` (skip_errors true). reduced_scale: each JPEG may be decoded at 1/2, 1/4
  // or 1/8 scale where its box still covers `size` there (not equal to the full decode's result). A libjpeg
  // warning is not an error unless strict. A JPEG of a kind the linked libjpeg does not decode (lossless, 12-bit)
  // is filled and never raises: Python decodes it through the fallback. Returns the batch and each sample's
  // status (int8, csrc/include/tensorops/decode_report.h: 0 decoded, 1 failed, 2 decoded with libjpeg
  // warnings, 3 left to the fallback decoder); tensorops._C.decode_notes() has the texts.
  m.def(
      "decode_resized_crop_mirror_normalize(Tensor[] data, Tensor mean, Tensor std, Tensor boxes, Tensor mirror, "
      "int[2] size, float scale, int interpolation, bool antialias, bool crop_first, ScalarType dtype, "
      "MemoryFormat memory_format, int channels, float fill, bool pad, int max_pixels, bool skip_errors, "
      "bool reduced_scale, bool strict=False) -> (Tensor, Tensor)");
  // The same into out (checked first, written directly): returns each sample's status.
  m.def(
      "decode_resized_crop_mirror_normalize_out(Tensor[] data, Tensor mean, Tensor std, Tensor boxes, "
      "Tensor mirror, int[2] size, float scale, int interpolation, bool antialias, bool crop_first, "
      "ScalarType dtype, MemoryFormat memory_format, int channels, float fill, bool pad, int max_pixels, "
      "bool skip_errors, bool reduced_scale, bool strict=False, *, Tensor(a!) out) -> Tensor");

  // ----- augment (tensorops/augment/functional.py) -----------------------------------------------------------
  // One op per sample of a uint8 batch (N, C, H, W), C 1 or 3, contiguous or channels_last (the result has the
  // batch's layout): ops int64 (N,) codes (csrc/include/tensorops/math/augment.h), params float64 (N, 9):
  // magnitude, angle, translate x/y, scale, shear x/y, center x/y (affine's, center relative to the image centre).
  // interpolation 0 nearest / 1 bilinear and fill (None: zeros) for the affine samples. Each sample equals
  // torchvision v2's function on that image with that argument (affine: see docs/guides/fidelity.rst).
  m.def("augment_apply(Tensor batch, Tensor ops, Tensor params, int interpolation, float[]? fill) -> Tensor");
  // The batch with each sample's box (int64 (N, 4): top, left, height, width) set to value: uint8 (N, C) per
  // sample, or a uint8 tensor of the batch's shape whose pixels are copied (per-pixel noise, CutMix's source).
  m.def("augment_erase(Tensor batch, Tensor boxes, Tensor value) -> Tensor");
  // AugMix's mix: weights[:, 0] * batch + sum_k weights[:, k] * augmented[k - 1] in float32, v2's order, truncated
  // to uint8; every augmented batch has the batch's shape and strides (contiguous or channels_last), K <= 8,
  // weights float32 (N, 1 + K).
  m.def("augment_mix(Tensor batch, Tensor[] augmented, Tensor weights) -> Tensor");
}

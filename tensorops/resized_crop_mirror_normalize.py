"""resized_crop_mirror_normalize: decoded images (a batch, or a list of different sizes) to one resized, mirrored,
normalized (N, C', h, w) batch in one pass: torchvision's RandomResizedCrop or Resize + CenterCrop, flip,
to_dtype and normalize, fused."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch

from tensorops import _checks, _extension, _routing, reference
from tensorops._crop_mirror_normalize_ops import RESIZED, _call
from tensorops.crop_mirror_normalize import (_images, _mirror, _no_capture, _options, _out_inputs, _size, _sizes,
                                             _stats)

__all__ = ["resized_crop_mirror_normalize"]

Images = Union[torch.Tensor, Sequence[torch.Tensor]]
Stat = Union[None, float, Sequence[float], torch.Tensor]
_NAME = RESIZED
KERNELS = _routing.Kernels()
_INTERPOLATIONS = {"nearest": 0, "bilinear": 1, "bicubic": 2}
_SCALES = {torch.uint8: 1.0 / 255.0, torch.uint16: 1.0 / 65535.0}


def _err(msg: str) -> str:
    return _checks.where(_NAME) + msg


def _interpolation(interpolation: object) -> int:
    value = getattr(interpolation, "value", interpolation)  # torchvision's InterpolationMode
    if not isinstance(value, str) or value not in _INTERPOLATIONS:
        raise ValueError(_err(f"interpolation must be \"bilinear\", \"bicubic\" or \"nearest\" (or torchvision's "
                              f"InterpolationMode of those), got {interpolation!r}"))
    return _INTERPOLATIONS[value]


def _boxes(boxes: object, sizes: List[Tuple[int, int]]) -> torch.Tensor:
    N = len(sizes)
    if boxes is None:  # the whole image
        return torch.tensor([[0.0, 0.0, float(H), float(W)] for H, W in sizes], dtype=torch.float64).view(N, 4)
    if not isinstance(boxes, torch.Tensor):
        boxes = torch.as_tensor(boxes)
    if boxes.dtype.is_complex or boxes.dtype == torch.bool:
        raise TypeError(_err(f"boxes must be a real tensor (integer or floating), got {boxes.dtype}"))
    if tuple(boxes.shape) != (N, 4):
        raise ValueError(_err(f"boxes must have shape ({N}, 4) (top, left, height, width per sample), got "
                              f"{tuple(boxes.shape)}"))
    return boxes.to(device="cpu", dtype=torch.float64)


def _resample_options(name: str, image_dtype: torch.dtype, N: int, C: int, device: torch.device, mean: Stat,
                      std: Stat, size: object, sizes: List[Tuple[int, int]], interpolation: object,
                      antialias: object, crop_first: object, dtype: Optional[torch.dtype], memory_format: object,
                      pad_channels: object, fill: object, out_of_bounds: object) -> tuple:
    """The keywords this op shares with the decode op, checked: (h, w, interpolation code, output dtype, scale,
    channels, fill, pad, mean, std), mean and std as the kernels take them."""
    if size is None:
        raise TypeError(_checks.where(name) + "size must be an int or (h, w), got None")
    h, w = _size(size, sizes, name)
    interp = _interpolation(interpolation)
    if not isinstance(antialias, bool) or not isinstance(crop_first, bool):
        raise TypeError(_checks.where(name) + f"antialias and crop_first must be bools, got {antialias!r} and "
                        f"{crop_first!r}")
    if dtype == torch.uint8:
        if image_dtype != torch.uint8:
            raise TypeError(_checks.where(name) + f"dtype=torch.uint8 needs uint8 images, got {image_dtype}")
        if mean is not None or std is not None:
            raise ValueError(_checks.where(name) + "dtype=torch.uint8 writes resampled pixels without normalizing: "
                             "pass mean=None and std=None (and normalize in the consumer, e.g. tensorops.normalize)")
        mean, std, scale = 0.0, 1.0, 1.0
    else:
        if mean is None or std is None:
            raise ValueError(_checks.where(name) + "mean and std are None: that is only for dtype=torch.uint8 output")
        if dtype is None:
            dtype = image_dtype if image_dtype.is_floating_point else torch.float32
        else:
            dtype = _checks.float_dtype(name, dtype)
        scale = _SCALES.get(image_dtype, 1.0)
    channels, fill, pad = _options(C, memory_format, pad_channels, fill, out_of_bounds, name)
    m, s = _stats(mean, std, N, C, device, torch.float32 if dtype == torch.uint8 else dtype, scale, name)
    return h, w, interp, dtype, scale, channels, fill, pad, m, s


def resized_crop_mirror_normalize(
    images: Images,
    mean: Stat,
    std: Stat,
    *,
    size: Union[int, Tuple[int, int]],
    boxes: Optional[torch.Tensor] = None,
    mirror: Optional[torch.Tensor] = None,
    dim: int = -3,
    interpolation: object = "bilinear",
    antialias: bool = True,
    dtype: Optional[torch.dtype] = None,
    memory_format: torch.memory_format = torch.contiguous_format,
    pad_channels: Optional[int] = None,
    fill: float = 0.0,
    out_of_bounds: str = "error",
    crop_first: bool = True,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Resize a box of each image to ``size``, mirror, normalize, in one pass: torchvision's
    ``resized_crop`` + ``horizontal_flip`` + ``to_dtype(scale=True)`` + ``normalize`` + ``stack``.

    Args:
        images: a uint8, uint16 or floating batch, (N, C, H, W) with ``dim=-3`` or (N, H, W, C) with ``dim=-1``,
            or a list/tuple of N images (C, H_i, W_i) or (H_i, W_i, C) of different sizes.
        mean, std: a number, C numbers, or a floating tensor (C,) or (N, C) of per-sample statistics; both
            ``None`` with ``dtype=torch.uint8`` (no normalization).
        size: (h, w) of the output (an int is a square).
        boxes: (N, 4) of (top, left, height, width) in source pixels, integer or fractional (a fractional box
            expresses Resize + CenterCrop exactly); ``None`` is the whole image. Read on the host.
        mirror: a bool tensor (N,): flip that sample's output horizontally. ``None``: no flips.
        dim: the channel dim of one image: -3 (CHW) or -1 (HWC).
        interpolation: ``"bilinear"``, ``"bicubic"`` or ``"nearest"`` (or torchvision's InterpolationMode). Bicubic
            of uint8/uint16 images clamps the resampled values to the type's range, as torchvision's uint8 result.
        antialias: widen the bilinear filter when downscaling (torchvision's and PIL's antialias).
        dtype: output dtype: float16, bfloat16, float32, float64 (float32 for integer images, else theirs), or
            uint8 for uint8 images with ``mean=None, std=None``: resampled, mirrored, rounded half up.
        memory_format: ``torch.contiguous_format`` (NCHW) or ``torch.channels_last`` (NHWC storage).
        pad_channels: output channel count C' >= C; the extra channels hold ``fill``.
        fill: the value of padded channels and of outputs sampled outside the image.
        out_of_bounds: ``"error"`` (a ValueError naming the sample and its box) or ``"pad"`` (fill).
        crop_first: True: the filter reads only the box's pixels (``resized_crop``: crop, then resize); False:
            it may read the image beyond the box (Resize, then crop: the eval transform).
        out: a (N, C', h, w) tensor of ``dtype`` on the images' device that the kernel writes into (returned),
            as crop_mirror_normalize's ``out``: checked first, written directly in NCHW or NHWC storage, not
            overlapping the images, not differentiable.

    Returns:
        A (N, C', h, w) tensor: ``(resampled * scale - mean) / std`` with scale 1/255 (uint8), 1/65535 (uint16)
        or 1 (floating images). Gradients flow to floating images.

    Example:
        >>> imgs = [torch.randint(0, 256, (3, 300 + i, 400), dtype=torch.uint8) for i in range(4)]
        >>> boxes = torch.tensor([[10, 20, 250, 300]] * 4)
        >>> out = tensorops.resized_crop_mirror_normalize(imgs, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                               size=224, boxes=boxes)
        >>> out.shape, out.dtype
        (torch.Size([4, 3, 224, 224]), torch.float32)
    """
    images, dim, C = _images(images, dim, _NAME)
    first = images if isinstance(images, torch.Tensor) else images[0]
    device = first.device
    _no_capture(device, _NAME)
    sizes = _sizes(images, dim)
    N = len(sizes)
    o = _resample_options(_NAME, first.dtype, N, C, device, mean, std, size, sizes, interpolation, antialias,
                          crop_first, dtype, memory_format, pad_channels, fill, out_of_bounds)
    h, w, interp, dtype, scale, channels, fill, pad, m, s = o
    bx = _boxes(boxes, sizes)
    mi = _mirror(mirror, N, _NAME)
    if out is not None:  # before any work; the kernel then writes out itself
        _checks.check_out(_NAME, out, (N, channels, h, w), dtype, device, _out_inputs(images, mean, std))

    args = (m, s, bx, mi, [h, w], dim, scale, interp, antialias, crop_first, dtype, memory_format, channels, fill,
            pad)
    stats_tensors = isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor)
    stats_grad = stats_tensors and (
        torch.is_grad_enabled() and (m.requires_grad or s.requires_grad)
        or not _extension.plain_eager() and not _extension.only_vmap()
    )
    if not KERNELS.cover(first) or stats_grad:
        result = reference.resized_crop_mirror_normalize(
            images, m, s, bx, mi, (h, w), dim=dim, scale=scale, interpolation=interp, antialias=antialias,
            crop_first=crop_first, dtype=dtype, memory_format=memory_format, channels=channels, fill=fill, pad=pad,
        )
        return _checks.copy_out(result, out)
    return _call(images, args, direct=stats_tensors and _extension.only_vmap(), kind=_NAME, out=out)

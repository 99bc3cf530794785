"""crop_mirror_normalize: decoded images (a batch, or a list of different sizes) to one cropped, mirrored,
normalized (N, C', h, w) batch in one pass."""
from __future__ import annotations

import numbers
from typing import List, Optional, Sequence, Tuple, Union

import torch

from tensorops import _checks, _extension, _routing, reference
from tensorops._checks import FLOATS
from tensorops._crop_mirror_normalize_ops import _call

__all__ = ["crop_mirror_normalize"]

Images = Union[torch.Tensor, Sequence[torch.Tensor]]
Stat = Union[float, Sequence[float], torch.Tensor]
_NAME = "crop_mirror_normalize"
# What the kernels cover: a device with kernels (the wrapper checks dtypes, ranks and sizes first)
KERNELS = _routing.Kernels()


def _err(msg: str, name: str = _NAME) -> str:
    return _checks.where(name) + msg


def _images(images: object, dim: object, op: str = _NAME) -> Tuple[Union[torch.Tensor, List[torch.Tensor]], int, int]:
    """(images as a batch tensor or a list, channel dim of one image (-3 or -1), C)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(_err(f"dim must be an int, got {type(dim).__name__}", op))
    if dim not in (-3, -1):
        raise ValueError(_err(f"dim must be -3 (CHW images) or -1 (HWC images), got {dim}", op))
    if isinstance(images, torch.Tensor):
        if images.dim() != 4:
            raise ValueError(_err(f"images must be a 4-d batch or a list of 3-d images, got shape {tuple(images.shape)}", op))
        items: List[torch.Tensor] = [images]
        C = images.shape[dim]
    elif isinstance(images, (list, tuple)):
        if len(images) == 0:
            raise ValueError(_err("images is an empty list (pass an empty (0, C, H, W) batch tensor instead)", op))
        items = list(images)
        for n, im in enumerate(items):
            if not isinstance(im, torch.Tensor):
                raise TypeError(_err(f"images[{n}] must be a torch.Tensor, got {type(im).__name__}", op))
            if im.dim() != 3:
                raise ValueError(_err(f"images[{n}] must be a 3-d image, got shape {tuple(im.shape)}", op))
        C = items[0].shape[dim]
        for n, im in enumerate(items):
            if im.shape[dim] != C:
                raise ValueError(_err(f"images[{n}] has {im.shape[dim]} channels but images[0] has {C}", op))
            if im.dtype != items[0].dtype:
                raise TypeError(_err(f"images[{n}] is {im.dtype} but images[0] is {items[0].dtype}", op))
            if im.device != items[0].device:
                raise ValueError(_err(f"images[{n}] is on {im.device} but images[0] is on {items[0].device}", op))
        images = items
    else:
        raise TypeError(_err(f"images must be a tensor or a list of tensors, got {type(images).__name__}", op))
    first = items[0]
    if first.dtype != torch.uint8 and first.dtype not in FLOATS and not (op != _NAME and first.dtype == torch.uint16):
        kinds = "uint8 or floating" if op == _NAME else "uint8, uint16 or floating"
        raise TypeError(_err(f"images must be {kinds} (float16, bfloat16, float32, float64), got {first.dtype}", op))
    return images, dim, C  # type: ignore[return-value]


def _hw(image: torch.Tensor, dim: int) -> Tuple[int, int]:
    """(H, W) of one 3-d image (or of the images of a 4-d batch)."""
    return (image.shape[-2], image.shape[-1]) if dim == -3 else (image.shape[-3], image.shape[-2])


def _sizes(images: Union[torch.Tensor, List[torch.Tensor]], dim: int) -> List[Tuple[int, int]]:
    if isinstance(images, torch.Tensor):
        return [_hw(images, dim)] * images.shape[0]
    return [_hw(im, dim) for im in images]


def _size(size: object, sizes: List[Tuple[int, int]], op: str = _NAME) -> Tuple[int, int]:
    if size is None:
        if len(set(sizes)) > 1:
            raise ValueError(_err(f"size=None (the whole image) needs images of one size, got {sorted(set(sizes))}", op))
        return sizes[0] if sizes else (0, 0)
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        size = (size, size)
    if not isinstance(size, (tuple, list, torch.Size)) or len(size) != 2:
        raise TypeError(_err(f"size must be None, an int or (h, w), got {size!r}", op))
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0 for v in size):
        raise ValueError(_err(f"size must be two non-negative ints (h, w), got {tuple(size)}", op))
    return int(size[0]), int(size[1])


def _top_left(top_left: object, sizes: List[Tuple[int, int]], h: int, w: int) -> torch.Tensor:
    N = len(sizes)
    if top_left is None:  # the centred crop
        return torch.tensor([[(H - h) // 2, (W - w) // 2] for H, W in sizes], dtype=torch.int64).view(N, 2)
    if not isinstance(top_left, torch.Tensor):
        top_left = torch.as_tensor(top_left)
    if top_left.dtype.is_floating_point or top_left.dtype.is_complex or top_left.dtype == torch.bool:
        raise TypeError(_err(f"top_left must be an integer tensor, got {top_left.dtype}"))
    if tuple(top_left.shape) != (N, 2):
        raise ValueError(_err(f"top_left must have shape ({N}, 2) (y, x per sample), got {tuple(top_left.shape)}"))
    return top_left.to(device="cpu", dtype=torch.int64)


def _mirror(mirror: object, N: int, op: str = _NAME) -> torch.Tensor:
    if mirror is None:
        return torch.zeros(N, dtype=torch.bool)
    if not isinstance(mirror, torch.Tensor):
        mirror = torch.as_tensor(mirror)
    if mirror.dtype != torch.bool:
        raise TypeError(_err(f"mirror must be a bool tensor, got {mirror.dtype}", op))
    if tuple(mirror.shape) != (N,):
        raise ValueError(_err(f"mirror must have shape ({N},), got {tuple(mirror.shape)}", op))
    return mirror.to(device="cpu")


def _stat(name: str, stat: object, N: int, C: int, device: torch.device, acc: torch.dtype, scale: float, op: str = _NAME) -> torch.Tensor:
    """A (N or 1, C or 1) statistics tensor."""
    values = _checks.stat_numbers(op, name, stat)
    if values is not None:
        if len(values) not in (1, C):
            raise ValueError(_err(f"{name} has {len(values)} values but the images have {C} channels", op))
        return _checks.values_tensor(values, device, acc).view(1, len(values))
    assert isinstance(stat, torch.Tensor)
    if not stat.is_floating_point():
        raise TypeError(_err(f"{name} must be a floating tensor, got {stat.dtype}", op))
    if stat.device != device:
        raise ValueError(_err(f"{name} is on {stat.device} but the images are on {device}", op))
    if stat.dim() < 2:
        stat = stat.reshape(1, -1) if stat.dim() == 1 else stat.reshape(1, 1)
    if stat.dim() != 2 or stat.shape[0] not in (1, N) or stat.shape[1] not in (1, C):
        raise ValueError(
            _err(f"{name} of shape {tuple(stat.shape)} must be (C,) or per-sample (N, C) = ({N}, {C}) (or size 1 there)", op)
        )
    return stat


def _options(C: int, memory_format: object, pad_channels: object, fill: object, out_of_bounds: object,
             op: str = _NAME) -> Tuple[int, float, bool]:
    """(output channels, fill, pad) from the layout and padding keywords, checked."""
    if memory_format not in (torch.contiguous_format, torch.channels_last):
        raise ValueError(_err(f"memory_format must be torch.contiguous_format or torch.channels_last, got {memory_format!r}", op))
    if pad_channels is None:
        channels = C
    elif isinstance(pad_channels, bool) or not isinstance(pad_channels, numbers.Integral) or pad_channels < C:
        raise ValueError(_err(f"pad_channels must be an int >= the images' {C} channels, got {pad_channels!r}", op))
    else:
        channels = int(pad_channels)
    if isinstance(fill, bool) or not isinstance(fill, numbers.Real):
        raise TypeError(_err(f"fill must be a number, got {fill!r}", op))
    fill = float(fill)
    if out_of_bounds not in ("error", "pad"):
        raise ValueError(_err(f"out_of_bounds must be \"error\" or \"pad\", got {out_of_bounds!r}", op))
    pad = out_of_bounds == "pad"
    return channels, fill, pad


def _no_capture(device: torch.device, op: str = _NAME) -> None:
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # the per-sample table is built on the host from the boxes, mirror and the images' sizes on every call,
        # which a captured graph would replay stale: refuse clearly instead of capturing a wrong table
        raise RuntimeError(_err("cannot be captured in a CUDA graph (its crop table is built on the host on every "
                                "call); run it outside graph capture, e.g. in the data pipeline", op))


# Checked statistics given as numbers, keyed by their values: the checks cost more than a small batch's kernel,
# and a training loop passes the same numbers on every call.
_NUMBER_STATS = _checks.Memo()


def _stats(mean: object, std: object, N: int, C: int, device: torch.device, dtype: torch.dtype,
           scale: float, op: str = _NAME) -> Tuple[torch.Tensor, torch.Tensor]:
    """(mean, std) as (N or 1, C or 1) tensors in the accumulation dtype (numbers) or as given (tensors)."""
    km, ks = _checks.number_key(mean), _checks.number_key(std)
    key = (km, ks, C, device, dtype, scale, op) if km is not None and ks is not None else None
    compiling = torch.compiler.is_compiling()
    if key is not None and not compiling:
        hit = _NUMBER_STATS.get(key)
        if hit is not None:
            return hit
    acc = reference.acc_dtype(dtype)
    m = _stat("mean", mean, N, C, device, acc, scale, op)
    s = _stat("std", std, N, C, device, acc, scale, op)
    std_values = _checks.stat_numbers(op, "std", std)
    if std_values is not None:
        _checks.check_coefficients(op, _checks.stat_numbers(op, "mean", mean), std_values, scale, dtype)
    if key is not None and not compiling:
        _NUMBER_STATS.put(key, (m, s))
    return m, s


def crop_mirror_normalize(
    images: Images,
    mean: Stat,
    std: Stat,
    *,
    dim: int = -3,
    size: Union[None, int, Tuple[int, int]] = None,
    top_left: Optional[torch.Tensor] = None,
    mirror: Optional[torch.Tensor] = None,
    dtype: Optional[torch.dtype] = None,
    memory_format: torch.memory_format = torch.contiguous_format,
    pad_channels: Optional[int] = None,
    fill: float = 0.0,
    out_of_bounds: str = "error",
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Crop, then mirror, then normalize a batch of images in one pass (what DALI's crop_mirror_normalize does).

    Args:
        images: a uint8 or floating batch, (N, C, H, W) with ``dim=-3`` or (N, H, W, C) with ``dim=-1``, or a
            list/tuple of N images (C, H_i, W_i) or (H_i, W_i, C) of different sizes.
        mean, std: a number, C numbers, or a floating tensor (C,) or (N, C) of per-sample statistics.
        dim: the channel dim of one image: -3 (CHW) or -1 (HWC).
        size: (h, w) of the crop (an int is a square); ``None`` is the whole image (every image one size).
        top_left: an integer tensor (N, 2) of crop origins (y, x); ``None`` is the centred crop
            ((H - h) // 2, (W - w) // 2). A CUDA tensor is read back to the host (a synchronization).
        mirror: a bool tensor (N,): flip that sample's crop horizontally (after cropping). ``None``: no flips.
        dtype: output dtype (float16, bfloat16, float32, float64); float32 for uint8 images, else theirs.
        memory_format: ``torch.contiguous_format`` (NCHW) or ``torch.channels_last`` (NHWC storage).
        pad_channels: output channel count C' >= C (e.g. 4); the extra channels hold ``fill``.
        fill: the output value of padded channels and of crop areas outside the image.
        out_of_bounds: ``"error"`` (a ValueError naming the sample, top_left and size) or ``"pad"`` (fill).
        out: a (N, C', h, w) tensor of ``dtype`` on the images' device that the kernel writes into (returned):
            checked first, written directly in NCHW or NHWC storage (other strides take one temporary), never
            overlapping the images; as torch's out= forms, not differentiable (an error if an argument requires
            grad). ``memory_format`` does not apply: out's layout is the result's.

    Returns:
        A (N, C', h, w) tensor of ``dtype``: ``(image * scale - mean) / std`` with scale 1/255 for uint8 images
        and 1 for floating ones. Gradients flow to floating images (and to statistics tensors that need them).

    Example:
        >>> imgs = [torch.randint(0, 256, (3, 256 + i, 300), dtype=torch.uint8) for i in range(4)]
        >>> out = tensorops.crop_mirror_normalize(imgs, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                       size=(224, 224), mirror=torch.tensor([0, 1, 0, 1]).bool())
        >>> out.shape, out.dtype
        (torch.Size([4, 3, 224, 224]), torch.float32)
    """
    images, dim, C = _images(images, dim)
    first = images if isinstance(images, torch.Tensor) else images[0]
    device = first.device
    _no_capture(device)
    sizes = _sizes(images, dim)
    N = len(sizes)
    h, w = _size(size, sizes)
    if dtype is None:
        dtype = torch.float32 if first.dtype == torch.uint8 else first.dtype
    else:
        dtype = _checks.float_dtype(_NAME, dtype)
    channels, fill, pad = _options(C, memory_format, pad_channels, fill, out_of_bounds)
    scale = 1.0 / 255.0 if first.dtype == torch.uint8 else 1.0
    m, s = _stats(mean, std, N, C, device, dtype, scale)
    tl = _top_left(top_left, sizes, h, w)
    mi = _mirror(mirror, N)
    if out is not None:  # before any work; the kernel then writes out itself
        _checks.check_out(_NAME, out, (N, channels, h, w), dtype, device, _out_inputs(images, mean, std))

    args = (m, s, tl, mi, [h, w], dim, scale, dtype, memory_format, channels, fill, pad)
    # Statistics tensors that may carry a derivative (requires_grad, or a forward AD level or a torch.func
    # grad/jvp transform, where their tangents are not visible here) take torch's own ops: the kernels'
    # derivatives are those of the images, with the statistics held constant. Under vmap alone the op's
    # batching rule takes them (statistics batched too: one call per slice).
    stats_tensors = isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor)
    stats_grad = stats_tensors and (
        torch.is_grad_enabled() and (m.requires_grad or s.requires_grad)
        or not _extension.plain_eager() and not _extension.only_vmap()
    )
    if not KERNELS.cover(first) or stats_grad:
        return _checks.copy_out(reference.crop_mirror_normalize(
            images, m, s, tl, mi, (h, w), dim=dim, scale=scale, dtype=dtype, memory_format=memory_format,
            channels=channels, fill=fill, pad=pad,
        ), out)
    # statistics tensors under vmap alone (they may be batched too): the op's torch.library batching rule
    return _call(images, args, direct=stats_tensors and _extension.only_vmap(), out=out)


def _out_inputs(images: Images, mean: object, std: object) -> list:
    """The tensors out= may not overlap (nor carry a gradient, as out= forms are not differentiable)."""
    ims = [images] if isinstance(images, torch.Tensor) else list(images)
    return ims + [t for t in (mean, std) if isinstance(t, torch.Tensor)]



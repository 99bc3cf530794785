"""decode_resized_crop_mirror_normalize: encoded images (JPEG bytes as files hold them) to one resized, mirrored,
normalized (N, C', h, w) batch, decoding each JPEG only where its box's filter reads, fused with the resize."""
from __future__ import annotations

import numbers
import warnings
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from tensorops import _checks, _decode_ops
from tensorops.crop_mirror_normalize import _mirror, _options, _size, _stats
from tensorops.resized_crop_mirror_normalize import _boxes, _interpolation

__all__ = ["decode_resized_crop_mirror_normalize", "DEFAULT_MAX_PIXELS"]

Encoded = Union[torch.Tensor, bytes, bytearray, memoryview, np.ndarray]
Stat = Union[None, float, Sequence[float], torch.Tensor]
_NAME = _decode_ops.NAME
# Headers declaring more pixels are refused before anything is allocated: Pillow's limit for an error
# (2 x PIL.Image.MAX_IMAGE_PIXELS, whose 89,478,485 only warns).
DEFAULT_MAX_PIXELS = 2 * 89_478_485


def _err(msg: str) -> str:
    return _checks.where(_NAME) + msg


def _as_bytes(item: object, n: int) -> torch.Tensor:
    """One sample's encoded bytes as a contiguous 1-D uint8 CPU tensor (no copy where it can be read in place)."""
    if isinstance(item, torch.Tensor):
        if item.dtype != torch.uint8 or item.dim() != 1:
            raise TypeError(_err(f"data[{n}] must be a 1-D uint8 tensor of encoded bytes (torchvision.io.read_file's), "
                                 f"got {item.dtype} of shape {tuple(item.shape)}"))
        return item.cpu().contiguous()
    if isinstance(item, np.ndarray):
        if item.dtype != np.uint8 or item.ndim != 1:
            raise TypeError(_err(f"data[{n}] must be a 1-D uint8 array of encoded bytes, got {item.dtype} of shape "
                                 f"{item.shape}"))
        item = np.ascontiguousarray(item)
    elif not isinstance(item, (bytes, bytearray, memoryview)):
        raise TypeError(_err(f"data[{n}] must be encoded bytes (bytes, a 1-D uint8 tensor or array), got "
                             f"{type(item).__name__}"))
    if len(item) == 0 if not isinstance(item, np.ndarray) else item.size == 0:
        return torch.empty(0, dtype=torch.uint8)
    with warnings.catch_warnings():  # read-only buffers (bytes): the op only reads them
        warnings.simplefilter("ignore", UserWarning)
        return torch.frombuffer(item, dtype=torch.uint8)


def _label(n: int, paths: Optional[Sequence[object]]) -> str:
    return f"sample {n} ({paths[n]})" if paths is not None else f"sample {n}"


def decode_resized_crop_mirror_normalize(
    data: Sequence[Encoded],
    mean: Stat,
    std: Stat,
    *,
    size: Union[int, Tuple[int, int]],
    boxes: Optional[torch.Tensor] = None,
    mirror: Optional[torch.Tensor] = None,
    interpolation: object = "bilinear",
    antialias: bool = True,
    dtype: Optional[torch.dtype] = None,
    memory_format: torch.memory_format = torch.contiguous_format,
    pad_channels: Optional[int] = None,
    fill: float = 0.0,
    out_of_bounds: str = "error",
    crop_first: bool = True,
    out: Optional[torch.Tensor] = None,
    paths: Optional[Sequence[object]] = None,
    max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
    on_error: str = "raise",
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Decode, resize a box of each image to ``size``, mirror and normalize, in one pass per image:
    ``decode_jpeg(mode=RGB)`` + :func:`tensorops.resized_crop_mirror_normalize`, with each JPEG decoded only in
    the rows and columns its box's filter reads (libjpeg-turbo's partial decode), right before its resize.

    The result equals ``resized_crop_mirror_normalize`` of the fully decoded RGB images bit for bit (the
    decoded region is one pixel wider than the filter reads on each side, where libjpeg's chroma upsampling
    would otherwise differ). Grayscale JPEGs give 3 equal channels (``ImageReadMode.RGB``); CMYK and YCCK
    JPEGs give Pillow's ``convert("RGB")``. Other formats (PNG, WebP, BMP, a PNG named .JPEG) decode whole
    through Pillow, then take the same resize.

    Args:
        data: N encoded images: 1-D uint8 tensors (``torchvision.io.read_file``, :func:`tensorops.io.read_file`),
            ``bytes`` or 1-D uint8 numpy arrays.
        mean, std: as :func:`tensorops.resized_crop_mirror_normalize` (3 channels); both ``None`` with
            ``dtype=torch.uint8``.
        size: (h, w) of the output (an int is a square).
        boxes: (N, 4) of (top, left, height, width) in the full image's pixels, integer or fractional, exactly
            as for ``resized_crop_mirror_normalize`` on the decoded image; ``None`` is the whole image
            (sizes from the headers, :func:`tensorops.io.image_size`).
        mirror: as :func:`tensorops.resized_crop_mirror_normalize`'s, and so are ``interpolation``,
            ``antialias``, ``dtype``, ``memory_format``, ``pad_channels``, ``fill``, ``out_of_bounds``,
            ``crop_first`` and ``out``.
        paths: N names (file paths) that error messages and warnings quote with the sample's index.
        max_pixels: headers declaring more pixels are refused before any allocation (a decompression bomb);
            ``None`` for no limit. The default is Pillow's error limit.
        on_error: ``"raise"``: a sample that cannot be decoded (corrupt, truncated, not an image, over
            ``max_pixels``) raises a ValueError naming it (the first such sample). ``"fill"``: its output is
            ``fill`` and the call returns ``(batch, failed)``, ``failed`` a bool tensor (N,).

    Returns:
        The (N, C', h, w) batch, or ``(batch, failed)`` with ``on_error="fill"``.

    Example:
        >>> import io, numpy as np
        >>> from PIL import Image
        >>> buf = io.BytesIO()
        >>> Image.fromarray(np.full((300, 400, 3), 128, np.uint8)).save(buf, format="JPEG")
        >>> jpegs = [buf.getvalue()] * 2
        >>> out = tensorops.decode_resized_crop_mirror_normalize(
        ...     jpegs, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], size=224,
        ...     boxes=torch.tensor([[10, 20, 250, 300], [0, 0, 300, 400]]))
        >>> out.shape, out.dtype
        (torch.Size([2, 3, 224, 224]), torch.float32)
    """
    if isinstance(data, (bytes, bytearray, torch.Tensor, np.ndarray)) or not isinstance(data, Sequence):
        raise TypeError(_err(f"data must be a list of encoded images, got {type(data).__name__}"))
    N = len(data)
    if N == 0:
        raise ValueError(_err("data is an empty list"))
    if paths is not None and len(paths) != N:
        raise ValueError(_err(f"paths has {len(paths)} entries but data has {N}"))
    if on_error not in ("raise", "fill"):
        raise ValueError(_err(f"on_error must be \"raise\" or \"fill\", got {on_error!r}"))
    if max_pixels is None:
        max_pixels = 0
    elif isinstance(max_pixels, bool) or not isinstance(max_pixels, numbers.Integral) or max_pixels <= 0:
        raise ValueError(_err(f"max_pixels must be a positive int or None, got {max_pixels!r}"))
    encoded = [_as_bytes(item, n) for n, item in enumerate(data)]
    # what the op does not decode itself (not JPEG; every JPEG in a build without libjpeg-turbo): whole images
    libjpeg = _decode_ops.has_libjpeg()
    if not libjpeg:
        _decode_ops.warn_once("libjpeg", "tensorops was built without libjpeg-turbo: "
                              "decode_resized_crop_mirror_normalize decodes whole images through Pillow (install "
                              "libjpeg-turbo's development files and rebuild for the partial decode)")
    inputs: List[torch.Tensor] = []
    failed_early = torch.zeros(N, dtype=torch.bool)
    for n, e in enumerate(encoded):
        if libjpeg and _decode_ops.is_jpeg(e):
            inputs.append(e)
            continue
        try:
            if e.numel() == 0:
                raise ValueError(_err(f"{_label(n, paths)}: the data is empty"))
            inputs.append(_decode_ops.decode_other(e, _label(n, paths), int(max_pixels or 0)))
        except ValueError:
            if on_error == "raise":
                raise
            failed_early[n] = True
            inputs.append(e)  # the op fails it again (no header), and fills its output
    if size is None:
        raise TypeError(_err("size must be an int or (h, w), got None"))
    if boxes is None:
        boxes = _whole_images(inputs, failed_early, paths, on_error)
    bx = _boxes(boxes, [(1, 1)] * N)
    h, w = _size(size, [], _NAME)
    interp = _interpolation(interpolation)
    if not isinstance(antialias, bool) or not isinstance(crop_first, bool):
        raise TypeError(_err(f"antialias and crop_first must be bools, got {antialias!r} and {crop_first!r}"))
    if dtype == torch.uint8:
        if mean is not None or std is not None:
            raise ValueError(_err("dtype=torch.uint8 writes resampled pixels without normalizing: pass mean=None "
                                  "and std=None"))
        mean, std, scale = 0.0, 1.0, 1.0
    else:
        if mean is None or std is None:
            raise ValueError(_err("mean and std are None: that is only for dtype=torch.uint8 output"))
        dtype = torch.float32 if dtype is None else _checks.float_dtype(_NAME, dtype)
        scale = 1.0 / 255.0
    channels, fill, pad = _options(3, memory_format, pad_channels, fill, out_of_bounds, _NAME)
    cpu = torch.device("cpu")
    m, s = _stats(mean, std, N, 3, cpu, torch.float32 if dtype == torch.uint8 else dtype, scale, _NAME)
    if isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor):
        m, s = m.detach().cpu(), s.detach().cpu()
    mi = _mirror(mirror, N, _NAME)
    if out is not None:
        _checks.check_out(_NAME, out, (N, channels, h, w), dtype, cpu, [*inputs, m, s])
    args = (m, s, bx, mi, [h, w], scale, interp, antialias, crop_first, dtype, memory_format, channels, fill, pad,
            int(max_pixels), on_error == "fill")
    try:
        batch, failed = _decode_ops.call(inputs, args, out)
    except ValueError as e:  # the op's "tensorops: data: sample n: ...", in this function's words
        raise ValueError(_with_path(str(e).replace("tensorops: data: ", _checks.where(_NAME), 1), paths)) from None
    if on_error == "fill":
        return batch, failed | failed_early
    return batch


def _with_path(message: str, paths: Optional[Sequence[object]]) -> str:
    """The op's "sample n: ..." message with the sample's path, where the caller gave paths."""
    import re

    m = re.search(r"sample (\d+): ", message)
    if paths is None or m is None:
        return message
    n = int(m.group(1))
    return message[:m.end() - 2] + f" ({paths[n]})" + message[m.end() - 2:] if n < len(paths) else message


def _whole_images(inputs: List[torch.Tensor], failed_early: torch.Tensor, paths, on_error: str) -> torch.Tensor:
    """boxes=None: each image's whole extent, from its header (JPEG) or its decoded shape."""
    from tensorops import io

    rows = []
    for n, t in enumerate(inputs):
        if t.dim() == 3:
            rows.append([0.0, 0.0, float(t.shape[0]), float(t.shape[1])])
            continue
        try:
            H, W, _ = io.image_size(t, index=n)
        except ValueError as e:
            if on_error == "raise" and not failed_early[n]:
                raise ValueError(_err(_with_path(str(e), paths))) from None
            H, W = 1, 1
        rows.append([0.0, 0.0, float(H), float(W)])
    return torch.tensor(rows, dtype=torch.float64)

"""decode_resized_crop_mirror_normalize: encoded images (JPEG bytes as files hold them) to one resized, mirrored,
normalized (N, C', h, w) batch, decoding each JPEG only where its box's filter reads, fused with the resize."""
from __future__ import annotations

import numbers
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from tensorops import _checks, _decode_ops
from tensorops._decode_ops import as_bytes as _as_bytes, label as _label, with_path as _with_path
from tensorops.crop_mirror_normalize import _mirror
from tensorops.resized_crop_mirror_normalize import _boxes, _resample_options

__all__ = ["decode_resized_crop_mirror_normalize", "DEFAULT_MAX_PIXELS"]

Encoded = Union[torch.Tensor, bytes, bytearray, memoryview, np.ndarray]
Stat = Union[None, float, Sequence[float], torch.Tensor]
_NAME = _decode_ops.NAME
# Headers declaring more pixels are refused before anything is allocated: Pillow's limit for an error
# (2 x PIL.Image.MAX_IMAGE_PIXELS, whose 89,478,485 only warns).
DEFAULT_MAX_PIXELS = 2 * 89_478_485


def _err(msg: str) -> str:
    return _checks.where(_NAME) + msg


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
    reduced_scale: bool = False,
    device: Union[None, str, torch.device] = None,
    strict: bool = False,
) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """Decode, resize a box of each image to ``size``, mirror and normalize, in one pass per image:
    ``decode_jpeg(mode=RGB)`` + :func:`tensorops.resized_crop_mirror_normalize`, with each JPEG decoded only in
    the rows and columns its box's filter reads (libjpeg-turbo's partial decode), right before its resize.

    The result equals ``resized_crop_mirror_normalize`` of the fully decoded RGB images bit for bit (the
    decoded region is one pixel wider than the filter reads on each side, where libjpeg's chroma upsampling
    would otherwise differ, and at least two samples of every chroma component wide, where libjpeg-turbo's crop
    would otherwise switch its upsampling). Grayscale JPEGs give 3 equal channels (``ImageReadMode.RGB``); CMYK
    and YCCK JPEGs give Pillow's ``convert("RGB")``. A JPEG is what starts with SOI (``FF D8``), as libjpeg reads
    it: junk or a damaged ``FF`` before its first marker is skipped with a warning, as ``decode_jpeg`` skips it.
    Other formats (PNG, WebP, BMP, a PNG named .JPEG) decode whole through Pillow, then take the same resize;
    JPEGs of a kind the linked libjpeg-turbo does not decode (lossless, 12-bit:
    ``tensorops.build_info()["jpeg_kinds"]`` lists the kinds it does) decode whole through torchvision's
    ``decode_jpeg`` where torchvision is installed (its libjpeg-turbo 3 reads lossless files), else or where it
    refuses them through Pillow, then take the same resize.

    Damaged JPEGs that ``decode_jpeg`` and Pillow decode (corrupt data libjpeg resynchronises past, junk bytes
    before a marker, a file cut short, an unknown JFIF revision) are decoded as they decode them, each reported
    once by a RuntimeWarning that names it (its path, else its index and a digest of its bytes); where libjpeg
    warned during a partial decode, that image is decoded again with every column and every row above its box,
    so its values are the full decode's. ``strict=True`` makes such a warning an error instead.

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
        reduced_scale: **not bit-identical**, opt-in for large photos: each JPEG is decoded at 1/2, 1/4 or 1/8
            of its size in the DCT domain (libjpeg's fast scalings; the smallest at which its box still covers
            ``size``), then its box, divided likewise, is resampled. It pays where boxes are at least twice the
            output (2-12 MP photos); the result differs from the exact path by the DCT scaling's averaging
            (``benchmarks/ops/decode.py``'s 2-12 MP rows report the PSNR and the largest difference in their notes).
            A progressive JPEG at 1/8 is decoded without the AC scans its luma (or 4:4:4) blocks never read
            there, with the whole file's values: most of its entropy decoding is skipped, and damage inside the
            skipped scans goes unnoticed.
        device: ``None`` or ``"cpu"``: the CPU decode above. ``"cuda"`` (``"cuda:1"``, a torch.device): the JPEGs
            are decoded whole by torchvision's batched GPU decoder (``torchvision.io.decode_jpeg(list,
            mode=ImageReadMode.RGB, device=...)``, nvJPEG), then one :func:`tensorops.resized_crop_mirror_normalize`
            call on the GPU; the batch (and ``out``) are on that device, ``failed`` on the CPU. **Not bit-identical
            to the CPU path:** nvJPEG's decode is not libjpeg-turbo's, so the values are those of
            ``resized_crop_mirror_normalize(decode_jpeg(..., device="cuda"))``. Other formats, CMYK/YCCK JPEGs and
            JPEGs nvJPEG refuses are decoded on the CPU (the fallback decoder above) and copied over; which
            damaged files are refused follows the decoder that reads them. Needs torchvision (an ImportError
            without it); not with ``reduced_scale``.
        strict: a libjpeg warning (corrupt data, a premature end, junk before a marker) is an error (a ValueError
            naming the sample, or a failed sample with ``on_error="fill"``), as every
            warning was before this option existed. It concerns the CPU decode (``device="cuda"`` follows nvJPEG).

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
    max_pixels = _validate(data, paths, on_error, max_pixels, strict)
    if device is not None:  # validated there; "cuda": the GPU decode, then the fused op (tensorops/_decode_cuda.py)
        from tensorops import _decode_cuda

        if _decode_cuda.parse_device(device).type == "cuda":
            return _decode_cuda.decode(data, mean, std, torch.device(device), paths, max_pixels, on_error, dict(
                size=size, boxes=boxes, mirror=mirror, interpolation=interpolation, antialias=antialias, dtype=dtype,
                memory_format=memory_format, pad_channels=pad_channels, fill=fill, out_of_bounds=out_of_bounds,
                crop_first=crop_first, out=out), reduced_scale=reduced_scale)
    batch, status, _ = decode_with_status(
        data, mean, std, size=size, boxes=boxes, mirror=mirror, interpolation=interpolation, antialias=antialias,
        dtype=dtype, memory_format=memory_format, pad_channels=pad_channels, fill=fill, out_of_bounds=out_of_bounds,
        crop_first=crop_first, out=out, paths=paths, max_pixels=max_pixels or None, on_error=on_error,
        reduced_scale=reduced_scale, strict=strict)
    if on_error == "fill":
        return batch, status == _decode_ops.FAILED
    return batch


def _validate(data, paths, on_error: str, max_pixels: Optional[int], strict: bool) -> int:
    """The checks of the arguments every path shares: max_pixels as an int (0: no limit)."""
    if isinstance(data, (bytes, bytearray, torch.Tensor, np.ndarray)) or not isinstance(data, Sequence):
        raise TypeError(_err(f"data must be a list of encoded images, got {type(data).__name__}"))
    if len(data) == 0:
        raise ValueError(_err("data is an empty list"))
    if paths is not None and len(paths) != len(data):
        raise ValueError(_err(f"paths has {len(paths)} entries but data has {len(data)}"))
    if on_error not in ("raise", "fill"):
        raise ValueError(_err(f"on_error must be \"raise\" or \"fill\", got {on_error!r}"))
    if not isinstance(strict, bool):
        raise TypeError(_err(f"strict must be a bool, got {strict!r}"))
    if max_pixels is None:
        return 0
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, numbers.Integral) or max_pixels <= 0:
        raise ValueError(_err(f"max_pixels must be a positive int or None, got {max_pixels!r}"))
    return int(max_pixels)


def decode_with_status(data: Sequence[Encoded], mean: Stat, std: Stat, *, size: Union[int, Tuple[int, int]],
                       boxes: Optional[torch.Tensor] = None, mirror: Optional[torch.Tensor] = None,
                       interpolation: object = "bilinear", antialias: bool = True,
                       dtype: Optional[torch.dtype] = None,
                       memory_format: torch.memory_format = torch.contiguous_format,
                       pad_channels: Optional[int] = None, fill: float = 0.0, out_of_bounds: str = "error",
                       crop_first: bool = True, out: Optional[torch.Tensor] = None,
                       paths: Optional[Sequence[object]] = None, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                       on_error: str = "raise", reduced_scale: bool = False, strict: bool = False
                       ) -> Tuple[torch.Tensor, torch.Tensor, dict]:
    """:func:`decode_resized_crop_mirror_normalize` on the CPU, returning ``(batch, status, texts)`` whatever
    ``on_error``: ``status`` int8 (N,), per sample ``tensorops._decode_ops.OK`` (0), ``FAILED`` (1, its output is
    ``fill``), ``WARNED`` (2: decoded, libjpeg warned) or ``FALLBACK`` (3: decoded whole by the fallback decoder,
    a JPEG kind the linked libjpeg-turbo does not decode, or not a JPEG); ``texts`` maps the samples that are not
    OK to what the op said of them (the error, or libjpeg's first warning). The collates and the Ray stage count
    these."""
    N = len(data)
    max_pixels = _validate(data, paths, on_error, max_pixels, strict)
    encoded = [_as_bytes(item, n) for n, item in enumerate(data)]
    # what the op does not decode itself (not JPEG; every JPEG in a build without libjpeg-turbo): whole images
    libjpeg = _decode_ops.has_libjpeg()
    if not libjpeg:
        _decode_ops.warn_once("libjpeg", "tensorops was built without libjpeg-turbo: "
                              "decode_resized_crop_mirror_normalize decodes whole images through torchvision's "
                              "decode_jpeg (JPEGs, where torchvision is installed) or Pillow (install "
                              "libjpeg-turbo's development files and rebuild for the partial decode)")
    inputs: List[torch.Tensor] = []
    early = torch.zeros(N, dtype=torch.int8)  # what happened before the op: FALLBACK or FAILED
    early_texts = {}  # why a sample failed before the op
    for n, e in enumerate(encoded):
        if libjpeg and _decode_ops.is_jpeg(e):
            inputs.append(e)
            continue
        try:
            if e.numel() == 0:
                raise ValueError(_err(f"{_label(n, paths)}: the data is empty"))
            inputs.append(_decode_ops.decode_other(e, _label(n, paths), max_pixels))
            early[n] = _decode_ops.FALLBACK
        except ValueError as err:
            if on_error == "raise":
                raise
            early[n] = _decode_ops.FAILED
            early_texts[n] = str(err)
            # no bytes: the op fails it ("the data is empty") and writes fill, as for every failed sample. Its
            # own bytes could be decoded there (libjpeg reads what Pillow refused), giving a sample flagged failed
            # with an image's values.
            inputs.append(torch.empty(0, dtype=torch.uint8))
    cpu = torch.device("cpu")
    o = _resample_options(_NAME, torch.uint8, N, 3, cpu, mean, std, size, [], interpolation, antialias, crop_first,
                          dtype, memory_format, pad_channels, fill, out_of_bounds)
    h, w, interp, dtype, scale, channels, fill, pad, m, s = o
    if not isinstance(reduced_scale, bool):
        raise TypeError(_err(f"reduced_scale must be a bool, got {reduced_scale!r}"))
    if boxes is None:
        boxes = _whole_images(inputs, early == _decode_ops.FAILED, paths, on_error)
    bx = _boxes(boxes, [(1, 1)] * N)
    if isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor):
        m, s = m.detach().cpu(), s.detach().cpu()
    mi = _mirror(mirror, N, _NAME)
    if out is not None:
        _checks.check_out(_NAME, out, (N, channels, h, w), dtype, cpu, [*inputs, m, s])
    args = (m, s, bx, mi, [h, w], scale, interp, antialias, crop_first, dtype, memory_format, channels, fill, pad,
            max_pixels, on_error == "fill", reduced_scale, strict)
    batch, status, texts = _decode_ops.run(inputs, encoded, args, out, paths, on_error)
    texts.update(early_texts)
    return batch, torch.where(early != 0, early, status), texts


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

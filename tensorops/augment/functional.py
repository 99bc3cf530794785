"""Batched augmentation ops with per-sample arguments: ``torchvision.transforms.v2.functional``'s image ops on a
uint8 batch, one call for the whole batch.

Every op takes ``batch``, uint8 (N, C, H, W) with C 1 or 3, on the CPU or a CUDA device, contiguous or
channels_last, and returns a new batch in the same layout (the input is left as it was). A magnitude is a number
(every sample) or an (N,) tensor (one per sample). **Sample i equals the torchvision v2 function applied to image
i with argument i, bit for bit** (on the CPU; :func:`affine` and :func:`rotate` included, measured on 16.3 M
pixels per mode; the few known exceptions are in docs/guides/fidelity.rst). CPU: one task per sample, over
threads where they pay; CUDA: one launch per op group.
How a call reaches the kernels (their op codes and params columns, the argument checks, the torchvision
fallback) is ``_kernel_call.py``.

Example::

    >>> import torch
    >>> from tensorops import augment
    >>> batch = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    >>> out = augment.adjust_brightness(batch, torch.tensor([0.5, 1.0, 1.5, 2.0]))
    >>> out.shape, out.dtype
    (torch.Size([4, 3, 32, 32]), torch.uint8)
"""
from __future__ import annotations

import numbers
from typing import Optional, Sequence, Union

import torch

from tensorops import _extension
from tensorops.augment._kernel_call import (  # noqa: F401  (solarize_add_reference: public here too)
    _AFFINE, _AFFINE_PIL, _ANGLE, _AUTOCONTRAST, _BRIGHTNESS, _CONTRAST, _CX, _CY, _EQUALIZE, _GRAYSCALE, _HUE,
    _IDENTITY, _INVERT, _M, _NPARAMS, _PIL_FILTER, _POSTERIZE, _ROT90, _ROT180, _ROT270, _SATURATION, _SCALE,
    _SHARPNESS, _SHX, _SHY, _SOLARIZE, _SOLARIZE_ADD, _TX, _TY, Fill, Magnitude, _check_batch, _factor, _fill,
    _interpolation, _one, _pairs, _per_sample, _require, _run, _tracing, pil_data, solarize_add_reference,
)

# The ops one round of apply_ops draws from (the policies map torchvision's names onto these).
OPS = ("identity", "brightness", "contrast", "saturation", "hue", "sharpness", "posterize", "solarize",
       "autocontrast", "equalize", "invert", "grayscale", "shear_x", "shear_y", "translate_x", "translate_y",
       "rotate", "solarize_add")
# Pillow's own geometry, as timm's ops call it (tensorops.augment.timm with interpolation "bicubic" or "random"):
# indices after OPS, taken by _apply (see apply_ops)
PIL_OPS = ("pil_rotate", "pil_shear_x", "pil_shear_y", "pil_translate_x", "pil_translate_y")
_ALL_OPS = OPS + PIL_OPS
_FIRST_PIL = len(OPS)

# OPS index -> kernel code (geometric ops are affine; rotate's exact quarter turns are decided per sample)
_CODE = torch.tensor([_IDENTITY, _BRIGHTNESS, _CONTRAST, _SATURATION, _HUE, _SHARPNESS, _POSTERIZE, _SOLARIZE,
                      _AUTOCONTRAST, _EQUALIZE, _INVERT, _GRAYSCALE, _AFFINE, _AFFINE, _AFFINE, _AFFINE, _AFFINE,
                      _SOLARIZE_ADD] + [_AFFINE_PIL] * 5)


# ---- colour ops ---------------------------------------------------------------------------------------------
def adjust_brightness(batch: torch.Tensor, brightness_factor: Magnitude) -> torch.Tensor:
    """Each sample times its factor, as ``v2.functional.adjust_brightness`` (factor >= 0; number or (N,))."""
    return _factor(batch, brightness_factor, "brightness_factor", _BRIGHTNESS)


def adjust_contrast(batch: torch.Tensor, contrast_factor: Magnitude) -> torch.Tensor:
    """Each sample blended with the mean of its grayscale, as ``v2.functional.adjust_contrast``."""
    return _factor(batch, contrast_factor, "contrast_factor", _CONTRAST)


def adjust_saturation(batch: torch.Tensor, saturation_factor: Magnitude) -> torch.Tensor:
    """Each sample blended with its grayscale, as ``v2.functional.adjust_saturation`` (1 channel: unchanged)."""
    return _factor(batch, saturation_factor, "saturation_factor", _SATURATION)


def adjust_sharpness(batch: torch.Tensor, sharpness_factor: Magnitude) -> torch.Tensor:
    """Each sample blended with its 3x3 blur (borders kept), as ``v2.functional.adjust_sharpness``."""
    return _factor(batch, sharpness_factor, "sharpness_factor", _SHARPNESS)


def adjust_hue(batch: torch.Tensor, hue_factor: Magnitude) -> torch.Tensor:
    """Each sample's hue shifted by its factor in [-0.5, 0.5], as ``v2.functional.adjust_hue``."""
    _check_batch(batch)
    f = _per_sample(hue_factor, batch.shape[0], "hue_factor")
    _require((f >= -0.5) & (f <= 0.5), "hue_factor", "is not in [-0.5, 0.5]", f)
    return _one(batch, _HUE, f)


def posterize(batch: torch.Tensor, bits: Union[int, torch.Tensor]) -> torch.Tensor:
    """Each sample keeps its ``bits`` high bits (0..8), as ``v2.functional.posterize``."""
    _check_batch(batch)
    b = _per_sample(bits, batch.shape[0], "bits")
    _require((b >= 0) & (b <= 8) & (b == b.floor()), "bits", "is not an integer in [0, 8]", b)
    return _one(batch, _POSTERIZE, b)


def solarize(batch: torch.Tensor, threshold: Magnitude) -> torch.Tensor:
    """Each sample's values at or above its threshold inverted, as ``v2.functional.solarize`` (threshold <= 255)."""
    _check_batch(batch)
    t = _per_sample(threshold, batch.shape[0], "threshold")
    _require(t <= 255, "threshold", "is not <= 255, uint8's maximum", t)
    return _one(batch, _SOLARIZE, t)


def autocontrast(batch: torch.Tensor) -> torch.Tensor:
    """Each sample's channels stretched to [0, 255], as ``v2.functional.autocontrast``."""
    _check_batch(batch)
    return _one(batch, _AUTOCONTRAST)


def equalize(batch: torch.Tensor) -> torch.Tensor:
    """Each sample's channels histogram-equalized, as ``v2.functional.equalize``."""
    _check_batch(batch)
    return _one(batch, _EQUALIZE)


def invert(batch: torch.Tensor) -> torch.Tensor:
    """255 - batch, as ``v2.functional.invert``."""
    _check_batch(batch)
    return _one(batch, _INVERT)


def rgb_to_grayscale(batch: torch.Tensor, num_output_channels: int = 1) -> torch.Tensor:
    """Each sample's luma (uint8, truncated), as ``v2.functional.rgb_to_grayscale``: (N, num_output_channels,
    H, W), num_output_channels 1 or 3 (a 1-channel batch is copied, or repeated to 3)."""
    _check_batch(batch)
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}")
    if batch.shape[1] == 1:
        return batch.clone() if num_output_channels == 1 else batch.repeat(1, 3, 1, 1)
    out = _one(batch, _GRAYSCALE)
    if num_output_channels == 3:
        return out
    cl = out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()
    return out[:, :1].contiguous(memory_format=torch.channels_last if cl else torch.contiguous_format)


# ---- geometry -----------------------------------------------------------------------------------------------
def affine(batch: torch.Tensor, angle: Magnitude = 0.0, translate=(0.0, 0.0), scale: Magnitude = 1.0,
           shear=(0.0, 0.0), interpolation="nearest", fill: Fill = None, center=None) -> torch.Tensor:
    """Each sample through its affine map, as ``v2.functional.affine``: angle (N,) degrees, translate (N, 2)
    pixels, scale (N,) > 0, shear (N, 2) degrees (or one value / pair for every sample), interpolation
    "nearest" or "bilinear", fill None (zeros) or C values, center None (the image centre) or (x, y) pixels."""
    _check_batch(batch)
    n, c, h, w = batch.shape
    params = torch.zeros(n, _NPARAMS, dtype=torch.float64)
    params[:, _ANGLE] = _per_sample(angle, n, "angle")
    params[:, _TX:_TY + 1] = _pairs(translate, n, "translate")
    s = _per_sample(scale, n, "scale")
    _require(s > 0, "scale", "is not positive", s)
    params[:, _SCALE] = s
    params[:, _SHX:_SHY + 1] = _pairs(shear, n, "shear")
    if center is not None:
        params[:, _CX:_CY + 1] = _pairs(center, n, "center") - torch.tensor([w * 0.5, h * 0.5], dtype=torch.float64)
    return _run(batch, torch.full((n,), _AFFINE, dtype=torch.int64), params, _interpolation(interpolation),
                _fill(fill, c))


def _rotation_codes(angle: torch.Tensor, square: bool, centred: bool):
    """rotate_image's fast paths (exact index maps) and the angle its matrix takes: -(angle % 360)."""
    a = torch.remainder(angle, 360.0)
    codes = torch.full(angle.shape, _AFFINE, dtype=torch.int64)
    if not centred:
        codes[a == 0] = _IDENTITY
        codes[a == 180] = _ROT180
        if square:
            codes[a == 90] = _ROT90
            codes[a == 270] = _ROT270
    return codes, -a


def rotate(batch: torch.Tensor, angle: Magnitude, interpolation="nearest", fill: Fill = None,
           center=None) -> torch.Tensor:
    """Each sample rotated by its angle (degrees, counter-clockwise), as ``v2.functional.rotate`` (expand=False;
    its exact fast paths for 0, 180 and, on square images, 90 and 270 degrees included)."""
    _check_batch(batch)
    n, c, h, w = batch.shape
    codes, a = _rotation_codes(_per_sample(angle, n, "angle"), h == w, center is not None)
    params = torch.zeros(n, _NPARAMS, dtype=torch.float64)
    params[:, _ANGLE] = a
    params[:, _SCALE] = 1.0
    if center is not None:
        params[:, _CX:_CY + 1] = _pairs(center, n, "center") - torch.tensor([w * 0.5, h * 0.5], dtype=torch.float64)
    return _run(batch, codes, params, _interpolation(interpolation), _fill(fill, c))


# ---- regions ------------------------------------------------------------------------------------------------
def erase(batch: torch.Tensor, boxes: torch.Tensor, value: Union[float, int, torch.Tensor] = 0) -> torch.Tensor:
    """Each sample with its box set to ``value``, as ``v2.functional.erase(image, i, j, h, w, v)``.

    boxes: int64 (N, 4) = (top, left, height, width) per sample, clipped to the image (height or width 0: the
    sample is unchanged). value: a number, an (N,) or (N, C) tensor (converted to uint8 as torch's copy
    converts), or a uint8 tensor of the batch's shape whose pixels are copied inside each box (per-pixel noise,
    CutMix's pasted image)."""
    _check_batch(batch)
    n, c = batch.shape[:2]
    if not isinstance(boxes, torch.Tensor) or boxes.dim() != 2 or tuple(boxes.shape) != (n, 4):
        raise ValueError(f"boxes must be an int64 tensor (N, 4) = ({n}, 4), got "
                         f"{tuple(boxes.shape) if isinstance(boxes, torch.Tensor) else type(boxes).__name__}")
    if boxes.is_floating_point() or boxes.is_complex():
        raise TypeError(f"boxes must be integers (top, left, height, width), got {boxes.dtype}")
    b = boxes.to("cpu", torch.int64)
    if not _tracing() and bool((b < 0).any()):
        i = int((b < 0).any(1).nonzero()[0])
        raise ValueError(f"boxes of sample {i} {b[i].tolist()} has a negative top, left, height or width")
    if isinstance(value, torch.Tensor) and value.dim() == 4:
        if value.shape != batch.shape:
            raise ValueError(f"value must have the batch's shape {tuple(batch.shape)}, got {tuple(value.shape)}")
        v = value.to(device=batch.device, dtype=torch.uint8)
    else:
        if isinstance(value, torch.Tensor):
            t = value.detach().to("cpu")
            if t.dim() == 0:
                t = t.expand(n, c)
            elif t.dim() == 1 and t.shape[0] == n:
                t = t[:, None].expand(n, c)
            elif tuple(t.shape) != (n, c):
                raise ValueError(f"value must be a number, (N,) = ({n},), (N, C) = ({n}, {c}) or the batch's shape, "
                                 f"got {tuple(t.shape)}")
        elif isinstance(value, numbers.Number):
            t = torch.full((n, c), value)
        else:
            raise TypeError(f"value must be a number or a tensor, got {type(value).__name__}")
        v = t.to(torch.uint8).contiguous().to(batch.device)
    if not _extension.is_compiled() or not _extension.kernels_for(batch.device):
        out = batch.clone()
        for i in range(n):
            t0, l0, hh, ww = b[i].tolist()
            out[i, :, t0:t0 + hh, l0:l0 + ww] = v[i, :, t0:t0 + hh, l0:l0 + ww] if v.dim() == 4 else v[i, :, None, None]
        return out
    return torch.ops.tensorops.augment_erase.default(batch, b.to(batch.device), v)


def mix(batch: torch.Tensor, augmented: Sequence[torch.Tensor], weights: torch.Tensor) -> torch.Tensor:
    """AugMix's mix: ``weights[:, 0] * batch + weights[:, 1] * augmented[0] + ...`` in float32, each product and
    sum rounded in torchvision v2's order, truncated to uint8 (as ``AugMix``'s ``mix.to(uint8)``).

    augmented: K uint8 batches of the batch's shape; weights: float32 (N, 1 + K)."""
    _check_batch(batch)
    if not isinstance(weights, torch.Tensor) or weights.dim() != 2 or tuple(weights.shape) != (batch.shape[0],
                                                                                              1 + len(augmented)):
        raise ValueError(f"weights must be a float32 tensor (N, 1 + K) = ({batch.shape[0]}, {1 + len(augmented)})")
    w = weights.to(device=batch.device, dtype=torch.float32)
    cl = batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous()
    fmt = torch.channels_last if cl else torch.contiguous_format
    x = batch.contiguous(memory_format=fmt)
    augs = [a.to(batch.device).contiguous(memory_format=fmt) for a in augmented]
    for i, a in enumerate(augs):
        _check_batch(a, f"augmented[{i}]")
        if a.shape != batch.shape:
            raise ValueError(f"augmented[{i}] must have the batch's shape {tuple(batch.shape)}, got {tuple(a.shape)}")
    if (not augs or len(augs) > 8 or not _extension.is_compiled() or not _extension.kernels_for(batch.device)):
        dims = (batch.shape[0], 1, 1, 1)
        out = w[:, 0].reshape(dims) * x
        for i, a in enumerate(augs):
            out.add_(w[:, 1 + i].reshape(dims) * a)
        return out.to(torch.uint8)
    return torch.ops.tensorops.augment_mix.default(x, augs, w)


# ---- one round of per-sample ops ----------------------------------------------------------------------------
def apply_ops(batch: torch.Tensor, ops: torch.Tensor, magnitudes: torch.Tensor, *, interpolation="nearest",
              fill: Fill = None) -> torch.Tensor:
    """One op per sample in one call: sample i gets ``OPS[ops[i]]`` with ``magnitudes[i]``.

    ops: int64 (N,) indices into :data:`OPS`; magnitudes: float64 (N,): brightness / contrast / saturation /
    sharpness take the v2 factor, hue the hue_factor, posterize the bits, solarize the threshold (uint8 scale);
    shear_x / shear_y the shear in degrees (as ``v2.functional.affine(angle=0, translate=[0, 0], scale=1,
    shear=[deg, 0] or [0, deg], center=[0, 0])``, what AutoAugment's ShearX / ShearY run), translate_x /
    translate_y pixels (``affine(translate=[t, 0] or [0, t])`` about the centre), rotate degrees
    (``v2.functional.rotate``), solarize_add the addend (timm's SolarizeAdd, an integer in [0, 255]: values below
    128 raised by it, saturated); the others ignore it. ``grayscale`` keeps C channels. interpolation and fill
    apply to the geometric samples.

    ops and magnitudes may also be (N, K): K ops per sample, applied in order in one call (the CPU keeps each
    sample's intermediate images in cache-sized scratch; CUDA runs K rounds).

    >>> batch = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    >>> out = apply_ops(batch, torch.tensor([1, 12, 0, 9]), torch.tensor([1.3, 10.0, 0.0, 0.0], dtype=torch.float64))
    """
    return _apply(batch, ops, magnitudes, interpolation, fill, None, OPS)


def _apply(batch: torch.Tensor, ops: torch.Tensor, magnitudes: torch.Tensor, interpolation, fill: Fill,
           resample: Optional[torch.Tensor], table: Sequence[str]) -> torch.Tensor:
    """apply_ops over ``table``: OPS, or ``_ALL_OPS`` whose PIL_OPS entries are Pillow's own geometry as timm's ops
    call it, bit for bit its values (``Image.rotate(degrees)``; ``Image.transform(size, AFFINE, data)`` with data
    ``(1, f, 0, 0, 1, 0)`` / ``(1, 0, 0, f, 1, 0)`` for a shear factor f, ``(1, 0, p, 0, 1, 0)`` /
    ``(1, 0, 0, 0, 1, p)`` for an offset of p pixels), resampled with Pillow's bilinear or bicubic filter:
    ``interpolation`` "bilinear" or "bicubic" for every such entry, or ``resample`` (ops' shape, int64: 1
    bilinear, 2 bicubic) per entry. ``interpolation="bicubic"`` is for those only (torchvision's affine has no
    bicubic for tensors)."""
    _check_batch(batch)
    n, c, h, w = batch.shape
    if not isinstance(ops, torch.Tensor) or ops.dim() not in (1, 2) or ops.shape[0] != n:
        raise ValueError(f"ops must be an int64 tensor (N,) or (N, K) with N = {n}, of indices into OPS")
    if ops.is_floating_point() or ops.is_complex():
        raise TypeError(f"ops must be integer indices into OPS, got {ops.dtype}")
    k = ops.shape[1] if ops.dim() == 2 else 1
    o = ops.to("cpu", torch.int64).reshape(-1)
    if o.numel() and not _tracing() and (int(o.min()) < 0 or int(o.max()) >= len(table)):
        bad = int(((o < 0) | (o >= len(table))).nonzero()[0])
        raise ValueError(f"ops of sample {bad // k} is {int(o[bad])}, not an index into OPS (0..{len(table) - 1})")
    if ops.dim() == 2:
        if not isinstance(magnitudes, torch.Tensor) or magnitudes.shape != ops.shape:
            raise ValueError(f"magnitudes must have ops' shape {tuple(ops.shape)}")
        m = magnitudes.detach().to("cpu", torch.float64).reshape(-1)
    else:
        m = _per_sample(magnitudes, n, "magnitudes")
    codes = _CODE[o].clone()
    params = torch.zeros(o.shape[0], _NPARAMS, dtype=torch.float64)
    params[:, _M] = m
    params[:, _SCALE] = 1.0
    name = {op: i for i, op in enumerate(OPS)}
    shear_x, shear_y = o == name["shear_x"], o == name["shear_y"]
    params[:, _SHX] = torch.where(shear_x, m, 0.0)
    params[:, _SHY] = torch.where(shear_y, m, 0.0)
    corner = shear_x | shear_y  # center=[0, 0]: relative to the centre, (-w/2, -h/2)
    params[:, _CX] = torch.where(corner, -w * 0.5, 0.0)
    params[:, _CY] = torch.where(corner, -h * 0.5, 0.0)
    params[:, _TX] = torch.where(o == name["translate_x"], m, 0.0)
    params[:, _TY] = torch.where(o == name["translate_y"], m, 0.0)
    rot = o == name["rotate"]
    rc, ra = _rotation_codes(m, h == w, False)  # for every sample (no data-dependent branch: torch.compile)
    codes = torch.where(rot, rc, codes)
    params[:, _ANGLE] = torch.where(rot, ra, 0.0)
    # checks of the colour magnitudes, per op
    for op, ok, what in (("brightness", m >= 0, "is not non-negative"), ("contrast", m >= 0, "is not non-negative"),
                         ("saturation", m >= 0, "is not non-negative"), ("sharpness", m >= 0, "is not non-negative"),
                         ("hue", (m >= -0.5) & (m <= 0.5), "is not in [-0.5, 0.5]"),
                         ("posterize", (m >= 0) & (m <= 8) & (m == m.floor()), "is not an integer in [0, 8]"),
                         ("solarize", m <= 255, "is not <= 255"),
                         ("solarize_add", (m >= 0) & (m <= 255) & (m == m.floor()), "is not an integer in [0, 255]")):
        sel = o == name[op]
        _require(ok | ~sel, f"magnitudes ({op})", what, m, per=k)
    if table is OPS:
        interp = _interpolation(interpolation)
    else:
        codes, interp = _pil_entries(o, m, codes, params, k, h, w, interpolation, resample, ops.shape)
    if ops.dim() == 2:
        codes, params = codes.reshape(n, k), params.reshape(n, k, _NPARAMS)
    return _run(batch, codes, params, interp, _fill(fill, c))


@torch.compiler.disable  # Pillow's data are Python math per distinct magnitude: run eagerly under torch.compile
def _pil_entries(o: torch.Tensor, m: torch.Tensor, codes: torch.Tensor, params: torch.Tensor, k: int, h: int,
                 w: int, interpolation, resample: Optional[torch.Tensor], shape):
    """The pil_* entries' codes and params (Pillow's data per distinct (op, magnitude), its filter per entry), and
    the kernel's interpolation for torchvision's geometric entries (bicubic: none may be there)."""
    mode = getattr(interpolation, "value", interpolation)
    bicubic = isinstance(mode, str) and mode.lower() == "bicubic"
    codes = _pil_params(o, m, codes, params, k, h, w, mode, resample, shape)
    geometric = (codes == _AFFINE) | (codes == _ROT90) | (codes == _ROT180) | (codes == _ROT270)
    if bicubic and bool((geometric & (o < _FIRST_PIL)).any()):
        raise ValueError("interpolation='bicubic' is for the pil_* ops only: torchvision's affine and rotate have no "
                         "bicubic for tensors")
    return codes, (0 if bicubic else _interpolation(interpolation))


def _pil_params(o: torch.Tensor, m: torch.Tensor, codes: torch.Tensor, params: torch.Tensor, k: int, h: int, w: int,
                mode, resample: Optional[torch.Tensor], shape) -> torch.Tensor:
    """The pil_* entries' codes and params: Pillow's data per distinct (op, magnitude), its filter per entry."""
    pil = o >= _FIRST_PIL
    if not bool(pil.any()):
        return codes
    if resample is not None:
        if not isinstance(resample, torch.Tensor) or tuple(resample.shape) != tuple(shape):
            raise ValueError(f"resample must be an int64 tensor of ops' shape {tuple(shape)}")
        f = resample.to("cpu", torch.int64).reshape(-1)
        _require((f == 1) | (f == 2) | ~pil, "resample", "is not 1 (bilinear) or 2 (bicubic)", f.double(), per=k)
    else:
        name = mode.lower() if isinstance(mode, str) else None
        if name not in _PIL_FILTER:
            raise ValueError(f"the pil_* ops resample with Pillow's 'bilinear' or 'bicubic' filter, got interpolation "
                             f"{mode!r}")
        f = torch.full_like(o, _PIL_FILTER[name])
    codes = codes.clone()
    index = pil.nonzero()[:, 0]
    pairs = torch.stack([o[index].double(), m[index]], 1)
    uniq, inverse = torch.unique(pairs, dim=0, return_inverse=True)
    made = [pil_data(_ALL_OPS[int(op)], float(v), h, w) for op, v in uniq.tolist()]
    codes[index] = torch.tensor([code for code, _ in made], dtype=torch.int64)[inverse]
    data = torch.tensor([d if d is not None else (0.0,) * 6 for _, d in made], dtype=torch.float64)[inverse]
    params[index, _M] = f[index].double()
    params[index, _ANGLE:_SHY + 1] = data
    return codes

"""How a functional op reaches the kernels: the kernel's op codes and params columns, the argument checks that name
the argument and the sample, the call (``torch.ops.tensorops.augment_apply``) and, without the kernels,
torchvision v2 per sample."""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence, Union

import torch

from tensorops import _extension

Magnitude = Union[float, int, torch.Tensor, Sequence[float]]
Fill = Optional[Union[float, int, Sequence[float]]]

# kernel op codes (csrc/include/tensorops/math/augment.h)
_IDENTITY, _BRIGHTNESS, _CONTRAST, _SATURATION, _HUE, _SHARPNESS, _POSTERIZE, _SOLARIZE = range(8)
_AUTOCONTRAST, _EQUALIZE, _INVERT, _GRAYSCALE, _AFFINE, _ROT90, _ROT180, _ROT270, _SOLARIZE_ADD = range(8, 17)
_AFFINE_PIL = 17  # Pillow's affine: params[:, _M] its filter (1 bilinear, 2 bicubic), params[:, 1:7] its data
# params columns (csrc/include/tensorops/augment_host.h)
_M, _ANGLE, _TX, _TY, _SCALE, _SHX, _SHY, _CX, _CY = range(9)
_NPARAMS = 9
_INTERPOLATION = {"nearest": 0, "bilinear": 1}
_PIL_FILTER = {"bilinear": 1, "bicubic": 2}  # Pillow's Resampling.BILINEAR / BICUBIC, as the kernel codes them


# ---- checks -------------------------------------------------------------------------------------------------
def _check_batch(batch: torch.Tensor, name: str = "batch") -> None:
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"{name} must be a uint8 tensor (N, C, H, W), got {type(batch).__name__}")
    if batch.dtype != torch.uint8:
        raise TypeError(f"{name} must be uint8 (N, C, H, W), got {batch.dtype}")
    if batch.dim() != 4:
        raise ValueError(f"{name} must be (N, C, H, W), got {batch.dim()} dims {tuple(batch.shape)}")
    if batch.shape[1] not in (1, 3):
        raise ValueError(f"{name} must have 1 or 3 channels (dim 1), got {batch.shape[1]}")


def _per_sample(value: Magnitude, n: int, name: str, device=None) -> torch.Tensor:
    """``value`` as float64 (N,) on the CPU: a number for every sample, or one per sample."""
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu", torch.float64)
        if t.dim() == 0:
            return t.expand(n).clone()
        if t.dim() != 1 or t.shape[0] != n:
            raise ValueError(f"{name} must be a number or have one value per sample: ({n},), got {tuple(t.shape)}")
        return t
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return torch.full((n,), float(value), dtype=torch.float64)
    if isinstance(value, (list, tuple)):
        return _per_sample(torch.tensor(value, dtype=torch.float64), n, name)
    raise TypeError(f"{name} must be a number or an (N,) tensor, got {type(value).__name__}")


def _pairs(value, n: int, name: str) -> torch.Tensor:
    """float64 (N, 2) from a pair (every sample), a number (shear: (v, 0)) or an (N, 2) tensor."""
    if isinstance(value, torch.Tensor):
        t = value.detach().to("cpu", torch.float64)
        if t.dim() == 1 and t.shape[0] == 2:
            return t.expand(n, 2).clone()
        if t.dim() != 2 or t.shape != (n, 2):
            raise ValueError(f"{name} must be a pair or an (N, 2) tensor with N = {n}, got {tuple(t.shape)}")
        return t
    if isinstance(value, numbers.Number):
        return torch.tensor([[float(value), 0.0]] * n, dtype=torch.float64).reshape(n, 2)
    if isinstance(value, (list, tuple)) and len(value) in (1, 2):
        v = [float(value[0]), float(value[-1] if len(value) == 2 else value[0])]
        return torch.tensor([v] * n, dtype=torch.float64).reshape(n, 2)
    raise TypeError(f"{name} must be a pair of numbers or an (N, 2) tensor, got {value!r}")


def _tracing() -> bool:
    """Under torch.compile the value checks below would guard on data (a graph break, an error under
    fullgraph=True): there the kernels' host checks (csrc/host/augment_host.cpp) test the same conditions per
    sample when the graph runs, naming ``params``/``ops``/``boxes`` and the sample."""
    return torch.compiler.is_compiling()


def _require(ok: torch.Tensor, name: str, what: str, values: torch.Tensor, per: int = 1) -> None:
    """ValueError naming the first sample (entry // per: `per` values per sample) where ``ok`` is false."""
    if _tracing():
        return
    if not bool(ok.all()):
        i = int((~ok).nonzero()[0])
        raise ValueError(f"{name} of sample {i // per} ({float(values[i])}) {what}")


def _interpolation(interpolation) -> int:
    v = getattr(interpolation, "value", interpolation)
    if isinstance(v, str) and v.lower() in _INTERPOLATION:
        return _INTERPOLATION[v.lower()]
    raise ValueError(f"interpolation must be 'nearest' or 'bilinear' (or InterpolationMode.NEAREST / BILINEAR), "
                     f"got {interpolation!r}")


def _fill(fill: Fill, channels: int):
    if fill is None:
        return None
    if isinstance(fill, numbers.Number):
        return [float(fill)]
    values = [float(v) for v in fill]
    if len(values) not in (1, channels):
        raise ValueError(f"fill must be a number or have 1 or C = {channels} values, got {len(values)}")
    return values


# ---- the call -----------------------------------------------------------------------------------------------
def _run(batch: torch.Tensor, codes: torch.Tensor, params: torch.Tensor, interpolation: int = 0,
         fill=None) -> torch.Tensor:
    if not _extension.is_compiled() or not _extension.kernels_for(batch.device):
        return _fallback(batch, codes, params, interpolation, fill)
    return torch.ops.tensorops.augment_apply.default(batch, codes.to(torch.int64), params, interpolation, fill)


def _fallback(batch, codes, params, interpolation, fill):
    """Without the kernels (no compiled extension, or a device it was built without): torchvision v2 per sample."""
    try:
        from torchvision.transforms.v2 import functional as F
    except ImportError as e:  # pragma: no cover - depends on the install
        raise RuntimeError("tensorops.augment needs the compiled extension, or torchvision for its fallback") from e
    mode = ("nearest", "bilinear")[interpolation]
    out = []
    for i in range(batch.shape[0]):
        img, c, p = batch[i], int(codes[i]), params[i].tolist()
        m = p[_M]
        if c == _IDENTITY:
            r = img.clone()
        elif c == _BRIGHTNESS:
            r = F.adjust_brightness(img, m)
        elif c == _CONTRAST:
            r = F.adjust_contrast(img, m)
        elif c == _SATURATION:
            r = F.adjust_saturation(img, m)
        elif c == _HUE:
            r = F.adjust_hue(img, m)
        elif c == _SHARPNESS:
            r = F.adjust_sharpness(img, m)
        elif c == _POSTERIZE:
            r = F.posterize(img, int(m))
        elif c == _SOLARIZE:
            r = F.solarize(img, m)
        elif c == _AUTOCONTRAST:
            r = F.autocontrast(img)
        elif c == _EQUALIZE:
            r = F.equalize(img)
        elif c == _INVERT:
            r = F.invert(img)
        elif c == _GRAYSCALE:
            r = F.rgb_to_grayscale(img, num_output_channels=img.shape[0]) if img.shape[0] == 3 else img.clone()
        elif c == _SOLARIZE_ADD:
            r = solarize_add_reference(img, int(m))
        elif c == _AFFINE_PIL:
            r = pil_reference(img, tuple(p[_ANGLE:_SHY + 1]), int(m), fill)
        elif c == _AFFINE:
            h, w = img.shape[-2:]
            center = [p[_CX] + w * 0.5, p[_CY] + h * 0.5]
            r = F.affine(img, angle=p[_ANGLE], translate=[p[_TX], p[_TY]], scale=p[_SCALE],
                         shear=[p[_SHX], p[_SHY]], interpolation=mode, fill=fill, center=center)
        else:
            r = torch.rot90(img, k={_ROT90: 1, _ROT180: 2, _ROT270: 3}[c], dims=(-2, -1))
        out.append(r.contiguous())
    result = torch.stack(out) if out else batch.clone()
    if batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        result = result.contiguous(memory_format=torch.channels_last)
    return result


def pil_data(op: str, value: float, h: int, w: int):
    """(kernel code, Pillow's six affine data) of Pillow's op on an h x w image, computed as Pillow computes them
    in Python: ``Image.rotate(value)`` (its exact transposes for 0 and 180 degrees, and for 90 and 270 on square
    images, included), ``Image.transform(size, AFFINE, data)`` with timm's shear and translate data."""
    if op == "pil_rotate":
        angle = value % 360.0
        if angle == 0:
            return _IDENTITY, None
        if angle == 180:
            return _ROT180, None
        if angle in (90, 270) and w == h:
            return (_ROT90 if angle == 90 else _ROT270), None
        cx, cy = w / 2, h / 2
        r = -math.radians(angle)
        a, b, c, d, e, f = (round(math.cos(r), 15), round(math.sin(r), 15), 0.0, round(-math.sin(r), 15),
                            round(math.cos(r), 15), 0.0)
        # Pillow: matrix[2], matrix[5] = transform(-cx - 0, -cy - 0, matrix), then += cx and cy
        x, y = -cx - 0, -cy - 0
        return _AFFINE_PIL, (a, b, a * x + b * y + c + cx, d, e, d * x + e * y + f + cy)
    data = {"pil_shear_x": (1, value, 0, 0, 1, 0), "pil_shear_y": (1, 0, 0, value, 1, 0),
            "pil_translate_x": (1, 0, value, 0, 1, 0), "pil_translate_y": (1, 0, 0, 0, 1, value)}[op]
    return _AFFINE_PIL, tuple(float(v) for v in data)


def pil_reference(image: torch.Tensor, data, pil_filter: int, fill) -> torch.Tensor:
    """Pillow's ``Image.transform(size, AFFINE, data, resample, fillcolor)`` of a CHW uint8 image (1 or 3
    channels), as timm runs it: the reference of the ``pil_*`` ops."""
    import numpy as np
    from PIL import Image

    c, h, w = image.shape
    array = image.permute(1, 2, 0).contiguous().numpy()
    pil = Image.fromarray(array[:, :, 0] if c == 1 else array)
    if fill is None:
        fillcolor = None
    else:
        values = [int(round(float(v))) for v in (fill * c if len(fill) == 1 else fill)]
        fillcolor = values[0] if c == 1 else tuple(values)
    resample = {1: Image.Resampling.BILINEAR, 2: Image.Resampling.BICUBIC}[int(pil_filter)]
    out = np.asarray(pil.transform((w, h), Image.Transform.AFFINE, data, resample, fillcolor=fillcolor))
    return torch.from_numpy(out.reshape(h, w, c).copy()).permute(2, 0, 1)


def solarize_add_reference(image: torch.Tensor, addend: int) -> torch.Tensor:
    """timm's ``solarize_add`` (Pillow's table: values below 128 raised by ``addend``, saturated at 255) in torch
    ops; apply_ops' "solarize_add" (timm only, torchvision has no twin)."""
    raised = (image.to(torch.int16) + addend).clamp_(max=255).to(torch.uint8)
    return torch.where(image < 128, raised, image)


def _one(batch: torch.Tensor, code: int, magnitude: Optional[torch.Tensor] = None) -> torch.Tensor:
    n = batch.shape[0]
    params = torch.zeros(n, _NPARAMS, dtype=torch.float64)
    params[:, _SCALE] = 1.0
    if magnitude is not None:
        params[:, _M] = magnitude
    return _run(batch, torch.full((n,), code, dtype=torch.int64), params)


def _factor(batch, factor, name, code) -> torch.Tensor:
    _check_batch(batch)
    f = _per_sample(factor, batch.shape[0], name)
    _require(f >= 0, name, "is not non-negative", f)
    return _one(batch, code, f)

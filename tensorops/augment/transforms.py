"""Batched augmentation policies with per-sample draws (issue 36, item 2).

Every transform here is a ``torch.nn.Module`` taking a uint8 batch ``(N, C, H, W)`` (C = 1 or 3, CPU or CUDA,
contiguous or channels_last) and follows torchvision v2's split into ``make_params`` and ``transform``:

* ``make_params(batch, generator=None)`` draws, on the CPU, from a ``torch.Generator`` (the argument, else the
  ``generator=`` given to the constructor, else torch's global generator), one set of parameters **per sample**,
  as CPU tensors with N rows. Draws are vectorized over samples: no Python loop over samples.
* ``transform(batch, params)`` applies them (``tensorops.augment.functional.apply_ops`` once per round; a round is
  one op per sample), and returns a new batch in the input's memory format (the input is left as it was).
* ``forward(batch)`` is ``transform(batch, make_params(batch))``.

The distributions are torchvision 0.29.1's (``torchvision.transforms.v2``): the same augmentation spaces,
magnitude bins, signs, probabilities and ranges, but where v2 draws once per call (once for the whole batch when
given a batch), here every sample draws its own. The params replay bit for bit: sample ``i`` of
``transform(batch, params)`` is what torchvision's per-image code gives for image ``i`` with the draws of row
``i`` (for the geometric ops, up to what ``tensorops.augment.affine`` documents about pixels whose float32
coordinates land within rounding distance of a pixel boundary).

Auto-augment params (``TrivialAugmentWide``, ``RandAugment``, ``AutoAugment``): ``params["ops"]`` int64
``(N, ops per sample)`` indexes the transform's ``op_names`` (torchvision's names, "Identity", "ShearX", ...), and
``params["magnitudes"]`` float64 of the same shape holds, signed, exactly the magnitude torchvision's
``_AutoAugmentBase._apply_image_or_video_transform`` would be given (0.0 for ops without magnitude). Replaying a
row through torchvision::

    >>> import torch, torchvision.transforms.v2 as v2
    >>> from tensorops.augment import TrivialAugmentWide
    >>> t = TrivialAugmentWide(generator=torch.Generator().manual_seed(0))
    >>> batch = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    >>> params = t.make_params(batch)
    >>> out = t.transform(batch, params)
    >>> ref = v2.TrivialAugmentWide()._apply_image_or_video_transform(
    ...     batch[0], t.op_names[params["ops"][0, 0]], float(params["magnitudes"][0, 0]), "nearest", {})
"""
from __future__ import annotations

import math
import numbers
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from tensorops.augment import functional as _AF

__all__ = [
    "AutoAugmentPolicy", "TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter",
    "RandomGrayscale", "RandomErasing", "MixUp", "CutMix",
]

Params = Dict[str, Any]
_MagFn = Callable[[int, int, int], Optional[torch.Tensor]]


# ----------------------------------------------------------------------------------------------------------------
# shared checks and helpers
# ----------------------------------------------------------------------------------------------------------------

def _check_batch(batch: Any, who: str, *, allow_float: bool = False, any_channels: bool = False) -> None:
    """Raise naming ``batch`` unless it is an (N, C, H, W) tensor of the dtype and channel count ``who`` takes."""
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"{who}: batch must be a torch.Tensor (N, C, H, W), got {type(batch).__name__}")
    if batch.ndim != 4:
        raise ValueError(f"{who}: batch must have 4 dims (N, C, H, W), got shape {tuple(batch.shape)}")
    if batch.dtype != torch.uint8 and not (allow_float and batch.dtype.is_floating_point):
        wanted = "uint8 or floating point" if allow_float else "uint8"
        raise TypeError(f"{who}: batch has dtype {batch.dtype} but {who} needs {wanted} (N, C, H, W) images")
    if not any_channels and batch.shape[1] not in (1, 3):
        raise ValueError(f"{who}: batch has {batch.shape[1]} channels along dim 1, but {who} needs 1 or 3")


def _pick_generator(generator: Optional[torch.Generator],
                    default: Optional[torch.Generator]) -> Optional[torch.Generator]:
    g = generator if generator is not None else default
    if g is not None and (not isinstance(g, torch.Generator) or g.device.type != "cpu"):
        raise TypeError(f"generator must be a CPU torch.Generator (draws happen on the CPU), got {g!r}")
    return g


def _interpolation_name(interpolation: Any) -> str:
    """'nearest' or 'bilinear' from a string or an InterpolationMode-like enum (its ``.value``)."""
    name = getattr(interpolation, "value", interpolation)
    if not isinstance(name, str) or name.lower() not in ("nearest", "bilinear"):
        raise ValueError(f"interpolation must be 'nearest' or 'bilinear' (or InterpolationMode.NEAREST/BILINEAR), "
                         f"got {interpolation!r}")
    return name.lower()


def _check_fill(fill: Any) -> Any:
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    if isinstance(fill, (list, tuple)) and all(isinstance(v, numbers.Number) for v in fill) and len(fill) >= 1:
        return list(fill)
    raise TypeError(f"fill must be None, a number or a sequence of numbers, got {fill!r}")


def _check_rows(params: Params, key: str, n: int, who: str, *, ndim: int, dtype: torch.dtype) -> torch.Tensor:
    if key not in params:
        raise KeyError(f"{who}: params has no {key!r} (make them with {who}.make_params)")
    t = params[key]
    if not isinstance(t, torch.Tensor) or t.ndim != ndim or t.shape[0] != n or t.dtype != dtype:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        dt = t.dtype if isinstance(t, torch.Tensor) else ""
        raise ValueError(f"{who}: params[{key!r}] must be a {dtype} tensor with {ndim} dims and {n} rows (one per "
                         f"sample of the batch), got {shape} {dt}")
    return t


_OPS_INDEX = {name: i for i, name in enumerate(_AF.OPS)}


def _ops_index(name: str) -> int:
    return _OPS_INDEX[name]


def _round(batch: torch.Tensor, ops: torch.Tensor, magnitudes: torch.Tensor, interpolation: str,
           fill: Any) -> torch.Tensor:
    """One ``apply_ops`` round, skipped when every sample drew identity."""
    if ops.numel() == 0 or bool((ops == _OPS_INDEX["identity"]).all()):
        return batch
    return _AF.apply_ops(batch, ops.contiguous(), magnitudes.contiguous(), interpolation=interpolation, fill=fill)


def _map_values(values: torch.Tensor, fn: Callable[[float], float]) -> torch.Tensor:
    """``fn`` (Python float math, as torchvision computes it) over the distinct values: a loop over a handful of
    magnitude bins, never over samples."""
    if values.numel() == 0:
        return values.clone()
    uniq, inverse = torch.unique(values, return_inverse=True)
    mapped = torch.tensor([fn(float(u)) for u in uniq.tolist()], dtype=torch.float64)
    out = mapped[inverse]
    # torch.unique merges -0.0 and 0.0; keep the sign the Python math gives for each
    zero = values == 0
    if bool(zero.any()):
        out[zero & torch.signbit(values)] = fn(-0.0)
        out[zero & ~torch.signbit(values)] = fn(0.0)
    return out


# ----------------------------------------------------------------------------------------------------------------
# auto-augment family
# ----------------------------------------------------------------------------------------------------------------

class AutoAugmentPolicy(Enum):
    """The AutoAugment policies (torchvision's ``AutoAugmentPolicy`` values are accepted too)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _linspace(lo: float, hi: float) -> _MagFn:
    return lambda num_bins, height, width: torch.linspace(lo, hi, num_bins)


def _none() -> _MagFn:
    return lambda num_bins, height, width: None


def _posterize(top: int, steps: int) -> _MagFn:
    return lambda num_bins, height, width: (top - (torch.arange(num_bins) / ((num_bins - 1) / steps))).round().int()


# torchvision 0.29.1's augmentation spaces (transforms/v2/_auto_augment.py):
# name -> (magnitudes(num_bins, H, W), signed)
_AUTOAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (lambda num_bins, height, width: torch.linspace(0.0, 150.0 / 331.0 * width, num_bins), True),
    "TranslateY": (lambda num_bins, height, width: torch.linspace(0.0, 150.0 / 331.0 * height, num_bins), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
    "Posterize": (_posterize(8, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
    "Invert": (_none(), False),
}
_RANDAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "Identity": (_none(), False),
    **{k: v for k, v in _AUTOAUGMENT_SPACE.items() if k != "Invert"},
}
_TRIVIALAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "Identity": (_none(), False),
    "ShearX": (_linspace(0.0, 0.99), True),
    "ShearY": (_linspace(0.0, 0.99), True),
    "TranslateX": (_linspace(0.0, 32.0), True),
    "TranslateY": (_linspace(0.0, 32.0), True),
    "Rotate": (_linspace(0.0, 135.0), True),
    "Brightness": (_linspace(0.0, 0.99), True),
    "Color": (_linspace(0.0, 0.99), True),
    "Contrast": (_linspace(0.0, 0.99), True),
    "Sharpness": (_linspace(0.0, 0.99), True),
    "Posterize": (_posterize(8, 6), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
}
_AUGMIX_PARTIAL_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (lambda num_bins, height, width: torch.linspace(0.0, width / 3.0, num_bins), True),
    "TranslateY": (lambda num_bins, height, width: torch.linspace(0.0, height / 3.0, num_bins), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Posterize": (_posterize(4, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
}
_AUGMIX_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    **_AUGMIX_PARTIAL_SPACE,
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
}

# torchvision name -> (apply_ops op, how _apply_image_or_video_transform turns the magnitude into its argument)
_TV_TO_OPS: Dict[str, Tuple[str, str]] = {
    "Identity": ("identity", "zero"),
    "ShearX": ("shear_x", "atan_degrees"),
    "ShearY": ("shear_y", "atan_degrees"),
    "TranslateX": ("translate_x", "int"),
    "TranslateY": ("translate_y", "int"),
    "Rotate": ("rotate", "same"),
    "Brightness": ("brightness", "one_plus"),
    "Color": ("saturation", "one_plus"),
    "Contrast": ("contrast", "one_plus"),
    "Sharpness": ("sharpness", "one_plus"),
    "Posterize": ("posterize", "int"),
    "Solarize": ("solarize", "times_255"),
    "AutoContrast": ("autocontrast", "zero"),
    "Equalize": ("equalize", "zero"),
    "Invert": ("invert", "zero"),
}


def _tv_round(batch: torch.Tensor, op_names: Sequence[str], ops: torch.Tensor, magnitudes: torch.Tensor,
              interpolation: str, fill: Any) -> torch.Tensor:
    """Apply, to every sample, torchvision op ``op_names[ops[i]]`` with magnitude ``magnitudes[i]`` (one round)."""
    lut = torch.tensor([_ops_index(_TV_TO_OPS[name][0]) for name in op_names], dtype=torch.int64)
    apply_ops = lut[ops]
    args = torch.zeros_like(magnitudes)
    kinds = [_TV_TO_OPS[name][1] for name in op_names]
    for kind in set(kinds):
        if kind == "zero":
            continue
        ids = torch.tensor([i for i, k in enumerate(kinds) if k == kind], dtype=torch.int64)
        sel = torch.isin(ops, ids)
        if not bool(sel.any()):
            continue
        m = magnitudes[sel]
        if kind == "same":
            args[sel] = m
        elif kind == "one_plus":
            args[sel] = 1.0 + m
        elif kind == "int":
            args[sel] = torch.trunc(m)  # Python's int(magnitude)
        elif kind == "times_255":
            args[sel] = 255.0 * m  # v2: _max_value(uint8) * magnitude, in float64
        elif kind == "atan_degrees":
            args[sel] = _map_values(m, lambda v: math.degrees(math.atan(v)))
    return _round(batch, apply_ops, args, interpolation, fill)


def _magnitude_table(space: Dict[str, Tuple[_MagFn, bool]], num_bins: int, height: int, width: int
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """float64 (ops, num_bins) table of ``float(magnitudes[bin])`` as torchvision computes them (0 where an op has
    none), and bool (ops,) signed."""
    table = torch.zeros(len(space), num_bins, dtype=torch.float64)
    signed = torch.zeros(len(space), dtype=torch.bool)
    for k, (fn, sgn) in enumerate(space.values()):
        mags = fn(num_bins, height, width)
        if mags is not None:
            table[k] = mags.to(torch.float64)
            signed[k] = sgn
    return table, signed


def _signed(table: torch.Tensor, signed: torch.Tensor, ops: torch.Tensor, bins: torch.Tensor,
            negate_draw: torch.Tensor) -> torch.Tensor:
    """``magnitude = float(table[op, bin])``, times -1 where the op is signed and ``rand <= 0.5`` (v2's rule)."""
    mag = table[ops, bins]
    return torch.where(signed[ops] & (negate_draw <= 0.5), -mag, mag)


class _Batched(nn.Module):
    """make_params / transform / forward plumbing shared by every transform here."""

    needs_labels = False  # tensorops.data.augmenting's protocol: MixUp and CutMix mix labels (True)

    def __init__(self, generator: Optional[torch.Generator] = None) -> None:
        super().__init__()
        self.generator = _pick_generator(generator, None)

    def _gen(self, generator: Optional[torch.Generator]) -> Optional[torch.Generator]:
        return _pick_generator(generator, self.generator)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # v2's Transform.forward calls make_params(flat_inputs): a list of the inputs it transforms. Every
        # subclass's make_params takes that list as well as the batch, and picks the batch from it as v2's
        # _needs_transform_list picks the image: the first tv_tensors.Image or Video, else the first plain tensor.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("make_params")
        if own is None or getattr(own, "_takes_flat_inputs", False):
            return

        def make_params(self, batch: Any, generator: Optional[torch.Generator] = None) -> Params:
            if isinstance(batch, (list, tuple)):
                import sys

                tv = sys.modules.get("torchvision.tv_tensors")  # loaded wherever a tv_tensor exists
                named = [x for x in batch if tv is not None and isinstance(x, (tv.Image, tv.Video))]
                plain = [x for x in batch if isinstance(x, torch.Tensor) and not (tv and isinstance(x, tv.TVTensor))]
                if not named and not plain:
                    raise TypeError(f"{type(self).__name__}: make_params got a list of inputs (v2's flat_inputs) "
                                    f"without an image batch: {[type(x).__name__ for x in batch]}")
                batch = (named or plain)[0]
            return own(self, batch, generator)

        make_params.__doc__, make_params.__qualname__, make_params._takes_flat_inputs = own.__doc__, own.__qualname__, True
        cls.make_params = make_params

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        raise NotImplementedError

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.transform(batch, self.make_params(batch))


class _AutoAugmentBase(_Batched):
    _SPACE: Dict[str, Tuple[_MagFn, bool]] = {}

    def __init__(self, *, interpolation: Any = "nearest", fill: Any = None,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.interpolation = _interpolation_name(interpolation)
        self.fill = _check_fill(fill)
        self.op_names: Tuple[str, ...] = tuple(self._SPACE)

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        name = type(self).__name__
        _check_batch(batch, name)
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, name, ndim=2, dtype=torch.int64)
        mags = _check_rows(params, "magnitudes", n, name, ndim=2, dtype=torch.float64)
        if ops.shape != mags.shape:
            raise ValueError(f"{name}: params['ops'] {tuple(ops.shape)} and params['magnitudes'] "
                             f"{tuple(mags.shape)} must have the same shape")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"{name}: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        # every sample's ops in order in one call (apply_ops with (N, K))
        out = _tv_round(batch, self.op_names, ops.cpu(), mags.cpu(), self.interpolation, self.fill)
        return out.clone() if out is batch else out

    def extra_repr(self) -> str:
        return f"interpolation={self.interpolation!r}, fill={self.fill!r}"


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment Wide on a uint8 batch, each sample drawing its own op, magnitude bin and sign.

    torchvision 0.29.1's ``v2.TrivialAugmentWide`` (same augmentation space, ``num_magnitude_bins`` bins, op and bin
    uniform, sign +/- with probability 1/2 for signed ops), per sample.

    Args:
        num_magnitude_bins: number of magnitude bins (>= 2), default 31.
        interpolation: "nearest" (default) or "bilinear" (or InterpolationMode.NEAREST / BILINEAR).
        fill: None (zeros), a number or a sequence of C numbers for the area outside geometric ops.
        generator: CPU ``torch.Generator`` for the draws (else torch's global generator).

    Params (``make_params(batch)``): ``ops`` int64 (N, 1) indices into ``op_names``; ``magnitudes`` float64 (N, 1).

    Shapes: batch uint8 (N, C, H, W), C in {1, 3}, CPU or CUDA -> uint8 (N, C, H, W), same memory format.

    Example:
        >>> t = TrivialAugmentWide(generator=torch.Generator().manual_seed(0))
        >>> out = t(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = _TRIVIALAUGMENT_SPACE

    def __init__(self, num_magnitude_bins: int = 31, interpolation: Any = "nearest", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_magnitude_bins, int) or isinstance(num_magnitude_bins, bool) or num_magnitude_bins < 2:
            raise ValueError(f"num_magnitude_bins must be an int >= 2, got {num_magnitude_bins!r}")
        self.num_magnitude_bins = num_magnitude_bins

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TrivialAugmentWide")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        table, signed = _magnitude_table(self._SPACE, self.num_magnitude_bins, h, w)
        ops = torch.randint(len(self.op_names), (n, 1), generator=g)
        bins = torch.randint(self.num_magnitude_bins, (n, 1), generator=g)
        sign = torch.rand((n, 1), generator=g)
        return {"ops": ops, "magnitudes": _signed(table, signed, ops, bins, sign)}


class RandAugment(_AutoAugmentBase):
    """RandAugment on a uint8 batch: each sample draws its own ``num_ops`` ops (uniform, with repetition) and signs.

    torchvision 0.29.1's ``v2.RandAugment``: magnitude bin ``magnitude`` of ``num_magnitude_bins``, signed ops
    negated with probability 1/2, per sample and per op.

    Args:
        num_ops: ops per sample (>= 0), default 2.
        magnitude: the magnitude bin, 0 <= magnitude < num_magnitude_bins, default 9.
        num_magnitude_bins: default 31 (>= 2).
        interpolation, fill, generator: as ``TrivialAugmentWide``.

    Params: ``ops`` int64 (N, num_ops) into ``op_names``; ``magnitudes`` float64 (N, num_ops), applied left to right.

    Example:
        >>> out = RandAugment(2, 9)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = _RANDAUGMENT_SPACE

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: Any = "nearest", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_ops, int) or isinstance(num_ops, bool) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops!r} instead.")
        if not isinstance(num_magnitude_bins, int) or isinstance(num_magnitude_bins, bool) or num_magnitude_bins < 2:
            raise ValueError(f"num_magnitude_bins must be an int >= 2, got {num_magnitude_bins!r}")
        if not isinstance(magnitude, int) or isinstance(magnitude, bool) or not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be an int bin in [0, num_magnitude_bins={num_magnitude_bins}), "
                             f"got {magnitude!r}")
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "RandAugment")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        table, signed = _magnitude_table(self._SPACE, self.num_magnitude_bins, h, w)
        ops = torch.randint(len(self.op_names), (n, self.num_ops), generator=g)
        sign = torch.rand((n, self.num_ops), generator=g)
        bins = torch.full_like(ops, self.magnitude)
        return {"ops": ops, "magnitudes": _signed(table, signed, ops, bins, sign)}


_AUTOAUGMENT_POLICIES: Dict[str, List[Tuple[Tuple[str, float, Optional[int]], Tuple[str, float, Optional[int]]]]] = {
    "imagenet": [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    "cifar10": [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    "svhn": [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


class AutoAugment(_AutoAugmentBase):
    """AutoAugment (ImageNet, CIFAR10 or SVHN policy) on a uint8 batch, each sample drawing its own sub-policy.

    torchvision 0.29.1's ``v2.AutoAugment``: a sub-policy uniform among the policy's 25, then each of its two ops
    applied when ``rand <= probability``, with the sub-policy's magnitude bin (of 10) and a sign +/- with
    probability 1/2 for signed ops; per sample.

    Ops not applied because of their probability are recorded as ``"Identity"`` with magnitude 0.0, so a row
    replays as it was drawn: ``op_names`` is ``("Identity",) + `` torchvision's AutoAugment op names, and
    ``params["applied"]`` (bool (N, 2)) says which of the sub-policy's two ops were applied, ``params["policy"]``
    (int64 (N,)) which sub-policy each sample drew.

    Args:
        policy: ``AutoAugmentPolicy.IMAGENET`` (default), ``CIFAR10`` or ``SVHN`` (torchvision's enum or its
            string values "imagenet", "cifar10", "svhn" also accepted).
        interpolation, fill, generator: as ``TrivialAugmentWide``.

    Params: ``ops`` int64 (N, 2), ``magnitudes`` float64 (N, 2), ``applied`` bool (N, 2), ``policy`` int64 (N,).

    Example:
        >>> out = AutoAugment(AutoAugmentPolicy.CIFAR10)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = {"Identity": (_none(), False), **_AUTOAUGMENT_SPACE}

    def __init__(self, policy: Any = AutoAugmentPolicy.IMAGENET, interpolation: Any = "nearest", fill: Any = None,
                 *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        key = getattr(policy, "value", policy)
        if not isinstance(key, str) or key.lower() not in _AUTOAUGMENT_POLICIES:
            raise ValueError(f"policy must be AutoAugmentPolicy.IMAGENET, CIFAR10 or SVHN, got {policy!r}")
        self.policy = AutoAugmentPolicy(key.lower())
        subs = _AUTOAUGMENT_POLICIES[key.lower()]
        index = {name: i for i, name in enumerate(self.op_names)}
        self._sub_ops = torch.tensor([[index[op[0]] for op in sub] for sub in subs], dtype=torch.int64)
        self._sub_probs = torch.tensor([[op[1] for op in sub] for sub in subs], dtype=torch.float64)
        self._sub_bins = torch.tensor([[op[2] if op[2] is not None else 0 for op in sub] for sub in subs])

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "AutoAugment")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        table, signed = _magnitude_table(self._SPACE, 10, h, w)
        policy = torch.randint(len(self._sub_ops), (n,), generator=g)
        apply_draw = torch.rand((n, 2), generator=g)
        sign = torch.rand((n, 2), generator=g)
        ops = self._sub_ops[policy]
        # v2: `if not torch.rand(()) <= probability`: a float32 tensor against a Python number, compared in float32
        applied = apply_draw <= self._sub_probs[policy].to(torch.float32)
        mags = _signed(table, signed, ops, self._sub_bins[policy], sign)
        ops = torch.where(applied, ops, torch.zeros_like(ops))
        mags = torch.where(applied, mags, torch.zeros_like(mags))
        return {"ops": ops, "magnitudes": mags, "applied": applied, "policy": policy}

    def extra_repr(self) -> str:
        return f"policy={self.policy}, " + super().extra_repr()


class AugMix(_AutoAugmentBase):
    """AugMix on a uint8 batch: every sample draws its own chains, magnitudes, signs and mixing weights.

    torchvision 0.29.1's ``v2.AugMix``: ``mixture_width`` chains of ``chain_depth`` ops (uniform in [1, 3] per chain
    when ``chain_depth <= 0``), ops uniform over the (all_ops or partial) space, magnitude bin uniform in
    [0, severity) of 10 bins, sign +/- 1/2; weights ``m ~ Dirichlet([alpha, alpha])`` and
    ``w ~ Dirichlet([alpha] * mixture_width)``, float32 as v2 draws them (``torch._sample_dirichlet``). The mix is
    v2's float32 arithmetic, in its order: ``mix = m[:, 0] * batch``, then for each chain
    ``mix.add_((w * m[:, 1])[:, i] * chain_i)``, then ``.to(uint8)`` (truncation), so it replays bit for bit.

    Params: ``ops`` int64 (N, mixture_width, depth) into ``op_names`` (``("Identity",)`` + v2's space; chains
    shorter than ``depth`` — 3 when stochastic — are padded with Identity), ``magnitudes`` float64 (same shape),
    ``depths`` int64 (N, mixture_width), ``beta`` float32 (N, 2) (v2's ``m``), ``dirichlet`` float32
    (N, mixture_width) (v2's mixing Dirichlet before it is multiplied by ``m[:, 1]``).

    Args:
        severity: 1..10, default 3. mixture_width: default 3. chain_depth: default -1 (stochastic 1..3).
        alpha: default 1.0. all_ops: default True. interpolation: default "bilinear" (as v2). fill, generator.

    Example:
        >>> out = AugMix(generator=torch.Generator().manual_seed(0))(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        self._SPACE = {"Identity": (_none(), False), **(_AUGMIX_SPACE if all_ops else _AUGMIX_PARTIAL_SPACE)}
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(severity, int) or not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        if not isinstance(mixture_width, int) or isinstance(mixture_width, bool) or mixture_width < 1:
            raise ValueError(f"mixture_width must be an int >= 1, got {mixture_width!r}")
        if not isinstance(chain_depth, int) or isinstance(chain_depth, bool) or chain_depth == 0:
            raise ValueError(f"chain_depth must be a positive int, or negative for a depth drawn in [1, 3], "
                             f"got {chain_depth!r}")
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = float(alpha)
        self.all_ops = all_ops

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "AugMix")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        width = self.mixture_width
        depth = self.chain_depth if self.chain_depth > 0 else 3
        # v2: torch.tensor([alpha, alpha]).expand(N, -1) -> float32 concentrations
        beta = torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]).expand(n, -1).contiguous(),
                                       generator=g)
        dirichlet = torch._sample_dirichlet(torch.tensor([self.alpha] * width).expand(n, -1).contiguous(),
                                            generator=g)
        if self.chain_depth > 0:
            depths = torch.full((n, width), self.chain_depth, dtype=torch.int64)
        else:
            depths = torch.randint(1, 4, (n, width), generator=g)
        table, signed = _magnitude_table(self._SPACE, self._PARAMETER_MAX, h, w)
        ops = torch.randint(1, len(self.op_names), (n, width, depth), generator=g)  # 0 is the Identity padding
        bins = torch.randint(self.severity, (n, width, depth), generator=g)
        sign = torch.rand((n, width, depth), generator=g)
        mags = _signed(table, signed, ops, bins, sign)
        live = torch.arange(depth)[None, None, :] < depths[:, :, None]
        ops = torch.where(live, ops, torch.zeros_like(ops))
        mags = torch.where(live, mags, torch.zeros_like(mags))
        return {"ops": ops, "magnitudes": mags, "depths": depths, "beta": beta, "dirichlet": dirichlet}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "AugMix")
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, "AugMix", ndim=3, dtype=torch.int64)
        mags = _check_rows(params, "magnitudes", n, "AugMix", ndim=3, dtype=torch.float64)
        beta = _check_rows(params, "beta", n, "AugMix", ndim=2, dtype=torch.float32)
        dirichlet = _check_rows(params, "dirichlet", n, "AugMix", ndim=2, dtype=torch.float32)
        if ops.shape != mags.shape or dirichlet.shape[1] != ops.shape[1] or beta.shape[1] != 2:
            raise ValueError(f"AugMix: params shapes disagree: ops {tuple(ops.shape)}, magnitudes "
                             f"{tuple(mags.shape)}, dirichlet {tuple(dirichlet.shape)}, beta {tuple(beta.shape)}")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"AugMix: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        # v2: combined_weights = dirichlet * m[:, 1].reshape([N, -1]) (float32); the mix in one pass
        # (functional.mix: v2's float32 order)
        combined = dirichlet.cpu() * beta.cpu()[:, 1].reshape(n, 1)
        weights = torch.cat([beta.cpu()[:, :1], combined], dim=1)
        ops, mags = ops.cpu(), mags.cpu()
        chains = []
        for i in range(ops.shape[1]):  # each chain's ops in one call
            chains.append(_tv_round(batch, self.op_names, ops[:, i], mags[:, i], self.interpolation, self.fill))
        if not chains:
            return (beta[:, 0].to(batch.device).reshape(n, 1, 1, 1) * batch).to(dtype=batch.dtype)
        return _AF.mix(batch, chains, weights)

    def extra_repr(self) -> str:
        return (f"severity={self.severity}, mixture_width={self.mixture_width}, chain_depth={self.chain_depth}, "
                f"alpha={self.alpha}, all_ops={self.all_ops}, " + super().extra_repr())


# ----------------------------------------------------------------------------------------------------------------
# colour
# ----------------------------------------------------------------------------------------------------------------

def _jitter_range(value: Any, name: str, center: float = 1.0, bound: Tuple[float, float] = (0.0, float("inf")),
                  clip_first_on_zero: bool = True) -> Optional[Tuple[float, float]]:
    """v2.ColorJitter._check_input."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        rng = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            rng[0] = max(rng[0], 0.0)
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        rng = [float(v) for v in value]
    else:
        raise TypeError(f"{name}={value} should be a single number or a sequence with length 2.")
    if not bound[0] <= rng[0] <= rng[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound} and increasing, but got {rng}.")
    return None if rng[0] == rng[1] == center else (float(rng[0]), float(rng[1]))


class ColorJitter(_Batched):
    """ColorJitter on a uint8 batch: per-sample factors and a per-sample random order of the four adjustments.

    torchvision 0.29.1's ``v2.ColorJitter``: the same ranges (``brightness=b`` -> [max(0, 1 - b), 1 + b], hue in
    [-hue, hue] within [-0.5, 0.5], or explicit (min, max)), factors drawn as v2 draws them
    (``torch.empty(1).uniform_(lo, hi)``: float32 values, given to the ops as Python floats), the order a uniform
    permutation of (brightness, contrast, saturation, hue); per sample.

    Params: ``order`` int64 (N, 4), a permutation of 0..3 per row (0 brightness, 1 contrast, 2 saturation, 3 hue,
    applied left to right, as v2's ``fn_idx``); ``factors`` float64 (N, 4) in that column order (brightness,
    contrast, saturation, hue), NaN for an adjustment that is off.

    Example:
        >>> out = ColorJitter(0.4, 0.4, 0.4, 0.1)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _OPS = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness: Any = None, contrast: Any = None, saturation: Any = None, hue: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "ColorJitter")
        g = self._gen(generator)
        n = batch.shape[0]
        order = torch.argsort(torch.rand((n, 4), generator=g), dim=1)
        factors = torch.full((n, 4), float("nan"), dtype=torch.float64)
        for k, rng in enumerate((self.brightness, self.contrast, self.saturation, self.hue)):
            if rng is not None:
                factors[:, k] = torch.empty(n).uniform_(rng[0], rng[1], generator=g).to(torch.float64)
        return {"order": order, "factors": factors}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "ColorJitter")
        n = batch.shape[0]
        order = _check_rows(params, "order", n, "ColorJitter", ndim=2, dtype=torch.int64).cpu()
        factors = _check_rows(params, "factors", n, "ColorJitter", ndim=2, dtype=torch.float64).cpu()
        if order.shape[1] != 4 or factors.shape[1] != 4:
            raise ValueError(f"ColorJitter: params['order'] and params['factors'] must be (N, 4), got "
                             f"{tuple(order.shape)} and {tuple(factors.shape)}")
        lut = torch.tensor([_ops_index(op) for op in self._OPS], dtype=torch.int64)
        # the four adjustments in each sample's order, in one call (apply_ops with (N, 4))
        f = factors.gather(1, order)
        off = torch.isnan(f)
        ops = torch.where(off, torch.full_like(order, _OPS_INDEX["identity"]), lut[order])
        out = _round(batch, ops, torch.where(off, torch.zeros_like(f), f), "nearest", None)
        return out.clone() if out is batch else out

    def extra_repr(self) -> str:
        return f"brightness={self.brightness}, contrast={self.contrast}, saturation={self.saturation}, hue={self.hue}"


class RandomGrayscale(_Batched):
    """Grayscale with probability ``p`` per sample, keeping C channels (v2.RandomGrayscale: applied when
    ``rand < p``; 1-channel samples are unchanged).

    Params: ``apply`` bool (N,).

    Example:
        >>> out = RandomGrayscale(0.2)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    def __init__(self, p: float = 0.1, *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        self.p = float(p)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "RandomGrayscale")
        return {"apply": torch.rand(batch.shape[0], generator=self._gen(generator)) < self.p}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "RandomGrayscale")
        apply = _check_rows(params, "apply", batch.shape[0], "RandomGrayscale", ndim=1, dtype=torch.bool).cpu()
        ops = torch.where(apply, _OPS_INDEX["grayscale"], _OPS_INDEX["identity"]).to(torch.int64)
        out = _round(batch, ops, torch.zeros(batch.shape[0], dtype=torch.float64), "nearest", None)
        return out.clone() if out is batch else out

    def extra_repr(self) -> str:
        return f"p={self.p}"


# ----------------------------------------------------------------------------------------------------------------
# regions: RandomErasing, CutMix; and MixUp
# ----------------------------------------------------------------------------------------------------------------

class RandomErasing(_Batched):
    """Random erasing per sample, with torchvision v2's box draw.

    Each sample is erased with probability ``p`` (v2: when ``rand < p``); its box comes from v2's ``get_params``:
    up to 10 attempts of ``area * U(scale)`` and ``exp(U(log ratio))`` (float32 draws, as v2), ``h, w =
    round(sqrt(area * r)), round(sqrt(area / r))``, the first attempt with ``h < H and w < W`` wins, its corner
    uniform; no valid attempt means no erasing (v2 returns the image). All attempts of all samples are drawn at
    once (N, 10) and the first valid one taken.

    Values (``mode``):
        * "const" (default): ``value``, a number or a sequence of C numbers (v2's ``value``).
        * "pixel": per-pixel noise — ``value="random"`` means the same. On uint8 batches: uniform uint8 in
          [0, 255]. On float batches: standard normal, which is what v2's ``value="random"`` and timm's
          ``mode="pixel"`` draw (both are meant for normalized float tensors: v2's normal noise written into a
          uint8 image is truncated to mostly 0, so on uint8 we draw uniform bytes instead).
        * "rand": one noise value per channel per sample (timm's ``mode="rand"``): uniform uint8 on uint8
          batches, standard normal on float batches.

    Params: ``boxes`` int64 (N, 4) = (i, j, h, w) (h = w = 0: untouched); ``value``: float64 (N, C) for "const"
    and "rand"; for "pixel" a 1-D tensor of the batch's dtype holding the noise of the erased boxes one after
    another in sample order, each box's (C, h, w) values row-major (``transform`` also takes a batch-shaped
    value, whose pixels inside each box are written).

    ``inplace=True`` (torchvision's argument) writes the boxes into the given batch and returns it: only the
    erased pixels are written, no copy of the batch is made (for a batch nothing else holds, e.g. a collate's
    fresh output).

    Shapes: batch uint8 (N, C, H, W), C in {1, 3} (through ``tensorops.augment.erase``), or a floating batch of
    any C (torch ops).

    Example:
        >>> out = RandomErasing(0.25, mode="pixel")(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value: Union[float, Sequence[float], str] = 0.0, mode: str = "const", inplace: bool = False, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        for name, rng in (("scale", scale), ("ratio", ratio)):
            if not isinstance(rng, (list, tuple)) or len(rng) != 2:
                raise TypeError(f"{name} must be a sequence (min, max), got {rng!r}")
            if rng[0] > rng[1]:
                raise ValueError(f"{name} should be of kind (min, max), got {rng!r}")
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError(f"scale should be between 0 and 1, got {scale!r}")
        if ratio[0] <= 0:
            raise ValueError(f"ratio must be positive, got {ratio!r}")
        if mode not in ("const", "rand", "pixel"):
            raise ValueError(f"mode must be 'const', 'rand' or 'pixel', got {mode!r}")
        if isinstance(value, str):
            if value != "random":
                raise ValueError(f"If value is str, it should be 'random', got {value!r}")
            mode = "pixel"
            values: Optional[List[float]] = None
        elif isinstance(value, numbers.Real):
            values = [float(value)]
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, numbers.Real) for v in value):
            values = [float(v) for v in value]
        else:
            raise TypeError(f"value must be a number, a sequence of numbers or 'random', got {value!r}")
        self.p = float(p)
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.value = values
        self.mode = mode
        self.inplace = bool(inplace)
        self._log_ratio = torch.log(torch.tensor(self.ratio))  # float32, as v2

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "RandomErasing", allow_float=True,
                     any_channels=isinstance(batch, torch.Tensor) and batch.dtype != torch.uint8)
        g = self._gen(generator)
        n, c, height, width = batch.shape
        if self.mode == "const" and len(self.value) not in (1, c):
            raise ValueError(f"value has {len(self.value)} numbers but batch has {c} channels along dim 1 "
                             f"(give 1 or {c})")
        apply = torch.rand(n, generator=g) < self.p
        area = height * width
        scale = torch.empty((n, 10)).uniform_(self.scale[0], self.scale[1], generator=g)
        log_r = torch.empty((n, 10)).uniform_(float(self._log_ratio[0]), float(self._log_ratio[1]), generator=g)
        erase_area = area * scale.to(torch.float64)
        aspect = torch.exp(log_r).to(torch.float64)
        h = torch.round(torch.sqrt(erase_area * aspect))  # Python round(): half to even, as torch.round
        w = torch.round(torch.sqrt(erase_area / aspect))
        valid = (h < height) & (w < width)
        first = torch.argmax(valid.to(torch.int8), dim=1, keepdim=True)
        found = valid.any(dim=1) & apply
        h = h.gather(1, first)[:, 0].to(torch.int64)
        w = w.gather(1, first)[:, 0].to(torch.int64)
        u = torch.rand((n, 2), generator=g, dtype=torch.float64)
        i = torch.floor(u[:, 0] * (height - h + 1)).to(torch.int64).clamp_(max=height - h)
        j = torch.floor(u[:, 1] * (width - w + 1)).to(torch.int64).clamp_(max=width - w)
        boxes = torch.stack([i, j, h, w], dim=1)
        boxes[~found] = 0
        u8 = batch.dtype == torch.uint8
        if self.mode == "const":
            value: torch.Tensor = torch.tensor(self.value, dtype=torch.float64).expand(n, c).clone()
        elif self.mode == "rand":
            value = (torch.randint(0, 256, (n, c), generator=g) if u8 else torch.randn((n, c), generator=g))
            value = value.to(torch.float64)
        else:
            # noise for the erased pixels only, in one draw: the boxes' (C, h, w) one after another (a batch-shaped
            # value cost 0.5 ms/image on floats: a whole batch allocated, written and read)
            count = c * int((boxes[:, 2] * boxes[:, 3]).sum())
            value = (torch.randint(0, 256, (count,), generator=g, dtype=torch.uint8) if u8
                     else torch.randn((count,), generator=g).to(batch.dtype))
        return {"boxes": boxes, "value": value}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "RandomErasing", allow_float=True,
                     any_channels=isinstance(batch, torch.Tensor) and batch.dtype != torch.uint8)
        n = batch.shape[0]
        boxes = _check_rows(params, "boxes", n, "RandomErasing", ndim=2, dtype=torch.int64)
        value = params.get("value")
        c = batch.shape[1]
        if not isinstance(value, torch.Tensor) or value.ndim not in (1, 2, 4) or (value.ndim > 1
                                                                                and value.shape[0] != n):
            raise ValueError("RandomErasing: params['value'] must be (N, C), the boxes' noise (1-D) or shaped like "
                             "the batch")
        if value.ndim == 4 and value.shape != batch.shape:
            raise ValueError(f"RandomErasing: params['value'] {tuple(value.shape)} must be shaped like the batch "
                             f"{tuple(batch.shape)}")
        if value.ndim == 1:
            count = c * int((boxes[:, 2] * boxes[:, 3]).sum())
            if value.numel() != count:
                raise ValueError(f"RandomErasing: params['value'] holds {value.numel()} noise values, the boxes "
                                 f"need C * sum(h * w) = {count}")
        return _paste(batch, boxes, value, self.inplace)

    def extra_repr(self) -> str:
        return (f"p={self.p}, scale={self.scale}, ratio={self.ratio}, value={self.value}, mode={self.mode!r}, "
                f"inplace={self.inplace}")


def _fresh_copy(batch: torch.Tensor) -> torch.Tensor:
    """A copy of ``batch`` in its own layout (channels_last stays channels_last)."""
    if batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        return batch.clone(memory_format=torch.channels_last)
    return batch.clone(memory_format=torch.contiguous_format) if batch.is_contiguous() else batch.clone()


def _paste(batch: torch.Tensor, boxes: torch.Tensor, value: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """Write ``value`` into each sample's box (i, j, h, w): (N, C) per-channel values, batch-shaped values, or the
    boxes' values one after another (1-D, each box's (C, h, w) row-major). ``inplace``: into ``batch``; otherwise
    into a copy. uint8 with (N, C) values: ``tensorops.augment.erase`` (one call); otherwise box by box, over the
    erased samples only (no pass over the rest of the batch)."""
    if batch.dtype == torch.uint8 and value.ndim == 2 and not inplace:
        return _AF.erase(batch, boxes.cpu(), value)
    out = batch if inplace else _fresh_copy(batch)
    rows = boxes.cpu()
    erased = (rows[:, 2] > 0) & (rows[:, 3] > 0)
    if not bool(erased.any()):
        return out
    c = batch.shape[1]
    if value.ndim in (1, 2):
        value = value.to(device=batch.device, dtype=batch.dtype)
    start = 0
    for k, (i, j, h, w) in zip(erased.nonzero()[:, 0].tolist(), rows[erased].tolist()):
        box = out[k, :, i:i + h, j:j + w]
        if value.ndim == 2:
            box.copy_(value[k][:, None, None].expand(c, h, w))
        elif value.ndim == 1:
            box.copy_(value[start:start + c * h * w].view(c, h, w))
            start += c * h * w
        else:
            box.copy_(value[k, :, i:i + h, j:j + w])
    return out


def _check_alpha(alpha: Any) -> float:
    if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool) or not alpha > 0:
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    return float(alpha)


def _cycles(partner: List[int]) -> Optional[List[List[int]]]:
    """The cycles of the permutation ``partner`` (sample i takes from sample partner[i]), each in the order
    i, partner[i], partner[partner[i]], ...; None when ``partner`` is not a permutation."""
    n = len(partner)
    if sorted(partner) != list(range(n)):
        return None
    seen = [False] * n
    out = []
    for s in range(n):
        if seen[s]:
            continue
        cycle, i = [], s
        while not seen[i]:
            seen[i] = True
            cycle.append(i)
            i = partner[i]
        out.append(cycle)
    return out


def _from_partners_inplace(batch: torch.Tensor, cycles: List[List[int]],
                           step: Callable[[int, torch.Tensor, torch.Tensor], None]) -> None:
    """Runs ``step(i, sample_i, partner_sample_as_it_was)`` for every sample, writing sample i in place, along the
    ``cycles`` of the pairing (:func:`_cycles`) so that each sample is read before it is written: one sample per
    cycle is copied (the first, which the cycle's last sample reads)."""
    for cycle in cycles:
        first = batch[cycle[0]].clone() if len(cycle) > 1 else None
        for k, i in enumerate(cycle):
            # partner[i] is the next in the cycle, as it was; the last one's is the first, saved
            src = batch[cycle[k + 1]] if k + 1 < len(cycle) else (first if first is not None else batch[i])
            step(i, batch[i], src)


class _MixBase(_Batched):
    needs_labels = True

    def __init__(self, alpha: float = 1.0, num_classes: Optional[int] = None, per_sample: bool = False, *,
                 inplace: bool = False, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.inplace = bool(inplace)
        self.alpha = _check_alpha(alpha)
        if num_classes is not None and (not isinstance(num_classes, int) or isinstance(num_classes, bool)
                                        or num_classes < 1):
            raise ValueError(f"num_classes must be a positive int or None, got {num_classes!r}")
        self.num_classes = num_classes
        self.per_sample = bool(per_sample)

    def _lam_and_partner(self, n: int, g: Optional[torch.Generator]) -> Tuple[torch.Tensor, torch.Tensor]:
        # v2: Beta(alpha, alpha) on float32 concentrations = first coordinate of Dirichlet([alpha, alpha])
        rows = n if self.per_sample else 1
        lam = torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]).expand(rows, -1).contiguous(),
                                      generator=g)[:, 0].to(torch.float64)
        if not self.per_sample:
            lam = lam.expand(n).clone()
            partner = (torch.arange(n) - 1) % max(n, 1)  # batch.roll(1, 0): sample i takes sample i - 1
        else:
            partner = torch.arange(n - 1, -1, -1)  # timm's elem mode: sample i mixes with sample N - 1 - i
        return lam, partner

    def _labels(self, labels: Any, n: int) -> torch.Tensor:
        name = type(self).__name__
        if not isinstance(labels, torch.Tensor):
            raise TypeError(f"{name}: labels must be a tensor, got {type(labels).__name__}")
        if labels.ndim not in (1, 2) or labels.shape[0] != n:
            raise ValueError(f"{name}: labels must be (N,) class indices or (N, num_classes) probabilities with "
                             f"N = {n} (the batch's), got shape {tuple(labels.shape)}")
        if labels.ndim == 1:
            if self.num_classes is None:
                raise ValueError(f"{name}: num_classes must be given for index labels (1-D)")
            if labels.dtype.is_floating_point:
                raise TypeError(f"{name}: 1-D labels must be integer class indices, got {labels.dtype}")
            labels = torch.nn.functional.one_hot(labels.long(), num_classes=self.num_classes)
        elif self.num_classes is not None and labels.shape[1] != self.num_classes:
            raise ValueError(f"{name}: labels have {labels.shape[1]} classes along dim 1 but num_classes is "
                             f"{self.num_classes}")
        return labels if labels.dtype.is_floating_point else labels.float()

    @staticmethod
    def _mix(a: torch.Tensor, b: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
        """v2's ``b.mul_(1 - lam).add_(a.mul(lam))`` with one lam per row, in the dtype's opmath (the scalar lam of
        v2 is cast to it: float32 for float32/16/bf16, float64 for float64)."""
        opmath = torch.float64 if a.dtype == torch.float64 else torch.float32
        shape = (-1,) + (1,) * (a.ndim - 1)
        keep = lam.to(opmath).reshape(shape).to(a.device)
        other = (1.0 - lam).to(opmath).reshape(shape).to(a.device)
        if a.dtype == opmath:
            return b.mul(other).add_(a.mul(keep))
        return (b.to(opmath).mul(other).to(a.dtype).to(opmath) + a.to(opmath).mul(keep).to(a.dtype).to(opmath)
                ).to(a.dtype)

    def forward(self, batch: torch.Tensor,  # type: ignore[override]
                labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        params = self.make_params(batch)
        return self.transform(batch, params), self.transform_labels(labels, params)

    def transform_labels(self, labels: torch.Tensor, params: Params) -> torch.Tensor:
        """Soft labels (N, num_classes): ``lam * y + (1 - lam) * y[partner]`` (v2's ``_mixup_label``, per row)."""
        n = params["lam"].shape[0]
        y = self._labels(labels, n)
        return self._mix(y, y[params["partner"].to(y.device)], params["lam"])

    def extra_repr(self) -> str:
        return (f"alpha={self.alpha}, num_classes={self.num_classes}, per_sample={self.per_sample}, "
                f"inplace={self.inplace}")


class MixUp(_MixBase):
    """MixUp on a batch with labels: ``forward(batch, labels) -> (mixed batch, soft labels)``.

    ``per_sample=False`` (default) is v2.MixUp: one ``lam ~ Beta(alpha, alpha)`` for the batch, sample i mixed with
    sample i - 1 (``batch.roll(1, 0)``): ``out = rolled * (1 - lam) + batch * lam`` in v2's float order.
    ``per_sample=True`` is timm's ``mode="elem"``: each sample draws its own lam and is mixed with sample N - 1 - i.

    Float batches follow v2 exactly (float32 arithmetic, as v2 on the same batch). uint8 batches (v2 refuses them)
    are mixed in float32 the same way, then rounded half to even and clamped to [0, 255] (as timm's uint8
    ``FastCollateMixup`` rounds with ``np.rint``).

    Labels: (N,) class indices (needs ``num_classes``) or (N, num_classes) probabilities; soft labels float32
    (the labels' dtype when already floating) ``lam * y + (1 - lam) * y[partner]``.

    Params: ``lam`` float64 (N,) (the same value in every row per batch), ``partner`` int64 (N,).

    float32 batches are mixed sample by sample along the pairing (one sample copied per cycle of ``partner``), into
    one copy of the batch, or with ``inplace=True`` (keyword) into the given batch, which is returned: no
    batch-sized temporaries, the same values (in place: for a batch nothing else holds, e.g. a collate's fresh
    output).

    Example:
        >>> mix = MixUp(alpha=0.2, num_classes=10)
        >>> images, soft = mix(torch.rand(8, 3, 32, 32), torch.randint(0, 10, (8,)))
    """

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "MixUp", allow_float=True, any_channels=True)
        lam, partner = self._lam_and_partner(batch.shape[0], self._gen(generator))
        return {"lam": lam, "partner": partner}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "MixUp", allow_float=True, any_channels=True)
        n = batch.shape[0]
        lam = _check_rows(params, "lam", n, "MixUp", ndim=1, dtype=torch.float64)
        partner = _check_rows(params, "partner", n, "MixUp", ndim=1, dtype=torch.int64)
        cycles = _cycles(partner.tolist()) if batch.dtype == torch.float32 else None
        if cycles is not None:
            keep, other = lam.to(torch.float32).tolist(), (1.0 - lam).to(torch.float32).tolist()

            def step(i: int, x: torch.Tensor, src: torch.Tensor) -> None:
                # v2's float32 order: rolled * (1 - lam) + batch * lam, each product rounded, then the sum (the
                # partner's product first: src is x itself when a sample is its own partner)
                theirs = src.mul(other[i])
                x.mul_(keep[i]).add_(theirs)

            # sample by sample along the pairing, in place or in one copy: no batch-sized temporaries (three of
            # them, page-faulted afresh each call, cost 6x v2's own MixUp at 224 x 224)
            out = batch if self.inplace else _fresh_copy(batch)
            _from_partners_inplace(out, cycles, step)
            return out
        partner = partner.to(batch.device)
        if batch.dtype == torch.uint8:
            x = batch.to(torch.float32)
            out = self._mix(x, x[partner], lam).round_().clamp_(0, 255).to(torch.uint8)
        else:
            out = self._mix(batch, batch[partner], lam)
        return batch.copy_(out) if self.inplace else out


class CutMix(_MixBase):
    """CutMix on a batch with labels: ``forward(batch, labels) -> (batch with pasted boxes, soft labels)``.

    v2.CutMix's box draw and lambda correction: ``lam ~ Beta(alpha, alpha)``, centre uniform, half-sizes
    ``int(0.5 * sqrt(1 - lam) * W)`` and ``... * H``, clipped to the image, ``lam = 1 - box area / (H * W)``.
    ``per_sample=False`` (default) is v2: one draw for the batch, the box filled from ``batch.roll(1, 0)``.
    ``per_sample=True`` follows timm's ``mode="elem"``: each sample draws its own lam and box (with v2's box rule)
    and takes the box from sample N - 1 - i. uint8 batches go through ``tensorops.augment.erase``; float batches
    through torch ops.

    Params: ``boxes`` int64 (N, 4) = (i, j, h, w) (i.e. (y1, x1, y2 - y1, x2 - x1)), ``lam`` float64 (N,) (the
    corrected lambda), ``partner`` int64 (N,); for inspection, ``lam_drawn`` float64 (N,) (the Beta draw) and
    ``center`` int64 (N, 2) (v2's ``r_y, r_x``).

    Only the boxes are written (the partners' boxes gathered first): ``inplace=True`` (keyword) into the given
    batch, otherwise into a copy.

    Example:
        >>> cut = CutMix(alpha=1.0, num_classes=10)
        >>> images, soft = cut(torch.zeros(8, 3, 32, 32, dtype=torch.uint8), torch.randint(0, 10, (8,)))
    """

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "CutMix", allow_float=True, any_channels=True)
        g = self._gen(generator)
        n, _, height, width = batch.shape
        lam, partner = self._lam_and_partner(n, g)
        rows = n if self.per_sample else 1
        r_x = torch.randint(width, (rows,), generator=g)
        r_y = torch.randint(height, (rows,), generator=g)
        if not self.per_sample:
            r_x, r_y = r_x.expand(n), r_y.expand(n)
        r = 0.5 * torch.sqrt(1.0 - lam)
        r_w_half = torch.trunc(r * width).to(torch.int64)
        r_h_half = torch.trunc(r * height).to(torch.int64)
        x1 = torch.clamp(r_x - r_w_half, min=0)
        y1 = torch.clamp(r_y - r_h_half, min=0)
        x2 = torch.clamp(r_x + r_w_half, max=width)
        y2 = torch.clamp(r_y + r_h_half, max=height)
        lam_adjusted = 1.0 - ((x2 - x1) * (y2 - y1)).to(torch.float64) / float(width * height)
        boxes = torch.stack([y1, x1, y2 - y1, x2 - x1], dim=1)
        return {"boxes": boxes, "lam": lam_adjusted, "partner": partner, "lam_drawn": lam,
                "center": torch.stack([r_y, r_x], dim=1)}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "CutMix", allow_float=True,
                     any_channels=isinstance(batch, torch.Tensor) and batch.dtype != torch.uint8)
        n = batch.shape[0]
        boxes = _check_rows(params, "boxes", n, "CutMix", ndim=2, dtype=torch.int64)
        partner = _check_rows(params, "partner", n, "CutMix", ndim=1, dtype=torch.int64).cpu()
        out = batch if self.inplace else _fresh_copy(batch)
        rows = boxes.cpu()
        if n == 0 or not bool(((rows[:, 2] > 0) & (rows[:, 3] > 0)).any()):
            return out
        boxes_list = rows.tolist()

        def step(k: int, x: torch.Tensor, src: torch.Tensor) -> None:
            i, j, h, w = boxes_list[k]
            x[:, i:i + h, j:j + w].copy_(src[:, i:i + h, j:j + w])

        cycles = _cycles(partner.tolist())
        if cycles is not None:  # box by box along the pairing's cycles (a gather of every box was 3-5x slower)
            _from_partners_inplace(out, cycles, step)
            return out
        # a pairing that is not a permutation (params made by hand): every partner's box first, then the writes
        patches = [batch[p, :, i:i + h, j:j + w].clone() for p, (i, j, h, w) in zip(partner.tolist(), boxes_list)]
        for k, ((i, j, h, w), patch) in enumerate(zip(boxes_list, patches)):
            out[k, :, i:i + h, j:j + w].copy_(patch)
        return out


class RandomChoice(_Batched):
    """One of ``transforms`` per batch, chosen with probabilities ``p`` (equal by default): v2.RandomChoice with
    the draw in ``make_params``, so that it draws from the caller's generator (the collates' and
    NormalizingLoader's ``after_normalize=``), and labels passed through to the transform that mixes them.

    ``forward(batch)`` or ``forward(batch, labels)`` (then ``(batch, labels)``: soft labels where the chosen
    transform mixes, e.g. ``RandomChoice([MixUp(...), CutMix(...)])`` as torchvision's reference recipe).

    Params: ``choice`` int64 () (the index into ``transforms``) and ``params`` (the chosen transform's).

    Example:
        >>> mix = RandomChoice([MixUp(0.2, num_classes=10), CutMix(1.0, num_classes=10)])
        >>> images, soft = mix(torch.rand(8, 3, 32, 32), torch.randint(0, 10, (8,)))
    """

    def __init__(self, transforms: Sequence[Any], p: Optional[Sequence[float]] = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        if not isinstance(transforms, (list, tuple)) or not transforms:
            raise TypeError(f"transforms must be a non-empty sequence of transforms, got {transforms!r}")
        for k, t in enumerate(transforms):
            if not (callable(getattr(t, "make_params", None)) and callable(getattr(t, "transform", None))):
                raise TypeError(f"transforms[{k}] must have make_params and transform (a tensorops.augment "
                                f"transform), got {type(t).__name__}")
        if p is None:
            p = [1.0] * len(transforms)
        if len(p) != len(transforms) or any(not isinstance(v, numbers.Real) or v < 0 for v in p) or sum(p) <= 0:
            raise ValueError(f"p must hold {len(transforms)} non-negative numbers, not all 0, got {p!r}")
        self.transforms = nn.ModuleList([t for t in transforms]) if all(isinstance(t, nn.Module) for t in transforms) \
            else list(transforms)
        total = float(sum(p))
        self.p = [float(v) / total for v in p]
        from tensorops.data.augmenting import needs_labels  # the batch path's rule (attribute, else signature)

        self.needs_labels = any(needs_labels(t) for t in transforms)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        g = self._gen(generator)
        choice = torch.multinomial(torch.tensor(self.p, dtype=torch.float64), 1, generator=g)[0]
        return {"choice": choice, "params": self.transforms[int(choice)].make_params(batch, generator=g)}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        return self.transforms[self._choice(params)].transform(batch, params["params"])

    def transform_labels(self, labels: Any, params: Params) -> Any:
        t = self.transforms[self._choice(params)]
        fn = getattr(t, "transform_labels", None)
        return fn(labels, params["params"]) if callable(fn) else labels

    def _choice(self, params: Params) -> int:
        choice = params.get("choice")
        if not isinstance(choice, (int, torch.Tensor)) or not 0 <= int(choice) < len(self.transforms):
            raise ValueError(f"RandomChoice: params['choice'] must index transforms (0..{len(self.transforms) - 1}), "
                             f"got {choice!r}")
        return int(choice)

    def forward(self, batch: torch.Tensor, labels: Any = None) -> Any:  # type: ignore[override]
        params = self.make_params(batch)
        out = self.transform(batch, params)
        return out if labels is None else (out, self.transform_labels(labels, params))

    def extra_repr(self) -> str:
        return f"p={self.p}"

"""timm's auto-augment policy strings as batched policies with per-sample draws.

``from_timm_string("rand-m9-mstd0.5-inc1")`` builds the policy timm's ``create_transform(auto_augment=...)`` builds
(timm's ``timm/data/auto_augment.py``): the same op set, op choice, per-op probability, magnitude schedule
(level ``m`` of 10, magnitude noise ``mstd``: normal noise, uniform in [0, m] when ``mstd`` is inf or > 100,
clipped to [0, ``mmax`` or 10]), random negation and "increasing" op variants, and for AugMix timm's mixing
(``mixed = sum w_i * chain_i`` in float32, clipped, truncated to uint8, then Pillow's
``Image.blend(image, mixed, m)``); every sample draws its own.

**The ops themselves are torchvision's**, run by ``tensorops.augment.functional.apply_ops``, not timm's Pillow
ops: timm's op set and magnitude schedule, torchvision's pixel arithmetic. Measured on 8 photo-like 224x224
images at timm's level 9, Pillow (as timm calls it, bilinear, fill (124, 116, 104)) against the torchvision op
with the argument used here: Equalize, Invert, Posterize, Solarize, Brightness equal; Sharpness equal but for
single pixels (max 1); AutoContrast 2.9% of pixels 1 step off; Color 50% and Contrast 63% of pixels 1 step off
(mean |diff| 0.3); Rotate(27) and ShearX(0.27) 74% of pixels differ, mean |diff| 0.5-0.6, up to 130 steps along
the image's edges (sub-pixel geometry and fill blending); TranslateXRel(0.405) 60%, mean 2.4 (90.72 px rounded
to 90: whole-pixel offsets are equal). In detail:

* Brightness / Color / Contrast / Sharpness: torchvision's ``adjust_*`` (blend in float, rounded) against Pillow's
  ``ImageEnhance`` (blend in 8-bit fixed point); Contrast's mean is torchvision's (grayscale mean of the float
  image) where Pillow uses the integer mean of its "L" histogram. Values differ by a step or so.
* AutoContrast: torchvision's float rescale of each channel's [min, max], Pillow's per-channel lookup table.
* Rotate / ShearX / ShearY / TranslateX / TranslateY: torchvision's ``affine`` (pixel-centre conventions,
  nearest or bilinear; timm picks bilinear or bicubic at random per op: we use ``interpolation``, "bilinear" by
  default). Translations are rounded toward zero to whole pixels (torchvision's auto-augment ops do ``int()``;
  Pillow resamples sub-pixel offsets). Pillow's affine data maps output to input, so timm's shear factor ``f`` is
  torchvision's shear ``degrees(atan(f))`` (same direction) and timm's offset ``p`` is torchvision's translate
  ``-p``.
* Posterize, Solarize, Invert, Equalize: the same per-pixel lookup in both (Solarize's threshold 256, timm's
  "off", is Identity here because torchvision refuses thresholds above 255).
* SolarizeAdd (timm only, no torchvision twin): ``x < 128 ? min(255, x + add) : x``, ``apply_ops``'
  "solarize_add" (a table op of the kernels, like solarize).

timm's fill for geometric ops is ``hparams["img_mean"]``, the dataset mean in uint8 ((124, 116, 104) for
ImageNet's mean, which ``create_transform`` passes); 1-channel batches use 128 (timm's default grey).

Params (``make_params``): ``ops`` int64 (N, k) into the policy's ``op_names`` (timm's names, with ``"Identity"``
at 0 for ops skipped by their probability), ``magnitudes`` float64 (N, k): signed, the argument timm's op function
is given (factor, degrees, shear factor, translate fraction or pixels, bits, threshold, addend; 0.0 for ops
without one), ``levels`` float64 (N, k): the magnitude level after noise and clipping. AugMix adds ``depths``
int64 (N, width), ``weights`` float32 (N, width) and ``m`` float32 (N,).

Example:
    >>> import torch
    >>> from tensorops.augment.timm import from_timm_string
    >>> policy = from_timm_string("rand-m9-mstd0.5-inc1", generator=torch.Generator().manual_seed(0))
    >>> out = policy(torch.zeros(8, 3, 224, 224, dtype=torch.uint8))
"""
from __future__ import annotations

import math
import numbers
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from tensorops.augment import functional as _AF
from tensorops.augment._batched import (
    Params, _Batched, _check_batch, _check_fill, _check_rows, _interpolation_name, _map_values, _round,
)

__all__ = ["from_timm_string", "TimmRandAugment", "TimmAutoAugment", "TimmAugMix"]

_LEVEL_DENOM = 10.0
_IMAGENET_MEAN_U8 = (124, 116, 104)  # tuple(min(255, round(255 * x)) for x in (0.485, 0.456, 0.406))

# timm name -> (apply_ops op, level kind)
_TIMM_OPS: Dict[str, Tuple[str, str]] = {
    "Identity": ("identity", "none"),
    "AutoContrast": ("autocontrast", "none"),
    "Equalize": ("equalize", "none"),
    "Invert": ("invert", "none"),
    "Rotate": ("rotate", "rotate"),
    "Posterize": ("posterize", "posterize"),
    "PosterizeIncreasing": ("posterize", "posterize_increasing"),
    "PosterizeOriginal": ("posterize", "posterize_original"),
    "Solarize": ("solarize", "solarize"),
    "SolarizeIncreasing": ("solarize", "solarize_increasing"),
    "SolarizeAdd": ("solarize_add", "solarize_add"),
    "Color": ("saturation", "enhance"),
    "ColorIncreasing": ("saturation", "enhance_increasing"),
    "Contrast": ("contrast", "enhance"),
    "ContrastIncreasing": ("contrast", "enhance_increasing"),
    "Brightness": ("brightness", "enhance"),
    "BrightnessIncreasing": ("brightness", "enhance_increasing"),
    "Sharpness": ("sharpness", "enhance"),
    "SharpnessIncreasing": ("sharpness", "enhance_increasing"),
    "ShearX": ("shear_x", "shear"),
    "ShearY": ("shear_y", "shear"),
    "TranslateX": ("translate_x", "translate_abs"),
    "TranslateY": ("translate_y", "translate_abs"),
    "TranslateXRel": ("translate_x", "translate_rel"),
    "TranslateYRel": ("translate_y", "translate_rel"),
}

_RAND_TRANSFORMS = ["AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd", "Color",
                    "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"]
_RAND_INCREASING_TRANSFORMS = ["AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
                               "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing",
                               "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel",
                               "TranslateYRel"]
_RAND_CHOICE_WEIGHTS_0 = {"Rotate": 0.3, "ShearX": 0.2, "ShearY": 0.2, "TranslateXRel": 0.1, "TranslateYRel": 0.1,
                          "Color": 0.025, "Sharpness": 0.025, "AutoContrast": 0.025, "Solarize": 0.005,
                          "SolarizeAdd": 0.005, "Contrast": 0.005, "Brightness": 0.005, "Equalize": 0.005,
                          "Posterize": 0.0, "Invert": 0.0}
_AUGMIX_TRANSFORMS = ["AutoContrast", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
                      "SharpnessIncreasing", "Equalize", "Rotate", "PosterizeIncreasing", "SolarizeIncreasing",
                      "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"]

_Sub = List[Tuple[str, float, int]]
_AA_POLICIES: Dict[str, List[_Sub]] = {
    "v0": [
        [("Equalize", 0.8, 1), ("ShearY", 0.8, 4)], [("Color", 0.4, 9), ("Equalize", 0.6, 3)],
        [("Color", 0.4, 1), ("Rotate", 0.6, 8)], [("Solarize", 0.8, 3), ("Equalize", 0.4, 7)],
        [("Solarize", 0.4, 2), ("Solarize", 0.6, 2)], [("Color", 0.2, 0), ("Equalize", 0.8, 8)],
        [("Equalize", 0.4, 8), ("SolarizeAdd", 0.8, 3)], [("ShearX", 0.2, 9), ("Rotate", 0.6, 8)],
        [("Color", 0.6, 1), ("Equalize", 1.0, 2)], [("Invert", 0.4, 9), ("Rotate", 0.6, 0)],
        [("Equalize", 1.0, 9), ("ShearY", 0.6, 3)], [("Color", 0.4, 7), ("Equalize", 0.6, 0)],
        [("Posterize", 0.4, 6), ("AutoContrast", 0.4, 7)], [("Solarize", 0.6, 8), ("Color", 0.6, 9)],
        [("Solarize", 0.2, 4), ("Rotate", 0.8, 9)], [("Rotate", 1.0, 7), ("TranslateYRel", 0.8, 9)],
        [("ShearX", 0.0, 0), ("Solarize", 0.8, 4)], [("ShearY", 0.8, 0), ("Color", 0.6, 4)],
        [("Color", 1.0, 0), ("Rotate", 0.6, 2)], [("Equalize", 0.8, 4), ("Equalize", 0.0, 8)],
        [("Equalize", 1.0, 4), ("AutoContrast", 0.6, 2)], [("ShearY", 0.4, 7), ("SolarizeAdd", 0.6, 7)],
        [("Posterize", 0.8, 2), ("Solarize", 0.6, 10)], [("Solarize", 0.6, 8), ("Equalize", 0.6, 1)],
        [("Color", 0.8, 6), ("Rotate", 0.4, 5)],
    ],
    "original": [
        [("PosterizeOriginal", 0.4, 8), ("Rotate", 0.6, 9)], [("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)],
        [("Equalize", 0.8, 8), ("Equalize", 0.6, 3)], [("PosterizeOriginal", 0.6, 7), ("PosterizeOriginal", 0.6, 6)],
        [("Equalize", 0.4, 7), ("Solarize", 0.2, 4)], [("Equalize", 0.4, 4), ("Rotate", 0.8, 8)],
        [("Solarize", 0.6, 3), ("Equalize", 0.6, 7)], [("PosterizeOriginal", 0.8, 5), ("Equalize", 1.0, 2)],
        [("Rotate", 0.2, 3), ("Solarize", 0.6, 8)], [("Equalize", 0.6, 8), ("PosterizeOriginal", 0.4, 6)],
        [("Rotate", 0.8, 8), ("Color", 0.4, 0)], [("Rotate", 0.4, 9), ("Equalize", 0.6, 2)],
        [("Equalize", 0.0, 7), ("Equalize", 0.8, 8)], [("Invert", 0.6, 4), ("Equalize", 1.0, 8)],
        [("Color", 0.6, 4), ("Contrast", 1.0, 8)], [("Rotate", 0.8, 8), ("Color", 1.0, 2)],
        [("Color", 0.8, 8), ("Solarize", 0.8, 7)], [("Sharpness", 0.4, 7), ("Invert", 0.6, 8)],
        [("ShearX", 0.6, 5), ("Equalize", 1.0, 9)], [("Color", 0.4, 0), ("Equalize", 0.6, 3)],
        [("Equalize", 0.4, 7), ("Solarize", 0.2, 4)], [("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)],
        [("Invert", 0.6, 4), ("Equalize", 1.0, 8)], [("Color", 0.6, 4), ("Contrast", 1.0, 8)],
        [("Equalize", 0.8, 8), ("Equalize", 0.6, 3)],
    ],
}
# the "r" variants use the research (increasing) posterize in place of Posterize / PosterizeOriginal
_AA_POLICIES["v0r"] = [[(("PosterizeIncreasing" if n == "Posterize" else n), p, m) for n, p, m in sub]
                       for sub in _AA_POLICIES["v0"]]
_AA_POLICIES["originalr"] = [[(("PosterizeIncreasing" if n == "PosterizeOriginal" else n), p, m) for n, p, m in sub]
                             for sub in _AA_POLICIES["original"]]


def _timm_args(kinds: Sequence[str], ops: torch.Tensor, level: torch.Tensor, negate: torch.Tensor,
               hparams: Dict[str, Any]) -> torch.Tensor:
    """timm's ``LEVEL_TO_ARG`` functions, vectorized in float64 (Python's float arithmetic): ``ops`` index
    ``kinds``; ``negate`` is timm's ``random.random() > 0.5`` for the signed ops."""
    lv = level / _LEVEL_DENOM
    out = torch.zeros_like(level)
    for kind in set(kinds):
        sel = torch.isin(ops, torch.tensor([i for i, k in enumerate(kinds) if k == kind], dtype=torch.int64))
        if kind == "none" or not bool(sel.any()):
            continue
        x, neg = lv[sel], negate[sel]
        if kind == "rotate":
            v = torch.where(neg, -(x * 30.0), x * 30.0)
        elif kind == "enhance":
            v = x * 1.8 + 0.1
        elif kind == "enhance_increasing":
            v = x * 0.9
            v = torch.clamp(1.0 + torch.where(neg, -v, v), min=0.1)
        elif kind == "shear":
            v = torch.where(neg, -(x * 0.3), x * 0.3)
        elif kind == "translate_abs":
            v = x * float(hparams.get("translate_const", 250))
            v = torch.where(neg, -v, v)
        elif kind == "translate_rel":
            v = x * float(hparams.get("translate_pct", 0.45))
            v = torch.where(neg, -v, v)
        elif kind == "posterize":
            v = torch.trunc(x * 4)
        elif kind == "posterize_increasing":
            v = 4 - torch.trunc(x * 4)
        elif kind == "posterize_original":
            v = torch.trunc(x * 4) + 4
        elif kind == "solarize":
            v = torch.trunc(x * 256)
        elif kind == "solarize_increasing":
            v = 256 - torch.trunc(x * 256)
        elif kind == "solarize_add":
            v = torch.trunc(x * 110)
        else:  # pragma: no cover - table and kinds are written together
            raise AssertionError(kind)
        out[sel] = v
    return out


def _noisy_level(shape: Tuple[int, ...], magnitude: torch.Tensor, std: float, upper: float,
                 g: Optional[torch.Generator]) -> torch.Tensor:
    """timm's AugmentOp magnitude: ``uniform(0, m)`` if std is inf, ``gauss(m, std)`` if std > 0, clipped to
    [0, upper]."""
    m = magnitude.to(torch.float64).expand(shape)
    if std == float("inf"):
        m = torch.rand(shape, generator=g, dtype=torch.float64) * m
    elif std > 0:
        m = m + std * torch.randn(shape, generator=g, dtype=torch.float64)
    return m.clamp(0.0, upper)


class _TimmBase(_Batched):
    def __init__(self, op_names: Sequence[str], *, magnitude_std: float, magnitude_max: Optional[float],
                 hparams: Optional[Dict[str, Any]], interpolation: Any, fill: Any,
                 generator: Optional[torch.Generator]) -> None:
        super().__init__(generator)
        unknown = [n for n in op_names if n not in _TIMM_OPS]
        if unknown:
            raise ValueError(f"ops: unknown timm op names {unknown} (known: {sorted(_TIMM_OPS)})")
        if not isinstance(magnitude_std, numbers.Real) or magnitude_std < 0:
            raise ValueError(f"magnitude_std must be a number >= 0 (inf: uniform), got {magnitude_std!r}")
        self.op_names: Tuple[str, ...] = ("Identity",) + tuple(op_names)
        self.magnitude_std = float(magnitude_std)
        self.magnitude_max = magnitude_max
        self.hparams = dict(hparams or {})
        self.interpolation = _interpolation_name(interpolation)
        self.fill = _check_fill(fill)
        self._kinds = [_TIMM_OPS[n][1] for n in self.op_names]

    def _upper(self) -> float:
        return float(self.magnitude_max or _LEVEL_DENOM)

    def _fill_for(self, channels: int) -> Any:
        if self.fill is not None:
            return self.fill
        return list(self.hparams.get("img_mean", _IMAGENET_MEAN_U8)) if channels == 3 else 128

    def _round(self, batch: torch.Tensor, ops: torch.Tensor, args: torch.Tensor) -> torch.Tensor:
        """``op_names[ops[i, k]]`` with timm argument ``args[i, k]`` (ops and args (N,) or (N, K): K ops per sample
        in order), in one ``apply_ops`` call."""
        n, c, h, w = batch.shape
        names = [_TIMM_OPS[name][0] for name in self.op_names]
        apply_index = torch.tensor([_AF.OPS.index(o) if o in _AF.OPS else 0 for o in names], dtype=torch.int64)
        op = apply_index[ops]
        out_args = torch.zeros_like(args)
        for kind in set(self._kinds):
            sel = torch.isin(ops, torch.tensor([i for i, k in enumerate(self._kinds) if k == kind], dtype=torch.int64))
            if kind == "none" or not bool(sel.any()):
                continue
            a = args[sel]
            if kind == "shear":
                out_args[sel] = _map_values(a, lambda f: math.degrees(math.atan(f)))
            elif kind == "translate_rel":
                # timm: pixels = pct * width (x) or height (y); Pillow's offset p is torchvision's translate -p
                is_x = torch.tensor([nm == "translate_x" for nm in names])[ops[sel]]
                out_args[sel] = -torch.trunc(a * torch.where(is_x, float(w), float(h)))
            elif kind == "translate_abs":
                out_args[sel] = -torch.trunc(a)
            elif kind.startswith("solarize") and kind != "solarize_add":
                out_args[sel] = torch.where(a > 255, 0.0, a)
                # timm's threshold 256 inverts nothing: Identity
                op[sel] = torch.where(a > 255, _AF.OPS.index("identity"), op[sel])
            else:
                out_args[sel] = a
        return _round(batch, op, out_args, self.interpolation, self._fill_for(c))

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        name = type(self).__name__
        _check_batch(batch, name)
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, name, ndim=2, dtype=torch.int64).cpu()
        mags = _check_rows(params, "magnitudes", n, name, ndim=2, dtype=torch.float64).cpu()
        if ops.shape != mags.shape:
            raise ValueError(f"{name}: params['ops'] and params['magnitudes'] must have the same shape")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"{name}: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        out = self._round(batch, ops, mags)  # every sample's ops in order, one call
        return out.clone() if out is batch else out


class TimmRandAugment(_TimmBase):
    """timm's RandAugment (``rand-...`` strings) with per-sample draws; see the module docstring.

    Each sample draws ``num_layers`` ops (uniform with replacement, or by ``choice_weights`` without replacement
    as timm's ``np.random.choice``), each applied with probability ``prob`` (timm: 0.5), at level ``magnitude``
    (+ noise) of 10.

    Params: ``ops`` int64 (N, num_layers), ``magnitudes`` float64 (N, num_layers), ``levels`` float64.
    """

    def __init__(self, ops: Sequence[str] = tuple(_RAND_TRANSFORMS), num_layers: int = 2, magnitude: float = 10,
                 magnitude_std: float = 0.0, magnitude_max: Optional[float] = None,
                 choice_weights: Optional[Sequence[float]] = None, prob: float = 0.5,
                 hparams: Optional[Dict[str, Any]] = None, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(ops, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_layers, int) or num_layers < 0:
            raise ValueError(f"num_layers must be an int >= 0, got {num_layers!r}")
        if choice_weights is not None:
            if len(choice_weights) != len(ops):
                raise ValueError(f"choice_weights has {len(choice_weights)} values but there are {len(ops)} ops")
            w = torch.tensor([float(v) for v in choice_weights], dtype=torch.float64)
            if (w < 0).any() or int((w > 0).sum()) < num_layers:
                raise ValueError(f"choice_weights must be >= 0 with at least num_layers={num_layers} positive")
            choice_weights = w / w.sum()
        self.num_layers = num_layers
        self.magnitude = float(magnitude)
        self.choice_weights = choice_weights
        self.prob = float(prob)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmRandAugment")
        g = self._gen(generator)
        n, L = batch.shape[0], self.num_layers
        if self.choice_weights is None:
            ops = torch.randint(1, len(self.op_names), (n, L), generator=g)
        elif n == 0 or L == 0:
            ops = torch.zeros((n, L), dtype=torch.int64)
        else:
            ops = torch.multinomial(self.choice_weights.expand(n, -1), L, replacement=False, generator=g) + 1
        applied = torch.rand((n, L), generator=g, dtype=torch.float64) <= self.prob if self.prob < 1.0 \
            else torch.ones((n, L), dtype=torch.bool)
        levels = _noisy_level((n, L), torch.tensor(self.magnitude), self.magnitude_std, self._upper(), g)
        negate = torch.rand((n, L), generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        zero = torch.zeros_like(args)
        return {"ops": torch.where(applied, ops, torch.zeros_like(ops)), "magnitudes": torch.where(applied, args, zero),
                "levels": torch.where(applied, levels, zero)}


class TimmAutoAugment(_TimmBase):
    """timm's AutoAugment (``original``, ``originalr``, ``v0``, ``v0r`` [``-mstd<x>``]) with per-sample draws.

    Each sample draws a sub-policy; each of its ops applies with its probability, at its level (+ noise).

    Params: ``ops`` int64 (N, 2), ``magnitudes`` float64 (N, 2), ``levels`` float64 (N, 2), ``policy`` int64 (N,).
    """

    def __init__(self, policy: str = "v0", magnitude_std: float = 0.0, magnitude_max: Optional[float] = None,
                 hparams: Optional[Dict[str, Any]] = None, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        if policy not in _AA_POLICIES:
            raise ValueError(f"policy must be one of {sorted(_AA_POLICIES)}, got {policy!r}")
        subs = _AA_POLICIES[policy]
        names = sorted({op for sub in subs for op, _, _ in sub})
        super().__init__(names, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        self.policy = policy
        index = {name: i for i, name in enumerate(self.op_names)}
        self._sub_ops = torch.tensor([[index[op] for op, _, _ in sub] for sub in subs], dtype=torch.int64)
        self._sub_probs = torch.tensor([[p for _, p, _ in sub] for sub in subs], dtype=torch.float64)
        self._sub_levels = torch.tensor([[m for _, _, m in sub] for sub in subs], dtype=torch.float64)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmAutoAugment")
        g = self._gen(generator)
        n = batch.shape[0]
        policy = torch.randint(len(self._sub_ops), (n,), generator=g)
        ops, probs = self._sub_ops[policy], self._sub_probs[policy]
        # timm: `if self.prob < 1.0 and random.random() > self.prob: return img`
        applied = (torch.rand((n, 2), generator=g, dtype=torch.float64) <= probs) | (probs >= 1.0)
        levels = _noisy_level((n, 2), self._sub_levels[policy], self.magnitude_std, self._upper(), g)
        negate = torch.rand((n, 2), generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        zero = torch.zeros_like(args)
        return {"ops": torch.where(applied, ops, torch.zeros_like(ops)), "magnitudes": torch.where(applied, args, zero),
                "levels": torch.where(applied, levels, zero), "policy": policy}


class TimmAugMix(_TimmBase):
    """timm's AugMix (``augmix-...`` strings) with per-sample draws; see the module docstring.

    ``width`` chains of ``depth`` ops (uniform in [1, 3] per chain when ``depth <= 0``) drawn uniformly from
    timm's AugMix op list (probability 1), level ``severity`` with noise (default uniform in [0, severity]);
    ``weights ~ Dirichlet([alpha] * width)``, ``m ~ Beta(alpha, alpha)`` (float32, as timm casts them), mixed as
    timm's ``_apply_basic``: ``mixed = sum_i weights_i * chain_i`` (float32), clipped to [0, 255], truncated to
    uint8, then ``image + m * (mixed - image)`` truncated (Pillow's ``Image.blend`` formula, float32).

    Params: ``ops`` int64 (N, width, depth) (Identity-padded), ``magnitudes`` and ``levels`` float64 (same shape),
    ``depths`` int64 (N, width), ``weights`` float32 (N, width), ``m`` float32 (N,).
    """

    def __init__(self, severity: float = 3, width: int = 3, depth: int = -1, alpha: float = 1.0,
                 magnitude_std: float = float("inf"), magnitude_max: Optional[float] = None,
                 ops: Sequence[str] = tuple(_AUGMIX_TRANSFORMS), hparams: Optional[Dict[str, Any]] = None,
                 interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(ops, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be an int >= 1, got {width!r}")
        if not isinstance(depth, int) or depth == 0:
            raise ValueError(f"depth must be a positive int, or negative for a depth drawn in [1, 3], got {depth!r}")
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.severity = float(severity)
        self.width = width
        self.depth = depth
        self.alpha = float(alpha)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmAugMix")
        g = self._gen(generator)
        n, width = batch.shape[0], self.width
        dmax = self.depth if self.depth > 0 else 3
        weights = torch._sample_dirichlet(torch.full((n, width), self.alpha, dtype=torch.float64), generator=g)
        m = torch._sample_dirichlet(torch.full((n, 2), self.alpha, dtype=torch.float64), generator=g)[:, 0]
        depths = (torch.full((n, width), self.depth, dtype=torch.int64) if self.depth > 0
                  else torch.randint(1, 4, (n, width), generator=g))
        shape = (n, width, dmax)
        ops = torch.randint(1, len(self.op_names), shape, generator=g)
        levels = _noisy_level(shape, torch.tensor(self.severity), self.magnitude_std, self._upper(), g)
        negate = torch.rand(shape, generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        live = torch.arange(dmax)[None, None, :] < depths[:, :, None]
        zero = torch.zeros_like(args)
        return {"ops": torch.where(live, ops, torch.zeros_like(ops)), "magnitudes": torch.where(live, args, zero),
                "levels": torch.where(live, levels, zero), "depths": depths,
                "weights": weights.to(torch.float32), "m": m.to(torch.float32)}  # timm: np.float32(...)

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "TimmAugMix")
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, "TimmAugMix", ndim=3, dtype=torch.int64).cpu()
        mags = _check_rows(params, "magnitudes", n, "TimmAugMix", ndim=3, dtype=torch.float64).cpu()
        weights = _check_rows(params, "weights", n, "TimmAugMix", ndim=2, dtype=torch.float32)
        m = _check_rows(params, "m", n, "TimmAugMix", ndim=1, dtype=torch.float32)
        if ops.shape != mags.shape or weights.shape[1] != ops.shape[1]:
            raise ValueError(f"TimmAugMix: params shapes disagree: ops {tuple(ops.shape)}, magnitudes "
                             f"{tuple(mags.shape)}, weights {tuple(weights.shape)}")
        dims = (n, 1, 1, 1)
        w = weights.to(batch.device)
        mixed = torch.zeros_like(batch, dtype=torch.float32)
        for i in range(ops.shape[1]):
            aug = self._round(batch, ops[:, i], mags[:, i])
            mixed += w[:, i].reshape(dims) * aug.to(torch.float32)
        mixed = mixed.clamp_(0.0, 255.0).to(torch.uint8).to(torch.float32)
        x = batch.to(torch.float32)
        return (x + m.to(batch.device).reshape(dims) * (mixed - x)).to(torch.uint8)


def _sections(config: List[str], what: str) -> List[Tuple[str, str]]:
    out = []
    for c in config:
        cs = re.split(r"(\d.*)", c)
        if len(cs) < 2:
            raise ValueError(f"config_str: section {c!r} of the {what} string has no value")
        out.append((cs[0], cs[1]))
    return out


def from_timm_string(config_str: str, *, hparams: Optional[Dict[str, Any]] = None, interpolation: Any = "bilinear",
                     fill: Any = None, generator: Optional[torch.Generator] = None) -> _TimmBase:
    """The batched policy for a timm ``auto_augment`` string.

    * ``rand-m<M>-n<N>-w<W>-mstd<S>-mmax<X>-inc<I>``: RandAugment (defaults m10, n2, no weights, mstd 0, inc 0;
      ``mstd`` > 100 means uniform; ``w0`` timm's op weights, drawn without replacement).
    * ``augmix-m<M>-w<W>-d<D>-a<A>-mstd<S>``: AugMix (defaults m3, w3, d-1, a1, mstd inf). ``b1`` (timm's
      "blended" mode) is not provided: ValueError.
    * ``original``, ``originalr``, ``v0``, ``v0r`` [``-mstd<S>``]: AutoAugment policies.

    ``inc<I>`` turns the increasing ops on when ``I`` is a non-zero integer (timm tests ``bool("0")``, which is
    True, so timm's ``inc0`` also turns them on; here ``inc0`` is off).

    Args:
        config_str: the string, as given to timm's ``create_transform(auto_augment=...)``.
        hparams: timm's hparams: ``img_mean`` (fill, default (124, 116, 104)), ``translate_pct`` (0.45),
            ``translate_const`` (250), ``magnitude_std`` / ``magnitude_max`` (overridden by the string).
        interpolation: "bilinear" (default) or "nearest" for the geometric ops (timm: bilinear or bicubic).
        fill: overrides ``img_mean``. generator: CPU ``torch.Generator`` for the draws.

    Returns: a ``TimmRandAugment``, ``TimmAugMix`` or ``TimmAutoAugment`` module (uint8 (N, C, H, W) -> same).

    Example:
        >>> policy = from_timm_string("augmix-m5-w3")
    """
    if not isinstance(config_str, str) or not config_str:
        raise ValueError(f"config_str must be a timm auto-augment string such as 'rand-m9-mstd0.5-inc1', "
                         f"got {config_str!r}")
    hp = dict(hparams or {})
    config = config_str.split("-")
    head, rest = config[0], config[1:]
    common = dict(hparams=hp, interpolation=interpolation, fill=fill, generator=generator)
    if head == "rand":
        magnitude, num_layers, weight_idx, increasing = 10.0, 2, None, False
        for key, val in _sections(rest, "rand"):
            if key == "mstd":
                mstd = float(val)
                hp.setdefault("magnitude_std", float("inf") if mstd > 100 else mstd)
            elif key == "mmax":
                hp.setdefault("magnitude_max", int(val))
            elif key == "inc":
                increasing = int(val) != 0
            elif key == "m":
                magnitude = int(val)
            elif key == "n":
                num_layers = int(val)
            elif key == "w":
                weight_idx = int(val)
            else:
                raise ValueError(f"config_str: unknown RandAugment section {key!r} in {config_str!r}")
        ops = _RAND_INCREASING_TRANSFORMS if increasing else _RAND_TRANSFORMS
        weights = None
        if weight_idx is not None:
            if weight_idx != 0:
                raise ValueError(f"config_str: only weight set w0 exists, got w{weight_idx}")
            weights = [_RAND_CHOICE_WEIGHTS_0[k] for k in _RAND_TRANSFORMS]  # timm indexes them by position
        return TimmRandAugment(ops, num_layers, magnitude, magnitude_std=hp.get("magnitude_std", 0.0),
                               magnitude_max=hp.get("magnitude_max"), choice_weights=weights, **common)
    if head == "augmix":
        severity, width, depth, alpha = 3.0, 3, -1, 1.0
        for key, val in _sections(rest, "augmix"):
            if key == "mstd":
                hp.setdefault("magnitude_std", float(val))
            elif key == "m":
                severity = int(val)
            elif key == "w":
                width = int(val)
            elif key == "d":
                depth = int(val)
            elif key == "a":
                alpha = float(val)
            elif key == "b":
                if int(val):
                    raise ValueError("config_str: timm's blended AugMix ('b1') is not provided; drop the section")
            else:
                raise ValueError(f"config_str: unknown AugMix section {key!r} in {config_str!r}")
        hp.setdefault("magnitude_std", float("inf"))
        return TimmAugMix(severity, width, depth, alpha, magnitude_std=hp["magnitude_std"],
                          magnitude_max=hp.get("magnitude_max"), **common)
    if head in _AA_POLICIES:
        for key, val in _sections(rest, "AutoAugment"):
            if key == "mstd":
                hp.setdefault("magnitude_std", float(val))
            else:
                raise ValueError(f"config_str: unknown AutoAugment section {key!r} in {config_str!r}")
        return TimmAutoAugment(head, magnitude_std=hp.get("magnitude_std", 0.0),
                               magnitude_max=hp.get("magnitude_max"), **common)
    raise ValueError(f"config_str: {config_str!r} is not a timm auto-augment string (rand-..., augmix-..., original, "
                     f"originalr, v0, v0r)")

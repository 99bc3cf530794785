"""timm's auto-augment policy strings as batched policies with per-sample draws.

``from_timm_string("rand-m9-mstd0.5-inc1")`` builds the policy timm's ``create_transform(auto_augment=...)`` builds
(timm's ``timm/data/auto_augment.py``): the same op set, op choice, per-op probability, magnitude schedule
(level ``m`` of 10, magnitude noise ``mstd``: normal noise, uniform in [0, m] when ``mstd`` is inf or > 100,
clipped to [0, ``mmax`` or 10]), random negation and "increasing" op variants, and for AugMix timm's mixing
(``mixed = sum w_i * chain_i`` in float32, clipped, truncated to uint8, then Pillow's
``Image.blend(image, mixed, m)``); every sample draws its own.

**The ops themselves are torchvision's** (but for the geometric ops with "bicubic" or "random" interpolation:
Pillow's, below), run by ``tensorops.augment.functional.apply_ops``, not timm's Pillow ops: timm's op set and
magnitude schedule, torchvision's pixel arithmetic. Measured on 8 photo-like 224x224
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
* Rotate / ShearX / ShearY / TranslateX / TranslateY, with ``interpolation="bicubic"`` or ``"random"`` (timm's
  ``random.choice((BILINEAR, BICUBIC))`` per op applied, drawn into ``params["resample"]``; a list of the two
  modes means it too): **Pillow's own geometry**, bit for bit timm's values given the draws
  (``Image.rotate`` with its exact transposes, ``Image.transform(AFFINE)`` with timm's data; Pillow's bilinear
  and bicubic filters in its double arithmetic: ``tests/test_timm_geometry.py`` replays timm's op functions).
  Each pixel is computed on its own in double precision, as Pillow computes it: about Pillow's own speed, slower
  than the bilinear twin. With ``"bilinear"`` (default) or ``"nearest"``: torchvision's ``affine`` (pixel-centre
  conventions, float grid), the fast kernels; against timm's bicubic draws, on 8 photo-like 224x224 images, the
  mean |diff| is 1.3 steps for Rotate(27) and 0.9 for ShearX(0.27), against 0.6 and 0.5 for its bilinear draws,
  the largest differences along the edges as above. ``TranslateXRel`` / ``YRel`` translate by timm's fractional
  offset (``pct * width``, as Pillow resamples it; with "nearest" the kernel rounds it); ``TranslateX`` / ``Y``
  (absolute pixels) too. Pillow's affine data maps output to input, so timm's shear factor ``f`` is
  torchvision's shear ``degrees(atan(f))`` (same direction) and timm's offset ``p`` is torchvision's translate
  ``-p``.
* Posterize, Solarize, Invert, Equalize: the same per-pixel lookup in both (Solarize's threshold 256, timm's
  "off", is Identity here because torchvision refuses thresholds above 255).
* SolarizeAdd (timm only, no torchvision twin): ``x < 128 ? min(255, x + add) : x``, ``apply_ops``'
  "solarize_add" (a table op of the kernels, like solarize).
* Levels above 10 (``mmax`` > 10) are clamped where timm clamps: SolarizeAdd adds at most 128; a Posterize of 8
  bits or more returns the image (timm's ``posterize``), so PosterizeOriginal at level >= 10 is Identity;
  PosterizeIncreasing below 0 bits keeps 0 bits (Pillow's mask clears every bit, as 0 bits does); Solarize's
  threshold stays in [0, 256].

timm's fill for geometric ops is ``hparams["img_mean"]``, the dataset mean in uint8 ((124, 116, 104) for
ImageNet's mean, which ``create_transform`` passes); 1-channel batches use 128 (timm's default grey).

Params (``make_params``): ``ops`` int64 (N, k) into the policy's ``op_names`` (timm's names, with ``"Identity"``
at 0 for ops skipped by their probability), ``magnitudes`` float64 (N, k): signed, the argument timm's op function
is given (factor, degrees, shear factor, translate fraction or pixels, bits, threshold, addend; 0.0 for ops
without one), ``levels`` float64 (N, k): the magnitude level after noise and clipping. AugMix adds ``depths``
int64 (N, width), ``weights`` float32 (N, width) and ``m`` float32 (N,).

timm's batch transforms: :class:`TimmMixup` (``Mixup``: modes "batch", "pair", "elem", ``switch_prob``,
``cutmix_minmax``, ``correct_lam``, ``label_smoothing``) and :class:`TimmRandomErasing` (``RandomErasing``:
``min_count`` / ``max_count``, modes "const", "rand", "pixel", on float and uint8 batches), in
``_timm_mixing.py``.

Example:
    >>> import torch
    >>> from tensorops.augment.timm import from_timm_string
    >>> policy = from_timm_string("rand-m9-mstd0.5-inc1", generator=torch.Generator().manual_seed(0))
    >>> out = policy(torch.zeros(8, 3, 224, 224, dtype=torch.uint8))

This module parses the strings and is the public path to the policies; the policies are in
``_timm_policies.py``, timm's tables and magnitude schedule in ``_timm_tables.py``.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

import torch

from tensorops.augment._timm_mixing import TimmMixup, TimmRandomErasing
from tensorops.augment._timm_policies import TimmAugMix, TimmAutoAugment, TimmRandAugment, _TimmBase
from tensorops.augment._timm_tables import (
    _AA_POLICIES, _RAND_CHOICE_WEIGHTS_0, _RAND_INCREASING_TRANSFORMS, _RAND_TRANSFORMS,
)

__all__ = ["from_timm_string", "TimmRandAugment", "TimmAutoAugment", "TimmAugMix", "TimmMixup", "TimmRandomErasing"]


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
        interpolation: the geometric ops': "bilinear" (default) or "nearest" (torchvision's affine, fast), or
            "bicubic" or "random" (timm's bilinear-or-bicubic per op): Pillow's geometry, timm's values.
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

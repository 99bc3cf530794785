"""Colour transforms on uint8 batches with per-sample draws: ``ColorJitter`` (factors and order per sample) and
``RandomGrayscale`` (torchvision v2's, per sample)."""
from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple

import torch

from tensorops.augment._batched import (
    _OPS_INDEX, Params, _Batched, _check_batch, _check_rows, _ops_index, _round,
)


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

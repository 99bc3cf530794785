"""``RandomErasing`` with torchvision v2's box draw, per sample, and the box writes it shares with nothing else
(``_paste``: per-channel values, per-pixel noise or a batch-shaped value)."""
from __future__ import annotations

import numbers
from typing import List, Optional, Sequence, Union

import torch

from tensorops.augment import functional as _AF
from tensorops.augment._batched import Params, _Batched, _check_batch, _check_rows, _fresh_copy


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

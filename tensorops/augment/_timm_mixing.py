"""timm's ``Mixup`` (``timm/data/mixup.py``) and ``RandomErasing`` (``timm/data/random_erasing.py``) with draws
from a ``torch.Generator``: the same distributions, and given the draws the same values as timm's code."""
from __future__ import annotations

import math
import numbers
from typing import Any, List, Optional, Sequence, Tuple

import torch

from tensorops.augment._batched import Params, _Batched, _check_batch, _check_rows, _fresh_copy
from tensorops.augment._erasing import _paste
from tensorops.augment._mixing import _cycles, _from_partners_inplace


def _beta(alpha: float, rows: int, g: Optional[torch.Generator]) -> torch.Tensor:
    return torch._sample_dirichlet(torch.full((rows, 2), float(alpha), dtype=torch.float64), generator=g)[:, 0]


class TimmMixup(_Batched):
    """timm's ``Mixup`` on a batch with labels: MixUp or CutMix (``switch_prob`` picks CutMix when both alphas are
    > 0), applied with probability ``prob``, per batch (``mode="batch"``), per pair (``"pair"``: samples i and
    N - 1 - i share one draw and mix with each other) or per sample (``"elem"``), every sample mixed with sample
    N - 1 - i (timm's ``flip(0)``). CutMix boxes follow timm's rule (``rand_bbox``: ``cut = int(H * sqrt(1 - lam))``,
    centre uniform, ``[cy - cut // 2, cy + (cut + 1) // 2)`` clipped; ``cutmix_minmax``: ``rand_bbox_minmax``), lam
    corrected to the box's area with ``correct_lam``. Labels: timm's ``mixup_target`` (one-hot smoothed by
    ``label_smoothing``: off ``s / C``, on ``1 - s + s / C``; ``y * lam + y.flip(0) * (1 - lam)``).

    The arithmetic is timm's: lam float32 per sample in "elem" / "pair" (``np.float32``), float64 per batch;
    ``x * lam + partner * (1 - lam)`` in float32. uint8 batches are mixed in float32 and rounded half to even (timm's
    ``FastCollateMixup``: ``np.rint``). The batch size must be even (timm asserts it).

    Params: ``lam`` float64 (N,) (the label weight, corrected for CutMix), ``keep`` / ``other`` float64 (N,) (the
    image weights as timm's scalars, float32 values), ``cutmix`` bool (N,), ``boxes`` int64 (N, 4) (i, j, h, w),
    ``partner`` int64 (N,).

    Example:
        >>> mix = TimmMixup(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=10)
        >>> images, soft = mix(torch.rand(8, 3, 32, 32), torch.randint(0, 10, (8,)))
    """

    needs_labels = True

    def __init__(self, mixup_alpha: float = 1.0, cutmix_alpha: float = 0.0,
                 cutmix_minmax: Optional[Sequence[float]] = None, prob: float = 1.0, switch_prob: float = 0.5,
                 mode: str = "batch", correct_lam: bool = True, label_smoothing: float = 0.1,
                 num_classes: int = 1000, inplace: bool = False, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        if mode not in ("batch", "pair", "elem"):
            raise ValueError(f"mode must be 'batch', 'pair' or 'elem', got {mode!r}")
        if cutmix_minmax is not None:
            if len(cutmix_minmax) != 2:
                raise ValueError(f"cutmix_minmax must be (min, max), got {cutmix_minmax!r}")
            cutmix_alpha = 1.0  # timm forces it
        if not (mixup_alpha > 0 or cutmix_alpha > 0):
            raise ValueError("one of mixup_alpha > 0, cutmix_alpha > 0 or cutmix_minmax must be given")
        for name, v in (("prob", prob), ("switch_prob", switch_prob)):
            if not isinstance(v, numbers.Real) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.cutmix_minmax = None if cutmix_minmax is None else (float(cutmix_minmax[0]), float(cutmix_minmax[1]))
        self.prob, self.switch_prob, self.mode = float(prob), float(switch_prob), mode
        self.correct_lam, self.label_smoothing = bool(correct_lam), float(label_smoothing)
        self.num_classes, self.inplace = num_classes, bool(inplace)

    def _draw_lam(self, rows: int, g: Optional[torch.Generator]) -> Tuple[torch.Tensor, torch.Tensor]:
        """timm's ``_params_per_elem`` / ``_params_per_batch``: (lam float64, use_cutmix bool), ``rows`` of them."""
        use_cutmix = torch.zeros(rows, dtype=torch.bool)
        if self.mixup_alpha > 0 and self.cutmix_alpha > 0:
            use_cutmix = torch.rand(rows, generator=g, dtype=torch.float64) < self.switch_prob
            lam_cut, lam_mix = _beta(self.cutmix_alpha, rows, g), _beta(self.mixup_alpha, rows, g)
            lam = torch.where(use_cutmix, lam_cut, lam_mix)
        elif self.mixup_alpha > 0:
            lam = _beta(self.mixup_alpha, rows, g)
        else:
            use_cutmix = torch.ones(rows, dtype=torch.bool)
            lam = _beta(self.cutmix_alpha, rows, g)
        applied = torch.rand(rows, generator=g, dtype=torch.float64) < self.prob
        if self.mode != "batch":
            lam = lam.to(torch.float32).to(torch.float64)  # np.float32
        return torch.where(applied, lam, torch.ones_like(lam)), use_cutmix & applied

    def _boxes(self, lam: torch.Tensor, h: int, w: int, g: Optional[torch.Generator]) -> torch.Tensor:
        """timm's ``rand_bbox`` / ``rand_bbox_minmax`` for each lam: (yl, yh, xl, xh) int64 (rows, 4)."""
        rows = lam.shape[0]
        if self.cutmix_minmax is not None:
            lo, hi = self.cutmix_minmax
            cut_h = int(h * lo) + (torch.rand(rows, generator=g, dtype=torch.float64)
                                   * (int(h * hi) - int(h * lo))).floor().to(torch.int64)
            cut_w = int(w * lo) + (torch.rand(rows, generator=g, dtype=torch.float64)
                                   * (int(w * hi) - int(w * lo))).floor().to(torch.int64)
            yl = (torch.rand(rows, generator=g, dtype=torch.float64) * (h - cut_h + 1)).floor().to(torch.int64)
            xl = (torch.rand(rows, generator=g, dtype=torch.float64) * (w - cut_w + 1)).floor().to(torch.int64)
            return torch.stack([yl, yl + cut_h, xl, xl + cut_w], 1)
        # np.sqrt(1 - lam) in the lam's precision (float32 per element, float64 per batch), then int(H * ratio)
        work = torch.float32 if self.mode != "batch" else torch.float64
        ratio = torch.sqrt(1 - lam.to(work))
        cut_h = torch.trunc(h * ratio).to(torch.int64)
        cut_w = torch.trunc(w * ratio).to(torch.int64)
        cy = torch.randint(h, (rows,), generator=g)
        cx = torch.randint(w, (rows,), generator=g)
        yl = (cy - cut_h // 2).clamp(0, h)
        yh = (cy + (cut_h + 1) // 2).clamp(0, h)
        xl = (cx - cut_w // 2).clamp(0, w)
        xh = (cx + (cut_w + 1) // 2).clamp(0, w)
        return torch.stack([yl, yh, xl, xh], 1)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmMixup", allow_float=True, any_channels=True)
        g = self._gen(generator)
        n, _, h, w = batch.shape
        if n % 2:
            raise ValueError(f"TimmMixup: the batch size must be even (timm's Mixup asserts it), got {n}")
        rows = {"batch": 1, "pair": n // 2, "elem": n}[self.mode]
        lam, cut = self._draw_lam(rows, g)
        yx = self._boxes(lam, h, w, g)
        if self.correct_lam or self.cutmix_minmax is not None:
            area = ((yx[:, 1] - yx[:, 0]) * (yx[:, 3] - yx[:, 2])).to(torch.float64)
            corrected = 1.0 - area / float(h * w)
            if self.mode != "batch":
                corrected = corrected.to(torch.float32).to(torch.float64)  # lam_batch[i] = lam (float32 array)
            label_lam = torch.where(cut & (lam != 1.0), corrected, lam)
        else:
            label_lam = lam
        if self.mode == "batch":
            other = (1.0 - lam).to(torch.float32).to(torch.float64)  # (1. - lam) a Python float, cast by mul_
        else:
            other = (1.0 - lam.to(torch.float32)).to(torch.float64)  # np.float32 arithmetic
        cut = cut & (lam != 1.0)

        def full(t: torch.Tensor) -> torch.Tensor:
            if self.mode == "batch":
                return t.expand(n, *t.shape[1:]).clone()
            return torch.cat([t, t.flip(0)]) if self.mode == "pair" else t

        boxes = torch.stack([yx[:, 0], yx[:, 2], yx[:, 1] - yx[:, 0], yx[:, 3] - yx[:, 2]], 1)
        return {"lam": full(label_lam), "keep": full(lam), "other": full(other),
                "cutmix": full(cut), "boxes": full(boxes), "partner": torch.arange(n - 1, -1, -1)}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "TimmMixup", allow_float=True, any_channels=True)
        n = batch.shape[0]
        keep = _check_rows(params, "keep", n, "TimmMixup", ndim=1, dtype=torch.float64).tolist()
        other = _check_rows(params, "other", n, "TimmMixup", ndim=1, dtype=torch.float64).tolist()
        cut = _check_rows(params, "cutmix", n, "TimmMixup", ndim=1, dtype=torch.bool).tolist()
        boxes = _check_rows(params, "boxes", n, "TimmMixup", ndim=2, dtype=torch.int64).tolist()
        partner = _check_rows(params, "partner", n, "TimmMixup", ndim=1, dtype=torch.int64).tolist()
        cycles = _cycles(partner)
        if cycles is None:
            raise ValueError("TimmMixup: params['partner'] must be a permutation")
        u8 = batch.dtype == torch.uint8
        out = batch if self.inplace else _fresh_copy(batch)

        def step(i: int, x: torch.Tensor, src: torch.Tensor) -> None:
            if cut[i]:
                y, xx, hh, ww = boxes[i]
                x[:, y:y + hh, xx:xx + ww].copy_(src[:, y:y + hh, xx:xx + ww])
            elif keep[i] != 1.0:
                if u8:
                    mixed = x.to(torch.float32).mul_(keep[i]).add_(src.to(torch.float32).mul_(other[i]))
                    x.copy_(mixed.round_().clamp_(0, 255))
                else:
                    theirs = src.mul(other[i])
                    x.mul_(keep[i]).add_(theirs)

        _from_partners_inplace(out, cycles, step)
        return out

    def transform_labels(self, labels: Any, params: Params) -> torch.Tensor:
        """timm's ``mixup_target``: smoothed one-hot ``y``, ``y * lam + y.flip(0) * (1 - lam)`` in float32."""
        if not isinstance(labels, torch.Tensor) or labels.ndim != 1:
            raise TypeError("TimmMixup: labels must be (N,) class indices")
        off = self.label_smoothing / self.num_classes
        on = 1.0 - self.label_smoothing + off
        y1 = torch.full((labels.shape[0], self.num_classes), off, device=labels.device).scatter_(
            1, labels.long().view(-1, 1), on)
        y2 = y1[params["partner"].to(labels.device)]
        lam = params["lam"].to(torch.float32).to(labels.device).unsqueeze(1)
        if self.mode == "batch":
            return y1 * float(params["lam"][0]) + y2 * (1.0 - float(params["lam"][0]))
        return y1 * lam + y2 * (1 - lam)

    def forward(self, batch: torch.Tensor, labels: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        params = self.make_params(batch)
        return self.transform(batch, params), self.transform_labels(labels, params)

    def extra_repr(self) -> str:
        return (f"mixup_alpha={self.mixup_alpha}, cutmix_alpha={self.cutmix_alpha}, cutmix_minmax={self.cutmix_minmax}"
                f", prob={self.prob}, switch_prob={self.switch_prob}, mode={self.mode!r}, correct_lam="
                f"{self.correct_lam}, label_smoothing={self.label_smoothing}, num_classes={self.num_classes}")


class TimmRandomErasing(_Batched):
    """timm's ``RandomErasing`` per sample: erased with probability ``probability`` (timm: unless ``rand >
    probability``), ``count`` boxes (``min_count`` if equal to ``max_count``, else uniform in [min, max]), each of
    area ``U(min_area, max_area) * H * W / count`` and aspect ``exp(U(log_aspect_ratio))``, ``h, w =
    round(sqrt(...))``, the first of 10 attempts with ``w < W and h < H``, its corner uniform; boxes written in
    order. Values (``mode``): "const" zeros (timm's), "rand" one normal value per channel per box, "pixel" normal per
    pixel; on uint8 batches "rand" and "pixel" draw uniform bytes (timm's ``normal_`` has no uint8 form).

    Params: ``boxes`` int64 (N, max_count, 4) (i, j, h, w; 0 sized: not erased), ``values`` (one per box slot, in
    ``RandomErasing``'s forms: (N, C) float64, or the boxes' noise 1-D)."""

    def __init__(self, probability: float = 0.5, min_area: float = 0.02, max_area: float = 1 / 3,
                 min_aspect: float = 0.3, max_aspect: Optional[float] = None, mode: str = "const",
                 min_count: int = 1, max_count: Optional[int] = None, inplace: bool = False, *,
                 log_aspect_ratio: Optional[Tuple[float, float]] = None,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        mode = (mode or "const").lower()
        if mode not in ("const", "rand", "pixel"):
            raise ValueError(f"mode must be 'const', 'rand' or 'pixel', got {mode!r}")
        self.probability, self.min_area, self.max_area = float(probability), float(min_area), float(max_area)
        self.log_aspect_ratio = tuple(map(float, log_aspect_ratio)) if log_aspect_ratio is not None else \
            (math.log(min_aspect), math.log(max_aspect or 1 / min_aspect))
        self.min_count = int(min_count)
        self.max_count = int(max_count or min_count)
        if not 1 <= self.min_count <= self.max_count:
            raise ValueError(f"need 1 <= min_count <= max_count, got {min_count}, {max_count}")
        self.mode, self.inplace = mode, bool(inplace)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmRandomErasing", allow_float=True, any_channels=batch.dtype != torch.uint8)
        g = self._gen(generator)
        n, c, height, width = batch.shape
        applied = torch.rand(n, generator=g, dtype=torch.float64) <= self.probability
        count = torch.full((n,), self.min_count, dtype=torch.int64) if self.min_count == self.max_count else \
            torch.randint(self.min_count, self.max_count + 1, (n,), generator=g)
        area = float(height * width)
        lo, hi = self.log_aspect_ratio
        u8 = batch.dtype == torch.uint8
        slots, values = [], []
        for e in range(self.max_count):
            u = torch.rand(n, 10, 2, generator=g, dtype=torch.float64)  # random.uniform: a + (b - a) * random()
            target = (self.min_area + (self.max_area - self.min_area) * u[..., 0]) * area / count[:, None]
            aspect = torch.exp(lo + (hi - lo) * u[..., 1])
            h = torch.round(torch.sqrt(target * aspect))
            w = torch.round(torch.sqrt(target / aspect))
            valid = (w < width) & (h < height)
            first = torch.argmax(valid.to(torch.int8), dim=1, keepdim=True)
            h = h.gather(1, first)[:, 0].to(torch.int64)
            w = w.gather(1, first)[:, 0].to(torch.int64)
            corner = torch.rand(n, 2, generator=g, dtype=torch.float64)
            i = torch.floor(corner[:, 0] * (height - h + 1)).to(torch.int64).clamp_(max=height - h)
            j = torch.floor(corner[:, 1] * (width - w + 1)).to(torch.int64).clamp_(max=width - w)
            boxes = torch.stack([i, j, h, w], 1)
            boxes[~(valid.any(1) & applied & (count > e))] = 0
            slots.append(boxes)
            if self.mode == "const":
                values.append(torch.zeros((n, c), dtype=torch.float64))
            elif self.mode == "rand":
                v = torch.randint(0, 256, (n, c), generator=g) if u8 else torch.randn((n, c), generator=g)
                values.append(v.to(torch.float64))
            else:
                k = c * int((boxes[:, 2] * boxes[:, 3]).sum())
                values.append(torch.randint(0, 256, (k,), generator=g, dtype=torch.uint8) if u8
                              else torch.randn((k,), generator=g).to(batch.dtype))
        return {"boxes": torch.stack(slots, 1), "values": values}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "TimmRandomErasing", allow_float=True, any_channels=batch.dtype != torch.uint8)
        boxes = _check_rows(params, "boxes", batch.shape[0], "TimmRandomErasing", ndim=3, dtype=torch.int64)
        values: List[torch.Tensor] = params["values"]
        out = batch if self.inplace else _fresh_copy(batch)
        for e in range(boxes.shape[1]):
            out = _paste(out, boxes[:, e], values[e], inplace=True)
        return out

    def extra_repr(self) -> str:
        return (f"probability={self.probability}, area=({self.min_area}, {self.max_area}), log_aspect_ratio="
                f"{self.log_aspect_ratio}, mode={self.mode!r}, count=({self.min_count}, {self.max_count}), "
                f"inplace={self.inplace}")

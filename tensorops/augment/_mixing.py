"""Transforms that mix samples and their labels: ``MixUp`` and ``CutMix`` (v2's, or timm's per-sample "elem"
mode), the pairing's cycles that let them write in place, and ``RandomChoice`` (one of several transforms per
batch, labels passed through to the one that mixes)."""
from __future__ import annotations

import numbers
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch
from torch import nn

from tensorops.augment._batched import Params, _Batched, _check_batch, _check_rows, _fresh_copy


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

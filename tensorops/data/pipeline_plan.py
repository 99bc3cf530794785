"""What :func:`tensorops.data.from_pipeline` builds, and the pieces it builds from: the printable plan (one
``Step`` per transform of the user's pipeline: what it became and where it runs), ``Leaf`` (what a transform of
torchvision or timm is, read from its own attributes by ``pipeline_torchvision`` and ``pipeline_timm``), and the
batch-path wrappers for what has no fused form:

* :class:`PerSample`: a transform run as given, image by image, in its place (on PIL images where the user's
  pipeline had PIL images there), drawing from wherever it draws (torch's or Python's global RNG);
* :class:`BatchedRandomApply` and :class:`BatchedRandomChoice`: torchvision's ``RandomApply`` / ``RandomChoice``
  around transforms that do have batched twins, drawn per sample (v2's and v1's comparisons kept) from the
  collate's generator;
* :class:`AsGivenBatch`: a batch transform (``(batch, labels) -> (batch, labels)``) run as given on the batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

__all__ = ["Step", "Plan", "Leaf", "PerSample", "BatchedRandomApply", "BatchedRandomChoice", "AsGivenBatch"]


@dataclass
class Step:
    """One transform of the user's pipeline: ``source`` (its repr, short), ``how`` (``"fused"``: folded into the
    collate's one resampling pass or its normalize; ``"twin"``: a batched ``tensorops.augment`` transform with the
    same arguments, per-sample draws from the collate's generator; ``"per sample"``: run as given, image by image;
    ``"batch"``: run as given on the batch; ``"exact"``: the evaluation path's transform run as given, per sample
    up to the crop, on the stacked crops after it; ``"note"``: what the plan decided; ``"no-op"``), ``target``
    (what runs) and ``note`` (why, or what differs)."""

    source: str
    how: str
    target: str = ""
    note: str = ""


@dataclass
class Plan:
    """The printable plan: the steps in the order they run, where they run (``collate``: the DataLoader worker's
    ``collate_fn``), and the settings of the fused collate."""

    steps: List[Step] = field(default_factory=list)
    collate: Dict[str, Any] = field(default_factory=dict)
    fused: bool = True

    def add(self, source: Any, how: str, target: str = "", note: str = "") -> None:
        self.steps.append(Step(_short(source), how, target, note))

    def unmapped(self) -> List[Step]:
        return [s for s in self.steps if s.how in ("per sample", "batch")]

    def __str__(self) -> str:
        head = ("tensorops pipeline plan: exact evaluation (your transforms up to the crop per image, the crops "
                "stacked, your conversion and Normalize on the batch)" if self.collate.get("exact") else
                "tensorops pipeline plan: fused collate " + ", ".join(f"{k}={v}" for k, v in self.collate.items())
                if self.fused else "tensorops pipeline plan: no fused geometry (each image through the transform as "
                "given, then default_collate)")
        lines = [head]
        width = max([len(s.how) for s in self.steps] + [4])
        for k, s in enumerate(self.steps):
            line = f"  {k + 1:2d}. {s.how:<{width}}  {s.source}"
            if s.target:
                line += f"  ->  {s.target}"
            if s.note:
                line += f"  ({s.note})"
            lines.append(line)
        return "\n".join(lines)

    __repr__ = __str__


def _short(t: Any, limit: int = 110) -> str:
    if isinstance(t, str):
        return t
    text = " ".join(repr(t).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Leaf:
    """What one transform is, read from its attributes. ``kind``:

    * ``"to_u8"``: PIL / array to a uint8 tensor (PILToTensor, ToImage); ``"to_float"``: uint8 to float scaled to
      [0, 1] (ToDtype(scale=True), ConvertImageDtype); ``"to_tensor"``: both (ToTensor, timm's MaybeToTensor);
    * ``"noop"`` (ToPureTensor, Identity); ``"rrc"`` (``args``: size, scale, ratio, interpolation, antialias);
      ``"resize"`` (size, interpolation, antialias); ``"center_crop"`` (size); ``"hflip"`` (p);
      ``"normalize"`` (mean, std);
    * ``"twin"``: ``make()`` builds the batched twin (``args["float"]``: it runs on float batches, else uint8);
    * ``"apply"`` / ``"choice"`` / ``"order"``: torchvision's containers (``args``: transforms, p, v1).
    """

    kind: str
    args: Dict[str, Any] = field(default_factory=dict)
    make: Optional[Callable[[], Any]] = None
    target: str = ""
    note: str = ""


def _to_pil(img: torch.Tensor) -> Any:
    from PIL import Image

    arr = img.permute(1, 2, 0).contiguous().numpy()
    return Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)


def _from_pil(img: Any) -> torch.Tensor:
    import numpy as np

    arr = np.asarray(img)
    t = torch.from_numpy(arr.copy())
    return t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1).contiguous()


class PerSample:
    """``transform`` run as given on each image of the batch, in order: on PIL images (each sample converted and
    back) when ``pil``, else on the (C, H, W) tensor. Its draws come from wherever it draws (torch's or Python's
    global RNG, which DataLoader seeds per worker), one image at a time, as in the user's pipeline."""

    def __init__(self, transform: Any, pil: bool = False) -> None:
        self.transform, self.pil = transform, bool(pil)

    def __call__(self, batch: torch.Tensor) -> torch.Tensor:
        outs = []
        for img in batch:
            if self.pil:
                outs.append(_from_pil(self.transform(_to_pil(img))))
            else:
                outs.append(self.transform(img))
        if not outs:
            return batch
        same = all(o.shape == batch.shape[1:] for o in outs)
        if same and all(o.dtype == batch.dtype for o in outs):
            return torch.stack(outs).contiguous(memory_format=_layout(batch))
        return torch.stack(outs)

    def __repr__(self) -> str:
        return f"PerSample({_short(self.transform)}{', on PIL images' if self.pil else ''})"


def _layout(batch: torch.Tensor) -> torch.memory_format:
    return torch.channels_last if batch.ndim == 4 and batch.is_contiguous(memory_format=torch.channels_last) \
        and not batch.is_contiguous() else torch.contiguous_format


class AsGivenBatch:
    """A batch transform run as given: ``batch, labels = transform(batch, labels)`` (timm's ``Mixup``, a v2
    ``MixUp`` / ``CutMix`` not mapped, or any callable of that shape)."""

    needs_labels = True

    def __init__(self, transform: Any) -> None:
        self.transform = transform

    def __call__(self, batch: torch.Tensor, labels: Any) -> Tuple[torch.Tensor, Any]:
        return self.transform(batch, labels)

    def __repr__(self) -> str:
        return f"AsGivenBatch({_short(self.transform)})"


def _subset_params(transforms: Sequence[Any], sub: torch.Tensor, g: Optional[torch.Generator]) -> List[Any]:
    # the twins' draws depend on the batch's shape and dtype only: every one drawn on the subset up front
    return [t.make_params(sub, generator=g) for t in transforms]


def _run(transforms: Sequence[Any], sub: torch.Tensor, params: Sequence[Any]) -> torch.Tensor:
    for t, p in zip(transforms, params):
        sub = t.transform(sub, p)
    return sub


def _scatter(batch: torch.Tensor, index: torch.Tensor, sub: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    if out is None:
        out = batch.clone(memory_format=_layout(batch))
    out.index_copy_(0, index.to(batch.device), sub)
    return out


class BatchedRandomApply(nn.Module):
    """torchvision's ``RandomApply(transforms, p)`` with batched twins, the draw per sample: v2 applies when
    ``rand < p``, v1 when ``rand <= p`` (``if self.p < torch.rand(1): return img``); the applied samples go
    through the twins together.

    Params: ``apply`` bool (N,), ``params`` (the twins' params, drawn on the applied samples)."""

    def __init__(self, transforms: Sequence[Any], p: float, v1: bool = False) -> None:
        super().__init__()
        self.transforms, self.p, self.v1 = list(transforms), float(p), bool(v1)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Dict[str, Any]:
        u = torch.rand(batch.shape[0], generator=generator)
        apply = u <= self.p if self.v1 else u < self.p
        sub = batch[apply.nonzero()[:, 0].to(batch.device)]
        return {"apply": apply, "params": _subset_params(self.transforms, sub, generator)}

    def transform(self, batch: torch.Tensor, params: Dict[str, Any]) -> torch.Tensor:
        index = params["apply"].nonzero()[:, 0]
        if index.numel() == 0:
            return batch.clone(memory_format=_layout(batch))
        sub = _run(self.transforms, batch[index.to(batch.device)], params["params"])
        return _scatter(batch, index, sub, None)

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.transform(batch, self.make_params(batch))

    def extra_repr(self) -> str:
        return f"p={self.p}, v1={self.v1}, transforms={self.transforms}"


class BatchedRandomChoice(nn.Module):
    """torchvision's image ``RandomChoice(transforms, p)`` with batched twins, one choice per sample (with
    probabilities ``p``, equal when None: v2's ``multinomial``, v1's ``random.choices``); each twin runs once on
    the samples that chose it.

    Params: ``choice`` int64 (N,), ``params`` (per transform, drawn on the samples that chose it)."""

    def __init__(self, transforms: Sequence[Any], p: Optional[Sequence[float]] = None) -> None:
        super().__init__()
        self.transforms = list(transforms)
        w = [1.0] * len(self.transforms) if p is None else [float(v) for v in p]
        self.p = [v / sum(w) for v in w]

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Dict[str, Any]:
        n = batch.shape[0]
        choice = torch.multinomial(torch.tensor(self.p, dtype=torch.float64).expand(max(n, 1), -1), 1, True,
                                   generator=generator)[:n, 0]
        params = []
        for k, t in enumerate(self.transforms):
            sub = batch[(choice == k).nonzero()[:, 0].to(batch.device)]
            params.append(t.make_params(sub, generator=generator))
        return {"choice": choice, "params": params}

    def transform(self, batch: torch.Tensor, params: Dict[str, Any]) -> torch.Tensor:
        out = None
        for k, t in enumerate(self.transforms):
            index = (params["choice"] == k).nonzero()[:, 0]
            if index.numel():
                out = _scatter(batch, index, t.transform(batch[index.to(batch.device)], params["params"][k]), out)
        return out if out is not None else batch.clone(memory_format=_layout(batch))

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.transform(batch, self.make_params(batch))

    def extra_repr(self) -> str:
        return f"p={self.p}, transforms={self.transforms}"

"""The collate :func:`tensorops.data.from_pipeline` returns (:class:`PipelineCollate`), and the fused collate for
timm's ``interpolation="random"`` (bilinear or bicubic drawn per image: one resampling call per drawn mode)."""
from __future__ import annotations

import copy
import io as _io
from typing import Any, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.utils.data import default_collate

from tensorops.data import augmenting as _augmenting
from tensorops.data import shared_batches as _shared_batches
from tensorops.data.collates import ResizedCropMirrorNormalizeCollate, _encoded, _pairs
from tensorops.data.pipeline_plan import Plan
from tensorops.data.seeding import Seeded
from tensorops.normalize import normalize

__all__ = ["PipelineCollate", "RandomInterpolationCollate"]

_WHERE = "data.from_pipeline: "


class RandomInterpolationCollate(ResizedCropMirrorNormalizeCollate):
    """:class:`ResizedCropMirrorNormalizeCollate` whose interpolation is drawn per image, uniformly among
    ``modes`` (timm's ``RandomResizedCropAndInterpolation(interpolation="random")``: ``random.choice`` of
    bilinear and bicubic per call). Each sample's box comes from its own row of uniforms (the parent's
    ``boxes(sizes, uniforms)``), so a box does not depend on the group it is resampled with; then one resampling
    call per mode over the images that drew it, the uint8 rows put back in sample order, and the augmentations,
    normalize and ``after_normalize`` as the parent's. ``on_error="raise"`` only.

    Draws per batch, from the collate's stream: the uniforms (N, DRAWS), then the modes (N,) int64."""

    def __init__(self, size: Any, mean: Any, std: Any, *, modes: Sequence[str], **kw: Any) -> None:
        super().__init__(size, mean, std, interpolation=modes[0], **kw)
        if self.on_error != "raise":
            raise ValueError(f"{_WHERE}interpolation='random' takes on_error='raise' only")
        self.modes = tuple(modes)

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, Any]:
        images, labels = _pairs(samples, _WHERE)
        n = len(images)
        g = self._rng()
        uniforms = torch.rand(n, self.DRAWS, generator=g, dtype=torch.float64).numpy()
        choice = torch.randint(len(self.modes), (n,), generator=g)
        self.last_modes = choice  # for inspection: the mode each sample of the last batch drew
        parts = []
        for k, mode in enumerate(self.modes):
            index = (choice == k).nonzero()[:, 0]
            if index.numel() == 0:
                continue
            rows = index.numpy()
            sub = copy.copy(self)
            sub.interpolation, sub.augment, sub.after_normalize = mode, (), ()
            sub.mean = sub.std = None
            sub.dtype = torch.uint8
            sub.boxes = (lambda sizes, uniforms_=None, _rows=rows:  # type: ignore[method-assign]
                         self.boxes(sizes, uniforms[_rows]))
            batch, _ = ResizedCropMirrorNormalizeCollate.__call__(sub, [(images[i], 0) for i in rows.tolist()])
            parts.append((index, batch))
        first = parts[0][1]
        full = torch.empty((n,) + tuple(first.shape[1:]), dtype=torch.uint8)
        for index, batch in parts:
            full.index_copy_(0, index, batch)
        return self._complete(full, default_collate(labels))

    def _complete(self, batch: torch.Tensor, labels: Any) -> Tuple[torch.Tensor, Any]:
        if self.augment:
            batch, labels = _augmenting.apply(self.augment, batch, labels, self._rng())
        if self.mean is not None:
            batch = normalize(batch, self.mean, self.std, dtype=self.dtype, memory_format=self.memory_format)
        if self.after_normalize:
            batch, labels = _augmenting.apply(self.after_normalize, batch, labels, self._rng())
        return _shared_batches.shared(batch), labels


def _decoded(item: Any) -> Any:
    """An encoded sample (bytes, a 1-D uint8 tensor or array, a path) as the PIL image ImageFolder would give."""
    if not _encoded(item):
        return item
    from PIL import Image

    if isinstance(item, (str, bytes)) is False and hasattr(item, "__fspath__"):
        item = str(item)
    if isinstance(item, str):
        with Image.open(item) as im:
            return im.convert("RGB")
    data = bytes(np.asarray(item).tobytes()) if isinstance(item, (torch.Tensor, np.ndarray)) else bytes(item)
    with Image.open(_io.BytesIO(data)) as im:
        return im.convert("RGB")


class PipelineCollate(Seeded):
    """A DataLoader ``collate_fn`` that runs a user's pipeline through the fused batch path
    (:func:`tensorops.data.from_pipeline` builds it). ``plan`` (printable; also ``repr``) says what each of the
    pipeline's transforms became and where it runs; ``fused`` is the fused collate
    (:class:`ResizedCropMirrorNormalizeCollate`), or None where the pipeline's geometry could not be fused: then
    each image goes through ``transform`` as given and ``default_collate``, and the batch transforms run after.

    Samples: ``(image, label)`` pairs; images PIL, numpy HWC, uint8 tensors (CHW) or encoded (bytes, 1-D uint8
    tensors, paths: decoded only where each box reads on the fused path)."""

    def __init__(self, plan: Plan, fused: Optional[ResizedCropMirrorNormalizeCollate] = None,
                 transform: Any = None, batch: Sequence[Any] = (), generator: Optional[torch.Generator] = None
                 ) -> None:
        self.plan, self.fused, self.transform = plan, fused, transform
        self.batch = tuple(batch)
        self.generator = generator

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, Any]:
        if self.fused is not None:
            return self.fused(samples)
        images, labels = _pairs(samples, _WHERE)
        batch, labels = default_collate([(self.transform(_decoded(im)), y) for im, y in zip(images, labels)])
        if self.batch:
            batch, labels = _augmenting.apply(self.batch, batch, labels, self._rng())
        return batch, labels

    def loader(self, dataset: Any, **dataloader_kwargs: Any) -> Any:
        """``RecyclingLoader(DataLoader(dataset, collate_fn=self, **dataloader_kwargs))``: the reference script's
        DataLoader line with this collate (the wrapper hands released shared memory back every step)."""
        from torch.utils.data import DataLoader

        from tensorops.data.loaders import RecyclingLoader

        return RecyclingLoader(DataLoader(dataset, collate_fn=self, **dataloader_kwargs))

    def __repr__(self) -> str:
        return str(self.plan)

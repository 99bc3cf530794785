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
from tensorops.data.images import as_image
from tensorops.data.pipeline_plan import Plan
from tensorops.data.seeding import Seeded
from tensorops.normalize import normalize

__all__ = ["PipelineCollate", "RandomInterpolationCollate", "ExactEvalCollate"]

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


class ExactEvalCollate(Seeded):
    """The evaluation collate of :func:`tensorops.data.from_pipeline` (``exact=True``): each batch bit for bit
    what the user's pipeline and ``default_collate`` give.

    Per sample, the user's own transforms up to the crop (``head``: the conversions to a tensor before the
    geometry, applied to PIL images only; ``geometry``: Resize and CenterCrop), so the resize is torchvision's or
    Pillow's own arithmetic on whatever the user's pipeline holds there (uint8 tensors resize with torch's
    integer passes, PIL images with Pillow's). Then the user's conversion to float (``convert``: a transform, or
    ``"div"``: ``ToTensor``'s ``to(default dtype).div(255)``; None: uint8 batches) and ``normalize`` (a
    Normalize, or None), which are elementwise with per-channel constants: a value's result depends only on its
    channel and its uint8 value. ``direct`` = (``"mul"`` or ``"div"``, dtype, mean, std) names the torch ops
    those transforms run (torchvision v2's ``to(dtype).mul_(1 / 255)``, v1's and ToTensor's ``.div(255)``,
    then ``sub_(mean).div_(std)``): when they give the transforms' own results for every uint8 value of every
    channel (checked once, here), each crop is converted in place in its slot of the batch (in the worker's
    shared memory) while it is in cache; otherwise the transforms run as given on the stacked crops. Then
    ``batch`` (MixUp / CutMix twins or callables, from this collate's generator). Encoded samples are decoded as
    ImageFolder's loader decodes them (Pillow, RGB)."""

    def __init__(self, head: Sequence[Any], geometry: Sequence[Any], convert: Any = None, normalize: Any = None,
                 direct: Optional[Tuple[str, torch.dtype, Any, Any]] = None, batch: Sequence[Any] = (),
                 generator: Optional[torch.Generator] = None, channels: int = 3,
                 memory_format: torch.memory_format = torch.contiguous_format) -> None:
        self.head, self.geometry = tuple(head), tuple(geometry)
        self.memory_format = memory_format
        self.convert, self.normalize, self.batch = convert, normalize, tuple(batch)
        self.generator = generator
        self.direct = direct if convert is not None and direct is not None and self._same(direct, channels) else None

    def _as_given(self, batch: torch.Tensor) -> torch.Tensor:
        if self.convert == "div":
            batch = batch.to(torch.get_default_dtype()).div(255)
        elif self.convert is not None:
            batch = self.convert(batch)
        if self.normalize is not None:
            batch = self.normalize(batch)
        return batch.as_subclass(torch.Tensor)

    @staticmethod
    def _in_place(out: torch.Tensor, image: torch.Tensor, direct: Tuple[str, torch.dtype, Any, Any]) -> None:
        scale, _, mean, std = direct
        out.copy_(image)
        if scale == "mul":
            out.mul_(1.0 / 255)
        else:
            out.div_(255)
        if mean is not None:
            out.sub_(mean).div_(std)

    def _same(self, direct: Tuple[str, torch.dtype, Any, Any], channels: int) -> bool:
        scale, dtype, mean, std = direct
        if mean is not None:
            mean = torch.as_tensor(mean, dtype=dtype).view(-1, 1, 1)
            std = torch.as_tensor(std, dtype=dtype).view(-1, 1, 1)
            channels = mean.numel()
        values = torch.arange(256, dtype=torch.uint8).expand(channels, 1, 256).contiguous()
        try:
            theirs = self._as_given(values)
        except Exception:  # noqa: BLE001 (their transforms refuse a plain tensor: run them on the batch)
            return False
        ours = torch.empty(values.shape, dtype=dtype)
        self._in_place(ours, values, (scale, dtype, mean, std))
        if theirs.dtype != ours.dtype or not torch.equal(theirs, ours):
            return False
        self.direct_stats = (mean, std)
        return True

    def crop(self, image: Any) -> torch.Tensor:
        """One sample through the user's transforms up to the crop: a CHW uint8 tensor (a view where it can)."""
        image = _decoded(image)
        pil = hasattr(image, "mode") and hasattr(image, "convert")
        if pil:
            for t in self.head:
                image = t(image)
        elif isinstance(image, np.ndarray):
            image = as_image(image, _WHERE).permute(2, 0, 1)
        for t in self.geometry:
            image = t(image)
        if not isinstance(image, torch.Tensor):  # a PIL crop: PILToTensor's bytes
            image = as_image(image, _WHERE).permute(2, 0, 1)
        if image.dtype != torch.uint8 or image.dim() != 3:
            raise TypeError(f"{_WHERE}the pipeline's crop gave a {image.dtype} tensor of shape {tuple(image.shape)}, "
                            "not a uint8 CHW image")
        return image

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, Any]:
        images, labels = _pairs(samples, _WHERE)
        labels = default_collate(labels)
        if self.direct is not None:
            batch = None
            for k, im in enumerate(images):
                crop = self.crop(im)
                if batch is None:
                    shape = (len(images),) + tuple(crop.shape)
                    batch = _shared_batches.worker_batch(shape, self.direct[1], self.memory_format)
                    batch = torch.empty(shape, dtype=self.direct[1], memory_format=self.memory_format) \
                        if batch is None else batch
                if tuple(crop.shape) != tuple(batch.shape[1:]):
                    raise RuntimeError(f"{_WHERE}sample {k}'s crop has shape {tuple(crop.shape)}, sample 0's "
                                       f"{tuple(batch.shape[1:])}: default_collate stacks equal shapes only")
                self._in_place(batch[k], crop, (self.direct[0], self.direct[1]) + self.direct_stats)
        else:
            crops = [self.crop(im) for im in images]
            batch = torch.stack(crops)
            if type(crops[0]) is not torch.Tensor:  # a tv_tensors.Image: v2 transforms dispatch on the type
                batch = batch.as_subclass(type(crops[0]))
            batch = self._as_given(batch).contiguous(memory_format=self.memory_format)
        if self.batch:
            batch, labels = _augmenting.apply(self.batch, batch, labels, self._rng())
        return _shared_batches.shared(batch), labels


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

"""DataLoader ``collate_fn``s that crop (and resize), mirror and normalize a batch of images in one pass."""
from __future__ import annotations

import os
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch.utils.data import default_collate

from tensorops import _decode_ops
from tensorops._checks import where
from tensorops.crop_mirror_normalize import crop_mirror_normalize
from tensorops.data import augmenting as _augmenting
from tensorops.data import boxes as _boxes
from tensorops.data import shared_batches as _shared_batches
from tensorops.data.images import as_image
from tensorops.data.seeding import Seeded
from tensorops.normalize import normalize
from tensorops.resized_crop_mirror_normalize import resized_crop_mirror_normalize

__all__ = ["CropMirrorNormalizeCollate", "ResizedCropMirrorNormalizeCollate"]

_FN = where("data.CropMirrorNormalizeCollate")


def _pairs(samples: Sequence[Any], where: str) -> Tuple[List[Any], List[Any]]:
    if len(samples) == 0:
        raise ValueError(f"{where}got an empty list of samples")
    images: List[Any] = []
    labels: List[Any] = []
    for k, sample in enumerate(samples):
        if not isinstance(sample, (tuple, list)) or len(sample) != 2:
            raise TypeError(f"{where}sample {k} must be an (image, label) pair, got {type(sample).__name__}")
        images.append(sample[0])
        labels.append(sample[1])
    return images, labels


class _Augmenting(Seeded):
    """What the collates share for ``augment=``: the checks, and the step after the uint8 batch is made."""

    augment: Tuple[Any, ...] = ()
    after_normalize: Tuple[Any, ...] = ()

    def _set_augment(self, augment: Any, where_: str, after_normalize: Any = None) -> None:
        self.augment = _augmenting.as_transforms(augment, where_)
        self.after_normalize = _augmenting.as_transforms(after_normalize, where_, "after_normalize")
        if self.augment and self.pad_channels is not None:
            raise ValueError(f"{where_}pad_channels cannot be combined with augment (the augmentations take 1 or 3 "
                             "channels): pad the normalized batch instead")
        if self.after_normalize and self.mean is None:
            raise ValueError(f"{where_}after_normalize needs the normalized (float) batch: give mean and std")

    def _finish(self, batch: torch.Tensor, labels: Any) -> Tuple[torch.Tensor, Any]:
        """``batch`` (uint8 when ``augment`` is given) after the augmentations, drawn from this collate's stream,
        then normalized when the collate gives float batches, then ``after_normalize``; ``labels`` collated (soft
        labels after MixUp or CutMix)."""
        labels = default_collate(labels) if isinstance(labels, list) else labels
        out = None
        if self.augment:
            if batch.shape[0] > 0:
                batch, labels = _augmenting.apply(self.augment, batch, labels, self._rng())
            if self.mean is not None:
                # in a worker, straight into shared memory (the batch then crosses without a copy)
                mf = _shared_batches.layout_of(batch) if self.memory_format == torch.preserve_format \
                    else self.memory_format
                out = _shared_batches.worker_batch(tuple(batch.shape), self.dtype or torch.get_default_dtype(), mf)
                batch = normalize(batch, self.mean, self.std, dtype=self.dtype, memory_format=self.memory_format,
                                  out=out)
        if self.after_normalize and batch.shape[0] > 0:
            batch, labels = _augmenting.apply(self.after_normalize, batch, labels, self._rng())
        del out  # a block a transform replaced is free again once nothing here holds it (shared_batches)
        # in a worker: into shared memory the worker can reuse; as it is where it is there already (a view of the
        # normalize's block too: a block is reused only once no process can read it)
        return _shared_batches.shared(batch), labels


class CropMirrorNormalizeCollate(_Augmenting):
    """A DataLoader ``collate_fn``: ``(image, label)`` samples of any size become ``(batch, labels)`` with
    ``batch = tensorops.crop_mirror_normalize(images, mean, std, size=size, ...)`` in one pass.

    In training (``train=True``) every sample gets a random crop origin (uniform over the origins that keep the
    crop inside the image) and is mirrored with probability ``mirror_prob``; in evaluation the crop is centred
    and nothing is mirrored. An image smaller than the crop is padded with ``fill`` (``out_of_bounds="pad"``).

    Randomness comes from ``generator`` (a ``torch.Generator``) when given, else from torch's global RNG (which
    DataLoader seeds per worker). With a generator and ``num_workers=0`` the collate draws from it directly; in
    DataLoader workers each worker draws from its own generator seeded from ``generator.initial_seed()`` and the
    worker's seed, which DataLoader draws anew for every epoch: each epoch gets new crops and flips, and a run
    repeats when the DataLoader's seed does (``torch.manual_seed`` first, or ``DataLoader(generator=...)``),
    persistent workers or not, as torch's own per-worker seeding (:mod:`tensorops.data.seeding`).

    Args:
        size: (h, w) of the crop, or an int for a square.
        mean, std: as :func:`tensorops.crop_mirror_normalize` (numbers, C numbers or tensors).
        train: random crops and flips (True) or centred crops (False).
        dim: -3 for CHW images (torchvision.io.decode_image), -1 for HWC (PIL/numpy converted with torch.from_numpy).
        dtype, memory_format, pad_channels, fill: as :func:`tensorops.crop_mirror_normalize`.
        mirror_prob: probability of a horizontal flip in training.
        generator: the source of randomness (see above).
        augment: a transform or a sequence of transforms (e.g. ``tensorops.augment`` policies) applied in order to
            the uint8 crops of the batch, in the worker, before the normalize: see
            :class:`ResizedCropMirrorNormalizeCollate` (``fill`` is then on the uint8 scale: padding happens
            before the augmentations; ``pad_channels`` is not available).
        after_normalize: transforms for the normalized batch (RandomErasing, MixUp / CutMix with
            ``inplace=True``): see :class:`ResizedCropMirrorNormalizeCollate`.

    Example:
        >>> from tensorops.data import CropMirrorNormalizeCollate
        >>> dataset = [(torch.randint(0, 256, (3, 240 + i, 250), dtype=torch.uint8), i) for i in range(8)]
        >>> collate = CropMirrorNormalizeCollate(224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                      generator=torch.Generator().manual_seed(0))
        >>> loader = torch.utils.data.DataLoader(dataset, batch_size=4, collate_fn=collate)  # num_workers as usual
        >>> images, labels = next(iter(loader))
        >>> images.shape, images.dtype, labels
        (torch.Size([4, 3, 224, 224]), torch.float32, tensor([0, 1, 2, 3]))
    """

    def __init__(self, size: Union[int, Tuple[int, int]], mean: Any, std: Any, *, train: bool = True, dim: int = -3,
                 dtype: Optional[torch.dtype] = None, memory_format: torch.memory_format = torch.contiguous_format,
                 pad_channels: Optional[int] = None, fill: float = 0.0, mirror_prob: float = 0.5,
                 generator: Optional[torch.Generator] = None, augment: Any = None,
                 after_normalize: Any = None) -> None:
        self._common(_FN, size, mirror_prob, generator)
        self.mean, self.std = mean, std
        self.train, self.dim, self.dtype = bool(train), dim, dtype
        self.memory_format, self.pad_channels, self.fill = memory_format, pad_channels, fill
        self._set_augment(augment, _FN, after_normalize)

    def draw(self, sizes: Sequence[Tuple[int, int]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(top_left (N, 2) int64, mirror (N,) bool) for images of these (H, W) sizes: random in training,
        centred and unmirrored in evaluation."""
        h, w = self.size
        n = len(sizes)
        H = torch.tensor([s[0] for s in sizes], dtype=torch.int64).view(n)
        W = torch.tensor([s[1] for s in sizes], dtype=torch.int64).view(n)
        if not self.train:
            return torch.stack([(H - h).div(2, rounding_mode="floor"), (W - w).div(2, rounding_mode="floor")], 1), \
                torch.zeros(n, dtype=torch.bool)
        g = self._rng()
        # origins in [min(0, H - h), max(0, H - h)]: inside the image, or centred-ish padding when it is smaller
        lo_y, hi_y = torch.minimum(H - h, torch.zeros_like(H)), torch.maximum(H - h, torch.zeros_like(H))
        lo_x, hi_x = torch.minimum(W - w, torch.zeros_like(W)), torch.maximum(W - w, torch.zeros_like(W))
        u = torch.rand(n, 3, generator=g, dtype=torch.float64)
        y0 = lo_y + (u[:, 0] * (hi_y - lo_y + 1)).floor().to(torch.int64).clamp_max(hi_y - lo_y)
        x0 = lo_x + (u[:, 1] * (hi_x - lo_x + 1)).floor().to(torch.int64).clamp_max(hi_x - lo_x)
        return torch.stack([y0, x0], 1), u[:, 2] < self.mirror_prob

    def __call__(self, samples: Sequence[Tuple[torch.Tensor, Any]]) -> Tuple[torch.Tensor, Any]:
        images, labels = _pairs(samples, _FN)
        sizes = [(im.shape[-2], im.shape[-1]) if self.dim == -3 else (im.shape[-3], im.shape[-2]) for im in images]
        top_left, mirror = self.draw(sizes)
        if self.augment:  # uint8 crops to augment, then normalize: the crop as a box read at scale 1 (nearest)
            h, w = self.size
            boxes = torch.cat([top_left, torch.tensor([[h, w]], dtype=torch.int64).expand(len(sizes), 2)], 1)
            batch = resized_crop_mirror_normalize(
                images, None, None, size=self.size, boxes=boxes.to(torch.float64), mirror=mirror, dim=self.dim,
                interpolation="nearest", dtype=torch.uint8, memory_format=self.memory_format, fill=self.fill,
                out_of_bounds="pad")
            return self._finish(batch, labels)
        batch = crop_mirror_normalize(
            images, self.mean, self.std, dim=self.dim, size=self.size, top_left=top_left, mirror=mirror,
            dtype=self.dtype, memory_format=self.memory_format, pad_channels=self.pad_channels, fill=self.fill,
            out_of_bounds="pad",
        )
        return self._finish(batch, labels)


_RFN = where("data.ResizedCropMirrorNormalizeCollate")


class ResizedCropMirrorNormalizeCollate(_Augmenting):
    """A DataLoader ``collate_fn``: ``(image, label)`` samples of any size become ``(batch, labels)`` in one pass
    of :func:`tensorops.resized_crop_mirror_normalize`.

    Training (``train=True``): torchvision's RandomResizedCrop box per sample (its ``get_params``: area fraction
    uniform in ``scale``, log-uniform aspect ``ratio``, ten tries, then the centre-crop fallback), a horizontal
    flip with probability ``mirror_prob``, resized to ``size`` (``crop_first``: torchvision's ``resized_crop``).
    Evaluation: Resize (the shorter side to ``resize_size``, default ``int(size / 0.875)``, as torchvision's
    ``Resize(int)``) then CenterCrop(``size``), as one fractional box read with ``crop_first=False``.

    Images may be uint8 tensors (CHW with ``dim=-3``, HWC with ``dim=-1``), numpy HWC arrays or PIL images (what
    ``ImageFolder`` gives: no ``ToImage`` needed). Tensors and arrays are read in place; a PIL image is read
    through ``numpy.asarray``, which copies its bytes once; none is permuted by a separate pass. Randomness:
    ``generator`` as :class:`CropMirrorNormalizeCollate`'s (one stream per DataLoader worker and epoch,
    repeatable).

    ``dtype=torch.uint8`` with ``mean=None, std=None`` gives uint8 batches (4x fewer bytes across the worker
    boundary) to normalize in the consumer: :class:`tensorops.data.NormalizingLoader`.

    ``augment``: a transform or a sequence of transforms (``tensorops.augment``'s policies: TrivialAugmentWide,
    RandAugment, ColorJitter, RandomErasing, MixUp, CutMix ...) applied in order to the resized uint8 batch, in the
    same call, in the worker (its CPU): JPEG bytes -> decode + crop + resize (one pass) -> augmentations ->
    normalize. With ``mean, std`` given the batch is made in uint8 first, augmented, then normalized by
    :func:`tensorops.normalize` (two passes instead of the one fused pass that runs when no augment is given).
    The draws come from this collate's generator (``make_params(batch, generator=...)``), after the boxes: per
    worker, new every epoch, repeatable from the seed. A transform that mixes labels (MixUp, CutMix: see
    :mod:`tensorops.data.augmenting`) turns the labels into the soft labels the collate returns. To run the
    augmentations on the GPU instead, give them to :class:`tensorops.data.NormalizingLoader`.

    ``after_normalize``: transforms for the normalized float batch, after ``augment`` and the normalize, from the
    same generator: where torchvision's and timm's recipes put RandomErasing and MixUp / CutMix (``value=0`` then
    means the mean colour, and the noise is on the normalized scale). The batch is the collate's own: give them
    ``inplace=True``. Needs ``mean, std``. Recipe (a) of the pipelines guide::

        ResizedCropMirrorNormalizeCollate(176, mean, std, augment=TrivialAugmentWide(interpolation="bilinear"),
                                          after_normalize=[RandomErasing(0.1, inplace=True),
                                                           RandomChoice([MixUp(0.2, num_classes=1000, inplace=True),
                                                                         CutMix(1.0, num_classes=1000, inplace=True)])])

    Example:
        >>> from tensorops.data import ResizedCropMirrorNormalizeCollate
        >>> dataset = [(torch.randint(0, 256, (3, 300 + 20 * i, 400), dtype=torch.uint8), i) for i in range(8)]
        >>> collate = ResizedCropMirrorNormalizeCollate(224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                             generator=torch.Generator().manual_seed(0))
        >>> loader = torch.utils.data.DataLoader(dataset, batch_size=4, collate_fn=collate)  # or an ImageFolder
        >>> images, labels = next(iter(loader))
        >>> images.shape, images.dtype
        (torch.Size([4, 3, 224, 224]), torch.float32)
    """

    def __init__(self, size: Union[int, Tuple[int, int]], mean: Any, std: Any, *, train: bool = True,
                 scale: Tuple[float, float] = (0.08, 1.0), ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
                 resize_size: Optional[int] = None, interpolation: Any = "bilinear", antialias: bool = True,
                 mirror_prob: float = 0.5, generator: Optional[torch.Generator] = None, dim: int = -3,
                 dtype: Optional[torch.dtype] = None, memory_format: torch.memory_format = torch.contiguous_format,
                 pad_channels: Optional[int] = None, fill: float = 0.0, on_error: str = "raise",
                 strict: bool = False, augment: Any = None, after_normalize: Any = None) -> None:
        self._common(_RFN, size, mirror_prob, generator)
        if on_error not in ("raise", "drop"):
            raise ValueError(f"{_RFN}on_error must be \"raise\" or \"drop\", got {on_error!r}")
        if not isinstance(strict, bool):
            raise TypeError(f"{_RFN}strict must be a bool, got {strict!r}")
        self.on_error, self.strict = on_error, strict
        # encoded samples this process decoded despite libjpeg warnings, through the fallback decoder, or dropped
        self.report = {"warned": 0, "fallback": 0, "dropped": 0}
        if not (len(scale) == 2 and 0 < scale[0] <= scale[1]):
            raise ValueError(f"{_RFN}scale must be (min, max) with 0 < min <= max, got {scale!r}")
        if not (len(ratio) == 2 and 0 < ratio[0] <= ratio[1]):
            raise ValueError(f"{_RFN}ratio must be (min, max) with 0 < min <= max, got {ratio!r}")
        if resize_size is None:
            resize_size = int(min(self.size) / 0.875)
        if isinstance(resize_size, bool) or not isinstance(resize_size, int) or resize_size <= 0:
            raise ValueError(f"{_RFN}resize_size must be a positive int, got {resize_size!r}")
        if (mean is None) != (std is None) or (mean is None and dtype != torch.uint8):
            raise ValueError(f"{_RFN}mean=None and std=None go together, with dtype=torch.uint8")
        self.mean, self.std = mean, std
        self.train = bool(train)
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        self.resize_size = resize_size
        self.interpolation, self.antialias = interpolation, antialias
        self.dim, self.dtype, self.memory_format = dim, dtype, memory_format
        self.pad_channels, self.fill = pad_channels, fill
        self._set_augment(augment, _RFN, after_normalize)

    TRIES = _boxes.TRIES
    DRAWS = _boxes.DRAWS  # uniforms a training sample draws: four per try, then the flip

    def boxes(self, sizes: Sequence[Tuple[int, int]], uniforms: Optional[Any] = None
              ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(boxes (N, 4) float64 of (top, left, height, width), mirror (N,) bool) for images of these (H, W)
        (:mod:`tensorops.data.boxes`). The random numbers are torch's, from the worker's generator, or in training
        the rows of ``uniforms``, an (N, DRAWS) float64 array in [0, 1) (per-sample streams: a row's draws as one
        sample's from its own generator)."""
        n = len(sizes)
        hw = np.asarray(sizes, dtype=np.float64).reshape(n, 2)
        H, W = hw[:, 0], hw[:, 1]
        if not self.train:
            return (torch.from_numpy(_boxes.resize_center_crop_boxes(H, W, self.resize_size, self.size)),
                    torch.zeros(n, dtype=torch.bool))
        tries = self.TRIES
        if uniforms is None:
            u = torch.rand(n * self.DRAWS, generator=self._rng(), dtype=torch.float64).numpy()
            flip, u = u[n * tries * 4:], u[: n * tries * 4]
        else:
            u = np.asarray(uniforms, dtype=np.float64)
            if u.shape != (n, self.DRAWS):
                raise ValueError(f"{_RFN}uniforms must have shape ({n}, {self.DRAWS}), got {u.shape}")
            flip, u = u[:, tries * 4], u[:, : tries * 4]
        mirror = torch.from_numpy(np.ascontiguousarray(flip) < self.mirror_prob)
        boxes = _boxes.random_resized_crop_boxes(H, W, u.reshape(n, tries, 4), self.scale, self.ratio)
        return torch.from_numpy(boxes), mirror

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, Any]:
        images, labels = _pairs(samples, _RFN)
        if all(_encoded(im) for im in images):
            return self._decode(images, labels)
        dim = self.dim
        if not all(isinstance(im, torch.Tensor) for im in images):
            # PIL images and numpy arrays are HWC: every image as an HWC view (tensors of CHW permuted, no copy)
            images = [im.permute(1, 2, 0) if isinstance(im, torch.Tensor) and dim == -3 else as_image(im, _RFN)
                      for im in images]
            dim = -1
        sizes = [(im.shape[-2], im.shape[-1]) if dim == -3 else (im.shape[-3], im.shape[-2]) for im in images]
        boxes, mirror = self.boxes(sizes)
        u8 = bool(self.augment)  # augment: a uint8 batch first (normalized after the augmentations)
        batch = resized_crop_mirror_normalize(
            images, None if u8 else self.mean, None if u8 else self.std, size=self.size, boxes=boxes,
            mirror=mirror, dim=dim, interpolation=self.interpolation, antialias=self.antialias,
            dtype=torch.uint8 if u8 else self.dtype, memory_format=self.memory_format, pad_channels=self.pad_channels,
            fill=self.fill, out_of_bounds="pad", crop_first=self.train,
        )
        return self._finish(batch, labels)

    def _decode(self, items: List[Any], labels: List[Any]) -> Tuple[torch.Tensor, Any]:
        """Encoded samples: :func:`decode_encoded` with this collate's boxes; dropped samples take their labels."""
        named = [os.fspath(it) if isinstance(it, (str, os.PathLike)) else
                 _decode_ops.Unnamed(f"batch index {k}")
                 for k, it in enumerate(items)]
        batch, kept = decode_encoded(self, items, named, self.boxes, _RFN, uint8=bool(self.augment))
        if kept is None:
            return self._finish(batch, labels)
        good = [labels[k] for k in kept]
        return self._finish(batch, default_collate(good) if good else torch.empty(0, dtype=torch.int64))


def decode_encoded(collate: ResizedCropMirrorNormalizeCollate, items: Sequence[Any], names: Sequence[str],
                   draw: Callable[[List[Tuple[int, int]]], Tuple[torch.Tensor, torch.Tensor]], where_: str,
                   uint8: bool = False) -> Tuple[torch.Tensor, Optional[List[int]]]:
    """``collate``'s batch of encoded samples (bytes, 1-D uint8 tensors or arrays, or file paths read here): sizes
    from the headers (:func:`tensorops.io.image_size`), ``(boxes, mirror) = draw(sizes)`` (the same boxes as for
    the decoded images), then :func:`tensorops.decode_resized_crop_mirror_normalize`. ``names`` name the samples
    in errors and warnings, ``where_`` the caller. ``uint8``: a uint8 batch (no normalize, whatever the collate's
    ``mean``, ``std`` and ``dtype``), for the augmentations to run on before the normalize.

    Returns ``(batch, kept)``: ``kept`` is None when every sample is in the batch. With ``collate.on_error ==
    "drop"`` a sample that cannot be read or decoded leaves the batch, with one warning per file (named by its
    path, else by its batch index and a digest of its bytes: another file at the same batch position is another
    file), and ``kept`` lists the indices of the others (a batch of no good sample is an empty batch).
    ``collate.report`` counts, in this process, the files decoded despite libjpeg warnings, those decoded by the
    fallback decoder and those dropped."""
    from tensorops import io
    from tensorops.decode import decode_with_status

    data: List[Any] = []
    sizes: List[Tuple[int, int]] = []
    why: dict = {}
    for k, it in enumerate(items):
        try:
            d = io.read_file(os.fspath(it)) if isinstance(it, (str, os.PathLike)) else it
            H, W, _ = io.image_size(d)
        except (OSError, ValueError) as e:
            if collate.on_error == "raise":
                raise ValueError(f"{where_}sample {k} ({names[k]}): {e}") from None
            why[k] = str(e)
            d, H, W = (it if not isinstance(it, (str, os.PathLike)) else b""), 1, 1
        data.append(d)
        sizes.append((H, W))
    boxes, mirror = draw(sizes)  # every sample draws, failed or not: the same stream either way
    c = collate
    decode_data = [b"" if k in why else d for k, d in enumerate(data)]
    batch, status, texts = decode_with_status(
        decode_data, None if uint8 else c.mean, None if uint8 else c.std, size=c.size, boxes=boxes, mirror=mirror,
        interpolation=c.interpolation, antialias=c.antialias, dtype=torch.uint8 if uint8 else c.dtype,
        memory_format=c.memory_format, pad_channels=c.pad_channels,
        fill=c.fill, out_of_bounds="pad", crop_first=c.train, paths=list(names), strict=c.strict,
        on_error="raise" if c.on_error == "raise" else "fill")
    for k in why:
        status[k] = _decode_ops.FAILED
    c.report["warned"] += int((status == _decode_ops.WARNED).sum())
    c.report["fallback"] += int((status == _decode_ops.FALLBACK).sum())
    failed = status == _decode_ops.FAILED
    if not bool(failed.any()):
        return batch, None
    c.report["dropped"] += int(failed.sum())
    for k in failed.nonzero().flatten().tolist():
        unnamed = isinstance(names[k], _decode_ops.Unnamed)
        raw = _decode_ops.as_bytes(data[k], k) if unnamed else torch.empty(0, dtype=torch.uint8)
        name = f"{names[k]} (bytes {_decode_ops.digest(raw)})" if unnamed else names[k]
        reason = why.get(k) or texts.get(k, "")
        _decode_ops.report_once("dropped", k, names, raw,
                                f"{where_}dropped {name}: it cannot be decoded" + (f" ({reason})" if reason else ""))
    keep = (~failed).nonzero().flatten()
    return batch.index_select(0, keep), keep.tolist()


def _encoded(item: Any) -> bool:
    """An image still encoded: bytes, a 1-D uint8 tensor or array (a file's bytes), or a path to read."""
    if isinstance(item, (bytes, bytearray, memoryview, str, os.PathLike)):
        return True
    if isinstance(item, torch.Tensor):
        return item.dim() == 1 and item.dtype == torch.uint8
    return isinstance(item, np.ndarray) and item.ndim == 1 and item.dtype == np.uint8

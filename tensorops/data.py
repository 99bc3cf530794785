"""DataLoader helpers built on tensorops' kernels."""
from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Sequence, Tuple, Union

import torch
from torch.utils.data import default_collate, get_worker_info

from tensorops._checks import where
from tensorops.crop_mirror_normalize import crop_mirror_normalize
from tensorops.normalize import normalize
from tensorops.resized_crop_mirror_normalize import resized_crop_mirror_normalize

__all__ = ["CropMirrorNormalizeCollate", "ResizedCropMirrorNormalizeCollate", "NormalizingLoader", "as_image"]

_FN = where("data.CropMirrorNormalizeCollate")


class _Seeded:
    """A generator per DataLoader worker, seeded from ``generator`` and the worker id (None: torch's global RNG,
    which DataLoader seeds per worker)."""

    generator: Optional[torch.Generator]
    _worker_generator: Optional[torch.Generator] = None
    _worker_id: Optional[int] = None

    def _rng(self) -> Optional[torch.Generator]:
        if self.generator is None:
            return None
        info = get_worker_info()
        if info is None:
            return self.generator
        if self._worker_generator is None or self._worker_id != info.id:
            seed = (self.generator.initial_seed() * 1000003 + info.id + 1) % (2**63)
            self._worker_generator = torch.Generator().manual_seed(seed)
            self._worker_id = info.id
        return self._worker_generator

    def _common(self, where_: str, size: Any, mirror_prob: Any, generator: Any) -> None:
        """Checks and sets what every collate takes: ``size``, ``mirror_prob`` and ``generator``."""
        if isinstance(size, int) and not isinstance(size, bool):
            size = (size, size)
        if not (isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
            raise ValueError(f"{where_}size must be a positive int or (h, w), got {size!r}")
        if not 0.0 <= float(mirror_prob) <= 1.0:
            raise ValueError(f"{where_}mirror_prob must be in [0, 1], got {mirror_prob!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"{where_}generator must be a torch.Generator, got {generator!r}")
        self.size = (int(size[0]), int(size[1]))
        self.mirror_prob = float(mirror_prob)
        self.generator = generator


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


class CropMirrorNormalizeCollate(_Seeded):
    """A DataLoader ``collate_fn``: ``(image, label)`` samples of any size become ``(batch, labels)`` with
    ``batch = tensorops.crop_mirror_normalize(images, mean, std, size=size, ...)`` in one pass.

    In training (``train=True``) every sample gets a random crop origin (uniform over the origins that keep the
    crop inside the image) and is mirrored with probability ``mirror_prob``; in evaluation the crop is centred
    and nothing is mirrored. An image smaller than the crop is padded with ``fill`` (``out_of_bounds="pad"``).

    Randomness comes from ``generator`` (a ``torch.Generator``) when given, else from torch's global RNG (which
    DataLoader seeds per worker). With a generator, each worker process of a DataLoader draws from its own
    generator seeded from ``generator.initial_seed()`` and the worker id, so runs with the same seed and the
    same ``num_workers`` give the same batches.

    Args:
        size: (h, w) of the crop, or an int for a square.
        mean, std: as :func:`tensorops.crop_mirror_normalize` (numbers, C numbers or tensors).
        train: random crops and flips (True) or centred crops (False).
        dim: -3 for CHW images (torchvision.io.decode_image), -1 for HWC (PIL/numpy converted with torch.from_numpy).
        dtype, memory_format, pad_channels, fill: as :func:`tensorops.crop_mirror_normalize`.
        mirror_prob: probability of a horizontal flip in training.
        generator: the source of randomness (see above).

    Example:
        >>> collate = CropMirrorNormalizeCollate(224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                      generator=torch.Generator().manual_seed(0))
        >>> loader = torch.utils.data.DataLoader(dataset, batch_size=32, collate_fn=collate, num_workers=2)
        >>> images, labels = next(iter(loader))  # (32, 3, 224, 224) float32, (32,)
    """

    def __init__(
        self,
        size: Union[int, Tuple[int, int]],
        mean: Any,
        std: Any,
        *,
        train: bool = True,
        dim: int = -3,
        dtype: Optional[torch.dtype] = None,
        memory_format: torch.memory_format = torch.contiguous_format,
        pad_channels: Optional[int] = None,
        fill: float = 0.0,
        mirror_prob: float = 0.5,
        generator: Optional[torch.Generator] = None,
    ) -> None:
        self._common(_FN, size, mirror_prob, generator)
        self.mean, self.std = mean, std
        self.train, self.dim, self.dtype = bool(train), dim, dtype
        self.memory_format, self.pad_channels, self.fill = memory_format, pad_channels, fill

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
        batch = crop_mirror_normalize(
            images, self.mean, self.std, dim=self.dim, size=self.size, top_left=top_left, mirror=mirror,
            dtype=self.dtype, memory_format=self.memory_format, pad_channels=self.pad_channels, fill=self.fill,
            out_of_bounds="pad",
        )
        return batch, default_collate(labels)


_RFN = where("data.ResizedCropMirrorNormalizeCollate")


def as_image(sample: Any, where_: str = "") -> torch.Tensor:
    """A decoded image as an HWC uint8 tensor without a permuting copy: a PIL image through its array interface
    (one copy of its bytes; modes other than RGB, RGBA and L are converted to RGB first), a numpy HWC (or H, W)
    array as a view, a tensor as it is."""
    if isinstance(sample, torch.Tensor):
        return sample
    import numpy as np

    if hasattr(sample, "mode") and hasattr(sample, "size") and hasattr(sample, "convert"):  # a PIL image
        if sample.mode not in ("RGB", "RGBA", "L"):
            sample = sample.convert("RGB")
        array = np.asarray(sample)
    elif isinstance(sample, np.ndarray):
        array = sample
    else:
        raise TypeError(f"{where_}an image must be a torch.Tensor, a numpy array or a PIL image, got "
                        f"{type(sample).__name__}")
    if array.ndim == 2:
        array = array[:, :, None]
    with warnings.catch_warnings():  # read-only arrays (PIL's) are only read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)


class ResizedCropMirrorNormalizeCollate(_Seeded):
    """A DataLoader ``collate_fn``: ``(image, label)`` samples of any size become ``(batch, labels)`` in one pass
    of :func:`tensorops.resized_crop_mirror_normalize`.

    Training (``train=True``): torchvision's RandomResizedCrop box per sample (its ``get_params``: area fraction
    uniform in ``scale``, log-uniform aspect ``ratio``, ten tries, then the centre-crop fallback), a horizontal
    flip with probability ``mirror_prob``, resized to ``size`` (``crop_first``: torchvision's ``resized_crop``).
    Evaluation: Resize (the shorter side to ``resize_size``, default ``int(size / 0.875)``, as torchvision's
    ``Resize(int)``) then CenterCrop(``size``), as one fractional box read with ``crop_first=False``.

    Images may be uint8 tensors (CHW with ``dim=-3``, HWC with ``dim=-1``), numpy HWC arrays or PIL images (what
    ``ImageFolder`` gives: no ``ToImage`` needed; read in place, never permuted by a separate pass). Randomness:
    ``generator`` as :class:`CropMirrorNormalizeCollate`'s (one stream per DataLoader worker, repeatable).

    ``dtype=torch.uint8`` with ``mean=None, std=None`` gives uint8 batches (4x fewer bytes across the worker
    boundary) to normalize in the consumer: :class:`NormalizingLoader`.

    Example:
        >>> collate = ResizedCropMirrorNormalizeCollate(224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
        ...                                             generator=torch.Generator().manual_seed(0))
        >>> loader = torch.utils.data.DataLoader(image_folder, batch_size=32, collate_fn=collate, num_workers=2)
        >>> images, labels = next(iter(loader))  # (32, 3, 224, 224) float32, (32,)
    """

    def __init__(
        self,
        size: Union[int, Tuple[int, int]],
        mean: Any,
        std: Any,
        *,
        train: bool = True,
        scale: Tuple[float, float] = (0.08, 1.0),
        ratio: Tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0),
        resize_size: Optional[int] = None,
        interpolation: Any = "bilinear",
        antialias: bool = True,
        mirror_prob: float = 0.5,
        generator: Optional[torch.Generator] = None,
        dim: int = -3,
        dtype: Optional[torch.dtype] = None,
        memory_format: torch.memory_format = torch.contiguous_format,
        pad_channels: Optional[int] = None,
        fill: float = 0.0,
    ) -> None:
        self._common(_RFN, size, mirror_prob, generator)
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

    TRIES = 10  # RandomResizedCrop.get_params' tries
    DRAWS = TRIES * 4 + 1  # uniforms a training sample draws: four per try, then the flip

    def boxes(self, sizes: Sequence[Tuple[int, int]], uniforms: Optional[Any] = None
              ) -> Tuple[torch.Tensor, torch.Tensor]:
        """(boxes (N, 4) float64 of (top, left, height, width), mirror (N,) bool) for images of these (H, W).
        The arithmetic is numpy's on the batch (a few dozen torch ops on 32 numbers cost ~0.4 ms a batch, more
        than numpy's); the random numbers are torch's, from the worker's generator, or in training the rows of
        ``uniforms``, an (N, DRAWS) float64 array in [0, 1) (per-sample streams: a row's draws as one sample's
        from its own generator)."""
        import numpy as np

        n = len(sizes)
        hw = np.asarray(sizes, dtype=np.float64).reshape(n, 2)
        H, W = hw[:, 0], hw[:, 1]
        if not self.train:
            # Resize(resize_size): the shorter side to resize_size, the longer int(resize_size * long / short)
            short = np.minimum(H, W)
            r = float(self.resize_size)
            new_h = np.where(H <= W, r, np.floor(r * H / short))
            new_w = np.where(H <= W, np.floor(r * W / short), r)
            ch, cw = self.size
            top = np.round((new_h - ch) / 2.0)  # CenterCrop's int(round((H - h) / 2))
            left = np.round((new_w - cw) / 2.0)
            sy, sx = H / new_h, W / new_w
            boxes = np.stack([top * sy, left * sx, ch * sy, cw * sx], 1)
            return torch.from_numpy(boxes), torch.zeros(n, dtype=torch.bool)
        # RandomResizedCrop.get_params for every sample at once: ten tries each, the first that fits wins
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
        u = u.reshape(n, tries, 4)
        area = (H * W)[:, None]
        target = area * (self.scale[0] + u[..., 0] * (self.scale[1] - self.scale[0]))
        lr0, lr1 = math.log(self.ratio[0]), math.log(self.ratio[1])
        aspect = np.exp(lr0 + u[..., 1] * (lr1 - lr0))
        cw = np.round(np.sqrt(target * aspect))
        chh = np.round(np.sqrt(target / aspect))
        fits = (cw > 0) & (cw <= W[:, None]) & (chh > 0) & (chh <= H[:, None])
        k = fits.argmax(1)  # the first try that fits (0 where none does: the fallback below)
        rows = np.arange(n)
        h, w = chh[rows, k], cw[rows, k]
        top = np.minimum(np.floor(u[rows, k, 2] * (H - h + 1)), H - h)
        left = np.minimum(np.floor(u[rows, k, 3] * (W - w + 1)), W - w)
        # the fallback: the whole image cut to the ratio range, centred
        in_ratio = W / H
        fw = np.where(in_ratio > self.ratio[1], np.round(H * self.ratio[1]), W)
        fh = np.where(in_ratio < self.ratio[0], np.round(W / self.ratio[0]), H)
        fallback = ~fits.any(1)
        h, w = np.where(fallback, fh, h), np.where(fallback, fw, w)
        top = np.where(fallback, np.floor((H - fh) / 2), top)
        left = np.where(fallback, np.floor((W - fw) / 2), left)
        return torch.from_numpy(np.stack([top, left, h, w], 1)), mirror

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, Any]:
        images, labels = _pairs(samples, _RFN)
        dim = self.dim
        if not all(isinstance(im, torch.Tensor) for im in images):
            # PIL images and numpy arrays are HWC: every image as an HWC view (tensors of CHW permuted, no copy)
            images = [im.permute(1, 2, 0) if isinstance(im, torch.Tensor) and dim == -3 else as_image(im, _RFN)
                      for im in images]
            dim = -1
        sizes = [(im.shape[-2], im.shape[-1]) if dim == -3 else (im.shape[-3], im.shape[-2]) for im in images]
        boxes, mirror = self.boxes(sizes)
        batch = resized_crop_mirror_normalize(
            images, self.mean, self.std, size=self.size, boxes=boxes, mirror=mirror, dim=dim,
            interpolation=self.interpolation, antialias=self.antialias, dtype=self.dtype,
            memory_format=self.memory_format, pad_channels=self.pad_channels, fill=self.fill, out_of_bounds="pad",
            crop_first=self.train,
        )
        return batch, default_collate(labels)


class NormalizingLoader:
    """Wraps a DataLoader whose batches carry uint8 images (``dtype=torch.uint8`` collates) and normalizes each
    batch as it arrives in the consumer: the workers ship 4x fewer bytes than float batches (a fresh float32
    shared-memory batch costs more to place than the collate itself).

    On the CPU (``device=None``) each batch is normalized in the main process by :func:`tensorops.normalize`.
    With a CUDA ``device`` the next batch is copied from pinned memory (``non_blocking``) and normalized on a side
    stream while the current one is used; the batch handed over is ready on the current stream (it waits for
    the side stream and the batch's memory is recorded on the current stream).

    Args:
        loader: any iterable of batches: a tensor, or a tuple/list/dict holding the images at ``image_key``.
        mean, std, dtype, memory_format: as :func:`tensorops.normalize` (images uint8 -> /255).
        device: None (CPU) or a CUDA device.
        image_key: where the images are in each batch (0 for ``(images, labels)``).

    Example:
        >>> collate = ResizedCropMirrorNormalizeCollate(224, None, None, dtype=torch.uint8)
        >>> loader = NormalizingLoader(DataLoader(ds, batch_size=32, collate_fn=collate, num_workers=2),
        ...                            [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], device="cuda")
        >>> for images, labels in loader: ...  # float32 (32, 3, 224, 224) on the GPU
    """

    def __init__(self, loader: Any, mean: Any, std: Any, *, device: Any = None, dtype: Optional[torch.dtype] = None,
                 memory_format: torch.memory_format = torch.contiguous_format, image_key: Any = 0) -> None:
        self.loader, self.mean, self.std = loader, mean, std
        self.device = None if device is None else torch.device(device)
        if self.device is not None and self.device.type not in ("cuda", "cpu"):
            raise ValueError(f"{where('data.NormalizingLoader')}device must be None, 'cpu' or a CUDA device, got {device!r}")
        if self.device is not None and self.device.type == "cpu":
            self.device = None
        self.dtype, self.memory_format, self.image_key = dtype, memory_format, image_key

    def __len__(self) -> int:
        return len(self.loader)

    def _images(self, batch: Any) -> torch.Tensor:
        images = batch if isinstance(batch, torch.Tensor) else batch[self.image_key]
        if not isinstance(images, torch.Tensor):
            raise TypeError(f"{where('data.NormalizingLoader')}batch[{self.image_key!r}] must be a tensor, got "
                            f"{type(images).__name__}")
        return images

    def _replace(self, batch: Any, images: torch.Tensor) -> Any:
        if isinstance(batch, torch.Tensor):
            return images
        if isinstance(batch, dict):
            return {**batch, self.image_key: images}
        items = list(batch)
        items[self.image_key] = images
        return tuple(items) if isinstance(batch, tuple) else items

    def _normalize(self, images: torch.Tensor) -> torch.Tensor:
        return normalize(images, self.mean, self.std, dtype=self.dtype, memory_format=self.memory_format)

    def __iter__(self):
        if self.device is None:
            for batch in self.loader:
                yield self._replace(batch, self._normalize(self._images(batch)))
            return
        side = torch.cuda.Stream(self.device)
        pending = None
        for batch in self.loader:
            images = self._images(batch)
            with torch.cuda.stream(side):
                src = images if images.is_pinned() or images.device.type == "cuda" else images.pin_memory()
                ready = self._normalize(src.to(self.device, non_blocking=True))
            if pending is not None:
                yield self._handover(*pending, side)
            pending = (batch, ready)
        if pending is not None:
            yield self._handover(*pending, side)

    def _handover(self, batch: Any, images: torch.Tensor, side: "torch.cuda.Stream") -> Any:
        current = torch.cuda.current_stream(self.device)
        current.wait_stream(side)
        images.record_stream(current)
        return self._replace(batch, images)

"""DataLoader helpers built on tensorops' kernels."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import torch
from torch.utils.data import default_collate, get_worker_info

from tensorops._checks import where
from tensorops.crop_mirror_normalize import crop_mirror_normalize

__all__ = ["CropMirrorNormalizeCollate"]

_FN = where("data.CropMirrorNormalizeCollate")


class CropMirrorNormalizeCollate:
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
        if isinstance(size, int) and not isinstance(size, bool):
            size = (size, size)
        if not (isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
            raise ValueError(f"{_FN}size must be a positive int or (h, w), got {size!r}")
        if not 0.0 <= float(mirror_prob) <= 1.0:
            raise ValueError(f"{_FN}mirror_prob must be in [0, 1], got {mirror_prob!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"{_FN}generator must be a torch.Generator, got {generator!r}")
        self.size = (int(size[0]), int(size[1]))
        self.mean, self.std = mean, std
        self.train, self.dim, self.dtype = bool(train), dim, dtype
        self.memory_format, self.pad_channels, self.fill = memory_format, pad_channels, fill
        self.mirror_prob = float(mirror_prob)
        self.generator = generator
        self._worker_generator: Optional[torch.Generator] = None
        self._worker_id: Optional[int] = None

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
        if len(samples) == 0:
            raise ValueError(f"{_FN}got an empty list of samples")
        images: List[torch.Tensor] = []
        labels: List[Any] = []
        for k, sample in enumerate(samples):
            if not isinstance(sample, (tuple, list)) or len(sample) != 2:
                raise TypeError(f"{_FN}sample {k} must be an (image, label) pair, got "
                                f"{type(sample).__name__}")
            images.append(sample[0])
            labels.append(sample[1])
        sizes = [(im.shape[-2], im.shape[-1]) if self.dim == -3 else (im.shape[-3], im.shape[-2]) for im in images]
        top_left, mirror = self.draw(sizes)
        batch = crop_mirror_normalize(
            images, self.mean, self.std, dim=self.dim, size=self.size, top_left=top_left, mirror=mirror,
            dtype=self.dtype, memory_format=self.memory_format, pad_channels=self.pad_channels, fill=self.fill,
            out_of_bounds="pad",
        )
        return batch, default_collate(labels)

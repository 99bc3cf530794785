"""Datasets for the DataLoader tests: importable by name, so a DataLoader with the spawn start method can
pickle them into its workers (a class defined inside a test function cannot be)."""
from __future__ import annotations

import torch

import tensorops

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def image(i: int, shape=(3, 24, 20)) -> torch.Tensor:
    """The i-th sample: a uint8 CHW image, the same in every process."""
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(1000 + i))


class NormalizedImages(torch.utils.data.Dataset):
    """Decoded uint8 images normalized in the worker with tensorops.Normalize; with clamp/cat/split in the build,
    also clamped to [-2, 2], split into channels and concatenated back in BGR order (every op in a worker)."""

    def __init__(self, n: int = 24, use_all_ops: bool = True) -> None:
        self.n = n
        self.norm = tensorops.Normalize(MEAN, STD)
        self.use_all_ops = use_all_ops and all(hasattr(tensorops, k) for k in ("clamp", "cat", "split"))

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        y = self.norm(image(i))
        if self.use_all_ops:
            y = tensorops.clamp(y, min=-2.0, max=2.0)
            r, g, b = tensorops.split(y, 1, dim=0)
            y = tensorops.cat([b, g, r], dim=0)
        return y, i

    def expected(self, i: int) -> torch.Tensor:
        """The same sample through native torch (float64 math, then float32)."""
        m = torch.tensor(MEAN, dtype=torch.float64).view(3, 1, 1)
        s = torch.tensor(STD, dtype=torch.float64).view(3, 1, 1)
        y = ((image(i).double() / 255 - m) / s).float()
        if self.use_all_ops:
            y = y.clamp(-2.0, 2.0).flip(0)
        return y

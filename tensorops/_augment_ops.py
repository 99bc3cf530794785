"""tensorops.augment's registrations on the compiled ops: the fake kernels (shape, dtype and layout without
data), so that torch.compile and export trace the augmentation ops. uint8 in, uint8 out: no derivatives."""
from __future__ import annotations

import torch

from tensorops import _extension


def _like(batch: torch.Tensor) -> torch.Tensor:
    cl = batch.dim() == 4 and batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous()
    return torch.empty_like(batch, memory_format=torch.channels_last if cl else torch.contiguous_format)


def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "augment_apply")
    def _(batch, ops, params, interpolation, fill):
        return _like(batch)

    @torch.library.register_fake(lib + "augment_erase")
    def _(batch, boxes, value):
        return _like(batch)

    @torch.library.register_fake(lib + "augment_mix")
    def _(batch, augmented, weights):
        return _like(batch)


if _extension.is_compiled():
    _register()

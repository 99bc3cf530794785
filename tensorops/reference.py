"""Pure-torch implementations of every tensorops op.

They are the fallback when the compiled extension is missing and the oracle the tests compare against. Each
takes arguments already checked and resolved by the public wrapper (tensorops/<family>.py).
"""
from __future__ import annotations

from typing import Sequence, Tuple, Union

import torch

Stat = Union[Sequence[float], torch.Tensor]


def acc_dtype(out_dtype: torch.dtype) -> torch.dtype:
    """The dtype tensorops computes in for a given output dtype: float64 for float64, float32 otherwise."""
    return torch.float64 if out_dtype == torch.float64 else torch.float32


def _stat_view(stat: Stat, input: torch.Tensor, dim: int, acc: torch.dtype) -> torch.Tensor:
    if isinstance(stat, torch.Tensor):
        return stat.to(acc)
    shape = [1] * input.dim()
    shape[dim] = len(stat)
    return torch.tensor(list(stat), dtype=acc, device=input.device).view(shape)


def normalize(
    input: torch.Tensor,
    mean: Stat,
    std: Stat,
    *,
    dim: int,
    scale: float,
    dtype: torch.dtype,
    memory_format: torch.memory_format = torch.preserve_format,
) -> torch.Tensor:
    """``(input * scale - mean) / std`` with native torch ops, computed in ``acc_dtype(dtype)``.

    ``mean``/``std`` are either sequences of 1 or C floats laid along ``dim`` (``dim`` non-negative) or tensors of
    input's rank that broadcast to input's shape.
    """
    acc = acc_dtype(dtype)
    m = _stat_view(mean, input, dim, acc)
    s = _stat_view(std, input, dim, acc)
    out = (input.to(acc) * scale - m) / s
    out = out.to(dtype)
    if memory_format != torch.preserve_format:
        return out.contiguous(memory_format=memory_format)
    # torch's elementwise ops follow input's layout for dense inputs: so do the kernels (empty_like)
    like = torch.empty_like(input, dtype=dtype)
    return like.copy_(out) if like.stride() != out.stride() else out


# ---- cat / split -----------------------------------------------------------------------------------------------
def cat(tensors: Sequence[torch.Tensor], dim: int) -> torch.Tensor:
    """``torch.cat``: the fallback of ``tensorops.cat`` and its oracle."""
    return torch.cat(list(tensors), dim)


def split(tensor: torch.Tensor, sizes: Sequence[int], dim: int) -> Tuple[torch.Tensor, ...]:
    """``torch.split`` with every piece a contiguous copy (``torch.split_with_sizes_copy``)."""
    return tuple(torch.split_with_sizes_copy(tensor, list(sizes), dim))

"""Pure-torch implementations of every tensorops op.

They are the fallback when the compiled extension is missing and the oracle the tests compare against. Each
takes arguments already checked and resolved by the public wrapper (tensorops/<family>.py).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

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


# ---- clamp -----------------------------------------------------------------------------------------------------
Bound = Union[None, bool, int, float, torch.Tensor]


def clamp(input: torch.Tensor, min: Bound = None, max: Bound = None) -> torch.Tensor:
    """``torch.clamp`` itself: the semantics tensorops.clamp reproduces (bounds both numbers or both tensors)."""
    return torch.clamp(input, min, max)


def clamp_(input: torch.Tensor, min: Bound = None, max: Bound = None) -> torch.Tensor:
    """``Tensor.clamp_`` itself."""
    return input.clamp_(min, max)


def clamp_backward(
    grad: torch.Tensor,
    input: torch.Tensor,
    min: Optional[torch.Tensor],
    max: Optional[torch.Tensor],
    output_mask: Sequence[bool],
    create_graph: bool = False,
) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], Optional[torch.Tensor]]:
    """Gradients of ``torch.clamp(input, min, max)`` (tensor bounds, or numbers) as torch's autograd computes
    them, each in its tensor's shape and dtype (None where not asked for). With ``create_graph`` the result is
    differentiable (double backward) with respect to grad and to the tensors that require grad."""
    with torch.enable_grad():
        leaves = []
        for t, m in zip((input, min, max), output_mask):
            if not isinstance(t, torch.Tensor):
                leaves.append(t)
            elif create_graph and t.requires_grad:
                leaves.append(t)  # keep the graph that leads to t
            else:
                leaves.append(t.detach().requires_grad_(bool(m)))
        out = torch.clamp(*leaves)
        wanted = [t for t, m in zip(leaves, output_mask) if isinstance(t, torch.Tensor) and m]
        grads = iter(
            torch.autograd.grad(out, wanted, grad, allow_unused=True, create_graph=create_graph) if wanted else ()
        )
    result = []
    for t, m in zip(leaves, output_mask):
        g = next(grads) if isinstance(t, torch.Tensor) and m else None
        if g is None and isinstance(t, torch.Tensor) and m:
            g = torch.zeros_like(t)
        result.append(g)
    return result[0], result[1], result[2]


# ---- cat / split -----------------------------------------------------------------------------------------------
def cat(tensors: Sequence[torch.Tensor], dim: int) -> torch.Tensor:
    """``torch.cat``: the fallback of ``tensorops.cat`` and its oracle."""
    return torch.cat(list(tensors), dim)


def split(tensor: torch.Tensor, sizes: Sequence[int], dim: int) -> Tuple[torch.Tensor, ...]:
    """``torch.split`` with every piece a contiguous copy (``torch.split_with_sizes_copy``)."""
    return tuple(torch.split_with_sizes_copy(tensor, list(sizes), dim))


# ---- crop_mirror_normalize -------------------------------------------------------------------------------------
def crop_mirror_normalize(
    images: Union[torch.Tensor, Sequence[torch.Tensor]],
    mean: torch.Tensor,
    std: torch.Tensor,
    top_left: torch.Tensor,
    mirror: torch.Tensor,
    size: Sequence[int],
    *,
    dim: int,
    scale: float,
    dtype: torch.dtype,
    memory_format: torch.memory_format,
    channels: int,
    fill: float,
    pad: bool,
) -> torch.Tensor:
    """Slices, flips, ``torch.stack`` and the normalize formula: the fallback of ``tensorops.crop_mirror_normalize``
    and its oracle. ``images`` is a batch or a list of 3-d images with the channel at ``dim`` (-3 or -1);
    ``mean``/``std`` are (N or 1, C or 1) tensors; ``top_left`` (N, 2) and ``mirror`` (N,) are CPU tensors. Crop
    areas outside an image (``pad``) and channels past C hold ``fill``. Differentiable in images, mean and std."""
    h, w = int(size[0]), int(size[1])
    acc = acc_dtype(dtype)
    origins = top_left.tolist()
    flips = mirror.tolist()
    crops = []
    for n, image in enumerate(images):
        chw = image if dim == -3 else image.permute(2, 0, 1)
        C, H, W = chw.shape
        y0, x0 = origins[n]
        if not pad and not (y0 >= 0 and x0 >= 0 and y0 + h <= H and x0 + w <= W):
            raise ValueError(
                f"tensorops.crop_mirror_normalize(): top_left: sample {n}: the crop at top_left ({y0}, {x0}) of size ({h}, {w}) "
                f"leaves its {H}x{W} image (pass out_of_bounds=\"pad\" to fill outside)"
            )
        ya, yb, xa, xb = max(y0, 0), min(y0 + h, H), max(x0, 0), min(x0 + w, W)
        m = mean[n if mean.shape[0] > 1 else 0].to(acc).view(-1, 1, 1)
        s = std[n if std.shape[0] > 1 else 0].to(acc).view(-1, 1, 1)
        if yb <= ya or xb <= xa:  # nothing of the image in the crop
            crop = torch.full((C, h, w), fill, dtype=acc, device=chw.device)
        else:
            crop = (chw[:, ya:yb, xa:xb].to(acc) * scale - m) / s
            if (ya - y0, y0 + h - yb, xa - x0, x0 + w - xb) != (0, 0, 0, 0):
                crop = torch.nn.functional.pad(crop, (xa - x0, x0 + w - xb, ya - y0, y0 + h - yb), value=fill)
        if flips[n]:
            crop = crop.flip(-1)
        if channels > C:
            crop = torch.cat([crop, crop.new_full((channels - C, h, w), fill)])
        crops.append(crop)
    if not crops:
        device = images.device if isinstance(images, torch.Tensor) else None
        return torch.empty((0, channels, h, w), dtype=dtype, device=device).contiguous(memory_format=memory_format)
    return torch.stack(crops).to(dtype).contiguous(memory_format=memory_format)


# ---- many-tensor clamp -----------------------------------------------------------------------------------------
def clamp_list(tensors: Sequence[torch.Tensor], min: Bound = None, max: Bound = None) -> list:
    """``[torch.clamp(t, min, max) for t in tensors]``: the fallback of ``tensorops.clamp`` on a list."""
    return [torch.clamp(t, min, max) for t in tensors]


def clamp_list_(tensors: Sequence[torch.Tensor], min: Bound = None, max: Bound = None) -> None:
    """``t.clamp_(min, max)`` for every tensor: the fallback of ``tensorops.clamp_`` on a list."""
    for t in tensors:
        t.clamp_(min, max)

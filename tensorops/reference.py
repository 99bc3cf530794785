"""Pure-torch implementations of every tensorops op.

They are the fallback when the compiled extension is missing and the oracle the tests compare against. Each
takes arguments already checked and resolved by the public wrapper (tensorops/<family>.py).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

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
def _sample_stat(stat: torch.Tensor, n: int, acc: torch.dtype) -> torch.Tensor:
    """Sample n's (C, 1, 1) statistics of a (N or 1, C or 1) tensor."""
    return stat[n if stat.shape[0] > 1 else 0].to(acc).view(-1, 1, 1)


def _finish_sample(v: torch.Tensor, flip: bool, channels: int, fill: float) -> torch.Tensor:
    """A batch op's (C, h, w) sample mirrored where asked, its channels padded to ``channels`` with ``fill``."""
    if flip:
        v = v.flip(-1)
    C, h, w = v.shape
    if channels > C:
        v = torch.cat([v, v.new_full((channels - C, h, w), fill)])
    return v


def _stack_batch(outs: list, images: Any, channels: int, h: int, w: int, dtype: torch.dtype,
                 memory_format: torch.memory_format) -> torch.Tensor:
    """A batch op's samples stacked into its (N, channels, h, w) output (an empty batch keeps the input's device)."""
    if not outs:
        device = images.device if isinstance(images, torch.Tensor) else None
        return torch.empty((0, channels, h, w), dtype=dtype, device=device).contiguous(memory_format=memory_format)
    return torch.stack(outs).to(dtype).contiguous(memory_format=memory_format)


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
        m, s = _sample_stat(mean, n, acc), _sample_stat(std, n, acc)
        if yb <= ya or xb <= xa:  # nothing of the image in the crop
            crop = torch.full((C, h, w), fill, dtype=acc, device=chw.device)
        else:
            crop = (chw[:, ya:yb, xa:xb].to(acc) * scale - m) / s
            if (ya - y0, y0 + h - yb, xa - x0, x0 + w - xb) != (0, 0, 0, 0):
                crop = torch.nn.functional.pad(crop, (xa - x0, x0 + w - xb, ya - y0, y0 + h - yb), value=fill)
        crops.append(_finish_sample(crop, flips[n], channels, fill))
    return _stack_batch(crops, images, channels, h, w, dtype, memory_format)


# ---- resized_crop_mirror_normalize -------------------------------------------------------------------------------
def _cubic(t: torch.Tensor, a: float) -> torch.Tensor:
    """The cubic convolution kernel of parameter ``a`` at distances ``t >= 0`` (Keys; 0 from 2 on)."""
    near = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    far = ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    return torch.where(t < 1.0, near, torch.where(t < 2.0, far, torch.zeros((), dtype=t.dtype)))


def resize_weights(start: float, length: float, out: int, extent: int, interpolation: int, antialias: bool,
                   crop_first: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """One axis of one sample as a dense float64 (out, extent) matrix of resampling weights (rows sum to 1) and
    an (out,) bool mask of the outputs that are ``fill`` (out_of_bounds="pad": sampled outside the image).

    Output i is centred at ``start + (i + 0.5) * scale``, ``scale = length / out`` (align_corners=False);
    bilinear (1) with ``antialias``: torch's antialiased filter (a triangle of half-width max(scale, 1), cut to
    the readable range, divided by its sum); without: torch's two-tap bilinear (source clamped at the range's
    start); bicubic (2) with ``antialias``: the same with the Keys cubic (a = -0.5) of half-width
    2 max(scale, 1); without: torch's four-tap bicubic (a = -0.75, tap indices clamped to the readable range);
    nearest (0): pixel floor(start + i * scale). The readable range is the box's pixels with
    ``crop_first`` (resized_crop), else the whole image. The same formulas as csrc/include/tensorops/resize.h,
    written again with torch ops (the kernels' oracle)."""
    f64 = torch.float64
    scale = length / out if out > 0 else 1.0
    mode = 0 if interpolation == 0 else (2 if antialias else 1) if interpolation == 1 else (4 if antialias else 3)
    half = 2.0 if mode == 4 else 1.0
    wide = mode in (2, 4) and scale >= 1.0
    support, invscale = (half * scale, 1.0 / scale) if wide else (half, 1.0)
    if crop_first:
        lo, hi = max(math.floor(start), 0), min(math.ceil(start + length), extent)
    else:
        lo, hi = 0, extent
    i = torch.arange(out, dtype=f64)
    if mode == 0:  # the product in float32, as torch's nearest_idx
        pos = start + (i.float() * torch.tensor(scale, dtype=torch.float32)).double()
    else:
        pos = start + (i + 0.5) * scale
    x = torch.arange(extent, dtype=f64)
    weights = torch.zeros(out, extent, dtype=f64)
    fill = (pos < 0) | (pos >= extent)
    if hi <= lo:
        return weights, torch.ones(out, dtype=torch.bool)
    if mode == 0:
        idx = pos.floor().clamp(lo, hi - 1).long()
        weights[torch.arange(out), idx] = 1.0
    elif mode == 1:
        src = (pos - 0.5).clamp_min(lo)
        x0 = src.floor()
        frac = src - x0
        one = x0 + 1 >= hi
        first = x0.clamp_max(hi - 1).long()
        rows = torch.arange(out)
        weights[rows, first] = torch.where(one, torch.ones_like(frac), 1.0 - frac)
        second = ~one
        weights[rows[second], first[second] + 1] = frac[second]
    elif mode == 3:
        src = pos - 0.5
        x0 = src.floor()
        rows = torch.arange(out)
        for k in (-1, 0, 1, 2):
            tap = (x0 + k).clamp(lo, hi - 1).long()
            weights.index_put_((rows, tap), _cubic((src - x0 - k).abs(), -0.75), accumulate=True)
    else:
        x0 = (pos - support + 0.5).floor().clamp_min(lo)
        x1 = (pos + support + 0.5).floor().clamp_max(hi)
        inside = (x[None, :] >= x0[:, None]) & (x[None, :] < x1[:, None])
        t = ((x[None, :] + 0.5 - pos[:, None]) * invscale).abs()
        kernel = _cubic(t, -0.5) if mode == 4 else (1.0 - t).clamp_min(0.0)
        weights = torch.where(inside, kernel, torch.zeros((), dtype=f64))
        total = weights.sum(1, keepdim=True)
        fill = fill | (x1 <= x0)
        weights = torch.where(total > 0, weights / total.clamp_min(1e-300), weights)
    weights[fill] = 0.0
    return weights, fill


def resized_crop_mirror_normalize(
    images: Union[torch.Tensor, Sequence[torch.Tensor]],
    mean: torch.Tensor,
    std: torch.Tensor,
    boxes: torch.Tensor,
    mirror: torch.Tensor,
    size: Sequence[int],
    *,
    dim: int,
    scale: float,
    interpolation: int,
    antialias: bool,
    crop_first: bool,
    dtype: torch.dtype,
    memory_format: torch.memory_format,
    channels: int,
    fill: float,
    pad: bool,
) -> torch.Tensor:
    """Dense resampling matrices (:func:`resize_weights`) applied as two matmuls per sample, flips, the
    normalize formula and ``torch.stack``: the fallback of ``tensorops.resized_crop_mirror_normalize`` and its
    oracle. Arguments as the op's schema: ``boxes`` a float64 CPU (N, 4) of (top, left, height, width);
    ``mean``/``std`` (N or 1, C or 1). A uint8 ``dtype`` rounds half up and saturates (no normalization).
    Differentiable in images (and statistics)."""
    h, w = int(size[0]), int(size[1])
    u8 = dtype == torch.uint8
    acc = torch.float32 if u8 else acc_dtype(dtype)
    bx = boxes.tolist()
    flips = mirror.tolist()
    outs = []
    for n, image in enumerate(images):
        chw = image if dim == -3 else image.permute(2, 0, 1)
        H, W = chw.shape[-2:]
        top, left, bh, bw = bx[n]
        if not all(math.isfinite(v) for v in bx[n]) or bh <= 0 or bw <= 0:
            raise ValueError(f"tensorops.resized_crop_mirror_normalize(): boxes: sample {n}: the box (top, left, "
                             f"height, width) = ({top}, {left}, {bh}, {bw}) must be finite with a positive height "
                             f"and width")
        slack = 1e-6
        if not pad and not (top >= -slack and left >= -slack and top + bh <= H + slack and left + bw <= W + slack):
            raise ValueError(f"tensorops.resized_crop_mirror_normalize(): boxes: sample {n}: the box (top, left, "
                             f"height, width) = ({top}, {left}, {bh}, {bw}) leaves its {H}x{W} image (pass "
                             f"out_of_bounds=\"pad\" to fill outside)")
        wy, fy = resize_weights(top, bh, h, H, interpolation, antialias, crop_first)
        wx, fx = resize_weights(left, bw, w, W, interpolation, antialias, crop_first)
        dev = chw.device
        wy, wx = wy.to(dev, acc), wx.to(dev, acc)
        v = wy @ chw.to(acc) @ wx.T  # (C, h, w)
        if interpolation == 2 and chw.dtype in (torch.uint8, torch.uint16):  # as the kernels: the type's range
            v = v.clamp(0, 255 if chw.dtype == torch.uint8 else 65535)
        if u8:
            v = (v + 0.5).floor().clamp(0, 255)
        else:
            v = (v * scale - _sample_stat(mean, n, acc)) / _sample_stat(std, n, acc)
        outside = (fy.to(dev)[:, None] | fx.to(dev)[None, :])
        fill_value = min(max(math.floor(fill + 0.5), 0), 255) if u8 else fill
        v = torch.where(outside, torch.full((), fill_value, dtype=acc, device=dev), v)
        outs.append(_finish_sample(v, flips[n], channels, fill_value))
    return _stack_batch(outs, images, channels, h, w, dtype, memory_format)


# ---- many-tensor clamp -----------------------------------------------------------------------------------------
def clamp_list(tensors: Sequence[torch.Tensor], min: Bound = None, max: Bound = None) -> list:
    """``[torch.clamp(t, min, max) for t in tensors]``: the fallback of ``tensorops.clamp`` on a list."""
    return [torch.clamp(t, min, max) for t in tensors]


def clamp_list_(tensors: Sequence[torch.Tensor], min: Bound = None, max: Bound = None) -> None:
    """``t.clamp_(min, max)`` for every tensor: the fallback of ``tensorops.clamp_`` on a list."""
    for t in tensors:
        t.clamp_(min, max)

"""normalize: ``(input * scale - mean) / std`` in one pass, from uint8, uint16 or floating input to a floating output."""
from __future__ import annotations

import functools
import math
import numbers
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from tensorops import _extension, reference

__all__ = ["normalize"]

Stat = Union[float, Sequence[float], torch.Tensor]
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_FORMATS = (torch.preserve_format, torch.contiguous_format, torch.channels_last, torch.channels_last_3d)
# The lean C++ entry for plain tensors with numbers as statistics (None: not handled there; see py_entry.cpp)
_FAST_NORMALIZE = getattr(_extension._C, "normalize_fast", None)
# Integer inputs the kernels read, with the default scale that maps their range to [0, 1] (what torchvision's
# ToDtype(scale=True) divides by): 8-bit images and 16-bit PNGs.
_INT_SCALES = {torch.uint8: 1.0 / 255.0, torch.uint16: 1.0 / 65535.0}


class DimError(ValueError, IndexError):
    """A ``dim`` out of range for the input: a ValueError naming dim and the input's shape (and an IndexError,
    what torch raises for a dimension out of range)."""


def _check_input(input: torch.Tensor) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"normalize: input must be a torch.Tensor, got {type(input).__name__}")
    if input.dim() == 0:
        raise ValueError("normalize: input must have at least 1 dimension (a channel dim), got a 0-dim tensor")
    if input.dtype not in _INT_SCALES and input.dtype not in _FLOATS:
        raise TypeError(
            "normalize: input must be uint8 or floating (float16, bfloat16, float32, float64), or uint16, "
            f"got {input.dtype}"
        )


def _numbers(name: str, stat: object) -> Optional[List[float]]:
    """A Python number or a sequence of numbers as a list of floats; None if stat is a tensor."""
    if isinstance(stat, torch.Tensor):
        return None
    if isinstance(stat, bool) or isinstance(stat, (str, bytes)):
        raise TypeError(f"normalize: {name} must be a number, a sequence of numbers or a tensor, got {stat!r}")
    if isinstance(stat, numbers.Real):
        values = [float(stat)]
    elif isinstance(stat, Sequence) or hasattr(stat, "__len__"):
        values = []
        for v in stat:  # type: ignore[union-attr]
            if isinstance(v, torch.Tensor) and v.numel() == 1:
                v = v.item()
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"normalize: {name} must hold numbers, got an element {v!r}")
            values.append(float(v))
    else:
        raise TypeError(
            f"normalize: {name} must be a number, a sequence of numbers or a tensor, got {type(stat).__name__}"
        )
    if not values:
        raise ValueError(f"normalize: {name} is empty")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"normalize: {name} has a NaN or infinite value: {values}")
    if name == "std" and any(v == 0 for v in values):
        raise ValueError(f"normalize: std has a zero value: {values}")
    return values


def _stat_tensor(name: str, stat: torch.Tensor, input: torch.Tensor, dim: int) -> torch.Tensor:
    """A statistics tensor viewed with input's rank: 1-D tensors are laid along ``dim`` like a sequence."""
    if stat.is_complex() or stat.dtype == torch.bool:
        raise TypeError(f"normalize: {name} must be a real floating tensor, got {stat.dtype}")
    if not stat.is_floating_point():
        stat = stat.float()
    if stat.device != input.device:
        raise ValueError(f"normalize: {name} is on {stat.device} but input is on {input.device}")
    if stat.dim() > input.dim():
        raise ValueError(
            f"normalize: {name} of shape {tuple(stat.shape)} has more dims than input {tuple(input.shape)}"
        )
    if stat.dim() == 1 and input.dim() > 1:
        shape = [1] * input.dim()
        shape[dim] = stat.shape[0]
        if stat.shape[0] not in (1, input.shape[dim]):
            raise ValueError(
                f"normalize: {name} has {stat.shape[0]} values but input has {input.shape[dim]} channels "
                f"along dim {dim - input.dim()}"
            )
        return stat.view(shape)
    stat = stat.reshape((1,) * (input.dim() - stat.dim()) + tuple(stat.shape))
    for d, (s, n) in enumerate(zip(stat.shape, input.shape)):
        if s not in (1, n):
            raise ValueError(
                f"normalize: {name} of shape {tuple(stat.shape)} does not broadcast to input "
                f"{tuple(input.shape)} (dim {d}: {s} vs {n})"
            )
    return stat


def _check_coefficients(
    mean_values: Optional[List[float]], std_values: List[float], scale: float, dtype: torch.dtype
) -> None:
    """The kernels compute ``x * (scale / std) + (-mean / std)`` in the accumulation dtype: a std so small that
    it rounds to zero there, or that makes a coefficient overflow, would give NaN (inf - inf) where the formula
    has a number. Reject it instead of returning NaN."""
    acc = reference.acc_dtype(dtype)
    info = torch.finfo(acc)
    n = max(len(std_values), len(mean_values) if mean_values is not None else 1)
    for c in range(n):
        s = std_values[c if len(std_values) > 1 else 0]
        m = 0.0 if mean_values is None else mean_values[c if len(mean_values) > 1 else 0]
        if abs(s) < info.tiny or not (abs(scale / s) <= info.max and abs(m / s) <= info.max):
            raise ValueError(
                f"normalize: std value {s!r} is too close to zero for {acc} arithmetic (needs |std| >= "
                f"{info.tiny:.3g}, |scale / std| and |mean / std| <= {info.max:.3g}; mean {m!r}, scale {scale!r})"
            )


# Validated statistics given as numbers, keyed by their values: the checks above cost more than a small
# kernel, and a training loop passes the same numbers on every call.
_NUMBER_STATS: Dict[tuple, Tuple[Optional[List[float]], Optional[List[float]]]] = {}
_PLAIN = (float, int)


def _key(stat: object) -> Optional[tuple]:
    """A hashable key for plain numbers or lists/tuples of plain numbers; None for anything else."""
    tp = type(stat)
    if tp is float or tp is int:
        return (stat,)
    if (tp is list or tp is tuple) and all(type(v) in _PLAIN for v in stat):  # type: ignore[union-attr]
        return tuple(stat)  # type: ignore[arg-type]
    return None


def _number_stats(
    mean: object, std: object, scale: float, dtype: torch.dtype, channels: int, dim: int
) -> Tuple[Optional[List[float]], Optional[List[float]]]:
    """(mean, std) as checked lists of floats, each None where it is a tensor. ``dim`` is negative."""
    km, ks = _key(mean), _key(std)
    key = (km, ks, scale, dtype, channels) if km is not None and ks is not None else None
    if key is not None:
        hit = _NUMBER_STATS.get(key)
        if hit is not None:
            return hit
    mean_values, std_values = _numbers("mean", mean), _numbers("std", std)
    for name, values in (("mean", mean_values), ("std", std_values)):
        if values is not None and len(values) not in (1, channels):
            raise ValueError(
                f"normalize: {name} has {len(values)} values but input has {channels} channels along dim {dim}"
            )
    if std_values is not None:
        _check_coefficients(mean_values, std_values, scale, dtype)
    if key is not None:
        if len(_NUMBER_STATS) >= 256:
            _NUMBER_STATS.clear()
        _NUMBER_STATS[key] = (mean_values, std_values)
    return mean_values, std_values


@functools.lru_cache(maxsize=64)
def _cached_values(values: Tuple[float, ...], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    # sequences mixed with a tensor statistic become a tensor once per (values, device), not per call
    return torch.tensor(values, dtype=dtype).to(device)


def _values_as_tensor(values: List[float], input: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    if torch.compiler.is_compiling():  # traced once into the graph as a constant: no cache needed
        t = torch.tensor(values, dtype=dtype, device=input.device)
    else:
        t = _cached_values(tuple(values), input.device, dtype)
    shape = [1] * input.dim()
    shape[dim] = len(values)
    return t.view(shape)


def normalize(
    input: torch.Tensor,
    mean: Stat,
    std: Stat,
    *,
    dim: int = -3,
    dtype: Optional[torch.dtype] = None,
    scale: Optional[float] = None,
    memory_format: torch.memory_format = torch.preserve_format,
) -> torch.Tensor:
    """``(input * scale - mean) / std`` in one pass over memory.

    Args:
        input: uint8, uint16 or floating tensor with at least one dim, any strides (channels_last, NHWC
            permuted views...).
        mean, std: a number, a sequence of C numbers laid along ``dim``, or a tensor: a 1-D tensor is laid along
            ``dim`` like a sequence; any other tensor must broadcast to input's shape, e.g. ``(N, C, 1, 1)`` for
            per-sample statistics. Gradients flow to statistics tensors that require grad.
        dim: the channel dimension: -3 for CHW/NCHW (the default), -1 for HWC/NHWC.
        dtype: output dtype (float16, bfloat16, float32, float64). Default: float32 for uint8/uint16 input, else
            input's dtype. Arithmetic is float32, float64 when the output is float64.
        scale: multiplies input first. Default: 1/255 for uint8 input, 1/65535 for uint16, 1.0 for floating input.
        memory_format: ``torch.preserve_format`` keeps input's layout; ``torch.contiguous_format`` writes NCHW
            from an NHWC/channels_last input in the same pass (and ``torch.channels_last`` the reverse).

    Returns:
        A tensor of input's shape and ``dtype``.

    Example:
        >>> x = torch.randint(0, 256, (8, 3, 224, 224), dtype=torch.uint8)
        >>> y = tensorops.normalize(x, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        >>> y.dtype, y.shape
        (torch.float32, torch.Size([8, 3, 224, 224]))
    """
    if _FAST_NORMALIZE is not None and not _extension.forward_ad_active() and not torch.compiler.is_compiling():
        result = _FAST_NORMALIZE(input, mean, std, dim, dtype, scale, memory_format)  # None: not handled there
        if result is not None:
            return result
    _check_input(input)
    ndim = input.dim()
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"normalize: dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        hint = ""
        if input.shape[-1] in (1, 3, 4):
            hint = f"; for channels-last input (HWC/NHWC, last dim {input.shape[-1]}) pass dim=-1"
        raise DimError(
            f"normalize: dim {dim} is out of range for input of shape {tuple(input.shape)} with {ndim} "
            f"dimensions{hint}"
        )
    dim = dim % ndim
    if dtype is None:
        dtype = torch.float32 if input.dtype in _INT_SCALES else input.dtype
    elif not isinstance(dtype, torch.dtype) or dtype not in _FLOATS:
        raise TypeError(f"normalize: dtype must be float16, bfloat16, float32 or float64, got {dtype}")
    if scale is None:
        scale = _INT_SCALES.get(input.dtype, 1.0)
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale):
        raise TypeError(f"normalize: scale must be a finite number, got {scale!r}")
    scale = float(scale)
    if memory_format not in _FORMATS:
        raise ValueError(f"normalize: memory_format must be a torch.memory_format, got {memory_format!r}")
    if memory_format == torch.channels_last and ndim != 4:
        raise ValueError(f"normalize: memory_format=torch.channels_last needs a 4-d input, got {ndim} dims")
    if memory_format == torch.channels_last_3d and ndim != 5:
        raise ValueError(f"normalize: memory_format=torch.channels_last_3d needs a 5-d input, got {ndim} dims")

    mean_values, std_values = _number_stats(mean, std, scale, dtype, input.shape[dim], dim - ndim)
    use_kernels = _extension.kernels_for(input.device) and ndim <= _extension.MAX_KERNEL_DIMS
    if mean_values is not None and std_values is not None:
        if use_kernels:
            args = (input, mean_values, std_values, dim, scale, dtype, memory_format)
            if _extension.autograd_not_needed(input):
                with _extension.below_autograd():
                    return torch.ops.tensorops.normalize.default(*args)
            return _extension.differentiable_call(
                torch.ops.tensorops.normalize.default, _Normalize, _normalize_apply_args(*args), args
            )
        return reference.normalize(
            input, mean_values, std_values, dim=dim, scale=scale, dtype=dtype, memory_format=memory_format
        )

    acc = reference.acc_dtype(dtype)
    m = _stat_tensor("mean", mean, input, dim) if mean_values is None else _values_as_tensor(mean_values, input, dim, acc)
    s = _stat_tensor("std", std, input, dim) if std_values is None else _values_as_tensor(std_values, input, dim, acc)
    if use_kernels:
        args = (input, m, s, scale, dtype, memory_format)
        return _extension.differentiable_call(torch.ops.tensorops.normalize_tensor.default, _NormalizeTensor, args)
    return reference.normalize(input, m, s, dim=dim, scale=scale, dtype=dtype, memory_format=memory_format)


# ---- registrations on the compiled ops: fake kernels and autograd ------------------------------------------
def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "normalize")
    def _(input, mean, std, dim, scale, dtype, memory_format):
        return torch.empty_like(input, dtype=dtype, memory_format=memory_format)

    @torch.library.register_fake(lib + "normalize_tensor")
    def _(input, mean, std, scale, dtype, memory_format):
        return torch.empty_like(input, dtype=dtype, memory_format=memory_format)

    @torch.library.register_fake(lib + "normalize_tensor_backward")
    def _(grad, input, mean, std, scale, output_mask):
        shape = torch.broadcast_shapes(mean.shape, std.shape)
        acc = reference.acc_dtype(grad.dtype)
        gi = torch.empty_like(input) if output_mask[0] else input.new_empty((0,))
        return gi, input.new_empty(shape, dtype=acc), input.new_empty(shape, dtype=acc)

    torch.library.register_vmap(lib + "normalize", _normalize_vmap)
    torch.library.register_vmap(lib + "normalize_tensor", _normalize_tensor_vmap)
    _extension.register_autograd_function("normalize", _Normalize, _normalize_apply_args)
    _extension.register_autograd_function("normalize_tensor", _NormalizeTensor, lambda *args: args)


def _normalize_apply_args(input, mean, std, dim, scale, dtype, memory_format):
    return input, _extension.Static((mean, std)), dim, scale, dtype, memory_format


class _Normalize(torch.autograd.Function):
    """Derivatives of normalize with number statistics: the map is linear in input, so its jvp and its
    backward are the same kernel with mean 0 (and differentiable, since that kernel is this op)."""

    @staticmethod
    def forward(input, stats, dim, scale, dtype, memory_format):
        mean, std = stats.value
        with _extension.below_autograd():
            return torch.ops.tensorops.normalize.default(input, mean, std, dim, scale, dtype, memory_format)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, stats, dim, scale, dtype, memory_format = inputs
        ctx.dim, ctx.scale, ctx.std = dim, scale, stats.value[1]
        ctx.input_dtype, ctx.dtype = input.dtype, dtype

    @staticmethod
    def _scaled(ctx, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        # t * scale / std, in the forward's own arithmetic
        args = (t, [0.0], ctx.std, ctx.dim, ctx.scale, dtype, torch.preserve_format)
        op = torch.ops.tensorops.normalize.default
        return _extension.differentiable_call(op, _Normalize, _normalize_apply_args(*args), args)

    @staticmethod
    def backward(ctx, grad):
        return _Normalize._scaled(ctx, grad, ctx.input_dtype), None, None, None, None, None

    @staticmethod
    def jvp(ctx, t_input, *_):
        return _Normalize._scaled(ctx, t_input, ctx.dtype)

    @staticmethod
    def vmap(info, in_dims, input, stats, dim, scale, dtype, memory_format):
        mean, std = stats.value
        return _normalize_vmap(info, in_dims[:1], input, mean, std, dim, scale, dtype, memory_format, direct=False)


class _NormalizeTensor(torch.autograd.Function):
    """Derivatives of normalize with statistics tensors: ``out = a / s`` with ``a = x * scale - m``. The backward
    is the fused kernel unless it must itself be differentiable; then, like the jvp, it is written with torch
    ops in torch's own formulas (those of mul, sub and div)."""

    @staticmethod
    def forward(input, mean, std, scale, dtype, memory_format):
        with _extension.below_autograd():
            return torch.ops.tensorops.normalize_tensor.default(input, mean, std, scale, dtype, memory_format)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, mean, std, scale, dtype, memory_format = inputs
        ctx.save_for_backward(input, mean, std)
        ctx.save_for_forward(input, mean, std)
        ctx.scale, ctx.dtype, ctx.shape = scale, dtype, output.shape

    @staticmethod
    def _numerator(ctx, input, mean, acc):
        return input.to(acc) * ctx.scale - mean.to(acc)

    @staticmethod
    def backward(ctx, grad):
        input, mean, std = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]]
        if not _extension.differentiable_backward(grad, input, mean, std):
            gi, gm, gs = torch.ops.tensorops.normalize_tensor_backward.default(grad, input, mean, std, ctx.scale, mask)
        else:
            acc = reference.acc_dtype(ctx.dtype)
            g, s = grad.to(acc), std.to(acc)
            gm = -(g / s)
            gi = g / s * ctx.scale
            gs = -g * (_NormalizeTensor._numerator(ctx, input, mean, acc) / s / s) if mask[2] else None
        gi = gi.to(input.dtype) if mask[0] else None
        gm = gm.sum_to_size(mean.shape).to(mean.dtype) if mask[1] else None
        gs = gs.sum_to_size(std.shape).to(std.dtype) if mask[2] else None
        return gi, gm, gs, None, None, None

    @staticmethod
    def jvp(ctx, t_input, t_mean, t_std, *_):
        input, mean, std = ctx.saved_tensors
        acc = reference.acc_dtype(ctx.dtype)
        s = std.to(acc)
        t = torch.zeros((), dtype=acc, device=input.device)
        if t_input is not None:
            t = t_input.to(acc) * ctx.scale
        if t_mean is not None:
            t = t - t_mean.to(acc)
        if t_std is not None:  # div's jvp: (t_a - t_s * (a / s)) / s
            t = t - t_std.to(acc) * (_NormalizeTensor._numerator(ctx, input, mean, acc) / s)
        t = (t / s).to(ctx.dtype)
        return t if t.shape == ctx.shape else t.expand(ctx.shape).contiguous()

    vmap = staticmethod(lambda info, in_dims, *args: _normalize_tensor_vmap(info, in_dims, *args, direct=False))


# ---- vmap: one kernel call for the whole batch (the batch dim moved to the front) ----------------------------
def _normalize_vmap(info, in_dims, input, mean, std, dim, scale, dtype, memory_format, direct=True):
    """The batching rule: torch.library's (``direct``: the op itself, called with the batched level peeled
    off) and the Function's vmap staticmethod (through it, as a torch.func level may still be active below)."""
    x = input.movedim(in_dims[0], 0)
    ndim = x.dim() - 1
    mf = memory_format if memory_format == torch.contiguous_format else torch.preserve_format
    args = (x, mean, std, dim % ndim + 1, scale, dtype, mf)
    op = torch.ops.tensorops.normalize.default
    return (op(*args) if direct else _extension.differentiable_call(op, _Normalize, _normalize_apply_args(*args), args)), 0


def _normalize_tensor_vmap(info, in_dims, input, mean, std, scale, dtype, memory_format, direct=True):
    def front(t: torch.Tensor, bdim: Optional[int]) -> torch.Tensor:
        return t.unsqueeze(0) if bdim is None else t.movedim(bdim, 0)

    x, m, s = front(input, in_dims[0]), front(mean, in_dims[1]), front(std, in_dims[2])
    if in_dims[0] is None:
        x = x.expand((info.batch_size,) + tuple(input.shape))
    mf = memory_format if memory_format == torch.contiguous_format else torch.preserve_format
    args = (x, m, s, scale, dtype, mf)
    op = torch.ops.tensorops.normalize_tensor.default
    return (op(*args) if direct else _extension.differentiable_call(op, _NormalizeTensor, args)), 0


if _extension.is_compiled():
    _register()

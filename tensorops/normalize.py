"""normalize: ``(input * scale - mean) / std`` in one pass, from uint8 or floating input to a floating output."""
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


def _check_input(input: torch.Tensor) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"normalize: input must be a torch.Tensor, got {type(input).__name__}")
    if input.dim() == 0:
        raise ValueError("normalize: input must have at least 1 dimension (a channel dim), got a 0-dim tensor")
    if input.dtype != torch.uint8 and input.dtype not in _FLOATS:
        raise TypeError(
            f"normalize: input must be uint8 or floating (float16, bfloat16, float32, float64), got {input.dtype}"
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
        input: uint8 or floating tensor with at least one dim, any strides (channels_last, NHWC permuted views...).
        mean, std: a number, a sequence of C numbers laid along ``dim``, or a tensor: a 1-D tensor is laid along
            ``dim`` like a sequence; any other tensor must broadcast to input's shape, e.g. ``(N, C, 1, 1)`` for
            per-sample statistics. Gradients flow to statistics tensors that require grad.
        dim: the channel dimension: -3 for CHW/NCHW (the default), -1 for HWC/NHWC.
        dtype: output dtype (float16, bfloat16, float32, float64). Default: float32 for uint8 input, else
            input's dtype. Arithmetic is float32, float64 when the output is float64.
        scale: multiplies input first. Default: 1/255 for uint8 input, 1.0 for floating input.
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
    if _FAST_NORMALIZE is not None and not torch.compiler.is_compiling():
        out = _FAST_NORMALIZE(input, mean, std, dim, dtype, scale, memory_format)
        if out is not None:
            return out
    _check_input(input)
    ndim = input.dim()
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"normalize: dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"normalize: dim {dim} is out of range for input with {ndim} dimensions")
    dim = dim % ndim
    if dtype is None:
        dtype = torch.float32 if input.dtype == torch.uint8 else input.dtype
    elif not isinstance(dtype, torch.dtype) or dtype not in _FLOATS:
        raise TypeError(f"normalize: dtype must be float16, bfloat16, float32 or float64, got {dtype}")
    if scale is None:
        scale = 1.0 / 255.0 if input.dtype == torch.uint8 else 1.0
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
            op = torch.ops.tensorops.normalize.default
            if _extension.autograd_not_needed(input):
                with _extension.below_autograd():
                    return op(input, mean_values, std_values, dim, scale, dtype, memory_format)
            return op(input, mean_values, std_values, dim, scale, dtype, memory_format)
        return reference.normalize(
            input, mean_values, std_values, dim=dim, scale=scale, dtype=dtype, memory_format=memory_format
        )

    acc = reference.acc_dtype(dtype)
    m = _stat_tensor("mean", mean, input, dim) if mean_values is None else _values_as_tensor(mean_values, input, dim, acc)
    s = _stat_tensor("std", std, input, dim) if std_values is None else _values_as_tensor(std_values, input, dim, acc)
    if use_kernels:
        return torch.ops.tensorops.normalize_tensor.default(input, m, s, scale, dtype, memory_format)
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

    def setup_list(ctx, inputs, output):
        input, mean, std, dim, scale, dtype, memory_format = inputs
        ctx.dim, ctx.scale, ctx.std = dim, scale, std
        ctx.input_dtype = input.dtype

    def backward_list(ctx, grad):
        # d input = grad * scale / std: the forward kernel itself, with mean 0 and std / scale
        inv = [s / ctx.scale if ctx.scale != 0 else math.inf for s in ctx.std]
        gi = torch.ops.tensorops.normalize.default(
            grad, [0.0], inv, ctx.dim, 1.0, ctx.input_dtype, torch.preserve_format
        )
        return gi, None, None, None, None, None, None

    torch.library.register_autograd(lib + "normalize", backward_list, setup_context=setup_list)

    def setup_tensor(ctx, inputs, output):
        input, mean, std, scale, dtype, memory_format = inputs
        ctx.save_for_backward(input, mean, std)
        ctx.scale = scale

    def backward_tensor(ctx, grad):
        input, mean, std = ctx.saved_tensors
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2]]
        gi, gm, gs = torch.ops.tensorops.normalize_tensor_backward.default(grad, input, mean, std, ctx.scale, mask)
        gi = gi if mask[0] else None
        gm = gm.sum_to_size(mean.shape).to(mean.dtype) if mask[1] else None
        gs = gs.sum_to_size(std.shape).to(std.dtype) if mask[2] else None
        return gi, gm, gs, None, None, None

    torch.library.register_autograd(lib + "normalize_tensor", backward_tensor, setup_context=setup_tensor)


if _extension.is_compiled():
    _register()

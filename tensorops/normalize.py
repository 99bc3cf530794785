"""normalize: ``(input * scale - mean) / std`` in one pass, from uint8, uint16 or floating input to a floating output."""
from __future__ import annotations

import math
import numbers
from typing import List, Optional, Sequence, Tuple, Union

import torch

from tensorops import _checks, _extension, _routing, reference
from tensorops._checks import FLOATS, FORMATS, INT_SCALES, where
from tensorops._normalize_ops import _Normalize, _normalize_apply_args, _NormalizeTensor

__all__ = ["normalize"]

Stat = Union[float, Sequence[float], torch.Tensor]
# The lean C++ entry for plain tensors with numbers as statistics (None: not handled there; see py_entry.cpp)
_FAST_NORMALIZE = getattr(_extension._C, "normalize_fast", None)
_tracing = _extension.dynamo_tracing  # bound once; see _extension.dynamo_tracing
# What the kernels cover: uint8, uint16 and floating input (the wrapper rejects other dtypes), read through an
# iteration plan (at most max_kernel_dims dims)
KERNELS = _routing.Kernels(dtypes=frozenset(INT_SCALES) | frozenset(FLOATS), plan=True)
_FN = where("normalize")


class DimError(ValueError, IndexError):
    """A ``dim`` out of range for the input: a ValueError naming dim and the input's shape (and an IndexError,
    what torch raises for a dimension out of range)."""


def _check_input(input: torch.Tensor) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"{_FN}input must be a torch.Tensor, got {type(input).__name__}")
    if input.dim() == 0:
        raise ValueError(f"{_FN}input must have at least 1 dimension (a channel dim), got a 0-dim tensor")
    if input.dtype not in INT_SCALES and input.dtype not in FLOATS:
        raise TypeError(
            f"{_FN}input must be uint8 or floating (float16, bfloat16, float32, float64), or uint16, got {input.dtype}"
        )


def _stat_tensor(name: str, stat: torch.Tensor, input: torch.Tensor, dim: int) -> torch.Tensor:
    """A statistics tensor viewed with input's rank: 1-D tensors are laid along ``dim`` like a sequence."""
    if stat.is_complex() or stat.dtype == torch.bool:
        raise TypeError(f"{_FN}{name} must be a real floating tensor, got {stat.dtype}")
    if not stat.is_floating_point():
        stat = stat.float()
    if stat.device != input.device:
        raise ValueError(f"{_FN}{name} is on {stat.device} but input is on {input.device}")
    if stat.dim() > input.dim():
        raise ValueError(f"{_FN}{name} of shape {tuple(stat.shape)} has more dims than input {tuple(input.shape)}")
    if stat.dim() == 1 and input.dim() > 1:
        if stat.shape[0] not in (1, input.shape[dim]):
            raise ValueError(
                f"{_FN}{name} has {stat.shape[0]} values but input has {input.shape[dim]} channels "
                f"along dim {dim - input.dim()}"
            )
        return _along(stat, input.dim(), dim)
    stat = stat.reshape((1,) * (input.dim() - stat.dim()) + tuple(stat.shape))
    for d, (s, n) in enumerate(zip(stat.shape, input.shape)):
        if s not in (1, n):
            raise ValueError(
                f"{_FN}{name} of shape {tuple(stat.shape)} does not broadcast to input "
                f"{tuple(input.shape)} (dim {d}: {s} vs {n})"
            )
    return stat


def _along(t: torch.Tensor, ndim: int, dim: int) -> torch.Tensor:
    """A 1-D tensor viewed with ``ndim`` dims, laid along ``dim``."""
    shape = [1] * ndim
    shape[dim] = t.shape[0]
    return t.view(shape)


# Validated statistics given as numbers, keyed by their values
_NUMBER_STATS = _checks.Memo()


def _number_stats(
    mean: object, std: object, scale: float, dtype: torch.dtype, channels: int, dim: int
) -> Tuple[Optional[List[float]], Optional[List[float]]]:
    """(mean, std) as checked lists of floats, each None where it is a tensor. ``dim`` is negative."""
    km, ks = _checks.number_key(mean), _checks.number_key(std)
    key = (km, ks, scale, dtype, channels) if km is not None and ks is not None else None
    if key is not None:
        hit = _NUMBER_STATS.get(key)
        if hit is not None:
            return hit
    mean_values = _checks.stat_numbers("normalize", "mean", mean)
    std_values = _checks.stat_numbers("normalize", "std", std)
    for name, values in (("mean", mean_values), ("std", std_values)):
        if values is not None and len(values) not in (1, channels):
            raise ValueError(f"{_FN}{name} has {len(values)} values but input has {channels} channels along dim {dim}")
    if std_values is not None:
        _checks.check_coefficients("normalize", mean_values, std_values, scale, dtype)
    if key is not None:
        _NUMBER_STATS.put(key, (mean_values, std_values))
    return mean_values, std_values


def normalize(
    input: torch.Tensor,
    mean: Stat,
    std: Stat,
    *,
    dim: int = -3,
    dtype: Optional[torch.dtype] = None,
    scale: Optional[float] = None,
    memory_format: torch.memory_format = torch.preserve_format,
    out: Optional[torch.Tensor] = None,
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
        out: a tensor of the result's shape, dtype and device that the kernel writes the result into (returned):
            checked first (shape, dtype, device; it may not overlap the input), written in its own layout
            (``memory_format`` does not apply) with no full-size temporary, except for strided views with gaps,
            which take one. As torch's out= forms, not differentiable: an error if an argument requires grad.

    Returns:
        A tensor of input's shape and ``dtype`` (``out`` when given).

    Example:
        >>> x = torch.randint(0, 256, (8, 3, 224, 224), dtype=torch.uint8)
        >>> y = tensorops.normalize(x, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        >>> y.dtype, y.shape
        (torch.float32, torch.Size([8, 3, 224, 224]))
    """
    if out is None and _FAST_NORMALIZE is not None and not _tracing():
        result = _FAST_NORMALIZE(input, mean, std, dim, dtype, scale, memory_format)  # None: not handled there
        if result is not None:
            return result
    _check_input(input)
    ndim = input.dim()
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{_FN}dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        hint = ""
        if input.shape[-1] in (1, 3, 4):
            hint = f"; for channels-last input (HWC/NHWC, last dim {input.shape[-1]}) pass dim=-1"
        raise DimError(f"{_FN}dim {dim} is out of range for input of shape {tuple(input.shape)} with {ndim} "
                       f"dimensions{hint}")
    dim = dim % ndim
    if dtype is None:
        dtype = torch.float32 if input.dtype in INT_SCALES else input.dtype
    else:
        dtype = _checks.float_dtype("normalize", dtype)
    if scale is None:
        scale = INT_SCALES.get(input.dtype, 1.0)
    elif isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale):
        raise TypeError(f"{_FN}scale must be a finite number, got {scale!r}")
    scale = float(scale)
    if memory_format not in FORMATS:
        raise ValueError(f"{_FN}memory_format must be a torch.memory_format, got {memory_format!r}")
    for fmt, rank in ((torch.channels_last, 4), (torch.channels_last_3d, 5)):
        if memory_format == fmt and ndim != rank:
            raise ValueError(f"{_FN}memory_format={fmt} needs a {rank}-d input, got {ndim} dims")

    mean_values, std_values = _number_stats(mean, std, scale, dtype, input.shape[dim], dim - ndim)
    if out is not None:  # before any work; the kernels then write out itself
        _checks.check_out("normalize", out, input.shape, dtype, input.device,
                          (input, mean if mean_values is None else None, std if std_values is None else None))
    kernels = KERNELS.cover(input)
    if mean_values is not None and std_values is not None:
        if not kernels:
            return _checks.copy_out(reference.normalize(
                input, mean_values, std_values, dim=dim, scale=scale, dtype=dtype, memory_format=memory_format
            ), out)
        args = (input, mean_values, std_values, dim, scale, dtype, memory_format)
        if out is not None:
            return _routing.call_out("normalize", args, out)
        return _routing.call(torch.ops.tensorops.normalize.default, _Normalize, _normalize_apply_args(*args), args)

    acc = reference.acc_dtype(dtype)
    m = _stat_tensor("mean", mean, input, dim) if mean_values is None else _values(mean_values, input, dim, acc)
    s = _stat_tensor("std", std, input, dim) if std_values is None else _values(std_values, input, dim, acc)
    if not kernels:
        return _checks.copy_out(
            reference.normalize(input, m, s, dim=dim, scale=scale, dtype=dtype, memory_format=memory_format), out)
    args = (input, m, s, scale, dtype, memory_format)
    if out is not None:
        return _routing.call_out("normalize_tensor", args, out)
    return _routing.call(torch.ops.tensorops.normalize_tensor.default, _NormalizeTensor, args)


def _values(values: List[float], input: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    # sequences mixed with a tensor statistic become a tensor once per (values, device), not per call
    return _along(_checks.values_tensor(values, input.device, dtype), input.dim(), dim)

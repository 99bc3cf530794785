"""clamp: ``torch.clamp`` / ``Tensor.clamp_`` with compiled kernels and a one-pass fused backward."""
from __future__ import annotations

from typing import Optional, Tuple, Union

import torch

from tensorops import _extension, _routing, reference
from tensorops._checks import check_bound, no_bounds, where
from tensorops._clamp_ops import _Clamp, _ClampScalar

__all__ = ["clamp", "clamp_"]

Bound = Union[None, bool, int, float, torch.Tensor]
# The lean C++ entry for plain tensors and number bounds (None: not handled there; see csrc/cpu/py_entry.cpp)
_FAST_CLAMP = getattr(_extension._C, "clamp_fast", None)
_tracing = _extension.dynamo_tracing  # bound once; see _extension.dynamo_tracing
# Tensor bounds through autograd below this many input elements: torch.clamp's own autograd costs less than the
# op's Function (measured by `python -m benchmarks.crossover`, compiled into crossover.h). Tests set it to 0 to
# run the kernels on tiny inputs too.
_GRAD_NATIVE_BELOW = int(_extension._C.native_below().get("clamp_grad", 0)) if _FAST_CLAMP is not None else 0

# What the kernels cover: these dtypes (of input and tensor bounds; anything else, uint16/32/64, float8...,
# runs through native torch), on input's device, read through an iteration plan (at most max_kernel_dims dims)
KERNELS = _routing.Kernels(
    dtypes=frozenset({
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
    }),
    plan=True,
    one_device=True,
)


def _check_input(fn: str, input: object) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"{where(fn)}input must be a torch.Tensor, got {type(input).__name__}")
    if input.is_complex():
        raise NotImplementedError(f"{where(fn)}input is {input.dtype}; clamp is not supported for complex types")


def _broadcast(a: Tuple[int, ...], b: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
    """Broadcast shape of a and b, or None (torch.broadcast_shapes costs ~10 us a call)."""
    if a == b:
        return a
    n = len(a) if len(a) > len(b) else len(b)
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(x if y == 1 else y)
    return tuple(out)


def _resolve(fn: str, input: object, min: object, max: object) -> Tuple[Bound, Bound, bool]:
    """Checks the arguments as torch's argument parser does; returns (min, max, bounds_are_tensors).

    torch.clamp has a number overload and a tensor overload: a number mixed with a tensor is accepted only when
    that tensor is 0-dim and does not require grad (it is then read as a number)."""
    _check_input(fn, input)
    min, max = check_bound(fn, "min", min), check_bound(fn, "max", max)
    if min is None and max is None:
        raise no_bounds(fn)
    min_t, max_t = isinstance(min, torch.Tensor), isinstance(max, torch.Tensor)
    if not (min_t or max_t):
        return min, max, False
    if (min_t and max is not None and not max_t) or (max_t and min is not None and not min_t):
        for name, b in (("min", min), ("max", max)):
            if isinstance(b, torch.Tensor) and (b.dim() != 0 or b.requires_grad):
                other = "max" if name == "min" else "min"
                raise TypeError(
                    f"{where(fn)}{name} is a tensor of shape {tuple(b.shape)}"
                    f"{' that requires grad' if b.requires_grad else ''} but {other} is a number; pass both "
                    "bounds as tensors or both as numbers (a 0-dim tensor without grad may be mixed with a number)"
                )
        min = min.item() if min_t else min  # type: ignore[union-attr]
        max = max.item() if max_t else max  # type: ignore[union-attr]
        return min, max, False
    for name, b in (("min", min), ("max", max)):
        if isinstance(b, torch.Tensor) and b.device != input.device:  # type: ignore[union-attr]
            if not (b.dim() == 0 and b.device.type == "cpu"):
                raise RuntimeError(f"{where(fn)}{name} is on {b.device} but input is on {input.device}")  # type: ignore[union-attr]
    shape = tuple(input.shape)  # type: ignore[union-attr]
    for name, b in (("min", min), ("max", max)):
        if isinstance(b, torch.Tensor):
            shape = _broadcast(shape, tuple(b.shape))
            if shape is None:
                raise RuntimeError(
                    f"{where(fn)}{name} of shape {tuple(b.shape)} does not broadcast with input of shape "
                    f"{tuple(input.shape)}{'' if name == 'min' or min is None else f' and min of shape {tuple(min.shape)}'}"  # type: ignore[union-attr]
                ) from None
    return min, max, True


def clamp(
    input: torch.Tensor, min: Bound = None, max: Bound = None, *, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """``torch.clamp(input, min, max)``: every element limited to ``[min, max]``, in one pass over memory.

    A drop-in for ``torch.clamp``: same values, dtype, shape and memory layout for every input torch accepts.

    Args:
        input: a tensor of any real dtype (bool, uint8, int8..int64, float16, bfloat16, float32, float64), any
            shape and strides (channels_last, transposed or sliced views).
        min, max: Python numbers or tensors, each optional (at least one given). Tensor bounds broadcast with
            input and with each other (a bound may be larger than input: the result has the broadcast shape).
            Type promotion is torch's (an int input with a float bound gives a float result).
        out: a tensor to write the result into, with torch.clamp's rules (an empty one is resized, a result
            dtype it cannot hold raises, ...): it runs torch.clamp's out= variant.

    Semantics (as torch): NaN input stays NaN; a NaN bound gives NaN (a NaN number bound: the whole result);
    ``min > max`` gives ``max`` everywhere. Gradients flow to input and to tensor bounds that require grad:
    input where ``min <= x <= max``, min where ``x < min`` (and ``min < max``), max where ``x > max`` (or
    ``max < min``), summed to each bound's shape, computed by one fused backward kernel.

    Returns:
        A new tensor of the broadcast shape and the promoted dtype.

    Example:
        >>> x = torch.randn(8, 3, 224, 224)
        >>> lo, hi = torch.full((1, 3, 1, 1), -1.0), torch.full((1, 3, 1, 1), 1.0)
        >>> y = tensorops.clamp(x, lo, hi)           # per-channel bounds, broadcast by strides
        >>> y.shape, float(y.max()) <= 1.0
        (torch.Size([8, 3, 224, 224]), True)
        >>> tensorops.clamp(torch.tensor([0, 5, 10]), max=7.5)
        tensor([0.0000, 5.0000, 7.5000])
    """
    if out is None and _FAST_CLAMP is not None and not _tracing():
        try:  # plain tensors, no gradient, no transform; None: not handled there
            result = _FAST_CLAMP(input, min, max)
        except RuntimeError:
            # the C entry does not look at ranks (a test there would cost every tiny call): more dims than the
            # kernels' plans hold raise there, and the route below sends them to torch
            if not _too_many_dims(input, min, max):
                raise
            result = None
        if result is not None:
            return result
    if (type(min) is torch.Tensor and type(max) is torch.Tensor and type(input) is torch.Tensor and out is None
            and input.numel() < _GRAD_NATIVE_BELOW and _extension.plain_eager()):
        return torch.clamp(input, min, max)  # tiny, through autograd: see _GRAD_NATIVE_BELOW (torch's checks too)
    min, max, tensors = _resolve("clamp", input, min, max)
    if out is not None:
        return torch.clamp(input, min, max, out=out)
    if not _kernels(input, min, max):
        return reference.clamp(input, min, max)
    op = torch.ops.tensorops.clamp.default if tensors else torch.ops.tensorops.clamp_scalar.default
    return _routing.call(op, _Clamp if tensors else _ClampScalar, (input, min, max))


def clamp_(input: torch.Tensor, min: Bound = None, max: Bound = None) -> torch.Tensor:
    """In-place ``input.clamp_(min, max)``; returns ``input``.

    Same arguments and semantics as :func:`clamp`, with torch's in-place rules: the bounds may not broadcast
    input to a larger shape, and the promoted result dtype must be castable back to input's dtype (an int
    input with a float bound raises). Under autograd (input or a bound requires grad) and forward AD it runs
    through ``Tensor.clamp_`` so that the graph (or the tangent) records the in-place update; under
    ``torch.func.vmap`` alone its batching rule makes one kernel call for the whole batch.

    Example:
        >>> x = torch.tensor([-2.0, 0.5, 3.0])
        >>> tensorops.clamp_(x, -1, 1) is x, x
        (True, tensor([-1.0000,  0.5000,  1.0000]))
    """
    min, max, tensors = _resolve("clamp_", input, min, max)
    # 1: elements overlap (an expanded view); 2: too hard to tell, left to torch's own check
    if _extension.plain_eager() and torch._debug_has_internal_overlap(input) == 1:
        raise RuntimeError(
            f"{where('clamp_')}input: more than one element refers to a single memory location (an expanded or "
            "overlapping view), so the in-place result is ill-defined; clone() it first"
        )
    # forward AD (torch.autograd.forward_ad, torch.func.jvp) and autograd record the in-place update: torch's
    grad_needed = _extension.forward_ad_active() or torch.is_grad_enabled() and (
        input.requires_grad or any(isinstance(b, torch.Tensor) and b.requires_grad for b in (min, max))
    )
    if grad_needed or not _kernels(input, min, max):
        return reference.clamp_(input, min, max)
    if tensors:
        torch.ops.tensorops.clamp_.default(input, min, max)
    else:
        torch.ops.tensorops.clamp_scalar_.default(input, min, max)
    if not torch.compiler.is_compiling():  # as torch's in-place ops: autograd sees the change
        torch.autograd.graph.increment_version(input)
    return input




def _kernels(input: torch.Tensor, min: Bound, max: Bound) -> bool:
    """The kernels take input and the tensor bounds (a CPU 0-dim bound with a CUDA input does not)."""
    return KERNELS.cover(input, min if isinstance(min, torch.Tensor) else None,
                         max if isinstance(max, torch.Tensor) else None)


def _too_many_dims(*tensors: object) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dim() > _routing.MAX_KERNEL_DIMS for t in tensors)

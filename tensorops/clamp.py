"""clamp: ``torch.clamp`` / ``Tensor.clamp_`` with compiled kernels and a one-pass fused backward."""
from __future__ import annotations

import numbers
from typing import Optional, Tuple, Union

import torch

from tensorops import _extension, reference

__all__ = ["clamp", "clamp_"]

Bound = Union[None, bool, int, float, torch.Tensor]
# The lean C++ entry for plain tensors and number bounds (None: not handled there; see csrc/cpu/py_entry.cpp)
_FAST_CLAMP = getattr(_extension._C, "clamp_fast", None)

# Result dtypes the kernels cover; anything else (uint16/32/64, float8, ...) runs through native torch.
_KERNEL_DTYPES = frozenset(
    {
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
    }
)


def _check_input(fn: str, input: object) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"{fn}: input must be a torch.Tensor, got {type(input).__name__}")
    if input.is_complex():
        raise NotImplementedError(f"{fn}: input is {input.dtype}; clamp is not supported for complex types")


def _check_bound(fn: str, name: str, bound: object) -> Bound:
    """None, a Python number (bool, int, float) or a tensor; anything else raises naming the argument."""
    kind = type(bound)
    if bound is None or kind is float or kind is int or kind is bool:  # the common cases, without ABC checks
        return bound
    if isinstance(bound, torch.Tensor):
        if bound.is_complex():
            raise NotImplementedError(f"{fn}: {name} is {bound.dtype}; clamp is not supported for complex types")
        return bound
    if isinstance(bound, bool):
        return bool(bound)
    if isinstance(bound, numbers.Integral):
        return int(bound)
    if isinstance(bound, numbers.Real):
        return float(bound)
    if isinstance(bound, numbers.Complex):
        raise NotImplementedError(
            f"{fn}: {name} is the complex number {bound!r}; clamp is not supported for complex types"
        )
    raise TypeError(f"{fn}: {name} must be a number, a tensor or None, got {type(bound).__name__}")


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
    min, max = _check_bound(fn, "min", min), _check_bound(fn, "max", max)
    if min is None and max is None:
        raise RuntimeError(f"{fn}: min, max: at least one of 'min' or 'max' must not be None")
    min_t, max_t = isinstance(min, torch.Tensor), isinstance(max, torch.Tensor)
    if not (min_t or max_t):
        return min, max, False
    if (min_t and max is not None and not max_t) or (max_t and min is not None and not min_t):
        for name, b in (("min", min), ("max", max)):
            if isinstance(b, torch.Tensor) and (b.dim() != 0 or b.requires_grad):
                other = "max" if name == "min" else "min"
                raise TypeError(
                    f"{fn}: {name} is a tensor of shape {tuple(b.shape)}"
                    f"{' that requires grad' if b.requires_grad else ''} but {other} is a number; pass both "
                    "bounds as tensors or both as numbers (a 0-dim tensor without grad may be mixed with a number)"
                )
        min = min.item() if min_t else min  # type: ignore[union-attr]
        max = max.item() if max_t else max  # type: ignore[union-attr]
        return min, max, False
    for name, b in (("min", min), ("max", max)):
        if isinstance(b, torch.Tensor) and b.device != input.device:  # type: ignore[union-attr]
            if not (b.dim() == 0 and b.device.type == "cpu"):
                raise RuntimeError(f"{fn}: {name} is on {b.device} but input is on {input.device}")  # type: ignore[union-attr]
    shape = tuple(input.shape)  # type: ignore[union-attr]
    for name, b in (("min", min), ("max", max)):
        if isinstance(b, torch.Tensor):
            shape = _broadcast(shape, tuple(b.shape))
            if shape is None:
                raise RuntimeError(
                    f"{fn}: {name} of shape {tuple(b.shape)} does not broadcast with input of shape "
                    f"{tuple(input.shape)}{'' if name == 'min' or min is None else f' and min of shape {tuple(min.shape)}'}"  # type: ignore[union-attr]
                ) from None
    return min, max, True


def _kernel_ok(input: torch.Tensor, min: Bound, max: Bound) -> bool:
    device = input.device
    if input.dtype not in _KERNEL_DTYPES or not _extension.kernels_for(device):
        return False
    for b in (min, max):
        if isinstance(b, torch.Tensor) and (b.device != device or b.dtype not in _KERNEL_DTYPES):
            return False  # a CPU 0-dim bound with a CUDA input, or a dtype the kernels do not cover
    return True


def clamp(input: torch.Tensor, min: Bound = None, max: Bound = None) -> torch.Tensor:
    """``torch.clamp(input, min, max)``: every element limited to ``[min, max]``, in one pass over memory.

    A drop-in for ``torch.clamp``: same values, dtype, shape and memory layout for every input torch accepts.

    Args:
        input: a tensor of any real dtype (bool, uint8, int8..int64, float16, bfloat16, float32, float64), any
            shape and strides (channels_last, transposed or sliced views).
        min, max: Python numbers or tensors, each optional (at least one given). Tensor bounds broadcast with
            input and with each other (a bound may be larger than input: the result has the broadcast shape).
            Type promotion is torch's (an int input with a float bound gives a float result).

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
    if _FAST_CLAMP is not None and not torch.compiler.is_compiling():
        out = _FAST_CLAMP(input, min, max)
        if out is not None:
            return out
    min, max, tensors = _resolve("clamp", input, min, max)
    if not _kernel_ok(input, min, max):
        return reference.clamp(input, min, max)
    op = torch.ops.tensorops.clamp.default if tensors else torch.ops.tensorops.clamp_scalar.default
    if _extension.autograd_not_needed(input, *(b for b in (min, max) if isinstance(b, torch.Tensor))):
        with _extension.below_autograd():
            return op(input, min, max)
    return op(input, min, max)


def clamp_(input: torch.Tensor, min: Bound = None, max: Bound = None) -> torch.Tensor:
    """In-place ``input.clamp_(min, max)``; returns ``input``.

    Same arguments and semantics as :func:`clamp`, with torch's in-place rules: the bounds may not broadcast
    input to a larger shape, and the promoted result dtype must be castable back to input's dtype (an int
    input with a float bound raises). Under autograd (input or a bound requires grad) it runs through
    ``Tensor.clamp_`` so that the graph records the in-place update.

    Example:
        >>> x = torch.tensor([-2.0, 0.5, 3.0])
        >>> tensorops.clamp_(x, -1, 1) is x, x
        (True, tensor([-1.0000,  0.5000,  1.0000]))
    """
    min, max, tensors = _resolve("clamp_", input, min, max)
    # 1: elements overlap (an expanded view); 2: too hard to tell, left to torch's own check
    if not torch.compiler.is_compiling() and torch._debug_has_internal_overlap(input) == 1:
        raise RuntimeError(
            "clamp_: input: more than one element refers to a single memory location (an expanded or "
            "overlapping view), so the in-place result is ill-defined; clone() it first"
        )
    grad_needed = torch.is_grad_enabled() and (
        input.requires_grad or any(isinstance(b, torch.Tensor) and b.requires_grad for b in (min, max))
    )
    if grad_needed or not _kernel_ok(input, min, max):
        return reference.clamp_(input, min, max)
    if tensors:
        torch.ops.tensorops.clamp_.default(input, min, max)
    else:
        torch.ops.tensorops.clamp_scalar_.default(input, min, max)
    return input


# ---- registrations on the compiled ops: fake kernels and autograd ------------------------------------------
def _result_dtype(input: torch.Tensor, min: Optional[torch.Tensor], max: Optional[torch.Tensor]) -> torch.dtype:
    # torch's promotion over all three operands (0-dim tensors rank below dimensioned ones)
    return torch.clamp(input, min, max).dtype


def _register() -> None:
    lib = "tensorops::"

    # torch.clamp's own meta function gives exactly torch's dtype, broadcast shape and strides, which the
    # kernels reproduce (they allocate through a TensorIterator configured like torch's clamp).
    @torch.library.register_fake(lib + "clamp")
    def _(input, min, max):
        return torch.clamp(input, min, max)

    @torch.library.register_fake(lib + "clamp_scalar")
    def _(input, min, max):
        return torch.clamp(input, min, max)

    @torch.library.register_fake(lib + "clamp_")
    def _(input, min, max):
        return None

    @torch.library.register_fake(lib + "clamp_scalar_")
    def _(input, min, max):
        return None

    @torch.library.register_fake(lib + "clamp_backward")
    def _(grad, input, min, max, output_mask):
        dtype = _result_dtype(input, min, max)
        shape = grad.shape
        if output_mask[0]:
            gi = torch.empty_like(input, dtype=dtype) if input.shape == shape else input.new_empty(shape, dtype=dtype)
        else:
            gi = input.new_empty((0,), dtype=dtype)
        gmin = input.new_empty(min.shape, dtype=dtype) if output_mask[1] and min is not None else input.new_empty((0,), dtype=dtype)
        gmax = input.new_empty(max.shape, dtype=dtype) if output_mask[2] and max is not None else input.new_empty((0,), dtype=dtype)
        return gi, gmin, gmax

    @torch.library.register_fake(lib + "clamp_scalar_backward")
    def _(grad, input, min, max):
        return torch.empty_like(input)

    def setup_tensor(ctx, inputs, output):
        input, min, max = inputs
        ctx.save_for_backward(input, min, max)
        ctx.result_dtype = output.dtype

    def backward_tensor(ctx, grad):
        input, min, max = ctx.saved_tensors
        mask = [bool(m) for m in ctx.needs_input_grad[:3]]
        dtype = ctx.result_dtype
        if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (grad, input, min, max)):
            # create_graph=True (double backward): torch's own differentiable formula
            return reference.clamp_backward(grad, input, min, max, mask, create_graph=True)
        if any(b is not None and b.dtype != dtype for b in (min, max)):
            # bounds of another dtype than the result (0-dim float64 bounds on a float32 input, ...): torch
            # compares min < max in the bounds' own dtype, so take torch's own backward for these
            gi, gmin, gmax = reference.clamp_backward(grad, input, min, max, mask)
            return gi, gmin, gmax
        gi, gmin, gmax = torch.ops.tensorops.clamp_backward.default(grad, input, min, max, mask)
        gi = gi.sum_to_size(input.shape).to(input.dtype) if mask[0] else None
        gmin = gmin if mask[1] else None
        gmax = gmax if mask[2] else None
        return gi, gmin, gmax

    torch.library.register_autograd(lib + "clamp", backward_tensor, setup_context=setup_tensor)

    def setup_scalar(ctx, inputs, output):
        input, min, max = inputs
        ctx.save_for_backward(input)
        ctx.min, ctx.max = min, max

    def backward_scalar(ctx, grad):
        (input,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None
        if torch.is_grad_enabled() and (grad.requires_grad or input.requires_grad):
            gi, _, _ = reference.clamp_backward(grad, input, ctx.min, ctx.max, [True, False, False], create_graph=True)
            return gi, None, None
        return torch.ops.tensorops.clamp_scalar_backward.default(grad, input, ctx.min, ctx.max), None, None

    torch.library.register_autograd(lib + "clamp_scalar", backward_scalar, setup_context=setup_scalar)


if _extension.is_compiled():
    _register()

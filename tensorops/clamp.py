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
        raise RuntimeError(f"{fn}: At least one of 'min' or 'max' must not be None")  # torch's words
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
    if _FAST_CLAMP is not None and out is None and not _extension.forward_ad_active() \
            and not torch.compiler.is_compiling():
        result = _FAST_CLAMP(input, min, max)  # plain tensors, no gradient, no transform; None: not handled there
        if result is not None:
            return result
    min, max, tensors = _resolve("clamp", input, min, max)
    if out is not None:
        return torch.clamp(input, min, max, out=out)
    if not _kernel_ok(input, min, max):
        return reference.clamp(input, min, max)
    op = torch.ops.tensorops.clamp.default if tensors else torch.ops.tensorops.clamp_scalar.default
    if _extension.autograd_not_needed(input, *(b for b in (min, max) if isinstance(b, torch.Tensor))):
        with _extension.below_autograd():
            return op(input, min, max)
    return _extension.differentiable_call(op, _Clamp if tensors else _ClampScalar, (input, min, max))


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
            "clamp_: input: more than one element refers to a single memory location (an expanded or "
            "overlapping view), so the in-place result is ill-defined; clone() it first"
        )
    # forward AD (torch.autograd.forward_ad, torch.func.jvp) and autograd record the in-place update: torch's
    grad_needed = _extension.forward_ad_active() or torch.is_grad_enabled() and (
        input.requires_grad or any(isinstance(b, torch.Tensor) and b.requires_grad for b in (min, max))
    )
    if grad_needed or not _kernel_ok(input, min, max):
        return reference.clamp_(input, min, max)
    if tensors:
        torch.ops.tensorops.clamp_.default(input, min, max)
    else:
        torch.ops.tensorops.clamp_scalar_.default(input, min, max)
    if not torch.compiler.is_compiling():  # as torch's in-place ops: autograd sees the change
        torch.autograd.graph.increment_version(input)
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

    for name, rule in (
        ("clamp", _clamp_vmap),
        ("clamp_scalar", _clamp_scalar_vmap),
        ("clamp_", _clamp_inplace_vmap),
        ("clamp_scalar_", _clamp_scalar_inplace_vmap),
        ("clamp_backward", _clamp_backward_vmap),
        ("clamp_scalar_backward", _clamp_scalar_backward_vmap),
    ):
        torch.library.register_vmap(lib + name, rule)
    same = lambda *args: args  # noqa: E731
    _extension.register_autograd_function("clamp", _Clamp, same)
    _extension.register_autograd_function("clamp_scalar", _ClampScalar, same)
    _extension.register_autograd_function("clamp_scalar_backward", _ClampScalarBackward, same)


_OPS = {"_Clamp": "clamp", "_ClampScalar": "clamp_scalar", "_ClampScalarBackward": "clamp_scalar_backward"}


def _run(function: type, *args, direct: bool = False):
    """The op of ``function``, through it where derivatives may be needed (:func:`_extension.differentiable_call`);
    ``direct``: the op itself (torch.library's batching rules, which run with a torch.func level peeled off)."""
    op = getattr(torch.ops.tensorops, _OPS[function.__name__]).default
    return op(*args) if direct else _extension.differentiable_call(op, function, args)


def _coefficients(input, min, max, dtype, shape, forward: bool):
    """d out / d (input, min, max) at every element of the output (shape ``shape``), as torch's autograd has
    them (the backward kernel's masks, with ones for grad): clamp is piecewise linear, so its derivatives are
    these maps times the tangent or gradient. torch's forward AD differs from its backward in one place, a
    NaN with a single bound (the bound's tangent is taken, the input's is not)."""
    with torch.no_grad():
        x = input.detach().to(dtype)
        lo = None if min is None else min.detach().to(dtype).expand(shape)
        hi = None if max is None else max.detach().to(dtype).expand(shape)
        ones = torch.ones(shape, dtype=dtype, device=x.device)
        a, b, c = torch.ops.tensorops.clamp_backward.default(ones, x, lo, hi, [True, lo is not None, hi is not None])
        if forward and (lo is None) != (hi is None):
            nan = x.isnan() | (lo if lo is not None else hi).isnan()
            a = a.masked_fill(nan, 0)
            if lo is not None:
                b = b.masked_fill(nan, 1)
            else:
                c = c.masked_fill(nan, 1)
    return a, (b if lo is not None else None), (c if hi is not None else None)


class _Clamp(torch.autograd.Function):
    """Derivatives of clamp with tensor bounds. The backward is the fused kernel; where it must itself be
    differentiable (double backward, torch.func, forward over reverse), and for the jvp, it is the derivative
    maps (:func:`_coefficients`) times the gradient or tangents, in torch ops."""

    @staticmethod
    def forward(input, min, max):
        with _extension.below_autograd():
            return torch.ops.tensorops.clamp.default(input, min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, min, max = inputs
        ctx.save_for_backward(input, min, max)
        ctx.save_for_forward(input, min, max)
        ctx.result_dtype, ctx.shape = output.dtype, output.shape

    @staticmethod
    def backward(ctx, grad):
        input, min, max = ctx.saved_tensors
        mask = [bool(m) for m in ctx.needs_input_grad[:3]]
        dtype = ctx.result_dtype
        if _extension.differentiable_backward(grad, input, min, max):
            a, b, c = _coefficients(input, min, max, dtype, ctx.shape, forward=False)
            gi = (a * grad).sum_to_size(input.shape).to(input.dtype) if mask[0] else None
            gmin = (b * grad).sum_to_size(min.shape).to(min.dtype) if mask[1] else None
            gmax = (c * grad).sum_to_size(max.shape).to(max.dtype) if mask[2] else None
            return gi, gmin, gmax
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

    @staticmethod
    def jvp(ctx, t_input, t_min, t_max):
        input, min, max = ctx.saved_tensors
        coefficients = _coefficients(input, min, max, ctx.result_dtype, ctx.shape, forward=True)
        out = None
        for k, t in zip(coefficients, (t_input, t_min, t_max)):
            if t is not None:
                out = k * t if out is None else out + k * t
        out = out.to(ctx.result_dtype)
        return out if out.shape == ctx.shape else out.expand(ctx.shape).contiguous()

    vmap = staticmethod(lambda info, in_dims, *args: _clamp_vmap(info, in_dims, *args, direct=False))


class _ClampScalar(torch.autograd.Function):
    """Derivatives of clamp with number bounds: the gradient and the tangent are both masked by the same rule
    (torch's), the clamp_scalar_backward kernel, which is differentiable (:class:`_ClampScalarBackward`)."""

    @staticmethod
    def forward(input, min, max):
        with _extension.below_autograd():
            return torch.ops.tensorops.clamp_scalar.default(input, min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, min, max = inputs
        ctx.save_for_backward(input)
        ctx.save_for_forward(input)
        ctx.min, ctx.max = min, max

    @staticmethod
    def backward(ctx, grad):
        (input,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return _run(_ClampScalarBackward, grad, input, ctx.min, ctx.max), None, None

    @staticmethod
    def jvp(ctx, t_input, *_):
        (input,) = ctx.saved_tensors
        return _run(_ClampScalarBackward, t_input, input, ctx.min, ctx.max)

    vmap = staticmethod(lambda info, in_dims, *args: _clamp_scalar_vmap(info, in_dims, *args, direct=False))


class _ClampScalarBackward(torch.autograd.Function):
    """``grad`` masked where clamp passes input through: linear in grad (its own derivative), constant in input."""

    @staticmethod
    def forward(grad, input, min, max):
        with _extension.below_autograd():
            return torch.ops.tensorops.clamp_scalar_backward.default(grad, input, min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        grad, input, min, max = inputs
        ctx.save_for_backward(input)
        ctx.save_for_forward(input)
        ctx.min, ctx.max = min, max

    @staticmethod
    def backward(ctx, gg):
        (input,) = ctx.saved_tensors
        return _run(_ClampScalarBackward, gg, input, ctx.min, ctx.max), None, None, None

    @staticmethod
    def jvp(ctx, t_grad, *_):
        (input,) = ctx.saved_tensors
        if t_grad is None:
            return torch.zeros_like(input)
        return _run(_ClampScalarBackward, t_grad, input, ctx.min, ctx.max)

    vmap = staticmethod(lambda info, in_dims, *args: _clamp_scalar_backward_vmap(info, in_dims, *args, direct=False))


# ---- vmap: one kernel call for the whole batch (the batch dim moved to the front) ----------------------------
def _front(tensors, in_dims, batch_size: int, expand: bool):
    """Physical tensors for broadcasting ops: batched ones with the batch dim first and padded to the largest
    logical rank, so that they broadcast as their logical tensors do; unbatched ones as they are, or (expand)
    given a batch dim of the batch size."""
    rank = max(t.dim() - (d is not None) for t, d in zip(tensors, in_dims) if t is not None)
    out = []
    for t, d in zip(tensors, in_dims):
        if t is None:
            out.append(None)
            continue
        if d is None:
            if not expand:
                out.append(t)
                continue
            p = t.reshape((1,) * (rank - t.dim()) + tuple(t.shape)).unsqueeze(0)
            p = p.expand((batch_size,) + tuple(p.shape[1:]))
        else:
            p = t.movedim(d, 0)
            for _ in range(rank - (p.dim() - 1)):
                p = p.unsqueeze(1)
        out.append(p)
    return out


def _logical_dtype(tensors, in_dims) -> torch.dtype:
    """torch.clamp's result dtype for the per-sample tensors (a 0-dim bound ranks below dimensioned ones in
    type promotion, and under vmap it is 1-dim physically)."""
    meta = [
        None if t is None else torch.empty((1,) * (t.dim() - (d is not None)), dtype=t.dtype, device="meta")
        for t, d in zip(tensors, in_dims)
    ]
    return torch.clamp(*meta).dtype


def _cast(tensors, dtype):
    return [t if t is None or t.dtype == dtype else t.to(dtype) for t in tensors]


def _clamp_vmap(info, in_dims, input, min, max, direct=True):
    dtype = _logical_dtype((input, min, max), in_dims)
    x, lo, hi = _cast(_front((input, min, max), in_dims, info.batch_size, expand=False), dtype)
    return _run(_Clamp, x, lo, hi, direct=direct), 0


def _clamp_scalar_vmap(info, in_dims, input, min, max, direct=True):
    return _run(_ClampScalar, input.movedim(in_dims[0], 0), min, max, direct=direct), 0


def _inplace_input(in_dims) -> None:
    if in_dims[0] is None:
        raise RuntimeError(
            "vmap: clamp_(input, min, max): input is not batched but a bound is; the in-place result cannot hold "
            "the batch (torch.vmap's rule for in-place ops). Use clamp (out of place), or batch input too."
        )


def _clamp_inplace_vmap(info, in_dims, input, min, max):
    _inplace_input(in_dims)
    dtype = _logical_dtype((input, min, max), in_dims)
    x, lo, hi = _front((input, min, max), in_dims, info.batch_size, expand=False)
    lo, hi = _cast((lo, hi), dtype)
    torch.ops.tensorops.clamp_.default(x, lo, hi)
    return None, None


def _clamp_scalar_inplace_vmap(info, in_dims, input, min, max):
    torch.ops.tensorops.clamp_scalar_.default(input.movedim(in_dims[0], 0), min, max)
    return None, None


def _clamp_backward_vmap(info, in_dims, grad, input, min, max, output_mask):
    args = _front((grad, input, min, max), in_dims, info.batch_size, expand=True)
    gi, gmin, gmax = torch.ops.tensorops.clamp_backward.default(*args, output_mask)
    dims = [0 if output_mask[0] else None]
    dims += [0 if m and b is not None else None for m, b in zip(output_mask[1:], (min, max))]
    return (gi, gmin, gmax), tuple(dims)


def _clamp_scalar_backward_vmap(info, in_dims, grad, input, min, max, direct=True):
    g, x = _front((grad, input), in_dims, info.batch_size, expand=True)
    return _run(_ClampScalarBackward, g, x, min, max, direct=direct), 0


if _extension.is_compiled():
    _register()

"""clamp's registrations on the compiled ops: fake kernels, the autograd.Functions (one fused backward kernel,
jvp) and the vmap batching rules (one kernel call for the whole batch)."""
from __future__ import annotations

from typing import Optional

import torch

from tensorops import _extension, _routing, reference
from tensorops._checks import where


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
    """The op of ``function``, through it where derivatives may be needed (:func:`tensorops._routing.call`);
    ``direct``: the op itself (torch.library's batching rules, which run with a torch.func level peeled off)."""
    op = getattr(torch.ops.tensorops, _OPS[function.__name__]).default
    return op(*args) if direct else _routing.call(op, function, args)


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

    forward = _routing.forward_below_autograd("clamp")

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


def _keep_input_and_bounds(ctx, input, min, max) -> None:
    """What the number-bound Functions keep: input (its masks) and the bounds."""
    ctx.save_for_backward(input)
    ctx.save_for_forward(input)
    ctx.min, ctx.max = min, max


class _ClampScalar(torch.autograd.Function):
    """Derivatives of clamp with number bounds: the gradient and the tangent are both masked by the same rule
    (torch's), the clamp_scalar_backward kernel, which is differentiable (:class:`_ClampScalarBackward`)."""

    forward = _routing.forward_below_autograd("clamp_scalar")

    setup_context = staticmethod(lambda ctx, inputs, output: _keep_input_and_bounds(ctx, *inputs))

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

    forward = _routing.forward_below_autograd("clamp_scalar_backward")

    setup_context = staticmethod(lambda ctx, inputs, output: _keep_input_and_bounds(ctx, *inputs[1:]))

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
            f"{where('clamp_')}vmap: input is not batched but a bound is; the in-place result cannot hold "
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

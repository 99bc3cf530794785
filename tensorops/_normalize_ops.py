"""normalize's registrations on the compiled ops: fake kernels, the autograd.Functions (backward, jvp) and the
vmap batching rules (one kernel call for the whole batch)."""
from __future__ import annotations

from typing import Optional

import torch

from tensorops import _checks, _extension, _routing, reference


def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "normalize")
    def _(input, mean, std, dim, scale, dtype, memory_format):
        return torch.empty_like(input, dtype=dtype, memory_format=memory_format)

    @torch.library.register_fake(lib + "normalize_tensor")
    def _(input, mean, std, scale, dtype, memory_format):
        return torch.empty_like(input, dtype=dtype, memory_format=memory_format)

    # the _out ops: out checked as the wrapper checks it, and returned
    @torch.library.register_fake(lib + "normalize_out")
    def _(input, mean, std, dim, scale, dtype, memory_format, *, out):
        return _checks.check_out("normalize", out, input.shape, dtype, input.device)

    @torch.library.register_fake(lib + "normalize_tensor_out")
    def _(input, mean, std, scale, dtype, memory_format, *, out):
        return _checks.check_out("normalize", out, input.shape, dtype, input.device)

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
    _extension.register_out_autograd("normalize")
    _extension.register_out_autograd("normalize_tensor")


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
        return _routing.call(op, _Normalize, _normalize_apply_args(*args), args)

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

    forward = _routing.forward_below_autograd("normalize_tensor")

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
    return (op(*args) if direct else _routing.call(op, _Normalize, _normalize_apply_args(*args), args)), 0


def _normalize_tensor_vmap(info, in_dims, input, mean, std, scale, dtype, memory_format, direct=True):
    def front(t: torch.Tensor, bdim: Optional[int]) -> torch.Tensor:
        return t.unsqueeze(0) if bdim is None else t.movedim(bdim, 0)

    x, m, s = front(input, in_dims[0]), front(mean, in_dims[1]), front(std, in_dims[2])
    if in_dims[0] is None:
        x = x.expand((info.batch_size,) + tuple(input.shape))
    mf = memory_format if memory_format == torch.contiguous_format else torch.preserve_format
    args = (x, m, s, scale, dtype, mf)
    op = torch.ops.tensorops.normalize_tensor.default
    return (op(*args) if direct else _routing.call(op, _NormalizeTensor, args)), 0


if _extension.is_compiled():
    _register()

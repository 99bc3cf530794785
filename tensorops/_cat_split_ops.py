"""cat and split's registrations on the compiled ops: fake kernels (with the wrappers' argument checks,
tensorops._checks), the autograd.Functions (each op's backward and jvp is the other op, or itself) and the vmap
batching rules (one kernel call for the whole batch)."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch

from tensorops import _checks, _extension, _routing


def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "cat")
    def _(tensors, dim):
        shape, dtype, mf, device, _ = _checks.cat_meta(tensors, dim)
        return torch.empty(shape, dtype=dtype, device=device, memory_format=mf)

    @torch.library.register_fake(lib + "split")
    def _(input, sizes, dim):
        dim = _checks.split_input(input, dim)
        _checks.check_split_sizes(sizes, input.shape[dim], dim)
        outs = []
        for s in sizes:
            shape = list(input.shape)
            shape[dim] = s
            outs.append(input.new_empty(shape))
        return outs

    torch.library.register_vmap(lib + "cat", _cat_vmap)
    torch.library.register_vmap(lib + "split", _split_vmap)
    # torch's legacy vmap (torch._vmap_internals, which gradcheck's batched checks still use) has no
    # fallback for Tensor[] ops: there, torch's own ops, which it has rules for
    _extension._IMPL.impl("cat", lambda tensors, dim: torch.cat(tensors, dim), "Batched")  # type: ignore[union-attr]
    _extension._IMPL.impl(  # type: ignore[union-attr]
        "split", lambda input, sizes, dim: [p.clone() for p in torch.split_with_sizes(input, sizes, dim)], "Batched"
    )
    _extension.register_autograd_function("cat", _Cat, lambda tensors, dim: (dim, *tensors))
    _extension.register_autograd_function(
        "split", _Split, lambda input, sizes, dim: (input, _extension.Static(list(sizes)), dim), list
    )


def _run_cat(tensors: Sequence[torch.Tensor], dim: int) -> torch.Tensor:
    return _routing.call(torch.ops.tensorops.cat.default, _Cat, (dim, *tensors), (list(tensors), dim))


def _run_split(input: torch.Tensor, sizes: List[int], dim: int) -> Tuple[torch.Tensor, ...]:
    args = (input, _extension.Static(sizes), dim)
    return tuple(_routing.call(torch.ops.tensorops.split.default, _Split, args, (input, sizes, dim)))


def _zeros_for_missing(tensors: Sequence[Optional[torch.Tensor]], shapes, dtype: torch.dtype) -> List[torch.Tensor]:
    """``tensors`` with each None replaced by a broadcast zero of its shape (one 0-dim zero, expanded: no
    memory until the cat kernel writes it). At least one entry is a tensor."""
    zero = None
    filled = []
    for t, shape in zip(tensors, shapes):
        if t is None:
            if zero is None:
                ref = next(x for x in tensors if x is not None)
                zero = torch.zeros((), dtype=dtype, device=ref.device)
            t = zero.expand(shape)
        filled.append(t)
    return filled


class _Cat(torch.autograd.Function):
    """cat is linear: its gradient is tensorops' split of the output gradient and its jvp the cat of the
    tangents, both through these same differentiable ops (one pass for any number of inputs)."""

    @staticmethod
    def forward(dim, *tensors):
        with _extension.below_autograd():
            return torch.ops.tensorops.cat.default(list(tensors), dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        dim, *tensors = inputs
        valid = [not _checks.skipped(t) for t in tensors]
        wdim = dim % output.dim() if any(valid) else 0
        ctx.wdim, ctx.valid = wdim, valid
        ctx.sizes = [t.shape[wdim] if v else 0 for t, v in zip(tensors, valid)]
        ctx.dtypes = [t.dtype for t in tensors]
        ctx.shapes = [t.shape for t in tensors]
        ctx.out_dtype = output.dtype

    @staticmethod
    def backward(ctx, grad):
        sizes = [s for s, v in zip(ctx.sizes, ctx.valid) if v]
        pieces = iter(_run_split(grad, sizes, ctx.wdim) if sizes else ())
        grads = []
        for v, dtype in zip(ctx.valid, ctx.dtypes):
            g = next(pieces) if v else grad.new_zeros((0,))
            grads.append(g if g.dtype == dtype else g.to(dtype))
        return (None, *grads)

    @staticmethod
    def jvp(ctx, _, *tangents):
        out = _run_cat(_zeros_for_missing(tangents, ctx.shapes, ctx.out_dtype), ctx.wdim)
        return out if out.dtype == ctx.out_dtype else out.to(ctx.out_dtype)

    @staticmethod
    def vmap(info, in_dims, dim, *tensors):
        return _cat_vmap(info, (list(in_dims[1:]), None), list(tensors), dim, _run_cat)


class _Split(torch.autograd.Function):
    """split's gradient is tensorops' cat of the piece gradients (a missing one is a broadcast zero piece,
    until the cat kernel writes it; all missing: no gradient); its jvp is the split of the tangent."""

    @staticmethod
    def forward(input, sizes, dim):
        with _extension.below_autograd():
            return tuple(torch.ops.tensorops.split.default(input, sizes.value, dim))

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, sizes, dim = inputs
        ctx.set_materialize_grads(False)
        ctx.wdim, ctx.sizes = dim % input.dim(), sizes.value
        ctx.shapes = [tuple(o.shape) for o in output]
        ctx.dtype = input.dtype

    @staticmethod
    def backward(ctx, *grads):
        if all(g is None for g in grads):
            return None, None, None
        return _run_cat(_zeros_for_missing(grads, ctx.shapes, ctx.dtype), ctx.wdim), None, None

    @staticmethod
    def jvp(ctx, t_input, *_):
        return _run_split(t_input, ctx.sizes, ctx.wdim)

    @staticmethod
    def vmap(info, in_dims, input, sizes, dim):
        outs, dims = _split_vmap(info, in_dims, input, sizes.value, dim, _run_split)
        return tuple(outs), tuple(dims)


# ---- vmap: one kernel call for the whole batch (the batch dim moved to the front) ----------------------------
def _cat_vmap(info, in_dims, tensors, dim, run=None):
    """The batching rule: torch.library's (``run`` None: the op itself, called below the batched level) and
    _Cat's vmap staticmethod (``run`` _run_cat: a torch.func level may still be active below)."""
    run = run or torch.ops.tensorops.cat.default
    dims = in_dims[0]
    dtype = tensors[0].dtype
    physical = []
    for i, (t, d) in enumerate(zip(tensors, dims)):
        dtype = torch.promote_types(dtype, t.dtype)
        logical = tuple(t.shape) if d is None else tuple(t.shape[:d] + t.shape[d + 1 :])
        if len(logical) == 0:
            raise RuntimeError(f"{_checks.where('cat')}zero-dimensional tensor (at position {i}) cannot be concatenated")
        if logical == (0,):
            continue  # the legacy skip, which the physical (batch, 0) tensor would not get
        physical.append(t.movedim(d, 0) if d is not None else t.unsqueeze(0).expand((info.batch_size,) + logical))
    if not physical:
        return tensors[0].new_empty((info.batch_size, 0), dtype=dtype), 0
    ndim = physical[0].dim() - 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"{_checks.where('cat')}Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    out = run(physical, dim % ndim + 1)
    return (out if out.dtype == dtype else out.to(dtype)), 0


def _split_vmap(info, in_dims, input, sizes, dim, run=None):
    run = run or torch.ops.tensorops.split.default
    x = input.movedim(in_dims[0], 0)
    ndim = x.dim() - 1
    outs = run(x, list(sizes), dim % ndim + 1)
    return list(outs), [0] * len(outs)


if _extension.is_compiled():
    _register()

"""cat and split: drop-ins for ``torch.cat`` and ``torch.split`` that move any number of tensors in one pass.

The kernels copy bytes, so every dtype (bool and complex included) goes through them. Inputs of another
dtype (type promotion), with the conjugate/negative bit set, or not laid out as rows of dense runs in the
output's memory order (e.g. transposed) are first copied into that layout; all others are read in place.
"""
from __future__ import annotations

import operator
from typing import List, Optional, Sequence, Tuple, Union

import torch
import torch.autograd.forward_ad as _fwAD
from torch._prims_common import suggest_memory_format

from tensorops import _extension, reference

__all__ = ["cat", "split"]

_C = _extension._C
_FAST_CAT = getattr(_C, "cat_fast", None)
_FAST_SPLIT = getattr(_C, "split_fast", None)


# ---- argument checks, shared by the fallback and the fake kernels -------------------------------------------
def _skipped(t: torch.Tensor) -> bool:
    # torch's legacy rule: 1-D tensors of shape (0,) take no part in cat's shape checks
    return t.dim() == 1 and t.shape[0] == 0


def _kernel_layout(t: torch.Tensor) -> bool:
    """Strided and not quantized: what the kernels read (sparse, quantized, mkldnn... go to torch)."""
    return t.layout == torch.strided and not t.is_quantized


def _tensor_list(tensors: object) -> List[torch.Tensor]:
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"tensorops.cat(): tensors must be a list or tuple of Tensors, got {type(tensors).__name__}"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensorops.cat(): tensors[{i}] must be a Tensor, got {type(t).__name__}")
    return list(tensors)


def _check_dim_type(fn: str, dim: object) -> int:
    if isinstance(dim, int) and not isinstance(dim, bool):
        return dim
    if not isinstance(dim, bool) and hasattr(dim, "__index__"):  # numpy integers, as torch accepts them
        return operator.index(dim)  # type: ignore[arg-type]
    raise TypeError(f"tensorops.{fn}(): dim must be an int, got {type(dim).__name__}")


def _cat_meta(tensors: Sequence[torch.Tensor], dim: int):
    """torch.cat's checks, in the kernels' order and words: (shape, dtype, memory_format, device, wrapped dim)."""
    if len(tensors) == 0:
        raise ValueError("tensorops.cat(): expected a non-empty list of Tensors")
    device = tensors[0].device
    dtype = tensors[0].dtype
    valid = -1
    ref: Optional[torch.Tensor] = None
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(
                f"tensorops.cat(): zero-dimensional tensor (at position {i}) cannot be concatenated: "
                f"tensors[{i}] has shape ()"
            )
        if t.device != device:
            raise RuntimeError(
                f"tensorops.cat(): expected all tensors to be on the same device, but tensors[{i}] is on "
                f"{t.device} and tensors[0] is on {device}"
            )
        dtype = torch.promote_types(dtype, t.dtype)
        if valid < 0 and not _skipped(t):
            valid, ref = i, t
    formats = {suggest_memory_format(t) for t in tensors}
    mf = formats.pop() if len(formats) == 1 else torch.contiguous_format
    if ref is None:
        return (0,), dtype, torch.contiguous_format, device, 0
    ndim = ref.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"tensorops.cat(): dim {dim} is out of range for tensors[{valid}] with {ndim} dimensions "
            f"(expected to be in range of [{-ndim}, {ndim - 1}])"
        )
    dim = dim % ndim
    total = 0
    for i, t in enumerate(tensors):
        if _skipped(t):
            continue
        if t.dim() != ndim:
            raise RuntimeError(
                f"tensorops.cat(): Tensors must have same number of dimensions: got {ndim} and {t.dim()} "
                f"(tensors[{valid}] and tensors[{i}])"
            )
        for d in range(ndim):
            if d != dim and t.shape[d] != ref.shape[d]:
                raise RuntimeError(
                    f"tensorops.cat(): Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{ref.shape[d]} but got size {t.shape[d]} for tensor number {i} in the list (dimension {d}: "
                    f"tensors[{i}] has shape {list(t.shape)}, tensors[{valid}] {list(ref.shape)})"
                )
        total = total + t.shape[dim]
    shape = list(ref.shape)
    shape[dim] = total
    return tuple(shape), dtype, mf, device, dim


def _split_sizes(tensor: torch.Tensor, split_size_or_sections: object, dim: int) -> Tuple[List[int], int]:
    """torch.split's pieces as a list of sizes, with torch's checks; returns (sizes, wrapped dim)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensorops.split(): tensor must be a Tensor, got {type(tensor).__name__}")
    if tensor.dim() == 0:
        raise RuntimeError("tensorops.split(): split expects at least a 1-dimensional tensor")
    ndim = tensor.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"tensorops.split(): dim {dim} is out of range for input with {ndim} dimensions "
            f"(expected to be in range of [{-ndim}, {ndim - 1}])"
        )
    dim = dim % ndim
    dim_size = tensor.shape[dim]
    if isinstance(split_size_or_sections, torch.Tensor) and split_size_or_sections.dim() == 0:
        split_size_or_sections = int(split_size_or_sections.item())
    if isinstance(split_size_or_sections, bool):
        raise TypeError("tensorops.split(): split_size_or_sections must be an int or a sequence of ints, got bool")
    if isinstance(split_size_or_sections, int) or isinstance(split_size_or_sections, torch.SymInt):
        size = split_size_or_sections
        if size < 0:
            raise RuntimeError(f"tensorops.split(): split expects split_size be non-negative, but got split_size={size}")
        if size == 0:
            if dim_size != 0:
                raise RuntimeError(
                    f"tensorops.split(): split_size can only be 0 if dimension size is 0, but got dimension size "
                    f"of {dim_size}"
                )
            return [0], dim
        count = max(-(-dim_size // size), 1)
        return [size] * (count - 1) + [dim_size - size * (count - 1)], dim
    if not isinstance(split_size_or_sections, (list, tuple)):
        raise TypeError(
            "tensorops.split(): split_size_or_sections must be an int or a sequence of ints, got "
            f"{type(split_size_or_sections).__name__}"
        )
    sizes = []
    for i, s in enumerate(split_size_or_sections):
        if isinstance(s, torch.Tensor) and s.dim() == 0 and not s.is_floating_point():
            s = int(s.item())
        if isinstance(s, bool) or not isinstance(s, (int, torch.SymInt)):
            raise TypeError(f"tensorops.split(): split_sizes[{i}] must be an int, got {type(s).__name__}")
        sizes.append(s)
    for i, s in enumerate(sizes):
        if s < 0:
            raise RuntimeError(
                f"tensorops.split(): split_sizes must be non-negative, but split_sizes[{i}] is {s} "
                f"(split_sizes={sizes})"
            )
    if sum(sizes) != dim_size:
        raise RuntimeError(
            f"tensorops.split(): split_sizes must sum exactly to {dim_size} (input's size at dimension {dim}), "
            f"but got split_sizes={sizes} (sum {sum(sizes)})"
        )
    return sizes, dim


# ---- public functions ------------------------------------------------------------------------------------------
def cat(
    tensors: Union[List[torch.Tensor], Tuple[torch.Tensor, ...]],
    dim: int = 0,
    *,
    out: Optional[torch.Tensor] = None,
    axis: Optional[int] = None,
) -> torch.Tensor:
    """Concatenates ``tensors`` along ``dim`` in one pass: a drop-in for ``torch.cat``.

    Args:
        tensors: a non-empty list or tuple of tensors (any dtype, bool and complex included, any strides) with
            the same shape except along ``dim``. 1-D tensors of shape ``(0,)`` are skipped, as torch does.
        dim: the dimension to concatenate along; negative counts from the end. ``axis`` is its alias (numpy's
            name, which torch.cat accepts too).
        out: a tensor to write the result into, with torch.cat's rules (an empty one is resized, a dtype the
            result cannot be cast to raises, an input overlapping it raises); it runs torch.cat's out= variant.

    Inputs the kernels do not cover (quantized, sparse or other non-strided layouts, devices without kernels
    such as ``meta``) go to torch.cat. Forward AD, torch.func transforms (vmap with one kernel call for the
    whole batch) and double backward work as for torch.cat.

    Returns:
        A tensor of the inputs' promoted dtype (``torch.result_type`` over all inputs), sized as the inputs
        except along ``dim`` (the sum of their sizes), channels_last when every input suggests it (as torch).

    Errors are torch's (ValueError for an empty list, IndexError for ``dim`` out of range, RuntimeError for
    0-dim inputs, rank or size mismatches and mixed devices), naming the offending tensor's position.

    Example:
        >>> xs = [torch.randn(64) for _ in range(10_000)]
        >>> tensorops.cat(xs).shape
        torch.Size([640000])
        >>> tensorops.cat([torch.ones(2, 3), torch.zeros(2, 1, dtype=torch.float64)], dim=-1).dtype
        torch.float64
    """
    if axis is not None:
        if dim != 0:
            raise TypeError("tensorops.cat(): got both dim and its alias axis; pass one of them")
        dim = axis
    dim = _check_dim_type("cat", dim)
    if out is not None:
        return torch.cat(_tensor_list(tensors), dim, out=out)
    # the C entry point itself leaves torch.func transforms, subclasses and grad to torch.ops; not forward AD
    if _FAST_CAT is not None and _fwAD._current_level < 0 and not torch.compiler.is_compiling():
        result = _FAST_CAT(tensors, dim)  # plain tensors that need no gradient; None: not handled there
        if result is not None:
            return result
    tensors = _tensor_list(tensors)
    if not all(_kernel_layout(t) for t in tensors):
        return reference.cat(tensors, dim)  # quantized, sparse, ...: torch's result and errors
    if tensors and _extension.kernels_for(tensors[0].device):
        return _run_cat(tensors, dim)
    _cat_meta(tensors, dim)  # the kernels' errors, then torch for what they do not cover
    return reference.cat(tensors, dim)


def split(
    tensor: torch.Tensor,
    split_size_or_sections: Union[int, Sequence[int]],
    dim: int = 0,
    *,
    out: Optional[Sequence[torch.Tensor]] = None,
) -> Optional[Tuple[torch.Tensor, ...]]:
    """Splits ``tensor`` into contiguous pieces along ``dim`` in one pass: ``torch.split`` as copies.

    The pieces are those of ``torch.split`` (an int gives chunks of that size with a smaller last one; a
    sequence gives pieces of those sizes, which must sum to ``tensor.shape[dim]``; zero sizes are allowed),
    but each is a contiguous tensor of its own, like ``torch.split_with_sizes_copy``: no piece shares memory
    with ``tensor`` or with another piece.

    Args:
        tensor: a tensor with at least one dimension, any dtype and strides.
        split_size_or_sections: the size of each chunk, or the list of piece sizes.
        dim: the dimension to split along; negative counts from the end.
        out: a list of tensors, one per piece, to write the pieces into in one pass (e.g. a flat bucket back
            into each ``.grad``): ``torch.split_with_sizes_copy(..., out=out)`` itself, with its rules (a list of
            the wrong length or a tensor of another dtype raises, a piece of the wrong shape is resized). Returns
            None then, as torch does.

    Inputs the kernels do not cover (quantized, sparse, ``meta``...) go to torch. Forward AD, torch.func
    transforms (vmap with one kernel call for the whole batch) and double backward work as for torch.

    Returns:
        A tuple of contiguous tensors of ``tensor``'s dtype (None with ``out``).

    Example:
        >>> x = torch.arange(10).view(2, 5)
        >>> [p.tolist() for p in tensorops.split(x, [2, 3], dim=1)]
        [[[0, 1], [5, 6]], [[2, 3, 4], [7, 8, 9]]]
    """
    dim = _check_dim_type("split", dim)
    sizes, wdim = _split_sizes(tensor, split_size_or_sections, dim)
    if out is not None:
        if isinstance(out, torch.Tensor) or not isinstance(out, (list, tuple)):
            raise TypeError(f"tensorops.split(): out must be a list of Tensors, got {type(out).__name__}")
        return torch.split_with_sizes_copy(tensor, sizes, wdim, out=list(out))
    if _FAST_SPLIT is not None and _fwAD._current_level < 0 and not torch.compiler.is_compiling():
        result = _FAST_SPLIT(tensor, sizes, wdim)
        if result is not None:
            return result
    if _extension.kernels_for(tensor.device) and _kernel_layout(tensor):
        return _run_split(tensor, sizes, wdim)
    return reference.split(tensor, sizes, wdim)


# ---- registrations on the compiled ops: fake kernels and autograd ------------------------------------------
def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "cat")
    def _(tensors, dim):
        shape, dtype, mf, device, _ = _cat_meta(tensors, dim)
        return torch.empty(shape, dtype=dtype, device=device, memory_format=mf)

    @torch.library.register_fake(lib + "split")
    def _(input, sizes, dim):
        if input.dim() == 0:
            raise RuntimeError("tensorops.split(): split expects at least a 1-dimensional tensor")
        ndim = input.dim()
        if not -ndim <= dim < ndim:
            raise IndexError(f"tensorops.split(): dim {dim} is out of range for input with {ndim} dimensions")
        dim = dim % ndim
        for s in sizes:
            torch._check(s >= 0, lambda: f"tensorops.split(): split_sizes must be non-negative, got {sizes}")
        torch._check(
            sum(sizes) == input.shape[dim],
            lambda: f"tensorops.split(): split_sizes must sum exactly to {input.shape[dim]}, got {sizes}",
        )
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
    return _extension.differentiable_call(torch.ops.tensorops.cat.default, _Cat, (dim, *tensors), (list(tensors), dim))


def _run_split(input: torch.Tensor, sizes: List[int], dim: int) -> Tuple[torch.Tensor, ...]:
    args = (input, _extension.Static(sizes), dim)
    return tuple(_extension.differentiable_call(torch.ops.tensorops.split.default, _Split, args, (input, sizes, dim)))


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
        valid = [not _skipped(t) for t in tensors]
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
            raise RuntimeError(f"tensorops.cat(): zero-dimensional tensor (at position {i}) cannot be concatenated")
        if logical == (0,):
            continue  # the legacy skip, which the physical (batch, 0) tensor would not get
        physical.append(t.movedim(d, 0) if d is not None else t.unsqueeze(0).expand((info.batch_size,) + logical))
    if not physical:
        return tensors[0].new_empty((info.batch_size, 0), dtype=dtype), 0
    ndim = physical[0].dim() - 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
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

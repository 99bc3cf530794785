"""cat and split: drop-ins for ``torch.cat`` and ``torch.split`` that move any number of tensors in one pass.

The kernels copy bytes, so every dtype (bool and complex included) goes through them. Inputs of another
dtype (type promotion), with the conjugate/negative bit set, or not laid out as rows of dense runs in the
output's memory order (e.g. transposed) are first copied into that layout; all others are read in place.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

import torch

from tensorops import _checks, _extension, _routing, reference
from tensorops._cat_split_ops import _run_cat, _run_split
from tensorops._checks import where

__all__ = ["cat", "split"]

_C = _extension._C
_FAST_CAT = getattr(_C, "cat_fast", None)
_FAST_SPLIT = getattr(_C, "split_fast", None)
_tracing = _extension.dynamo_tracing  # bound once; see _extension.dynamo_tracing


# What the kernels cover: every dtype (they copy bytes), strided non-quantized tensors, on a device with kernels
KERNELS = _routing.Kernels(strided=True)
_NOT_A_LIST = where("cat") + "tensors must be a list or tuple of Tensors, got {type}"
_NOT_A_TENSOR = where("cat") + "tensors[{i}] must be a Tensor, got {type}"


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
            raise TypeError(f"{where('cat')}got both dim and its alias axis; pass one of them")
        dim = axis
    dim = _checks.int_dim("cat", dim)
    if out is not None:
        return torch.cat(_checks.tensor_list(tensors, _NOT_A_LIST, _NOT_A_TENSOR), dim, out=out)
    if _FAST_CAT is not None and not _tracing():
        result = _FAST_CAT(tensors, dim)  # plain tensors that need no gradient; None: not handled there
        if result is not None:
            return result
    tensors = _checks.tensor_list(tensors, _NOT_A_LIST, _NOT_A_TENSOR)
    if tensors and KERNELS.cover(*tensors):
        return _run_cat(tensors, dim)
    if not all(KERNELS.layout(t) for t in tensors):
        return reference.cat(tensors, dim)  # quantized, sparse, ...: torch's result and errors
    _checks.cat_meta(tensors, dim)  # the kernels' errors, then torch for what they do not cover
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
    if out is None and _FAST_SPLIT is not None and not _tracing():
        # plain tensors that need no gradient, exact ints: the whole call in C; None: anything else, and errors
        result = _FAST_SPLIT(tensor, split_size_or_sections, dim)
        if result is not None:
            return result
    dim = _checks.int_dim("split", dim)
    sizes, wdim = _checks.split_sizes(tensor, split_size_or_sections, dim)
    if out is not None:
        if isinstance(out, torch.Tensor) or not isinstance(out, (list, tuple)):
            raise TypeError(f"{where('split')}out must be a list of Tensors, got {type(out).__name__}")
        return torch.split_with_sizes_copy(tensor, sizes, wdim, out=list(out))
    if KERNELS.cover(tensor):
        return _run_split(tensor, sizes, wdim)
    return reference.split(tensor, sizes, wdim)



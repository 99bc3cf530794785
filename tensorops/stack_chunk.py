"""stack and chunk: the rest of the cat/split family, written on tensorops.cat and tensorops.split.

``stack`` along an existing dimension is ``cat`` along it, viewed with the new dimension (cat lays the inputs
out exactly as stack does), or ``cat`` of the inputs unsqueezed at ``dim`` (views) when the first input is not
contiguous: one pass of the cat kernel, with cat's promotion, autograd (its backward is tensorops' split) and
whatever else cat supports. A new innermost dimension (``dim == ndim``) interleaves single elements, which the
byte-copy cat kernel would move one at a time: that case is ``torch.stack``'s own kernel. ``chunk`` is
``split`` with ``torch.chunk``'s piece sizes, so every piece is a contiguous copy written in one pass, with
split's autograd (its backward is tensorops' cat). Argument errors are torch's own types and texts.
"""
from __future__ import annotations

import operator
from typing import List, Optional, Tuple, Union

import torch

from tensorops._checks import tensor_list
from tensorops.cat_split import cat, split

__all__ = ["stack", "chunk", "chunk_sizes"]


def _int_arg(fn: str, name: str, position: int, value: object) -> int:
    """An int argument as torch's argument parser takes it (ints and numpy integers; not bool, not float)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, (bool, float)) and hasattr(value, "__index__"):
        return operator.index(value)  # type: ignore[arg-type]
    raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}")


def _wrap_dim(dim: int, ndim: int) -> int:
    # torch's maybe_wrap_dim: a 0-dim tensor takes dims -1 and 0
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _check_stack(tensors: object, dim: object) -> Tuple[List[torch.Tensor], int]:
    # torch's own messages (the tests compare them with torch.stack's)
    tensors = tensor_list(tensors, "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not {type}",
                          "expected Tensor as element {i} in argument 0, but got {type}")
    dim = _int_arg("stack", "dim", 2, dim)
    if len(tensors) == 0:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]
    dim = _wrap_dim(dim, first.dim() + 1)
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != first.shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(first.shape)} at entry 0 and "
                f"{list(t.shape)} at entry {i}"
            )
    return tensors, dim


def stack(
    tensors: Union[List[torch.Tensor], Tuple[torch.Tensor, ...]],
    dim: int = 0,
    *,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Stacks equally shaped tensors along a new dimension ``dim`` in one pass: a drop-in for ``torch.stack``.

    Args:
        tensors: a non-empty list or tuple of tensors of one shape (any dtypes: the result has their promoted
            dtype; any strides).
        dim: where the new dimension goes, in ``[-(ndim + 1), ndim]``; negative counts from the end.
        out: optional output tensor, with ``torch.stack``'s ``out=`` rules (resized if needed; its dtype must
            hold the promoted result). Written by torch's own stack.

    Returns:
        A tensor of shape ``tensors[0].shape`` with ``len(tensors)`` inserted at ``dim``. Gradients flow to
        every input that requires one (the backward is one split pass). A new innermost dimension
        (``dim == ndim``) is ``torch.stack``'s own kernel (see the module docstring).

    Errors are torch's (same exception types and messages): an empty list, shapes that differ, ``dim`` out of
    range, tensors on different devices.

    Example:
        >>> xs = [torch.randn(3, 224, 224) for _ in range(32)]
        >>> tensorops.stack(xs).shape
        torch.Size([32, 3, 224, 224])
        >>> tensorops.stack([torch.tensor([1, 2]), torch.tensor([0.5, 1.5])], dim=-1)
        tensor([[1.0000, 0.5000],
                [2.0000, 1.5000]])
    """
    if (type(tensors) is list or type(tensors) is tuple) and tensors and isinstance(tensors[0], torch.Tensor):
        shape = tensors[0].shape
        try:  # the common case in a few C-level steps per tensor; anything odd takes the full check below
            same = [t.shape for t in tensors].count(shape) == len(tensors)
        except AttributeError:
            same = False
        if not same:
            _check_stack(tensors, dim)  # raises torch's error (or passes for tensor-likes cat then rejects)
        wdim = _wrap_dim(_int_arg("stack", "dim", 2, dim), len(shape) + 1)
    else:
        tensors, wdim = _check_stack(tensors, dim)  # raises torch's error for an empty list or a non-list
        shape = tensors[0].shape
    if out is not None:
        _check_devices(tensors)
        return torch.stack(tensors, wdim, out=out)
    if wdim == len(shape):
        # a new innermost dim interleaves single elements: the byte-copy cat kernel would copy them one at a
        # time (2.5x slower than torch.stack on 8 x (3,224,224), measured), so this case is torch's own stack
        _check_devices(tensors)
        return torch.stack(tensors, wdim)
    try:
        if tensors[0].is_contiguous():
            # cat along an existing dim lays the inputs out exactly as stack does: view the result instead of
            # making a view of every input (a Python call per tensor)
            res = cat(tensors, wdim)
            if res.is_contiguous():
                return res.view(*shape[:wdim], len(tensors), *shape[wdim:])
        return cat([t.unsqueeze(wdim) for t in tensors], wdim)
    except TypeError:
        _check_stack(tensors, dim)
        raise
    except RuntimeError:
        _check_devices(tensors)
        raise


def _check_devices(tensors: List[torch.Tensor]) -> None:
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device != device:
            raise RuntimeError(f"Tensor on device {t.device} is not on the expected device {device}!") from None


def chunk_sizes(dim_size: int, chunks: int) -> List[int]:
    """The piece sizes ``torch.chunk`` gives for a dimension of ``dim_size`` cut into ``chunks``: pieces of
    ``ceil(dim_size / chunks)`` with a smaller last one, so fewer than ``chunks`` pieces when they do not
    divide evenly (``dim_size`` 6 in 4 chunks: ``[2, 2, 2]``); an empty dimension gives ``chunks`` empty pieces."""
    size = -(-dim_size // chunks)
    if size == 0:
        return [0] * chunks
    count = -(-dim_size // size)
    return [size] * (count - 1) + [dim_size - size * (count - 1)]


def chunk(input: torch.Tensor, chunks: int, dim: int = 0) -> Tuple[torch.Tensor, ...]:
    """Cuts ``input`` into ``torch.chunk``'s pieces along ``dim``, each a contiguous copy, in one pass.

    The pieces have exactly the shapes of ``torch.chunk(input, chunks, dim)`` (so there may be fewer than
    ``chunks``, see :func:`chunk_sizes`), but, as :func:`tensorops.split`, each is a new contiguous tensor that
    shares memory with nothing else.

    Args:
        input: a tensor with at least one dimension, any dtype and strides.
        chunks: the number of pieces asked for, at least 1.
        dim: the dimension to cut; negative counts from the end.

    Returns:
        A tuple of contiguous tensors of ``input``'s dtype; gradients flow back to ``input`` (one cat pass).

    Errors are torch's (same types and messages).

    Example:
        >>> [p.tolist() for p in tensorops.chunk(torch.arange(5), 3)]
        [[0, 1], [2, 3], [4]]
    """
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"chunk(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    chunks = _int_arg("chunk", "chunks", 2, chunks)
    dim = _int_arg("chunk", "dim", 3, dim)
    if input.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    wdim = _wrap_dim(dim, input.dim())
    return split(input, chunk_sizes(input.shape[wdim], chunks), wdim)


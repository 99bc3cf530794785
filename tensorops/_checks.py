"""Argument checks shared by the public wrappers and the fake (meta) kernels, in one message style.

Every Python error of tensorops starts with ``tensorops.<function>(): `` (:func:`where`) and then names the
argument (``tensorops.normalize(): std has 2 values but input has 3 channels along dim -3``). Where a drop-in
mirrors an error of torch's, torch's own words follow the prefix; stack, chunk and clip_grad_value_ raise
torch's exact messages, prefix included, as their tests compare them with torch's. The C++ checks
(csrc/include/tensorops/checks.h) guard direct ``torch.ops.tensorops`` calls with ``tensorops: <arg>: ...``.
"""
from __future__ import annotations

import functools
import math
import numbers
import operator
from typing import List, Optional, Sequence, Tuple

import torch

from tensorops import reference

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
FORMATS = (torch.preserve_format, torch.contiguous_format, torch.channels_last, torch.channels_last_3d)
# Integer inputs the normalize kernels read, with the default scale that maps their range to [0, 1] (what
# torchvision's ToDtype(scale=True) divides by): 8-bit images and 16-bit PNGs.
INT_SCALES = {torch.uint8: 1.0 / 255.0, torch.uint16: 1.0 / 65535.0}


def where(fn: str) -> str:
    """The prefix of every message raised from ``tensorops.<fn>``."""
    return f"tensorops.{fn}(): "


def float_dtype(fn: str, dtype: object) -> torch.dtype:
    """An output dtype argument that must be floating."""
    if not isinstance(dtype, torch.dtype) or dtype not in FLOATS:
        raise TypeError(f"{where(fn)}dtype must be float16, bfloat16, float32 or float64, got {dtype}")
    return dtype


def int_dim(fn: str, dim: object) -> int:
    """A ``dim`` argument: an int, or a numpy integer (as torch accepts them); not a bool."""
    if isinstance(dim, int) and not isinstance(dim, bool):
        return dim
    if not isinstance(dim, bool) and hasattr(dim, "__index__"):
        return operator.index(dim)  # type: ignore[arg-type]
    raise TypeError(f"{where(fn)}dim must be an int, got {type(dim).__name__}")


def wrap_dim(fn: str, dim: int, ndim: int, of: str) -> int:
    """``dim`` wrapped into ``[0, ndim)``; an IndexError in torch's words otherwise (``of``: whose dims)."""
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"{where(fn)}dim {dim} is out of range for {of} with {ndim} dimensions "
            f"(expected to be in range of [{-ndim}, {ndim - 1}])"
        )
    return dim % ndim


def tensor_list(tensors: object, not_a_list: str, not_a_tensor: str) -> List[torch.Tensor]:
    """A list or tuple of tensors as a list. The messages are formats: ``not_a_list`` gets ``{type}``,
    ``not_a_tensor`` gets ``{i}`` (the position) and ``{type}``."""
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(not_a_list.format(type=type(tensors).__name__))
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(not_a_tensor.format(i=i, type=type(t).__name__))
    return list(tensors)


class Memo(dict):
    """Checked arguments keyed by their values (the checks cost more than a small kernel, and a training loop
    passes the same numbers on every call); emptied when it holds 256."""

    def put(self, key, value) -> None:
        if len(self) >= 256:
            self.clear()
        self[key] = value


# ---- statistics (normalize, Normalize, crop_mirror_normalize, transforms.Normalize) -----------------------
_PLAIN = (float, int)


def number_key(stat: object) -> Optional[tuple]:
    """A hashable key for plain numbers or lists/tuples of plain numbers; None for anything else."""
    tp = type(stat)
    if tp is float or tp is int:
        return (stat,)
    if (tp is list or tp is tuple) and all(type(v) in _PLAIN for v in stat):  # type: ignore[union-attr]
        return tuple(stat)  # type: ignore[arg-type]
    return None


def check_stat_values(fn: str, name: str, values: List[float]) -> None:
    """Statistics as numbers: not empty, finite, and no zero std."""
    if not values:
        raise ValueError(f"{where(fn)}{name} is empty")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{where(fn)}{name} has a NaN or infinite value: {values}")
    if name == "std" and any(v == 0 for v in values):
        raise ValueError(f"{where(fn)}std has a zero value: {values}")


def stat_numbers(fn: str, name: str, stat: object) -> Optional[List[float]]:
    """A Python number or a sequence of numbers as a checked list of floats; None if stat is a tensor."""
    if isinstance(stat, torch.Tensor):
        return None
    if isinstance(stat, bool) or isinstance(stat, (str, bytes)):
        raise TypeError(f"{where(fn)}{name} must be a number, a sequence of numbers or a tensor, got {stat!r}")
    if isinstance(stat, numbers.Real):
        values = [float(stat)]
    elif isinstance(stat, Sequence) or hasattr(stat, "__len__"):
        values = []
        for v in stat:  # type: ignore[union-attr]
            if isinstance(v, torch.Tensor) and v.numel() == 1:
                v = v.item()
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"{where(fn)}{name} must hold numbers, got an element {v!r}")
            values.append(float(v))
    else:
        raise TypeError(
            f"{where(fn)}{name} must be a number, a sequence of numbers or a tensor, got {type(stat).__name__}"
        )
    check_stat_values(fn, name, values)
    return values


def check_coefficients(
    fn: str, mean_values: Optional[List[float]], std_values: List[float], scale: float, dtype: torch.dtype
) -> None:
    """The kernels compute ``x * (scale / std) + (-mean / std)`` in the accumulation dtype: a std so small that
    it rounds to zero there, or that makes a coefficient overflow, would give NaN (inf - inf) where the formula
    has a number. Reject it instead of returning NaN."""
    acc = reference.acc_dtype(dtype)
    info = torch.finfo(acc)
    n = max(len(std_values), len(mean_values) if mean_values is not None else 1)
    for c in range(n):
        s = std_values[c if len(std_values) > 1 else 0]
        m = 0.0 if mean_values is None else mean_values[c if len(mean_values) > 1 else 0]
        if abs(s) < info.tiny or not (abs(scale / s) <= info.max and abs(m / s) <= info.max):
            raise ValueError(
                f"{where(fn)}std value {s!r} is too close to zero for {acc} arithmetic (needs |std| >= "
                f"{info.tiny:.3g}, |scale / std| and |mean / std| <= {info.max:.3g}; mean {m!r}, scale {scale!r})"
            )


@functools.lru_cache(maxsize=64)
def _cached_values(values: Tuple[float, ...], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype).to(device)


def values_tensor(values: List[float], device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Statistics given as numbers, as a 1-D tensor: made once per (values, device, dtype) and cached, or traced
    into the graph as a constant under torch.compile."""
    if torch.compiler.is_compiling():
        return torch.tensor(values, dtype=dtype, device=device)
    return _cached_values(tuple(values), device, dtype)


# ---- clamp's bounds -----------------------------------------------------------------------------------------
def check_bound(fn: str, name: str, bound: object):
    """None, a Python number (bool, int, float) or a tensor; anything else raises naming the argument."""
    kind = type(bound)
    if bound is None or kind is float or kind is int or kind is bool:  # the common cases, without ABC checks
        return bound
    if isinstance(bound, torch.Tensor):
        if bound.is_complex():
            raise NotImplementedError(f"{where(fn)}{name} is {bound.dtype}; clamp is not supported for complex types")
        return bound
    if isinstance(bound, bool):
        return bool(bound)
    if isinstance(bound, numbers.Integral):
        return int(bound)
    if isinstance(bound, numbers.Real):
        return float(bound)
    if isinstance(bound, numbers.Complex):
        raise NotImplementedError(
            f"{where(fn)}{name} is the complex number {bound!r}; clamp is not supported for complex types"
        )
    raise TypeError(f"{where(fn)}{name} must be a number, a tensor or None, got {type(bound).__name__}")


def no_bounds(fn: str) -> RuntimeError:
    """torch.clamp's error (and words) for ``min=None, max=None``."""
    return RuntimeError(f"{where(fn)}At least one of 'min' or 'max' must not be None")


# ---- cat and split (the wrappers, the fallback and the fake kernels) ----------------------------------------
def require(ok, message) -> None:
    """``RuntimeError(message())`` unless ``ok``. A symbolic ``ok`` in a fake kernel (dynamic shapes) goes to
    torch._check, which records the condition instead of guarding on it; while dynamo traces a wrapper it is a
    plain test (a guard: dynamo cannot trace torch._check's message closure)."""
    if ok is True:
        return
    if ok is False or torch.compiler.is_dynamo_compiling():
        if not ok:
            raise RuntimeError(message())
        return
    torch._check(ok, message)


def skipped(t: torch.Tensor) -> bool:
    """torch's legacy rule: 1-D tensors of shape (0,) take no part in cat's shape checks."""
    return t.dim() == 1 and t.shape[0] == 0


def cat_meta(tensors: Sequence[torch.Tensor], dim: int):
    """torch.cat's checks, in the kernels' order and words: (shape, dtype, memory_format, device, wrapped dim)."""
    from torch._prims_common import suggest_memory_format

    fn = where("cat")
    if len(tensors) == 0:
        raise ValueError(f"{fn}expected a non-empty list of Tensors")
    device = tensors[0].device
    dtype = tensors[0].dtype
    valid = -1
    ref: Optional[torch.Tensor] = None
    for i, t in enumerate(tensors):
        if t.dim() == 0:
            raise RuntimeError(f"{fn}zero-dimensional tensor (at position {i}) cannot be concatenated: "
                               f"tensors[{i}] has shape ()")
        if t.device != device:
            raise RuntimeError(f"{fn}expected all tensors to be on the same device, but tensors[{i}] is on "
                               f"{t.device} and tensors[0] is on {device}")
        dtype = torch.promote_types(dtype, t.dtype)
        if valid < 0 and not skipped(t):
            valid, ref = i, t
    formats = {suggest_memory_format(t) for t in tensors}
    mf = formats.pop() if len(formats) == 1 else torch.contiguous_format
    if ref is None:
        return (0,), dtype, torch.contiguous_format, device, 0
    ndim = ref.dim()
    dim = wrap_dim("cat", dim, ndim, f"tensors[{valid}]")
    total = 0
    for i, t in enumerate(tensors):
        if skipped(t):
            continue
        if t.dim() != ndim:
            raise RuntimeError(f"{fn}Tensors must have same number of dimensions: got {ndim} and {t.dim()} "
                               f"(tensors[{valid}] and tensors[{i}])")
        for d in range(ndim):
            if d != dim and t.shape[d] != ref.shape[d]:
                raise RuntimeError(
                    f"{fn}Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{ref.shape[d]} but got size {t.shape[d]} for tensor number {i} in the list (dimension {d}: "
                    f"tensors[{i}] has shape {list(t.shape)}, tensors[{valid}] {list(ref.shape)})"
                )
        total = total + t.shape[dim]
    shape = list(ref.shape)
    shape[dim] = total
    return tuple(shape), dtype, mf, device, dim


_SPLIT = where("split")


def split_input(tensor: torch.Tensor, dim: int) -> int:
    """split's input (at least 1-D) and its dim, wrapped."""
    ndim = tensor.dim()
    if ndim == 0:
        raise RuntimeError(f"{_SPLIT}split expects at least a 1-dimensional tensor")
    if -ndim <= dim < ndim:
        return dim % ndim
    return wrap_dim("split", dim, ndim, "input")  # raises


def check_split_sizes(sizes: Sequence, dim_size, dim: int) -> None:
    """Piece sizes: non-negative, summing to the input's size at ``dim``."""
    total = sum(sizes)
    if type(total) is int and total == dim_size and (not sizes or min(sizes) >= 0):
        return  # plain ints that pass: the common case, without a closure per check
    for i, s in enumerate(sizes):
        require(s >= 0, lambda: f"{_SPLIT}split_sizes must be non-negative, but split_sizes[{i}] is {s} "
                                f"(split_sizes={list(sizes)})")
    require(total == dim_size, lambda: f"{_SPLIT}split_sizes must sum exactly to {dim_size} (input's size at "
                                       f"dimension {dim}), but got split_sizes={list(sizes)} (sum {total})")


def split_sizes(tensor: object, split_size_or_sections: object, dim: int) -> Tuple[List[int], int]:
    """torch.split's pieces as a list of sizes, with torch's checks; returns (sizes, wrapped dim)."""
    fn = _SPLIT
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{fn}tensor must be a Tensor, got {type(tensor).__name__}")
    dim = split_input(tensor, dim)
    dim_size = tensor.shape[dim]
    sections = split_size_or_sections
    if isinstance(sections, torch.Tensor) and sections.dim() == 0:
        sections = int(sections.item())
    if isinstance(sections, bool):
        raise TypeError(f"{fn}split_size_or_sections must be an int or a sequence of ints, got bool")
    if isinstance(sections, int) or isinstance(sections, torch.SymInt):
        size = sections
        if size < 0:
            raise RuntimeError(f"{fn}split expects split_size be non-negative, but got split_size={size}")
        if size == 0:
            if dim_size != 0:
                raise RuntimeError(
                    f"{fn}split_size can only be 0 if dimension size is 0, but got dimension size of {dim_size}"
                )
            return [0], dim
        count = max(-(-dim_size // size), 1)
        return [size] * (count - 1) + [dim_size - size * (count - 1)], dim
    if not isinstance(sections, (list, tuple)):
        raise TypeError(
            f"{fn}split_size_or_sections must be an int or a sequence of ints, got {type(sections).__name__}"
        )
    sizes = []
    bad = False
    for i, s in enumerate(sections):
        if isinstance(s, torch.Tensor) and s.dim() == 0 and not s.is_floating_point():
            s = int(s.item())
        if isinstance(s, bool) or not isinstance(s, (int, torch.SymInt)):
            raise TypeError(f"{fn}split_sizes[{i}] must be an int, got {type(s).__name__}")
        if s < 0:
            bad = True
        sizes.append(s)
    if bad or sum(sizes) != dim_size:
        check_split_sizes(sizes, dim_size, dim)  # raises, naming the piece
    return sizes, dim


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two strided tensors' element ranges in one storage intersect (at::get_overlap_status's Partial or
    Full for the dense tensors it can judge; a range test, conservative, for the others)."""
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if sa.data_ptr() != sb.data_ptr():
        return False

    def span(t):
        start = t.storage_offset() * t.element_size()
        last = sum((n - 1) * st for n, st in zip(t.shape, t.stride())) * t.element_size()
        return start, start + last + t.element_size()

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def check_out(fn: str, out: object, shape: Sequence[int], dtype: torch.dtype, device: torch.device,
              inputs: Sequence[Optional[torch.Tensor]] = ()) -> torch.Tensor:
    """``out=``, checked before any work, as torch checks it and with messages naming ``out``: no argument that
    requires grad (torch's words: out= forms are not differentiable), a strided tensor of the result's shape,
    dtype and device, no two elements of it in one memory location, and none shared with an input (the kernels
    write ``out`` directly while they read the inputs). Shared by every op that takes out= and by the fake kernels
    of the ``_out`` ops; the C++ entries check the same (csrc/include/tensorops/out_host.h) for direct calls."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(where(fn) + f"out must be a tensor, got {type(out).__name__}")
    if torch.is_grad_enabled() and (out.requires_grad or any(t is not None and t.requires_grad for t in inputs)):
        raise RuntimeError(where(fn) + "functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if out.layout != torch.strided:
        raise ValueError(where(fn) + f"out must be a strided tensor, got {out.layout}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(where(fn) + f"out has shape {tuple(out.shape)} but the result has {tuple(shape)}")
    if out.dtype != dtype:
        raise TypeError(where(fn) + f"out is {out.dtype} but the result is {dtype}")
    if out.device != device:
        raise ValueError(where(fn) + f"out is on {out.device} but the result is on {device}")
    # (under torch.compile the op's own C++ check does it at run time; fake tensors have no memory to compare)
    if out.numel() > 1 and not torch.compiler.is_compiling() and not isinstance(out, torch._subclasses.FakeTensor):
        if torch._debug_has_internal_overlap(out) == 1:
            raise RuntimeError(where(fn) + "out: unsupported operation: more than one element of the written-to tensor "
                               "refers to a single memory location. Please clone() the tensor before performing "
                               "the operation.")
        for t in inputs:
            if t is not None and _shares_memory(out, t):
                raise RuntimeError(where(fn) + "out: unsupported operation: some elements of the input tensor and "
                                   "the written-to tensor refer to a single memory location. Please clone() the "
                                   "tensor before performing the operation.")
    return out


def copy_out(result: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    """The native-torch fallback's result (inputs the kernels do not cover) for an ``out`` already checked by
    :func:`check_out`: copied into it (the kernels write ``out`` directly; this route has no kernel to)."""
    return result if out is None else out.copy_(result)

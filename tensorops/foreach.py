"""The many-tensor clamp: ``tensorops.clamp`` / ``tensorops.clamp_`` on a list of tensors, and
``clip_grad_value_``.

A list (any sizes, dtypes, devices) is grouped per device and each group is clamped by one call of the
``tensorops::foreach_clamp_scalar(_)`` op: one pass over all of its tensors on the CPU (one parallel loop over
every element of the list), one launch per dtype on CUDA, like ``torch._foreach_clamp_min_`` followed by
``torch._foreach_clamp_max_`` but in one pass. Values, dtypes, layouts and NaN rules are ``torch.clamp``'s for
each tensor. A single tensor goes to :func:`tensorops.clamp.clamp` unchanged.
"""
from __future__ import annotations

from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.autograd.forward_ad as _fwAD

from tensorops import _extension, _routing, reference
from tensorops._checks import check_bound, no_bounds, where
from tensorops.clamp import Bound
from tensorops.clamp import _FAST_CLAMP, _tracing
from tensorops.clamp import clamp as _clamp_tensor
from tensorops.clamp import clamp_ as _clamp_tensor_

__all__ = ["clamp", "clamp_", "clip_grad_value_"]

TensorList = Union[List[torch.Tensor], Sequence[torch.Tensor]]
# What the list kernels cover: every dtype torch.clamp takes, on a device with kernels. Quantized tensors (the list
# scan notes them in its one pass, so the list is not walked again here) go to torch; inside the op, views that
# are not dense are clamped by torch
KERNELS = _routing.Kernels()


# ---- argument handling ------------------------------------------------------------------------------------------
class _Scan(NamedTuple):
    tensors: List[torch.Tensor]
    groups: List[Tuple[torch.device, Optional[List[int]]]]  # (device, indices); None: the whole list
    requires_grad: bool  # some tensor requires grad
    integral: bool  # some tensor is not floating point
    quantized: bool  # some tensor is quantized (native torch only)


def _scan(fn: str, tensors: Sequence[object]) -> _Scan:
    """One pass over the list (a few attribute reads per tensor): checks every element and groups by device."""
    tensors = list(tensors)
    first = None
    mixed = grad = integral = quantized = False
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{where(fn)}input must be a tensor or a list of tensors, but input[{i}] is a {type(t).__name__}"
            )
        if not t.is_floating_point():
            integral = True
            if t.is_complex():
                raise NotImplementedError(f"{where(fn)}input[{i}] is {t.dtype}; clamp is not supported for complex types")
            quantized = quantized or t.is_quantized
        if t.requires_grad:
            grad = True
        d = t.device
        if first is None:
            first = d
        elif d != first:
            mixed = True
    if first is None:
        groups = []
    elif not mixed:
        groups = [(first, None)]
    else:
        by: dict = {}
        for i, t in enumerate(tensors):
            by.setdefault(t.device, []).append(i)
        groups = list(by.items())
    return _Scan(tensors, groups, grad, integral, quantized)


def _number_bounds(fn: str, min: object, max: object):
    """(min, max, numbers): numbers is False when a bound is a tensor that is not a plain 0-dim value, which
    then goes tensor by tensor through tensorops.clamp (broadcasting, gradients to the bound)."""
    min, max = check_bound(fn, "min", min), check_bound(fn, "max", max)
    if min is None and max is None:
        raise no_bounds(fn)
    numbers = True
    out = []
    for b in (min, max):
        if isinstance(b, torch.Tensor):
            if b.dim() == 0 and not b.requires_grad and not torch.compiler.is_compiling():
                b = b.item()
            else:
                numbers = False
        out.append(b)
    return out[0], out[1], numbers


def _arguments(fn: str, tensors: Sequence[object], min: object, max: object):
    """(scan of the list, min, max, bounds are numbers): every argument of a list form checked."""
    scan = _scan(fn, tensors)
    return (scan, *_number_bounds(fn, min, max))


# ---- the list forms ---------------------------------------------------------------------------------------------
def _kernels(scan: _Scan, device: torch.device) -> bool:
    """Whether the list op may run: compiled kernels for ``device``, and no forward AD or torch.func transform
    (the op has no jvp or batching rule yet: there torch's clamp, which has both, runs tensor by tensor)."""
    if _fwAD._current_level >= 0 or torch._C._are_functorch_transforms_active():
        return False
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        # torch's foreach ops, whose capture a GPU run has checked (the kernel's own table upload is capture-safe
        # too, device_table.cuh, so far checked on the emulated device only)
        return False
    return not scan.quantized and KERNELS.device(device)


def clamp_list(tensors: TensorList, min: Bound = None, max: Bound = None) -> List[torch.Tensor]:
    """``[torch.clamp(t, min, max) for t in tensors]`` in one pass per device; see :func:`clamp`."""
    scan, min, max, numbers = _arguments("clamp", tensors, min, max)
    tensors = scan.tensors
    if not tensors:
        return []
    if not numbers:
        return [_clamp_tensor(t, min, max) for t in tensors]
    grad = scan.requires_grad and (torch.is_grad_enabled() or torch.compiler.is_compiling())
    out: List[Optional[torch.Tensor]] = [None] * len(tensors)
    for device, idx in scan.groups:
        group = tensors if idx is None else [tensors[i] for i in idx]
        if not _kernels(scan, device):
            res = reference.clamp_list(group, min, max)
        elif not grad and not torch.compiler.is_compiling():
            with _extension.below_autograd():  # the Python autograd layer costs microseconds even unused
                res = torch.ops.tensorops.foreach_clamp_scalar.default(group, min, max)
        else:
            res = torch.ops.tensorops.foreach_clamp_scalar.default(group, min, max)
        if idx is None:
            return list(res)
        for i, r in zip(idx, res):
            out[i] = r
    return out  # type: ignore[return-value]


def clamp_list_(tensors: TensorList, min: Bound = None, max: Bound = None) -> List[torch.Tensor]:
    """In place: ``t.clamp_(min, max)`` for every tensor, one pass per device; returns ``tensors`` (as a list)."""
    fn = "clamp_"
    scan, min, max, numbers = _arguments(fn, tensors, min, max)
    tensors = scan.tensors
    if not tensors:
        return tensors
    if scan.integral and (type(min) is float or type(max) is float):  # torch's rule and text, naming the tensor
        for i, t in enumerate(tensors):
            if not t.is_floating_point():
                try:
                    torch.empty(0, dtype=t.dtype).clamp_(min, max)
                except RuntimeError as exc:
                    raise RuntimeError(f"{where(fn)}min/max: input[{i}]: {exc}") from None
    if not numbers or (scan.requires_grad and torch.is_grad_enabled()):
        for t in tensors:  # autograd records each in-place update (and raises for leaves), as torch
            _clamp_tensor_(t, min, max)
        return tensors
    for device, idx in scan.groups:
        group = tensors if idx is None else [tensors[i] for i in idx]
        if not _kernels(scan, device):
            reference.clamp_list_(group, min, max)
        else:
            torch.ops.tensorops.foreach_clamp_scalar_.default(group, min, max)
            if not torch.compiler.is_compiling():  # as torch's in-place ops: autograd sees the change
                torch.autograd.graph.increment_version(group)
    return tensors


# ---- public front doors: one tensor or a list -------------------------------------------------------------------
def clamp(
    input: Union[torch.Tensor, TensorList], min: Bound = None, max: Bound = None, *, out: Optional[torch.Tensor] = None
):
    """``torch.clamp`` for one tensor, or for every tensor of a list in one pass.

    * ``input`` a tensor: exactly :func:`tensorops.clamp.clamp` (``torch.clamp``'s drop-in; see its docstring).
    * ``input`` a list or tuple of tensors (any sizes, dtypes, strides, devices): returns the list
      ``[torch.clamp(t, min, max) for t in input]``. The tensors are grouped per device and each group is one
      pass of one kernel (one launch per dtype on CUDA), like ``torch._foreach_clamp_min/max`` together.
      ``min``/``max`` are numbers (or 0-dim tensors without grad, read as numbers); a tensor bound otherwise is
      applied tensor by tensor with broadcasting. Gradients flow to every tensor that requires one. Dense
      tensors (contiguous, channels_last, transposed...) are read in place; other views are clamped by torch.

    Example:
        >>> grads = [torch.randn(64, 3, 7, 7), torch.randn(64), torch.randn(1000, 512).half()]
        >>> out = tensorops.clamp(grads, -1.0, 1.0)
        >>> [o.abs().max().item() <= 1 for o in out]
        [True, True, True]
    """
    if out is None and _FAST_CLAMP is not None and not _tracing():
        try:  # the common tiny eager call, straight to the C entry (None: not handled there; a list is not)
            result = _FAST_CLAMP(input, min, max)
        except RuntimeError:
            result = None  # the full path below gives the error, or torch's route for what the kernels lack
        if result is not None:
            return result
    if type(input) is list or type(input) is tuple:
        if out is not None:
            raise TypeError(f"{where('clamp')}a list of tensors takes no out argument")
        return clamp_list(input, min, max)
    return _clamp_tensor(input, min, max, out=out)


def clamp_(input: Union[torch.Tensor, TensorList], min: Bound = None, max: Bound = None, **kwargs):
    """In-place ``Tensor.clamp_`` for one tensor, or for every tensor of a list in one pass.

    * ``input`` a tensor: exactly :func:`tensorops.clamp.clamp_`; returns ``input``.
    * ``input`` a list or tuple of tensors: clamps each in place, one pass per device (one launch per dtype on
      CUDA), with the rules of ``Tensor.clamp_`` (an integer tensor with a float bound raises, as in torch);
      returns the tensors as a list. Under autograd (a tensor requires grad) each update goes through
      ``Tensor.clamp_`` so that the graph records it.

    Example:
        >>> ps = [torch.randn(10), torch.randn(3, 3)]
        >>> _ = tensorops.clamp_(ps, max=0.0)
        >>> all(bool((p <= 0).all()) for p in ps)
        True
    """
    if type(input) is list or type(input) is tuple:
        if kwargs:
            raise TypeError(f"{where('clamp_')}a list of tensors takes no {', '.join(kwargs)} argument")
        return clamp_list_(input, min, max)
    return _clamp_tensor_(input, min, max, **kwargs)


@torch.no_grad()
def clip_grad_value_(
    parameters: Union[torch.Tensor, Iterable[torch.Tensor]], clip_value: float, foreach: Optional[bool] = None
) -> None:
    """A drop-in for ``torch.nn.utils.clip_grad_value_``: every ``p.grad`` clamped in place to
    ``[-clip_value, clip_value]``, all gradients of a device in one pass.

    Args:
        parameters: a tensor or an iterable of tensors; those whose ``.grad`` is None are skipped.
        clip_value: the bound (converted with ``float()``, as torch does).
        foreach: accepted for compatibility. The list path is always used; ``foreach=True`` on a device that
            torch has no foreach kernels for raises torch's RuntimeError.

    Example:
        >>> model = torch.nn.Linear(4, 2); model(torch.randn(8, 4)).sum().backward()
        >>> tensorops.clip_grad_value_(model.parameters(), 0.1)
        >>> bool(model.weight.grad.abs().max() <= 0.1)
        True
    """
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return None
    if foreach:
        from torch.utils._foreach_utils import _device_has_foreach_support

        for t in grads:
            if not _device_has_foreach_support(t.device):
                raise RuntimeError(
                    f"foreach=True was passed, but can't use the foreach API on {t.device.type} tensors"
                )
    clamp_list_(grads, -clip_value, clip_value)
    return None


# ---- registrations on the compiled ops: fake kernels and autograd ------------------------------------------------
def _register() -> None:
    lib = "tensorops::"

    @torch.library.register_fake(lib + "foreach_clamp_scalar")
    def _(tensors, min, max):
        return [torch.clamp(t, min, max) for t in tensors]

    @torch.library.register_fake(lib + "foreach_clamp_scalar_")
    def _(tensors, min, max):
        return None

    def setup(ctx, inputs, output):
        tensors, min, max = inputs
        ctx.set_materialize_grads(False)  # an unused output sends nothing back: its input's .grad stays None
        ctx.save_for_backward(*tensors)
        ctx.min, ctx.max = min, max

    def backward(ctx, grads):
        tensors = ctx.saved_tensors
        wanted = ctx.needs_input_grad[0]
        out = []
        for i, (g, t) in enumerate(zip(grads, tensors)):
            need = wanted[i] if isinstance(wanted, (list, tuple)) else bool(wanted) and t.requires_grad
            if g is None or not need:
                out.append(None)
            elif torch.is_grad_enabled() and (g.requires_grad or t.requires_grad):  # double backward
                gi, _, _ = reference.clamp_backward(g, t, ctx.min, ctx.max, [True, False, False], create_graph=True)
                out.append(gi)
            else:
                out.append(torch.ops.tensorops.clamp_scalar_backward.default(g, t, ctx.min, ctx.max))
        return out, None, None

    torch.library.register_autograd(lib + "foreach_clamp_scalar", backward, setup_context=setup)


if _extension.is_compiled():
    _register()

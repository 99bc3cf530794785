"""Where a call runs, decided in one place for every op.

Two questions, in this order:

1. Compiled kernels or native torch? Each op declares what its kernels cover in a :class:`Kernels` row
   (dtypes, at most ``build_info()["max_kernel_dims"]`` dimensions for kernels that iterate with a plan,
   strided layouts); :meth:`Kernels.cover` answers for the tensors of one call. Anything else runs through
   ``tensorops.reference`` (torch), with torch's results and errors.
2. Below autograd or through the op's ``torch.autograd.Function``? :func:`call`: below autograd when no
   derivative can be needed (the Python autograd layer costs microseconds per call), through the Function
   under forward AD, a torch.func transform or an input that requires grad, the op itself under torch.compile.

The tiny-tensor C entry points (``normalize_fast``, ``clamp_fast``, ``cat_fast``, ``split_fast``) answer both
questions in C for plain calls and hand anything else (None) to the Python path below.
"""
from __future__ import annotations

import dataclasses
from typing import FrozenSet, Optional

import torch
import torch.autograd.forward_ad as _fwAD

from tensorops import _extension

MAX_KERNEL_DIMS = _extension.MAX_KERNEL_DIMS
_transforms_active = _extension._transforms_active
_any_requires_grad = _extension._any_requires_grad
_below_autograd = _extension.below_autograd


@dataclasses.dataclass(frozen=True)
class Kernels:
    """What an op's compiled kernels cover.

    ``dtypes``: the tensor dtypes they read (None: every dtype, e.g. byte-copying kernels). ``plan``: they iterate
    with an iteration plan (csrc/include/tensorops/plan.h), which holds at most ``MAX_KERNEL_DIMS`` dims.
    ``strided``: they read strided, non-quantized tensors only (sparse, quantized, mkldnn... go to torch).
    ``one_device``: every tensor must be on the first one's device (clamp's bounds: a CPU 0-dim bound with a
    CUDA input goes to torch); without it the kernels raise torch's error for mixed devices themselves, and
    only the first tensor's device is looked at (a long list is not walked for it). The device must have
    kernels: the CPU always, CUDA when they were compiled.
    """

    dtypes: Optional[FrozenSet[torch.dtype]] = None
    plan: bool = False
    strided: bool = False
    one_device: bool = False

    @staticmethod
    def device(device: torch.device) -> bool:
        """Whether ``device`` has kernels."""
        return _extension.kernels_for(device)

    def layout(self, t: torch.Tensor) -> bool:
        """Whether the kernels read ``t``'s layout."""
        return not self.strided or (t.layout == torch.strided and not t.is_quantized)

    def cover(self, *tensors: Optional[torch.Tensor]) -> bool:
        """Whether the kernels take these tensors (None entries, e.g. absent bounds, are ignored); the first
        one must be a tensor."""
        first = tensors[0]
        device = first.device  # type: ignore[union-attr]
        if not self.device(device):
            return False
        dtypes, strided, one_device = self.dtypes, self.strided, self.one_device
        max_dims = MAX_KERNEL_DIMS if self.plan else None
        for t in tensors:
            if t is None:
                continue
            if dtypes is not None and t.dtype not in dtypes:
                return False
            if max_dims is not None and t.dim() > max_dims:
                return False
            if strided and (t.layout != torch.strided or t.is_quantized):
                return False
            if one_device and t is not first and t.device != device:
                return False
        return True


def call(op, function: type, apply_args: tuple, op_args: Optional[tuple] = None):
    """Runs a registered op where derivatives may be needed: ``function.apply`` under forward AD, a torch.func
    transform, or when an input requires grad; the op below autograd otherwise; the op itself under
    torch.compile (its autograd kernel is traced). A torch.func transform handles an autograd.Function only
    when it is applied from above the dispatcher (inside the op's autograd kernel the transform has already
    been peeled off), so the wrappers, backward formulas and batching rules call through here. ``op_args``:
    the op's arguments where they differ from ``function.apply``'s."""
    op_args = apply_args if op_args is None else op_args
    if torch.compiler.is_compiling():
        return op(*op_args)
    if _fwAD._current_level < 0 and not _transforms_active():
        if not (torch.is_grad_enabled() and _any_requires_grad(*op_args)):
            with _below_autograd():
                return op(*op_args)
    return function.apply(*apply_args)


def forward_below_autograd(opname: str):
    """The ``forward`` of an autograd.Function that runs ``tensorops::<opname>`` below autograd with the
    Function's arguments as they are."""

    def forward(*args):
        with _below_autograd():
            return getattr(torch.ops.tensorops, opname).default(*args)

    return staticmethod(forward)


def call_out(name: str, args: tuple, out: torch.Tensor) -> torch.Tensor:
    """Runs the op ``name``'s ``<name>_out`` op on checked arguments (``_checks.check_out``: nothing requires grad) and
    returns ``out``: below autograd in plain eager, with ``out``'s version counter bumped as torch's in-place
    kernels bump it; through the dispatcher (the op's autograd kernel, :func:`_extension.register_out_autograd`)
    under torch.compile, forward AD or a torch.func transform."""
    op = getattr(torch.ops.tensorops, name + "_out").default
    if not _extension.plain_eager():
        if not _OUT_TAG:  # torch < 2.14 cannot functionalize a custom op that returns its out: the functional op
            return out.copy_(getattr(torch.ops.tensorops, name).default(*args))
        return op(*args, out=out)
    with _below_autograd():
        op(*args, out=out)
    _increment_version((out,))
    return out


_increment_version = torch._C._increment_version
# torch.Tag.out (torch 2.14+) is what lets torch.compile and torch.func functionalize the <op>_out ops
_OUT_TAG = hasattr(torch.Tag, "out")

"""Loads the compiled library (tensorops._C) once and says whether the kernels can be used.

Set ``TENSOROPS_DISABLE_EXTENSION=1`` before importing tensorops to run everything through native torch
(``tensorops.reference``); the tests use it to check the fallback.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional

import torch
import torch.autograd.forward_ad as _fwAD

from tensorops._version import __version__

_C: Any = None
_load_error: Optional[str] = None


def _load() -> None:
    global _C, _load_error
    if os.environ.get("TENSOROPS_DISABLE_EXTENSION", "0") not in ("", "0"):
        _load_error = "disabled by TENSOROPS_DISABLE_EXTENSION"
        return
    try:
        from tensorops import _C as lib  # importing it registers torch.ops.tensorops.*
    except ImportError as exc:  # not built, or built against another torch
        _load_error = f"{type(exc).__name__}: {exc}"
        warnings.warn(
            f"tensorops: the compiled extension is not available ({_load_error}); every op runs through "
            "native torch (tensorops.reference). Build it with `pip install --no-build-isolation .`",
            RuntimeWarning,
            stacklevel=3,
        )
        return
    _C = lib


_load()


def is_compiled() -> bool:
    """True iff the compiled extension loaded (its ops are in ``torch.ops.tensorops``)."""
    return _C is not None


def build_info() -> dict:
    """How tensorops was built: ``version``, ``torch`` (the torch it was built against), ``cuda`` (CUDA
    kernels compiled in), ``cuda_archs``, ``compiled`` and, when not compiled, ``error``."""
    if _C is None:
        return {
            "version": __version__,
            "torch": None,
            "cuda": False,
            "cuda_archs": "",
            "compiled": False,
            "error": _load_error,
        }
    info = dict(_C.build_info())
    info["compiled"] = True
    return info


_HAS_CUDA_KERNELS = bool(_C is not None and build_info()["cuda"])
# Dimensions the kernels' iteration plans hold (kMaxPlanDims in csrc/include/tensorops/plan.h), as the compiled
# library reports it; tensors with more go to native torch (tensorops._routing). Without the library every op
# runs through native torch anyway.
MAX_KERNEL_DIMS = int(build_info().get("max_kernel_dims", 0)) if _C is not None else 0


def kernels_for(device: torch.device) -> bool:
    """Whether compiled kernels exist for tensors on ``device``."""
    if _C is None:
        return False
    if device.type == "cpu":
        return True
    return device.type == "cuda" and _HAS_CUDA_KERNELS


_transforms_active = torch._C._are_functorch_transforms_active
# The one test the public wrappers make before trying a lean C entry point (tensorops._C.*_fast): that dynamo is
# not tracing (it would meet a C function it cannot see into; it folds this call to True). Everything else (a
# forward-AD tangent, torch.func transforms, Python modes and fake tensors, as under non-strict export,
# subclasses, grad) the entry points check themselves and return None for (csrc/cpu/py_entry.h). It costs about
# 20 ns a call, torch.compiler.is_compiling about 50, forward_ad's level another 10: on a tiny clamp that was
# the difference between 0.91x and about 1.0x of torch.clamp.
dynamo_tracing = torch.compiler.is_dynamo_compiling
below_autograd = torch._C._AutoDispatchBelowAutograd


# ---- transforms: forward AD, torch.func, and the autograd kernels that serve them ------------------------------

def forward_ad_active() -> bool:
    """A forward-AD dual level is open (torch.autograd.forward_ad.dual_level, or torch.func.jvp)."""
    return _fwAD._current_level >= 0


def plain_eager() -> bool:
    """No forward AD level, no torch.func transform and no torch.compile trace: the cheap eager paths (the C
    entry points, calls below autograd) may be taken."""
    return _fwAD._current_level < 0 and not _transforms_active() and not torch.compiler.is_compiling()


def only_vmap() -> bool:
    """Only torch.func.vmap levels are active (no forward AD level, no grad/jvp transform, no trace): a registered
    op's torch.library batching rule may take the call as it is."""
    if _fwAD._current_level >= 0 or torch.compiler.is_compiling() or not _transforms_active():
        return False
    stack = torch._C._functorch.get_interpreter_stack() or ()
    return all(i.key() == torch._C._functorch.TransformType.Vmap for i in stack)


def differentiable_backward(*tensors: Optional[torch.Tensor]) -> bool:
    """Whether a backward (or jvp) formula must itself be differentiable: double backward (create_graph), a
    torch.func transform (grad/jacrev/jacfwd/hessian run backward through their own levels), or forward AD
    over reverse. Then it is written with differentiable ops; otherwise the fused backward kernels run."""
    if _fwAD._current_level >= 0 or _transforms_active():
        return True
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


_IMPL = torch.library.Library("tensorops", "IMPL") if _C is not None else None
_any_requires_grad = torch._C._any_requires_grad


def register_autograd_function(opname: str, function: type, to_apply, from_apply=None) -> None:
    """Registers ``function`` (a torch.autograd.Function with setup_context, backward and jvp) as the autograd
    kernel of ``tensorops::<opname>``: autograd (double backward included) and forward AD then work on the op
    itself, wherever it is called from (TorchScript, torch.compile graphs, direct torch.ops calls). ``to_apply(*args)`` gives the arguments of ``function.apply`` (Tensor[]
    arguments flattened); ``from_apply`` converts its result to the schema's (a tuple to a list). Calls that
    need no derivative go below autograd at once. Under a torch.func transform this kernel cannot help (the
    transform is peeled off before it runs): the public functions apply the Functions from Python instead."""
    op = getattr(torch.ops.tensorops, opname).default
    after_autograd = torch._C._after_autograd_keyset

    def kernel(keyset, *args):
        if _fwAD._current_level >= 0 or (torch.is_grad_enabled() and _any_requires_grad(*args)):
            out = function.apply(*to_apply(*args))
            return out if from_apply is None else from_apply(out)
        with below_autograd():
            return op.redispatch(keyset & after_autograd, *args)

    _IMPL.impl(opname, kernel, "Autograd", with_keyset=True)  # type: ignore[union-attr]


class Static:
    """A constant argument of an autograd.Function (a list of numbers, sizes...) held as one opaque value, so
    that torch.func's handling of Function arguments (pytree flattening of lists, which its generated vmap rules
    get wrong) never looks inside it."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


def register_out_autograd(opname: str) -> None:
    """The autograd kernel of ``tensorops::<opname>_out`` (tagged torch.Tag.out): torch's refusal of out= when an
    argument requires grad (or carries a forward-AD tangent), in torch's words; otherwise ``out``'s version
    counter is bumped (it is written in place) and the call goes below autograd."""
    op = getattr(torch.ops.tensorops, opname + "_out").default
    after_autograd = torch._C._after_autograd_keyset

    def kernel(keyset, *args, **kwargs):
        out = kwargs["out"]
        if torch.is_grad_enabled() and _any_requires_grad(*args, out):
            raise RuntimeError(f"{opname}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if _fwAD._current_level >= 0:
            for t in (*args, out):
                for x in (t if isinstance(t, (list, tuple)) else (t,)):
                    if isinstance(x, torch.Tensor) and _fwAD.unpack_dual(x).tangent is not None:
                        raise RuntimeError(f"Trying to use forward AD with {opname}_out that does not support it "
                                           "because it is an out= function")
        torch._C._increment_version((out,))
        with below_autograd():
            return op.redispatch(keyset & after_autograd, *args, **kwargs)

    _IMPL.impl(opname + "_out", kernel, "Autograd", with_keyset=True)  # type: ignore[union-attr]

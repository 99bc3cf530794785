"""Loads the compiled library (tensorops._C) once and says whether the kernels can be used.

Set ``TENSOROPS_DISABLE_EXTENSION=1`` before importing tensorops to run everything through native torch
(``tensorops.reference``); the tests use it to check the fallback.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional

import torch

__version__ = "0.1.0"

# Dimensions the kernels' iteration plans hold (kMaxPlanDims in csrc/include/tensorops/plan.h); tensors with
# more go to native torch.
MAX_KERNEL_DIMS = 16

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


def kernels_for(device: torch.device) -> bool:
    """Whether compiled kernels exist for tensors on ``device``."""
    if _C is None:
        return False
    if device.type == "cpu":
        return True
    return device.type == "cuda" and _HAS_CUDA_KERNELS


def autograd_not_needed(*tensors: torch.Tensor) -> bool:
    """True when a call can skip the autograd layer of the registered ops: eager mode (not being traced by
    torch.compile) and no input that autograd would track. The Python autograd wrapper that
    torch.library.register_autograd installs costs a few microseconds per call even when it does nothing."""
    if torch.compiler.is_compiling():
        return False
    if not torch.is_grad_enabled():
        return True
    return not any(t.requires_grad for t in tensors)


below_autograd = torch._C._AutoDispatchBelowAutograd

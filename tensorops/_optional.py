"""Optional dependencies (torchvision, ray): imported by the submodules that need them, on first use, with one
ImportError text that names what is missing and the extra that installs it without moving torch."""
from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, *, feature: str, package: str, extra: str) -> ModuleType:
    """``import module``, or an ImportError saying that ``feature`` needs ``package`` and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{feature} needs {package}, which is not installed ({exc}). Install it with pip install "
            f"'tensorops[{extra}]' (it pins the installed torch, so it never moves it)."
        ) from exc

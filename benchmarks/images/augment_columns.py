"""benchmarks.augment's columns: the statement each column times for a row (torchvision v2 per image and on the
batch, kornia, tensorops), the check of tensorops' output against the per-image column, and where tensorops.augment
and kornia are found."""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable, Dict, Optional, Tuple

import torch

from benchmarks.augment_rows import (KORNIA, MEAN, NUM_CLASSES, STD, TOPS, TV_BATCH, TV_IMAGE, U8, ops, policies,
                                     row_names)

# ------------------------------------------------------------------------------------------------ the columns


def kornia_modules() -> Tuple[Any, Any, str]:
    """(kornia.augmentation, kornia.augmentation.auto, version), or (None, None, why not)."""
    if importlib.util.find_spec("kornia") is None:
        return None, None, "kornia is not installed (optional: pip install kornia adds its column)"
    try:
        import kornia
        import kornia.augmentation as K
        import kornia.augmentation.auto as KA
    except Exception as exc:  # a broken optional install must not stop the run
        return None, None, f"kornia failed to import: {type(exc).__name__}: {exc}"
    return K, KA, str(kornia.__version__)


def tensorops_augment() -> Tuple[Optional[Callable[[str], Any]], str]:
    """(find(name) -> tensorops.augment's function or class of that name, or None; what was found, with the
    file it came from: an editable install resolves a module missing from this checkout in the install's tree):
    looks in tensorops.augment, its ``functional``, ``transforms`` and ``timm`` (the policy-string parser)."""
    try:
        A = importlib.import_module("tensorops.augment")
    except Exception as exc:  # ImportError, or a half-built tree whose ops are not in the loaded library
        return None, f"tensorops.augment is not in this build ({type(exc).__name__}: {exc})"
    places = [A]
    for sub in ("functional", "transforms", "timm"):
        try:
            places.append(importlib.import_module(f"tensorops.augment.{sub}"))
        except ImportError:
            pass

    def find(name: str) -> Any:
        for p in places:
            if hasattr(p, name):
                return getattr(p, name)
        return None

    return find, "tensorops.augment: " + ", ".join(f"{p.__name__} from {p.__file__}" for p in places)


class _Namespace:
    """Attribute access through ``find``: lets the Op rows write ``A.adjust_brightness(...)``."""

    def __init__(self, find: Callable[[str], Any]) -> None:
        self._find = find

    def __getattr__(self, name: str) -> Any:
        fn = self._find(name)
        if fn is None:
            raise NotImplementedError(f"tensorops.augment has no {name} (yet)")
        return fn


def compare(expected: torch.Tensor, actual: Any) -> str:
    """'bit-identical' or how tensorops' batch differs from torchvision v2 per image (share of values that differ,
    the largest difference in uint8 steps)."""
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape or actual.dtype != expected.dtype:
        what = f"{actual.dtype}{tuple(actual.shape)}" if isinstance(actual, torch.Tensor) else type(actual).__name__
        return f"mismatch: tensorops gives {what}, torchvision {expected.dtype}{tuple(expected.shape)}"
    diff = (actual.to(torch.int16) - expected.to(torch.int16)).abs()
    n = int((diff > 0).sum())
    if n == 0:
        return "bit-identical"
    return f"differs: {n} of {diff.numel()} values ({100.0 * n / diff.numel():.2g}%), at most {int(diff.max())} steps"


def _first_error(stmt: Callable[[], Any]) -> Tuple[Any, Optional[str]]:
    try:
        return stmt(), None
    except Exception as exc:
        msg = str(exc).strip().splitlines()
        return None, f"{type(exc).__name__}: {msg[0][:300] if msg else ''}"


def statements(name: str, batch: torch.Tensor, d: Dict[str, torch.Tensor], find: Optional[Callable[[str], Any]],
               K: Any, KA: Any) -> Tuple[Dict[str, Callable[[], Any]], Dict[str, Any]]:
    """The timed statements of row ``name`` on ``batch`` (uint8), and the row's facts: what the input is, the
    check against torchvision, and why a column is missing."""
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F

    info: Dict[str, Any] = {"missing": {}}
    op = next((o for o in ops() if o.name == name), None)
    pol = next((p for p in policies() if p.name == name), None)
    if op is None and pol is None:
        raise ValueError(f"unknown row {name!r}; choose from {', '.join(row_names())}")
    dtype = U8 if op is not None else pol.dtype
    x = batch if dtype == U8 else F.normalize(F.to_dtype(batch, torch.float32, scale=True), MEAN, STD)
    # what a Dataset hands its transform: one tensor per image (clone keeps the batch's strides: channels_last
    # images are HWC in memory, as decode_jpeg's and the collate's)
    images = [im.clone() for im in x]
    stmts: Dict[str, Callable[[], Any]] = {}
    kx = batch.float().div(255) if dtype == U8 else x  # kornia's input: float, [0, 1] for the colour ops
    labels = torch.randint(0, NUM_CLASSES, (x.shape[0],), generator=torch.Generator().manual_seed(1))
    info.update(kind="op" if op is not None else "policy", input=f"{dtype} {tuple(x.shape)}")

    if op is not None:
        lists = {k: v.tolist() for k, v in d.items()}
        info["args"] = op.args
        stmts[TV_IMAGE] = lambda: torch.stack([op.tv(im, lists, i) for i, im in enumerate(images)])
        stmts[TV_BATCH] = lambda: op.tv(x, lists, 0)
        if K is not None and op.kornia is not None:
            km = op.kornia(K)
            stmts[KORNIA] = lambda: km(kx)
        if find is not None:
            A = _Namespace(find)
            stmts[TOPS] = lambda: op.tops(A, x, d)
    else:
        info["args"] = "torchvision's defaults" if not pol.tops[1] else ", ".join(
            f"{k}={v}" for k, v in pol.tops[1].items())
        t = pol.tv(v2)
        if pol.labels:
            stmts[TV_BATCH] = lambda: t(x, labels)
        else:
            stmts[TV_IMAGE] = lambda: torch.stack([t(im) for im in images])
            stmts[TV_BATCH] = lambda: t(x)
        if K is not None and pol.kornia is not None:
            km = pol.kornia(K, KA)
            stmts[KORNIA] = (lambda: km(kx, labels)) if pol.labels else (lambda: km(kx))
        elif K is not None:
            info["missing"][KORNIA] = f"kornia has no {pol.name.split('(')[0]}"
        if find is not None:
            cls = find(pol.tops[0])
            if cls is None:
                info["missing"][TOPS] = f"tensorops.augment has no {pol.tops[0]} (yet)"
            else:
                tt, err = _first_error(lambda: cls(**pol.tops[1]))
                if err is not None:
                    info["missing"][TOPS] = f"{pol.tops[0]}({info['args']}) raised {err}"
                else:
                    stmts[TOPS] = (lambda: tt(x, labels)) if pol.labels else (lambda: tt(x))
    if not pol or pol.per_image:
        info["baseline"] = TV_IMAGE
    else:
        info["baseline"] = TV_BATCH
        info["missing"][TV_IMAGE] = "v2's MixUp and CutMix mix pairs within a batch: no per-image form"

    # every statement once before timing: one that raises is recorded in the row, not timed (as the harness does)
    outputs = {}
    for k in list(stmts):
        outputs[k], err = _first_error(stmts[k])
        if err is not None:
            info["missing"][k] = f"raised {err}"
            del stmts[k]
    if op is not None and TV_IMAGE in outputs and TOPS in stmts:
        info["check"] = compare(outputs[TV_IMAGE], outputs[TOPS])
        if not op.exact and info["check"] != "bit-identical":
            info["check"] += " (affine: allowed where torchvision's float32 coordinates land within rounding " \
                             "distance of a pixel boundary)"
    elif pol is not None:
        info["check"] = "not compared (random draws per sample; tests/test_augment_policies.py replays them)"
    return stmts, info



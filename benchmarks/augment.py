"""tensorops.augment (issue 36) against torchvision v2, on a batch of 32 images at 224x224 uint8, in ms per image:

    python -m benchmarks.augment --quick                 # 1 thread and all threads, both image sets
    python -m benchmarks.augment --quick --load 2        # with 2 busy background processes (benchmarks/load.py)
    python -m benchmarks.augment --quick --only TrivialAugmentWide,brightness --threads 1

The images: the real photographs of ``case.real_photos`` (scikit-image's sample photos at ImageNet's sizes, JPEG
q90, decoded) and, as the second set, the photo-like synthetic ones (``case.photo_like`` at the same sizes), each
resized (shorter side 224, antialias) and centre-cropped to 224x224: what a RandomResizedCrop hands the
augmentations. One (32, 3, 224, 224) contiguous uint8 batch per set; the erasing and mixing rows take it as the
recipes do, after ``to_dtype(float32, scale=True)`` + ImageNet ``normalize``.

Each row times, in the same interleaved rounds (``timing.measure_interleaved``: every column once per round, so
the per-round ratios pair like with like on a machine whose load changes):

* ``torchvision v2 per image``: the Python loop users write, one image at a time with that image's own draw (the
  functional rows: ``F.<op>(image_i, arg_i)``; the policy rows: the v2 transform called on each image, as a
  Dataset's ``__getitem__`` does), then ``torch.stack``: the baseline of the ratios;
* ``torchvision v2 batch``: the same function or transform called once on the whole batch (one draw for all
  samples: v2 has no per-sample parameters; the functional rows use sample 0's argument);
* ``kornia``: ``kornia.augmentation`` on the batch as float32 in [0, 1] (kornia's input; the conversion is not
  timed), drawing its own per-sample parameters from the same ranges; optional: without kornia the column is
  skipped and the JSON says so (it is never a dependency);
* ``tensorops``: ``tensorops.augment`` on the batch, the functional rows with the per-sample arguments of the
  per-image column (their outputs are compared with it: ``check``), the policies drawing per sample.

MixUp and CutMix exist in v2 only for batches: their ratios are to ``torchvision v2 batch`` (the row says so).
Results: ``augment_<grid>[_loadN].json`` (default ``benchmarks/results/local/``; ``--out benchmarks/results``
publishes it, and ``python -m benchmarks.docs_tables`` regenerates the tables that quote it) and the same
table as markdown beside it. The JSON's ``meta.activity`` says whether a compiler ran while it timed.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import math
import os
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from benchmarks.case import photo_like, real_photo_sizes, real_photos
from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.timing import measure_interleaved, spread

TV_IMAGE, TV_BATCH, KORNIA, TOPS = COLUMNS = ("torchvision v2 per image", "torchvision v2 batch", "kornia",
                                              "tensorops")
# images per batch, side, interleaved rounds, seconds each statement runs in all: more than the harness's 0.04 s,
# so that a round of a fast random policy averages several calls (one call of v2 on the batch is one draw for all
# 32 images: a cheap or a costly op, 0.004 to 3.9 ms per image in one run)
GRID = {"smoke": (2, 24, 1, 0.0), "quick": (32, 224, 7, 0.3), "full": (32, 224, 15, 0.6)}
REAL, SYNTH = SETS = ("real photos (scikit-image)", "photo-like")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
NUM_CLASSES = 1000
U8, F32 = "uint8", "float32 normalized"
# torchvision 0.29 deprecates its codecs in favour of TorchCodec; decode_jpeg is still what pipelines call
_CODEC_DEPRECATION = "The image decoding and encoding capabilities of TorchVision are deprecated"


# ------------------------------------------------------------------------------------------------ the inputs


def image_batch(which: str, n: int, side: int) -> torch.Tensor:
    """(n, 3, side, side) uint8, contiguous: ``which`` set's images at ImageNet's sizes (real_photo_sizes), resized
    (shorter side ``side``, bilinear antialias) and centre-cropped."""
    from torchvision.io import decode_jpeg
    from torchvision.transforms.v2 import functional as F

    if which == REAL:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_CODEC_DEPRECATION, category=DeprecationWarning)
            ims = [decode_jpeg(torch.frombuffer(bytearray(f), dtype=torch.uint8)) for f in real_photos(n)]
    elif which == SYNTH:
        g = torch.Generator().manual_seed(0)
        ims = [photo_like(h, w, g) for h, w in real_photo_sizes(n)]
    else:
        raise ValueError(f"unknown image set {which!r}; choose from {SETS}")
    return torch.stack([F.center_crop(F.resize(im, side, antialias=True), [side, side]) for im in ims]).contiguous()


def draws(n: int, side: int, seed: int = 0) -> Dict[str, torch.Tensor]:
    """Per-sample arguments of the functional rows (the ranges the policies draw from), one per image."""
    g = torch.Generator().manual_seed(seed)

    def u(lo: float, hi: float, *shape: int) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand((n, *shape), generator=g, dtype=torch.float64)

    # erase boxes as RandomErasing draws them: 2-33% of the image, aspect ratio 0.3-3.3 (log-uniform)
    area = u(0.02, 0.33) * side * side
    ratio = torch.exp(u(math.log(0.3), math.log(3.3)))
    h = torch.sqrt(area * ratio).round().clamp(1, side).long()
    w = torch.sqrt(area / ratio).round().clamp(1, side).long()
    i = (torch.rand(n, generator=g, dtype=torch.float64) * (side - h + 1)).long()
    j = (torch.rand(n, generator=g, dtype=torch.float64) * (side - w + 1)).long()
    return {
        "factor": u(0.6, 1.4),  # ColorJitter(0.4)'s brightness / contrast / saturation factors
        "hue": u(-0.1, 0.1),
        "sharpness": u(0.1, 1.9),  # TrivialAugmentWide's: 1 + [-0.99, 0.99], RandAugment's 1 +- 0.9
        "bits": torch.randint(2, 9, (n,), generator=g),
        "threshold": u(0.0, 256.0),
        "angle": u(-30.0, 30.0),
        "translate": u(-32.0, 32.0, 2).round(),
        "scale": u(0.9, 1.1),
        "shear": u(-15.0, 15.0, 2),
        "boxes": torch.stack([i, j, h, w], 1),
        "erase_value": torch.randint(0, 256, (n,), generator=g),
    }


# ------------------------------------------------------------------------------------------------ the rows


@dataclasses.dataclass
class Op:
    """A functional row: ``tv(x, d, i)`` is v2's function on ``x`` (an image, or the batch) with sample i's
    arguments; ``tops(A, batch, d)`` tensorops.augment's call with every sample's; ``kornia(K)`` builds the
    kornia.augmentation module drawing from the same ranges (None: kornia has no such transform)."""

    name: str
    args: str  # the arguments, spelled out in the JSON
    tv: Callable[[torch.Tensor, Dict[str, Any], int], torch.Tensor]
    tops: Callable[[Any, torch.Tensor, Dict[str, torch.Tensor]], torch.Tensor]
    kornia: Optional[Callable[[Any], Any]] = None
    exact: bool = True  # tensorops must equal torchvision per image bit for bit (affine: at rounding boundaries)


def _affine_args(d: Dict[str, Any], i: int) -> Dict[str, Any]:
    return dict(angle=d["angle"][i], translate=d["translate"][i], scale=d["scale"][i], shear=d["shear"][i])


def ops() -> List[Op]:
    from torchvision.transforms.v2 import functional as F

    rows = [
        Op("brightness", "factor U(0.6, 1.4)", lambda x, d, i: F.adjust_brightness(x, d["factor"][i]),
           lambda A, b, d: A.adjust_brightness(b, d["factor"]), lambda K: K.RandomBrightness((0.6, 1.4), p=1.0)),
        Op("contrast", "factor U(0.6, 1.4)", lambda x, d, i: F.adjust_contrast(x, d["factor"][i]),
           lambda A, b, d: A.adjust_contrast(b, d["factor"]), lambda K: K.RandomContrast((0.6, 1.4), p=1.0)),
        Op("saturation", "factor U(0.6, 1.4)", lambda x, d, i: F.adjust_saturation(x, d["factor"][i]),
           lambda A, b, d: A.adjust_saturation(b, d["factor"]), lambda K: K.RandomSaturation((0.6, 1.4), p=1.0)),
        Op("hue", "hue_factor U(-0.1, 0.1)", lambda x, d, i: F.adjust_hue(x, d["hue"][i]),
           lambda A, b, d: A.adjust_hue(b, d["hue"]), lambda K: K.RandomHue((-0.1, 0.1), p=1.0)),
        Op("sharpness", "factor U(0.1, 1.9)", lambda x, d, i: F.adjust_sharpness(x, d["sharpness"][i]),
           lambda A, b, d: A.adjust_sharpness(b, d["sharpness"]), lambda K: K.RandomSharpness((0.1, 1.9), p=1.0)),
        Op("posterize", "bits 2..8", lambda x, d, i: F.posterize(x, d["bits"][i]),
           lambda A, b, d: A.posterize(b, d["bits"]), lambda K: K.RandomPosterize((2.0, 8.0), p=1.0)),
        Op("solarize", "threshold U(0, 256)", lambda x, d, i: F.solarize(x, d["threshold"][i]),
           lambda A, b, d: A.solarize(b, d["threshold"]),
           lambda K: K.RandomSolarize(thresholds=0.5, additions=0.0, p=1.0)),
        Op("autocontrast", "", lambda x, d, i: F.autocontrast(x), lambda A, b, d: A.autocontrast(b),
           lambda K: K.RandomAutoContrast(p=1.0)),
        Op("equalize", "", lambda x, d, i: F.equalize(x), lambda A, b, d: A.equalize(b),
           lambda K: K.RandomEqualize(p=1.0)),
        Op("invert", "", lambda x, d, i: F.invert(x), lambda A, b, d: A.invert(b), lambda K: K.RandomInvert(p=1.0)),
        Op("grayscale", "num_output_channels=3", lambda x, d, i: F.rgb_to_grayscale(x, num_output_channels=3),
           lambda A, b, d: A.rgb_to_grayscale(b, num_output_channels=3), lambda K: K.RandomGrayscale(p=1.0)),
    ]
    for mode in ("nearest", "bilinear"):
        rows += [
            Op(f"affine {mode}", "angle U(-30, 30), translate U(-32, 32)^2 px, scale U(0.9, 1.1), shear U(-15, 15)^2",
               lambda x, d, i, m=mode: F.affine(x, **_affine_args(d, i), interpolation=m),
               lambda A, b, d, m=mode: A.affine(b, d["angle"], d["translate"], d["scale"], d["shear"],
                                                interpolation=m),
               lambda K, m=mode: K.RandomAffine(30.0, translate=(32 / 224, 32 / 224), scale=(0.9, 1.1), shear=15.0,
                                                resample=m, p=1.0), exact=False),
            Op(f"rotate {mode}", "angle U(-30, 30)", lambda x, d, i, m=mode: F.rotate(x, d["angle"][i], interpolation=m),
               lambda A, b, d, m=mode: A.rotate(b, d["angle"], interpolation=m),
               lambda K, m=mode: K.RandomRotation(30.0, resample=m, p=1.0), exact=False),
        ]
    rows.append(Op("erase", "RandomErasing's boxes (2-33% of the image), value U{0..255} per sample",
                   lambda x, d, i: F.erase(x, *d["boxes"][i], v=torch.tensor(d["erase_value"][i], dtype=torch.uint8)),
                   lambda A, b, d: A.erase(b, d["boxes"], d["erase_value"].to(torch.uint8)),
                   lambda K: K.RandomErasing(p=1.0)))
    return rows


@dataclasses.dataclass
class Policy:
    """A policy row: ``tv(v2)`` builds torchvision's transform, ``tops`` names tensorops.augment's class and its
    arguments (torchvision's), ``kornia(K, KA)`` builds kornia's (None: kornia has none). ``dtype``: what the batch
    holds (the erasing and mixing transforms sit after normalize in the recipes); ``labels``: called with
    (batch, labels), as v2's MixUp and CutMix are; ``per_image``: v2 has a per-image form."""

    name: str
    tv: Callable[[Any], Any]
    tops: Tuple[str, Dict[str, Any]]
    kornia: Optional[Callable[[Any, Any], Any]] = None
    dtype: str = U8
    labels: bool = False
    per_image: bool = True


def policies() -> List[Policy]:
    return [
        Policy("TrivialAugmentWide", lambda v2: v2.TrivialAugmentWide(), ("TrivialAugmentWide", {}),
               lambda K, KA: KA.TrivialAugment()),
        Policy("RandAugment(2, 9)", lambda v2: v2.RandAugment(num_ops=2, magnitude=9),
               ("RandAugment", dict(num_ops=2, magnitude=9)), lambda K, KA: KA.RandAugment(n=2, m=9)),
        Policy("AutoAugment(ImageNet)", lambda v2: v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET),
               ("AutoAugment", {}), lambda K, KA: KA.AutoAugment("imagenet")),
        Policy("AugMix", lambda v2: v2.AugMix(), ("AugMix", {})),
        Policy("ColorJitter(0.4, 0.4, 0.4, 0.1)", lambda v2: v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
               ("ColorJitter", dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)),
               lambda K, KA: K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=1.0)),
        Policy("ColorJitter(0.4, 0.4, 0.4)", lambda v2: v2.ColorJitter(0.4, 0.4, 0.4),
               ("ColorJitter", dict(brightness=0.4, contrast=0.4, saturation=0.4)),
               lambda K, KA: K.ColorJitter(0.4, 0.4, 0.4, p=1.0)),
        Policy("RandomErasing()", lambda v2: v2.RandomErasing(), ("RandomErasing", {}),
               lambda K, KA: K.RandomErasing(p=0.5), dtype=F32),
        Policy("MixUp(0.2)", lambda v2: v2.MixUp(alpha=0.2, num_classes=NUM_CLASSES),
               ("MixUp", dict(alpha=0.2, num_classes=NUM_CLASSES)),
               lambda K, KA: K.RandomMixUpV2(data_keys=["input", "class"]), dtype=F32, labels=True,
               per_image=False),
        Policy("CutMix(1.0)", lambda v2: v2.CutMix(alpha=1.0, num_classes=NUM_CLASSES),
               ("CutMix", dict(alpha=1.0, num_classes=NUM_CLASSES)),
               lambda K, KA: K.RandomCutMixV2(data_keys=["input", "class"]), dtype=F32, labels=True,
               per_image=False),
    ]


def row_names() -> List[str]:
    return [o.name for o in ops()] + [p.name for p in policies()]


def select(spec: str) -> List[str]:
    """``--only``'s rows: comma-separated names (commas inside parentheses belong to the name), each a row's name,
    its name without the arguments ("ColorJitter": both ColorJitter rows), or "ops" / "policies"; ValueError naming
    what matches nothing."""
    import re

    out: List[str] = []
    for item in (x.strip() for x in re.split(r",(?![^()]*\))", spec)):
        if not item:
            continue
        hits = ([o.name for o in ops()] if item == "ops" else [p.name for p in policies()] if item == "policies"
                else [n for n in row_names() if n == item or n.split("(")[0] == item])
        if not hits:
            raise ValueError(f"--only: no row is {item!r}; choose from ops, policies, {', '.join(row_names())}")
        out += hits
    return list(dict.fromkeys(out))


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


# ------------------------------------------------------------------------------------------------ timing


def measure_row(name: str, batch: torch.Tensor, d: Dict[str, torch.Tensor], find: Optional[Callable[[str], Any]],
                K: Any, KA: Any, rounds: int, min_run_time: float) -> Dict[str, Any]:
    """One row: each column's ms per image over interleaved rounds, and its per-round ratio to the baseline."""
    stmts, info = statements(name, batch, d, find, K, KA)
    n = batch.shape[0]
    samples = measure_interleaved(stmts, min_run_time, rounds) if stmts else {}
    ms = {k: [t / n * 1e3 for t in v] for k, v in samples.items()}
    base = info["baseline"]
    ratios = {k: spread([b / t for b, t in zip(ms[base], v) if t > 0]) for k, v in ms.items()
              if base in ms and k != base}
    return {"row": name, **info, "images": n, "ms_per_image": {k: spread(v) for k, v in ms.items()},
            "ratio_to_baseline": ratios}


LAYOUTS = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}


def run(grid: str = "quick", threads: Sequence[int] = (1, 0), sets: Sequence[str] = SETS,
        only: Optional[Sequence[str]] = None, rounds: Optional[int] = None, load: int = 0,
        load_limit_s: float = DEFAULT_LIMIT_S, say: Callable[[str], None] = print,
        layouts: Sequence[str] = ("contiguous",)) -> Dict[str, Any]:
    """Every row on every image set at each thread count (0: all of torch's threads) and batch memory layout
    (``LAYOUTS``: the collate gives either; a per-image tensor keeps the batch's strides); returns the result
    dict (``meta``, ``rows``)."""
    n, side, grid_rounds, min_run_time = GRID[grid]
    rounds = rounds or grid_rounds
    names = list(only) if only else row_names()
    unknown = [x for x in names if x not in row_names()]
    if unknown:
        raise ValueError(f"unknown rows {unknown}; choose from {', '.join(row_names())}")
    K, KA, kornia_info = kornia_modules()
    find, tops_info = tensorops_augment()
    if K is None:
        say(f"kornia column skipped: {kornia_info}")
    if find is None:
        say(f"tensorops column skipped: {tops_info}")
    all_threads = torch.get_num_threads()
    thread_counts = [t or all_threads for t in threads]
    start = time.perf_counter()
    d = draws(n, side)
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        raise ValueError(f"unknown layouts {bad}; choose from {', '.join(LAYOUTS)}")
    batches = {s: image_batch(s, n, side) for s in sets}
    rows: List[Dict[str, Any]] = []
    busy = BusyLoad(load, load_limit_s)
    watch = ActivityWatch()
    try:
        busy.start()
        watch.start()
        for t in thread_counts:
            torch.set_num_threads(t)
            for s in sets:
                for lay in layouts:
                    say(f"  {s}, {lay}, {t} thread(s): {len(names)} rows")
                    b = batches[s].contiguous(memory_format=LAYOUTS[lay])
                    for name in names:
                        rows.append({"set": s, "layout": lay, "threads": t,
                                     **measure_row(name, b, d, find, K, KA, rounds, min_run_time)})
        load_info = busy.describe()
    finally:
        watch.stop()
        busy.stop()
        torch.set_num_threads(all_threads)
    meta = {
        **machine_info(), "torch_threads": all_threads, "grid": grid, "images": n, "side": side, "rounds": rounds,
        "min_run_time_s": min_run_time, "threads": thread_counts, "sets": list(sets), "layouts": list(layouts),
        "load": load_info,
        "activity": watch.describe(), "wall_s": time.perf_counter() - start,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "columns": {TV_IMAGE: "the v2 function / transform called on each image (its own draw), torch.stack",
                    TV_BATCH: "the v2 function / transform called once on the batch (one draw for all samples)",
                    KORNIA: "kornia.augmentation on the batch as float32 (conversion not timed), own per-sample "
                            "draws from the same ranges",
                    TOPS: "tensorops.augment on the batch, per-sample arguments / draws"},
        "kornia": kornia_info, "tensorops_augment": tops_info,
        "timing": "timing.measure_interleaved: every column of a row once per round, alternating order; ms per "
                  "image = a call's time / images; medians, spreads (min, quartiles, max) over rounds; ratios = "
                  "the baseline's time / the column's, per round",
    }
    return {"meta": meta, "rows": rows}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.augment", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="32 images, 7 rounds (default: full, 15 rounds)")
    g.add_argument("--smoke", action="store_true", help="2 tiny images, 1 round: checks that it runs (seconds)")
    p.add_argument("--threads", default="1,0", help="torch threads per pass, comma-separated; 0 = all (default 1,0)")
    p.add_argument("--sets", default="real,photo-like", help="image sets: real, photo-like (default both)")
    p.add_argument("--layouts", default="contiguous",
                   help="batch memory layouts, comma-separated: contiguous, channels_last (default contiguous)")
    p.add_argument("--only", default=None, help="comma-separated rows (default all): ops, policies, or names "
                   f"(with or without their arguments): {', '.join(row_names())}")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (overrides the grid's)")
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes (benchmarks/load.py)")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "local"),
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    p.add_argument("--tag", default="", help="appended to the file name (a part of a run: see --merge)")
    p.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                   help="instead of timing: join these files' rows (parts of one grid timed in separate quiet "
                   "windows, e.g. --only policies and --only ops) into the file this run would write; meta.parts "
                   "keeps each part's time, commit, load and activity")
    args = p.parse_args(argv)
    grid = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.merge:
        return _merge(args.merge, args.out, grid, args.threads, args.load)
    keys = {"real": REAL, "photo-like": SYNTH}
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
        sets = [keys[s.strip()] for s in args.sets.split(",") if s.strip()]
    except (ValueError, KeyError) as exc:
        p.error(f"--threads takes integers, --sets real and/or photo-like ({exc})")
    try:
        only = select(args.only) if args.only else None
    except ValueError as exc:
        p.error(str(exc))
    if not threads or any(t < 0 for t in threads) or not sets or args.load < 0 or (args.rounds or 1) < 1:
        p.error("--threads >= 0, --sets not empty, --load >= 0, --rounds >= 1")
    if REAL in sets and importlib.util.find_spec("skimage") is None:
        print("the real-photo set needs scikit-image (pip install scikit-image): running the photo-like set only",
              file=sys.stderr)
        sets = [s for s in sets if s != REAL] or [SYNTH]

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        result = run(grid, threads, sets, only, args.rounds, args.load, args.load_limit, say,
                     [x.strip() for x in args.layouts.split(",") if x.strip()])
    except ValueError as exc:
        p.error(str(exc))
    # a run of other thread counts than the default (1 and all) says which, as the harness's files do
    suffix = "" if threads == [1, 0] else "_threads" + "-".join(str(t) for t in result["meta"]["threads"])
    return _write(result, args.out, f"augment_{grid}{suffix}" + (f"_{args.tag}" if args.tag else ""), args.load)


def _write(result: Dict[str, Any], out: str, name: str, load: int) -> int:
    from benchmarks import docs_tables

    path = save_json(out, name, load, result)
    text = docs_tables.markdown(*docs_tables.view_augment(path, result))
    with open(path[:-5] + ".md", "w", encoding="utf-8") as f:
        f.write(docs_tables.describe(path, result) + "\n\n" + text)
    print(text)
    print(f"json: {path}\nmd: {path[:-5] + '.md'}")
    return 0


def merge(parts: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """One result from parts of a grid timed separately (each row is timed within one part: its columns and ratios
    share that part's rounds): the rows in the parts' order, the first part's meta with the union of their sets
    and threads, a compiler count summed over the parts' samples, and ``meta.parts`` holding each part's own time,
    commit, load and activity."""
    if not parts:
        raise ValueError("merge: no parts")
    meta = dict(parts[0]["meta"])
    keep = ("timestamp_utc", "git_commit", "load", "activity", "wall_s", "sets", "threads", "min_run_time_s",
            "rounds", "tensorops_augment")
    meta["parts"] = [{k: p["meta"].get(k) for k in keep} | {"rows": len(p["rows"])} for p in parts]
    meta["sets"] = list(dict.fromkeys(s for p in parts for s in p["meta"]["sets"]))
    meta["threads"] = list(dict.fromkeys(t for p in parts for t in p["meta"]["threads"]))
    acts = [p["meta"].get("activity") or {} for p in parts]
    meta["activity"] = dict(acts[0], samples=sum(a.get("samples", 0) for a in acts),
                            samples_with_a_compiler=sum(a.get("samples_with_a_compiler", 0) for a in acts),
                            note="summed over meta.parts")
    meta["timestamp_utc"] = max(p["meta"]["timestamp_utc"] for p in parts)
    return {"meta": meta, "rows": [r for p in parts for r in p["rows"]]}


def _merge(files: Sequence[str], out: str, grid: str, threads: str, load: int) -> int:
    import json

    parts = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            parts.append(json.load(fh))
    counts = [int(t) for t in threads.split(",") if t.strip()]
    suffix = "" if counts == [1, 0] else "_threads" + "-".join(
        str(t) for t in dict.fromkeys(t for p in parts for t in p["meta"]["threads"]))
    return _write(merge(parts), out, f"augment_{grid}{suffix}", load)


if __name__ == "__main__":
    sys.exit(main())

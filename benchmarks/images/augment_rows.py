"""benchmarks.augment's inputs and rows: the image batches (real photographs, photo-like), the per-sample draws,
the functional ops and the policies a row times, and the column names (benchmarks/images/augment.py says what each
column runs)."""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from benchmarks.case import photo_like, real_photo_sizes, real_photos

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



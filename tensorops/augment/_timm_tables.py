"""timm's auto-augment tables (``timm/data/auto_augment.py``): its op names mapped onto ``apply_ops``' ops, the op
lists and weights of RandAugment and AugMix, the AutoAugment sub-policies, and its magnitude schedule (the noisy
level, ``LEVEL_TO_ARG``), vectorized over samples."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

_LEVEL_DENOM = 10.0
_IMAGENET_MEAN_U8 = (124, 116, 104)  # tuple(min(255, round(255 * x)) for x in (0.485, 0.456, 0.406))

# timm name -> (apply_ops op, level kind)
_TIMM_OPS: Dict[str, Tuple[str, str]] = {
    "Identity": ("identity", "none"),
    "AutoContrast": ("autocontrast", "none"),
    "Equalize": ("equalize", "none"),
    "Invert": ("invert", "none"),
    "Rotate": ("rotate", "rotate"),
    "Posterize": ("posterize", "posterize"),
    "PosterizeIncreasing": ("posterize", "posterize_increasing"),
    "PosterizeOriginal": ("posterize", "posterize_original"),
    "Solarize": ("solarize", "solarize"),
    "SolarizeIncreasing": ("solarize", "solarize_increasing"),
    "SolarizeAdd": ("solarize_add", "solarize_add"),
    "Color": ("saturation", "enhance"),
    "ColorIncreasing": ("saturation", "enhance_increasing"),
    "Contrast": ("contrast", "enhance"),
    "ContrastIncreasing": ("contrast", "enhance_increasing"),
    "Brightness": ("brightness", "enhance"),
    "BrightnessIncreasing": ("brightness", "enhance_increasing"),
    "Sharpness": ("sharpness", "enhance"),
    "SharpnessIncreasing": ("sharpness", "enhance_increasing"),
    "ShearX": ("shear_x", "shear"),
    "ShearY": ("shear_y", "shear"),
    "TranslateX": ("translate_x", "translate_abs"),
    "TranslateY": ("translate_y", "translate_abs"),
    "TranslateXRel": ("translate_x", "translate_rel"),
    "TranslateYRel": ("translate_y", "translate_rel"),
}

_RAND_TRANSFORMS = ["AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "Solarize", "SolarizeAdd", "Color",
                    "Contrast", "Brightness", "Sharpness", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"]
_RAND_INCREASING_TRANSFORMS = ["AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing",
                               "SolarizeIncreasing", "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing",
                               "BrightnessIncreasing", "SharpnessIncreasing", "ShearX", "ShearY", "TranslateXRel",
                               "TranslateYRel"]
_RAND_CHOICE_WEIGHTS_0 = {"Rotate": 0.3, "ShearX": 0.2, "ShearY": 0.2, "TranslateXRel": 0.1, "TranslateYRel": 0.1,
                          "Color": 0.025, "Sharpness": 0.025, "AutoContrast": 0.025, "Solarize": 0.005,
                          "SolarizeAdd": 0.005, "Contrast": 0.005, "Brightness": 0.005, "Equalize": 0.005,
                          "Posterize": 0.0, "Invert": 0.0}
_AUGMIX_TRANSFORMS = ["AutoContrast", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing",
                      "SharpnessIncreasing", "Equalize", "Rotate", "PosterizeIncreasing", "SolarizeIncreasing",
                      "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"]

_Sub = List[Tuple[str, float, int]]
_AA_POLICIES: Dict[str, List[_Sub]] = {
    "v0": [
        [("Equalize", 0.8, 1), ("ShearY", 0.8, 4)], [("Color", 0.4, 9), ("Equalize", 0.6, 3)],
        [("Color", 0.4, 1), ("Rotate", 0.6, 8)], [("Solarize", 0.8, 3), ("Equalize", 0.4, 7)],
        [("Solarize", 0.4, 2), ("Solarize", 0.6, 2)], [("Color", 0.2, 0), ("Equalize", 0.8, 8)],
        [("Equalize", 0.4, 8), ("SolarizeAdd", 0.8, 3)], [("ShearX", 0.2, 9), ("Rotate", 0.6, 8)],
        [("Color", 0.6, 1), ("Equalize", 1.0, 2)], [("Invert", 0.4, 9), ("Rotate", 0.6, 0)],
        [("Equalize", 1.0, 9), ("ShearY", 0.6, 3)], [("Color", 0.4, 7), ("Equalize", 0.6, 0)],
        [("Posterize", 0.4, 6), ("AutoContrast", 0.4, 7)], [("Solarize", 0.6, 8), ("Color", 0.6, 9)],
        [("Solarize", 0.2, 4), ("Rotate", 0.8, 9)], [("Rotate", 1.0, 7), ("TranslateYRel", 0.8, 9)],
        [("ShearX", 0.0, 0), ("Solarize", 0.8, 4)], [("ShearY", 0.8, 0), ("Color", 0.6, 4)],
        [("Color", 1.0, 0), ("Rotate", 0.6, 2)], [("Equalize", 0.8, 4), ("Equalize", 0.0, 8)],
        [("Equalize", 1.0, 4), ("AutoContrast", 0.6, 2)], [("ShearY", 0.4, 7), ("SolarizeAdd", 0.6, 7)],
        [("Posterize", 0.8, 2), ("Solarize", 0.6, 10)], [("Solarize", 0.6, 8), ("Equalize", 0.6, 1)],
        [("Color", 0.8, 6), ("Rotate", 0.4, 5)],
    ],
    "original": [
        [("PosterizeOriginal", 0.4, 8), ("Rotate", 0.6, 9)], [("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)],
        [("Equalize", 0.8, 8), ("Equalize", 0.6, 3)], [("PosterizeOriginal", 0.6, 7), ("PosterizeOriginal", 0.6, 6)],
        [("Equalize", 0.4, 7), ("Solarize", 0.2, 4)], [("Equalize", 0.4, 4), ("Rotate", 0.8, 8)],
        [("Solarize", 0.6, 3), ("Equalize", 0.6, 7)], [("PosterizeOriginal", 0.8, 5), ("Equalize", 1.0, 2)],
        [("Rotate", 0.2, 3), ("Solarize", 0.6, 8)], [("Equalize", 0.6, 8), ("PosterizeOriginal", 0.4, 6)],
        [("Rotate", 0.8, 8), ("Color", 0.4, 0)], [("Rotate", 0.4, 9), ("Equalize", 0.6, 2)],
        [("Equalize", 0.0, 7), ("Equalize", 0.8, 8)], [("Invert", 0.6, 4), ("Equalize", 1.0, 8)],
        [("Color", 0.6, 4), ("Contrast", 1.0, 8)], [("Rotate", 0.8, 8), ("Color", 1.0, 2)],
        [("Color", 0.8, 8), ("Solarize", 0.8, 7)], [("Sharpness", 0.4, 7), ("Invert", 0.6, 8)],
        [("ShearX", 0.6, 5), ("Equalize", 1.0, 9)], [("Color", 0.4, 0), ("Equalize", 0.6, 3)],
        [("Equalize", 0.4, 7), ("Solarize", 0.2, 4)], [("Solarize", 0.6, 5), ("AutoContrast", 0.6, 5)],
        [("Invert", 0.6, 4), ("Equalize", 1.0, 8)], [("Color", 0.6, 4), ("Contrast", 1.0, 8)],
        [("Equalize", 0.8, 8), ("Equalize", 0.6, 3)],
    ],
}
# the "r" variants use the research (increasing) posterize in place of Posterize / PosterizeOriginal
_AA_POLICIES["v0r"] = [[(("PosterizeIncreasing" if n == "Posterize" else n), p, m) for n, p, m in sub]
                       for sub in _AA_POLICIES["v0"]]
_AA_POLICIES["originalr"] = [[(("PosterizeIncreasing" if n == "PosterizeOriginal" else n), p, m) for n, p, m in sub]
                             for sub in _AA_POLICIES["original"]]


def _timm_args(kinds: Sequence[str], ops: torch.Tensor, level: torch.Tensor, negate: torch.Tensor,
               hparams: Dict[str, Any]) -> torch.Tensor:
    """timm's ``LEVEL_TO_ARG`` functions, vectorized in float64 (Python's float arithmetic): ``ops`` index
    ``kinds``; ``negate`` is timm's ``random.random() > 0.5`` for the signed ops."""
    lv = level / _LEVEL_DENOM
    out = torch.zeros_like(level)
    for kind in set(kinds):
        sel = torch.isin(ops, torch.tensor([i for i, k in enumerate(kinds) if k == kind], dtype=torch.int64))
        if kind == "none" or not bool(sel.any()):
            continue
        x, neg = lv[sel], negate[sel]
        if kind == "rotate":
            v = torch.where(neg, -(x * 30.0), x * 30.0)
        elif kind == "enhance":
            v = x * 1.8 + 0.1
        elif kind == "enhance_increasing":
            v = x * 0.9
            v = torch.clamp(1.0 + torch.where(neg, -v, v), min=0.1)
        elif kind == "shear":
            v = torch.where(neg, -(x * 0.3), x * 0.3)
        elif kind == "translate_abs":
            v = x * float(hparams.get("translate_const", 250))
            v = torch.where(neg, -v, v)
        elif kind == "translate_rel":
            v = x * float(hparams.get("translate_pct", 0.45))
            v = torch.where(neg, -v, v)
        elif kind == "posterize":  # timm's posterize returns the image at >= 8 bits: 8 keeps every bit
            v = torch.trunc(x * 4).clamp(max=8)
        elif kind == "posterize_increasing":  # below 0 bits Pillow's mask clears every bit, as 0 bits does
            v = (4 - torch.trunc(x * 4)).clamp(min=0)
        elif kind == "posterize_original":
            v = (torch.trunc(x * 4) + 4).clamp(max=8)
        elif kind == "solarize":
            v = torch.trunc(x * 256).clamp(max=256)  # timm: min(256, ...)
        elif kind == "solarize_increasing":
            v = 256 - torch.trunc(x * 256).clamp(max=256)
        elif kind == "solarize_add":
            v = torch.trunc(x * 110).clamp(max=128)  # timm: min(128, ...)
        else:  # pragma: no cover - table and kinds are written together
            raise AssertionError(kind)
        out[sel] = v
    return out


def _noisy_level(shape: Tuple[int, ...], magnitude: torch.Tensor, std: float, upper: float,
                 g: Optional[torch.Generator]) -> torch.Tensor:
    """timm's AugmentOp magnitude: ``uniform(0, m)`` if std is inf, ``gauss(m, std)`` if std > 0, clipped to
    [0, upper]."""
    m = magnitude.to(torch.float64).expand(shape)
    if std == float("inf"):
        m = torch.rand(shape, generator=g, dtype=torch.float64) * m
    elif std > 0:
        m = m + std * torch.randn(shape, generator=g, dtype=torch.float64)
    return m.clamp(0.0, upper)

"""torchvision 0.29.1's auto-augment tables (``transforms/v2/_auto_augment.py``) and how a row of them runs: the
augmentation spaces (op -> magnitude of each bin, signed or not), AutoAugment's sub-policies, the map from
torchvision's op names onto ``apply_ops``' ops (``_tv_round``), and the magnitude of a drawn (op, bin, sign)."""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from tensorops.augment._batched import _map_values, _ops_index, _round

_MagFn = Callable[[int, int, int], Optional[torch.Tensor]]


def _linspace(lo: float, hi: float) -> _MagFn:
    return lambda num_bins, height, width: torch.linspace(lo, hi, num_bins)


def _none() -> _MagFn:
    return lambda num_bins, height, width: None


def _posterize(top: int, steps: int) -> _MagFn:
    return lambda num_bins, height, width: (top - (torch.arange(num_bins) / ((num_bins - 1) / steps))).round().int()


# torchvision 0.29.1's augmentation spaces (transforms/v2/_auto_augment.py):
# name -> (magnitudes(num_bins, H, W), signed)
_AUTOAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (lambda num_bins, height, width: torch.linspace(0.0, 150.0 / 331.0 * width, num_bins), True),
    "TranslateY": (lambda num_bins, height, width: torch.linspace(0.0, 150.0 / 331.0 * height, num_bins), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
    "Posterize": (_posterize(8, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
    "Invert": (_none(), False),
}
_RANDAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "Identity": (_none(), False),
    **{k: v for k, v in _AUTOAUGMENT_SPACE.items() if k != "Invert"},
}
_TRIVIALAUGMENT_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "Identity": (_none(), False),
    "ShearX": (_linspace(0.0, 0.99), True),
    "ShearY": (_linspace(0.0, 0.99), True),
    "TranslateX": (_linspace(0.0, 32.0), True),
    "TranslateY": (_linspace(0.0, 32.0), True),
    "Rotate": (_linspace(0.0, 135.0), True),
    "Brightness": (_linspace(0.0, 0.99), True),
    "Color": (_linspace(0.0, 0.99), True),
    "Contrast": (_linspace(0.0, 0.99), True),
    "Sharpness": (_linspace(0.0, 0.99), True),
    "Posterize": (_posterize(8, 6), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
}
_AUGMIX_PARTIAL_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (lambda num_bins, height, width: torch.linspace(0.0, width / 3.0, num_bins), True),
    "TranslateY": (lambda num_bins, height, width: torch.linspace(0.0, height / 3.0, num_bins), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Posterize": (_posterize(4, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none(), False),
    "Equalize": (_none(), False),
}
_AUGMIX_SPACE: Dict[str, Tuple[_MagFn, bool]] = {
    **_AUGMIX_PARTIAL_SPACE,
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
}

# torchvision name -> (apply_ops op, how _apply_image_or_video_transform turns the magnitude into its argument)
_TV_TO_OPS: Dict[str, Tuple[str, str]] = {
    "Identity": ("identity", "zero"),
    "ShearX": ("shear_x", "atan_degrees"),
    "ShearY": ("shear_y", "atan_degrees"),
    "TranslateX": ("translate_x", "int"),
    "TranslateY": ("translate_y", "int"),
    "Rotate": ("rotate", "same"),
    "Brightness": ("brightness", "one_plus"),
    "Color": ("saturation", "one_plus"),
    "Contrast": ("contrast", "one_plus"),
    "Sharpness": ("sharpness", "one_plus"),
    "Posterize": ("posterize", "int"),
    "Solarize": ("solarize", "times_255"),
    "AutoContrast": ("autocontrast", "zero"),
    "Equalize": ("equalize", "zero"),
    "Invert": ("invert", "zero"),
}


def _tv_round(batch: torch.Tensor, op_names: Sequence[str], ops: torch.Tensor, magnitudes: torch.Tensor,
              interpolation: str, fill: Any) -> torch.Tensor:
    """Apply, to every sample, torchvision op ``op_names[ops[i]]`` with magnitude ``magnitudes[i]`` (one round)."""
    lut = torch.tensor([_ops_index(_TV_TO_OPS[name][0]) for name in op_names], dtype=torch.int64)
    apply_ops = lut[ops]
    args = torch.zeros_like(magnitudes)
    kinds = [_TV_TO_OPS[name][1] for name in op_names]
    for kind in set(kinds):
        if kind == "zero":
            continue
        ids = torch.tensor([i for i, k in enumerate(kinds) if k == kind], dtype=torch.int64)
        sel = torch.isin(ops, ids)
        if not bool(sel.any()):
            continue
        m = magnitudes[sel]
        if kind == "same":
            args[sel] = m
        elif kind == "one_plus":
            args[sel] = 1.0 + m
        elif kind == "int":
            args[sel] = torch.trunc(m)  # Python's int(magnitude)
        elif kind == "times_255":
            args[sel] = 255.0 * m  # v2: _max_value(uint8) * magnitude, in float64
        elif kind == "atan_degrees":
            args[sel] = _map_values(m, lambda v: math.degrees(math.atan(v)))
    return _round(batch, apply_ops, args, interpolation, fill)


def _magnitude_table(space: Dict[str, Tuple[_MagFn, bool]], num_bins: int, height: int, width: int
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
    """float64 (ops, num_bins) table of ``float(magnitudes[bin])`` as torchvision computes them (0 where an op has
    none), and bool (ops,) signed."""
    table = torch.zeros(len(space), num_bins, dtype=torch.float64)
    signed = torch.zeros(len(space), dtype=torch.bool)
    for k, (fn, sgn) in enumerate(space.values()):
        mags = fn(num_bins, height, width)
        if mags is not None:
            table[k] = mags.to(torch.float64)
            signed[k] = sgn
    return table, signed


def _signed(table: torch.Tensor, signed: torch.Tensor, ops: torch.Tensor, bins: torch.Tensor,
            negate_draw: torch.Tensor) -> torch.Tensor:
    """``magnitude = float(table[op, bin])``, times -1 where the op is signed and ``rand <= 0.5`` (v2's rule)."""
    mag = table[ops, bins]
    return torch.where(signed[ops] & (negate_draw <= 0.5), -mag, mag)


_AUTOAUGMENT_POLICIES: Dict[str, List[Tuple[Tuple[str, float, Optional[int]], Tuple[str, float, Optional[int]]]]] = {
    "imagenet": [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    "cifar10": [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    "svhn": [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}

"""tensorops.augment: torchvision v2's image augmentations on uint8 batches, with per-sample arguments and
per-sample draws, on the CPU and CUDA (docs/guides/pipelines.rst, "Augmentations").

The functional ops (``tensorops.augment.adjust_hue(batch, factors)`` ...) equal torchvision v2's functions
sample by sample; the policies (``TrivialAugmentWide``, ``RandAugment`` ...) draw every sample's ops and
magnitudes from a ``torch.Generator``.
"""
from tensorops import _augment_ops  # noqa: F401  (fake kernels)
from tensorops.augment.functional import (
    OPS, adjust_brightness, adjust_contrast, adjust_hue, adjust_saturation, adjust_sharpness, affine, apply_ops,
    autocontrast, equalize, erase, invert, mix, posterize, rgb_to_grayscale, rotate, solarize,
)

__all__ = [
    "OPS", "adjust_brightness", "adjust_contrast", "adjust_hue", "adjust_saturation", "adjust_sharpness", "affine",
    "apply_ops", "autocontrast", "equalize", "erase", "invert", "mix", "posterize", "rgb_to_grayscale", "rotate",
    "solarize",
]

# the policies (v2 transforms on batches, per-sample draws) and timm's policy strings
from tensorops.augment._auto_augment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from tensorops.augment._color import ColorJitter, RandomGrayscale
from tensorops.augment._erasing import RandomErasing
from tensorops.augment._mixing import CutMix, MixUp, RandomChoice
from tensorops.augment import transforms  # noqa: F401  (the public path tensorops.augment.transforms.X)
from tensorops.augment import timm
from tensorops.augment.timm import from_timm_string

__all__ += [
    "AugMix", "AutoAugment", "AutoAugmentPolicy", "ColorJitter", "CutMix", "MixUp", "RandAugment", "RandomChoice",
    "RandomErasing", "RandomGrayscale", "TrivialAugmentWide", "timm", "from_timm_string",
]

"""The recipes' reference pipelines, as their users run them, and tensorops taking those same objects.

* ``timm``: recipe (b) as timm's users run it: ``timm.data.create_transform`` (DeiT's arguments: 224, bicubic,
  ``rand-m9-mstd0.5-inc1``, RandomErasing 0.25 in ``pixel`` mode) on PIL images in the Dataset, ``default_collate``,
  then ``timm.data.Mixup`` (MixUp 0.8 / CutMix 1.0, switch 0.5, label smoothing 0.1) on the batch in the collate.
  Recipe (b)'s reference; recipe (a)'s is torchvision's reference on PIL (``recipes.TV_PIL``).
* ``tensorops from_pipeline``: ``tensorops.data.from_pipeline`` given the reference's own transform and batch
  transform (recipe (a): the v2 PIL preset and ``RandomChoice([MixUp, CutMix])``; (b): timm's transform and
  ``Mixup``), the Dataset giving the files' bytes: the one line a user changes.
"""
from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import torch

TIMM, PIPE = "timm", "tensorops from_pipeline"
REFERENCE = {"a": "torchvision v2 PIL", "b": TIMM}  # what each recipe's users run: the floors' baseline


def timm_objects(recipe: Dict[str, Any], num_classes: int) -> Tuple[Any, Any]:
    """timm's (create_transform(...), Mixup(...)) for recipe (b); NotImplementedError without timm or for (a)."""
    if recipe["policy"] == "TrivialAugmentWide":
        raise NotImplementedError("recipe (a) is torchvision's, not timm's")
    try:
        from timm.data import Mixup, create_transform
    except ImportError as exc:
        raise NotImplementedError(f"timm is not installed ({exc})") from exc
    _posterize_zero_bits()
    transform = create_transform(recipe["crop"], is_training=True, auto_augment=recipe["policy"],
                                 interpolation="bicubic", re_prob=recipe["erase_p"], re_mode="pixel", re_count=1)
    mix = Mixup(mixup_alpha=recipe["mixup"], cutmix_alpha=recipe["cutmix"], label_smoothing=0.1,
                num_classes=num_classes)
    return transform, mix


def _posterize_zero_bits() -> None:
    """timm 1.0's PosterizeIncreasing asks Pillow for 0 bits at its top levels (m9 with noise reaches them), which
    Pillow 12 and later refuse (ValueError) where older Pillows returned the image with every bit cleared: timm's
    pipeline then fails on some images. Its posterize gets that old answer back for 0 bits, so that the reference
    runs as its users ran it (timm's other answers unchanged); tensorops' twin gives the same all-zero image."""
    import timm.data.auto_augment as aa

    if getattr(aa, "_zero_bits_as_before", False):
        return
    original = aa.posterize

    def posterize(img: Any, bits_to_keep: int, **kw: Any) -> Any:
        if bits_to_keep <= 0:
            return img.point(lambda _: 0)
        return original(img, bits_to_keep, **kw)

    for name, fn in list(aa.NAME_TO_OP.items()):
        if fn is original:
            aa.NAME_TO_OP[name] = posterize
    aa._zero_bits_as_before = True


class TimmCollate:
    """default_collate, then timm's Mixup on the batch (it mixes in place and needs an even batch)."""

    def __init__(self, mix: Any) -> None:
        self.mix = mix

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, torch.Tensor]:
        from torch.utils.data import default_collate

        x, y = default_collate(samples)
        return self.mix(x, y)


def pipeline_collate(recipe: Dict[str, Any], num_classes: int, tv_transform: Any, tv_collate: Any) -> Any:
    """from_pipeline of the recipe's reference objects: (a) the v2 PIL preset and its RandomChoice([MixUp, CutMix]);
    (b) timm's create_transform and Mixup."""
    from tensorops.data import from_pipeline

    if recipe["policy"] == "TrivialAugmentWide":
        return from_pipeline(tv_transform, tv_collate.mix, warn=False)
    transform, mix = timm_objects(recipe, num_classes)
    return from_pipeline(transform, mix, warn=False)

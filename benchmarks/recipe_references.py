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
    transform = create_transform(recipe["crop"], is_training=True, auto_augment=recipe["policy"],
                                 interpolation="bicubic", re_prob=recipe["erase_p"], re_mode="pixel", re_count=1)
    mix = Mixup(mixup_alpha=recipe["mixup"], cutmix_alpha=recipe["cutmix"], label_smoothing=0.1,
                num_classes=num_classes)
    return transform, mix


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

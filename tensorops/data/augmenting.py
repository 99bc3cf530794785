"""How the batch path runs augmentations: the collates' and NormalizingLoader's ``augment=`` and
``after_normalize=``.

``augment`` is one transform or a sequence of them, applied in order to a uint8 (N, C, H, W) batch;
``after_normalize`` the same on the normalized float batch (where the recipes put RandomErasing and MixUp /
CutMix). That batch is the caller's fresh output, which nothing else holds: give those transforms
``inplace=True`` (``tensorops.augment``'s RandomErasing, MixUp and CutMix take it) and they write only what they
change, with no batch-sized temporaries. A transform is
any callable; one that splits its randomness from its work as ``tensorops.augment``'s policies and torchvision v2's
transforms do, with

* ``make_params(batch, generator=None) -> dict``: every random draw, per sample, from ``generator``;
* ``transform(batch, params) -> batch``: the work, no draws,

draws from the caller's generator (the collate's own stream: per DataLoader worker and epoch, repeatable from its
seed, :mod:`tensorops.data.seeding`), so the augmentations repeat and vary exactly as the crops and flips do. Any
other callable is called as ``t(batch)`` and draws from wherever it draws (torch's global RNG, which DataLoader
seeds per worker).

torchvision v2 transforms (whose ``make_params`` takes the flat inputs and no generator) run as they are, on the
whole batch: ``t(batch, labels)`` (``t(batch)`` without labels), so a v2 transform draws **once per batch** from
torch's global RNG, every image of the batch getting the same crop, jitter or rotation, and v2's MixUp / CutMix
(alone or inside ``RandomChoice`` / ``Compose``) mix the labels as they do after ``default_collate``. For
per-sample draws use ``tensorops.augment``'s transforms of the same names.

Label-mixing transforms (MixUp, CutMix): a transform whose ``needs_labels`` attribute is true, or, without that
attribute, whose ``forward`` (or ``__call__``) takes a second required argument, gets the labels too and gives
soft labels, which replace the labels in what the collate or loader returns. With ``make_params``, ``transform``
and ``transform_labels(labels, params) -> soft labels`` it draws from the caller's generator:
``batch = t.transform(batch, params)``, ``labels = t.transform_labels(labels, params)``; otherwise it is called as
``batch, labels = t(batch, labels)``.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional, Sequence, Tuple

import torch

__all__ = ["as_transforms", "needs_labels", "apply", "any_needs_labels"]


def as_transforms(augment: Any, where_: str, name: str = "augment") -> Tuple[Callable[..., Any], ...]:
    """``augment`` (None, a transform, or a sequence of transforms) as a tuple; a TypeError naming ``where_`` and
    the item (``name`` or ``name[k]``) for anything that is not callable."""
    if augment is None:
        return ()
    items = tuple(augment) if isinstance(augment, (list, tuple)) else (augment,)
    for k, t in enumerate(items):
        if not callable(t):
            at = name if len(items) == 1 and not isinstance(augment, (list, tuple)) else f"{name}[{k}]"
            raise TypeError(f"{where_}{at} must be a transform (a callable, e.g. a tensorops.augment policy), got "
                            f"{type(t).__name__}")
    return items


def _is_v2(t: Any) -> bool:
    """A torchvision v2 transform (its ``make_params`` takes the flat inputs, not a generator)."""
    return any(c.__module__.startswith("torchvision.transforms.v2") for c in type(t).__mro__[:-1])


def _v2_mixes(t: Any) -> bool:
    """A v2 MixUp or CutMix, or a v2 container (Compose, RandomChoice, RandomApply, RandomOrder) holding one."""
    if any(c.__name__ == "_BaseMixUpCutMix" for c in type(t).__mro__):
        return True
    inner = getattr(t, "transforms", None)
    return isinstance(inner, (list, tuple, torch.nn.ModuleList)) and any(_v2_mixes(u) for u in inner)


def needs_labels(t: Any) -> bool:
    """Whether ``t`` mixes labels (MixUp, CutMix): its ``needs_labels`` attribute; for a torchvision v2 transform
    whether it is or holds v2's MixUp / CutMix; else whether its ``forward`` (an nn.Module's) or ``__call__``
    takes a second required positional argument."""
    flag = getattr(t, "needs_labels", None)
    if flag is not None:
        return bool(flag)
    if _is_v2(t):
        return _v2_mixes(t)
    fn = t.forward if isinstance(t, torch.nn.Module) else t
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return len(positional) >= 2


def any_needs_labels(transforms: Sequence[Any]) -> bool:
    return any(needs_labels(t) for t in transforms)


def _splits(t: Any) -> bool:
    """``make_params(batch, generator=...)`` and ``transform(batch, params)``: tensorops.augment's split (v2's
    ``make_params`` takes no generator: such a transform is called whole)."""
    make_params = getattr(t, "make_params", None)
    if not (callable(make_params) and callable(getattr(t, "transform", None))) or _is_v2(t):
        return False
    try:
        return "generator" in inspect.signature(make_params).parameters
    except (TypeError, ValueError):
        return False


def apply(transforms: Sequence[Any], batch: torch.Tensor, labels: Any,
          generator: Optional[torch.Generator]) -> Tuple[torch.Tensor, Any]:
    """``(batch, labels)`` after every transform of ``transforms`` in order (see the module's docstring); the
    draws of transforms with ``make_params`` come from ``generator`` (None: torch's global RNG)."""
    for t in transforms:
        mixes = needs_labels(t)
        if _splits(t) and (not mixes or callable(getattr(t, "transform_labels", None))):
            params = t.make_params(batch, generator=generator)
            out = t.transform(batch, params)
            if mixes:
                labels = t.transform_labels(labels, params)
            batch = out
        elif mixes or (_is_v2(t) and labels is not None):  # v2 passes the labels through or mixes them
            batch, labels = t(batch, labels)
        else:
            batch = t(batch)
    return batch, labels

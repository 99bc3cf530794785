"""timm's transforms (what ``timm.data.create_transform`` builds) as :func:`tensorops.data.from_pipeline` reads
them: ``RandomResizedCropAndInterpolation`` (``interpolation="random"``: bilinear or bicubic per image),
``MaybeToTensor``, and timm's ``RandAugment`` / ``AutoAugment`` / ``AugMixAugment`` recovered from their own
``AugmentOp`` objects (names, probability, magnitude, magnitude_std / max, hparams: translate_const / pct, img_mean)
as ``tensorops.augment.timm``'s policies, ``RandomErasing`` as :class:`tensorops.augment.timm.TimmRandomErasing`,
``Mixup`` as :class:`tensorops.augment.timm.TimmMixup`. timm's Resize, CenterCrop, flip, ColorJitter and Normalize
are torchvision's (``pipeline_torchvision``). timm is not imported here."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from tensorops.data.pipeline_plan import Leaf
from tensorops.data.pipeline_torchvision import interpolation_name

__all__ = ["is_timm", "classify", "batch_twin"]


def is_timm(t: Any) -> bool:
    return type(t).__module__.startswith("timm.")


def _op_interpolation(ops: List[Any]) -> Tuple[str, str]:
    """The twins' interpolation for timm's AugmentOps' ``resample`` and the note saying what differs."""
    resample = ops[0].kwargs.get("resample") if ops else None
    if isinstance(resample, (list, tuple)):
        return "random", "timm draws bilinear or bicubic per op: drawn per op here, Pillow's geometry bit for bit"
    name = interpolation_name(resample)
    if name == "bicubic":
        return "bicubic", "timm's bicubic geometric ops: Pillow's geometry bit for bit"
    return (name or "bilinear"), ""


def _same(ops: List[Any], attr: str) -> bool:
    return len({repr(getattr(op, attr)) for op in ops}) <= 1


def classify(t: Any) -> Optional[Leaf]:
    if not is_timm(t):
        return None
    name = type(t).__name__
    if name == "RandomResizedCropAndInterpolation":
        modes = t.interpolation if isinstance(t.interpolation, (list, tuple)) else [t.interpolation]
        names = [interpolation_name(m) for m in modes]
        if any(n is None for n in names):
            return None
        return Leaf("rrc", {"size": tuple(t.size), "scale": tuple(map(float, t.scale)),
                            "ratio": tuple(map(float, t.ratio)),
                            "interpolation": names[0] if len(names) == 1 else tuple(names), "antialias": True})
    if name == "MaybeToTensor":
        return Leaf("to_tensor")
    if name in ("MaybePILToTensor", "ToNumpy"):
        return Leaf("to_u8")
    if name in ("RandAugment", "AutoAugment", "AugMixAugment"):
        return _policy(t, name)
    if name == "RandomErasing":
        from tensorops.augment.timm import TimmRandomErasing

        scale = (float(t.min_area), float(t.max_area))
        kw = dict(probability=float(t.probability), min_area=scale[0], max_area=scale[1],
                  log_aspect_ratio=tuple(map(float, t.log_aspect_ratio)), mode=t.mode or "const",
                  min_count=int(t.min_count), max_count=int(t.max_count))
        if getattr(t, "num_splits", 0) > 1:
            return None  # the first split left unerased: run as given
        return Leaf("twin", {"float": True}, make=lambda: TimmRandomErasing(**kw, inplace=True),
                    target="tensorops.augment.timm.TimmRandomErasing(" + ", ".join(f"{k}={v!r}" for k, v in kw.items())
                           + ", inplace=True)")
    return None


def _policy(t: Any, name: str) -> Optional[Leaf]:
    from tensorops.augment._timm_tables import _AA_POLICIES
    from tensorops.augment.timm import TimmAugMix, TimmAutoAugment, TimmRandAugment

    ops = [op for sub in t.policy for op in sub] if name == "AutoAugment" else list(t.ops)
    if not ops or not all(_same(ops, a) for a in ("magnitude_std", "magnitude_max", "hparams", "kwargs")):
        return None
    interp, note = _op_interpolation(ops)
    hp = {k: v for k, v in ops[0].hparams.items() if k in ("translate_const", "translate_pct", "img_mean")}
    common = dict(magnitude_std=float(ops[0].magnitude_std), magnitude_max=ops[0].magnitude_max, hparams=hp,
                  interpolation=interp)
    names = [op.name for op in ops]
    if name == "RandAugment":
        if not (_same(ops, "magnitude") and _same(ops, "prob")):
            return None
        w = None if t.choice_weights is None else [float(v) for v in t.choice_weights]
        kw = dict(ops=names, num_layers=int(t.num_layers), magnitude=float(ops[0].magnitude), choice_weights=w,
                  prob=float(ops[0].prob), **common)
        return Leaf("twin", make=lambda: TimmRandAugment(**kw), note=note,
                    target=f"tensorops.augment.timm.TimmRandAugment(num_layers={t.num_layers}, magnitude="
                           f"{ops[0].magnitude}, prob={ops[0].prob}, magnitude_std={common['magnitude_std']}, "
                           f"{len(names)} ops, weights={'yes' if w else 'no'}, hparams={hp}, interpolation={interp!r})")
    if name == "AugMixAugment":
        if t.blended or not (_same(ops, "magnitude") and all(op.prob == 1.0 for op in ops)):
            return None  # timm's blended AugMix has no twin
        kw = dict(severity=float(ops[0].magnitude), width=int(t.width), depth=int(t.depth), alpha=float(t.alpha),
                  ops=names, **common)
        return Leaf("twin", make=lambda: TimmAugMix(**kw), note=note,
                    target=f"tensorops.augment.timm.TimmAugMix(severity={ops[0].magnitude}, width={t.width}, "
                           f"depth={t.depth}, alpha={t.alpha}, magnitude_std={common['magnitude_std']}, hparams={hp}, "
                           f"interpolation={interp!r})")
    table = [[(op.name, float(op.prob), op.magnitude) for op in sub] for sub in t.policy]
    policy = next((k for k, subs in _AA_POLICIES.items()
                   if [[(n, float(p), m) for n, p, m in sub] for sub in subs] == table), None)
    if policy is None:
        return None  # a policy of the user's own: run as given
    return Leaf("twin", make=lambda: TimmAutoAugment(policy, **common), note=note,
                target=f"tensorops.augment.timm.TimmAutoAugment({policy!r}, magnitude_std={common['magnitude_std']}, "
                       f"hparams={hp}, interpolation={interp!r})")


def batch_twin(t: Any) -> Optional[Leaf]:
    """timm's ``Mixup`` as :class:`tensorops.augment.timm.TimmMixup` (its every argument)."""
    if not is_timm(t) or type(t).__name__ != "Mixup" or getattr(t, "multi_label", False):
        return None
    from tensorops.augment.timm import TimmMixup

    kw = dict(mixup_alpha=float(t.mixup_alpha), cutmix_alpha=float(t.cutmix_alpha), cutmix_minmax=t.cutmix_minmax,
              prob=float(t.mix_prob), switch_prob=float(t.switch_prob), mode=t.mode, correct_lam=bool(t.correct_lam),
              label_smoothing=float(t.label_smoothing), num_classes=int(t.num_classes))
    return Leaf("twin", make=lambda: TimmMixup(**kw, inplace=True),
                target="tensorops.augment.timm.TimmMixup(" + ", ".join(f"{k}={v!r}" for k, v in kw.items()) + ")")

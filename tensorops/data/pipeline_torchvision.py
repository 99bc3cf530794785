"""torchvision's transforms (v2 and v1) as :func:`tensorops.data.from_pipeline` reads them: each object's own
attributes (sizes, scale / ratio, interpolation, antialias, fill, probabilities, magnitudes, mean / std, erasing
value) turned into a :class:`~tensorops.data.pipeline_plan.Leaf`, and the twins built with the same arguments.

A transform is read only where every argument it holds has a twin; anything else returns None and runs as given
(``pipeline.py``). torchvision is not imported here: the objects are recognised by their class and module."""
from __future__ import annotations

import numbers
from typing import Any, List, Optional

import torch

from tensorops.data.pipeline_plan import Leaf

__all__ = ["is_torchvision", "is_v1", "classify", "children", "interpolation_name"]


def is_torchvision(t: Any) -> bool:
    return type(t).__module__.startswith("torchvision.transforms")


def is_v1(t: Any) -> bool:
    return is_torchvision(t) and not type(t).__module__.startswith("torchvision.transforms.v2")


def interpolation_name(mode: Any) -> Optional[str]:
    """'nearest', 'bilinear', 'bicubic' from torchvision's InterpolationMode, a string or a Pillow filter number;
    None for anything else."""
    value = getattr(mode, "value", mode)
    if isinstance(value, str) and value.lower() in ("nearest", "bilinear", "bicubic"):
        return value.lower()
    if isinstance(value, int) and not isinstance(value, bool):
        return {0: "nearest", 2: "bilinear", 3: "bicubic"}.get(value)  # PIL.Image.Resampling
    return None


def _size(size: Any) -> Optional[tuple]:
    if isinstance(size, numbers.Integral):
        return (int(size), int(size))
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return (int(size[0]), int(size[0]))
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return (int(size[0]), int(size[1]))
    return None


def _fill(t: Any) -> Any:
    """The transform's ``fill`` when the twins take it (None, a number or a sequence of numbers); else ``...``."""
    fill = getattr(t, "fill", None)
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    if isinstance(fill, (list, tuple)) and all(isinstance(v, numbers.Number) for v in fill):
        return list(fill)
    return ...


def _values(v: Any) -> List[float]:
    """mean / std as given (a tensor's values, or the numbers themselves: not through float32)."""
    if isinstance(v, torch.Tensor):
        return [float(x) for x in v.flatten().tolist()]
    return [float(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def children(t: Any) -> Optional[List[Any]]:
    """The transforms a Compose holds (torchvision's v1 or v2, or an object of the references' presets, whose
    ``transforms`` attribute is one), else None."""
    name = type(t).__name__
    inner = getattr(t, "transforms", None)
    if name == "Compose" and isinstance(inner, (list, tuple, torch.nn.ModuleList)):
        return list(inner)
    if not is_torchvision(t) and inner is not None and type(inner).__name__ == "Compose":
        return list(inner.transforms)  # ClassificationPresetTrain / Eval: self.transforms = T.Compose([...])
    return None


def classify(t: Any) -> Optional[Leaf]:
    """The Leaf a torchvision transform maps to, or None (no fused form: it runs as given)."""
    if not is_torchvision(t):
        return None
    name = type(t).__name__
    v1 = is_v1(t)
    if name in ("PILToTensor", "ToImage", "ToImageTensor"):
        return Leaf("to_u8")
    if name == "ToTensor":
        return Leaf("to_tensor", {"dtype": torch.float32})
    if name in ("ToDtype", "ConvertImageDtype"):
        dtype = t.dtype
        if isinstance(dtype, dict):
            dtype = next((v for k, v in dtype.items() if getattr(k, "__name__", "") == "Image"), None)
        scale = getattr(t, "scale", True)  # ConvertImageDtype always scales
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point and scale:
            return Leaf("to_float", {"dtype": dtype})
        return None
    if name in ("ToPureTensor", "Identity"):
        return Leaf("noop")
    if name == "RandomResizedCrop":
        interp = interpolation_name(t.interpolation)
        if interp is None or _size(t.size) is None:
            return None
        return Leaf("rrc", {"size": _size(t.size), "scale": tuple(map(float, t.scale)),
                            "ratio": tuple(map(float, t.ratio)), "interpolation": interp,
                            "antialias": bool(t.antialias) if t.antialias is not None else True})
    if name == "Resize":
        size = t.size
        size = size[0] if isinstance(size, (list, tuple)) and len(size) == 1 else size
        interp = interpolation_name(t.interpolation)
        if not isinstance(size, numbers.Integral) or t.max_size is not None or interp is None:
            return None  # only Resize(int): the shorter side to size
        return Leaf("resize", {"size": int(size), "interpolation": interp,
                               "antialias": bool(t.antialias) if t.antialias is not None else True})
    if name == "CenterCrop":
        return Leaf("center_crop", {"size": _size(t.size)}) if _size(t.size) else None
    if name == "RandomHorizontalFlip":
        return Leaf("hflip", {"p": float(t.p)})
    if name == "Normalize":
        return Leaf("normalize", {"mean": _values(t.mean), "std": _values(t.std)})
    if name == "RandomApply":
        return Leaf("apply", {"transforms": list(t.transforms), "p": float(t.p), "v1": v1})
    if name == "RandomChoice":
        return Leaf("choice", {"transforms": list(t.transforms), "p": getattr(t, "p", None), "v1": v1})
    if name == "RandomOrder":
        return Leaf("order", {"transforms": list(t.transforms)})
    return _twin(t, name)


def _twin(t: Any, name: str) -> Optional[Leaf]:
    from tensorops.augment import transforms as A

    if name in ("RandAugment", "TrivialAugmentWide", "AutoAugment", "AugMix"):
        interp, fill = interpolation_name(t.interpolation), _fill(t)
        if interp not in ("nearest", "bilinear") or fill is ...:
            return None  # the affine kernel resamples nearest or bilinear
        kw = dict(interpolation=interp, fill=fill)
        if name == "RandAugment":
            return Leaf("twin", make=lambda: A.RandAugment(t.num_ops, t.magnitude, t.num_magnitude_bins, **kw),
                        target=f"tensorops.augment.RandAugment(num_ops={t.num_ops}, magnitude={t.magnitude}, "
                               f"num_magnitude_bins={t.num_magnitude_bins}, interpolation={interp!r}, fill={fill})")
        if name == "TrivialAugmentWide":
            return Leaf("twin", make=lambda: A.TrivialAugmentWide(t.num_magnitude_bins, **kw),
                        target=f"tensorops.augment.TrivialAugmentWide(num_magnitude_bins={t.num_magnitude_bins}, "
                               f"interpolation={interp!r}, fill={fill})")
        if name == "AutoAugment":
            policy = getattr(t.policy, "value", t.policy)
            return Leaf("twin", make=lambda: A.AutoAugment(policy, **kw),
                        target=f"tensorops.augment.AutoAugment({policy!r}, interpolation={interp!r}, fill={fill})")
        return Leaf("twin", make=lambda: A.AugMix(t.severity, t.mixture_width, t.chain_depth, t.alpha, t.all_ops, **kw),
                    target=f"tensorops.augment.AugMix(severity={t.severity}, mixture_width={t.mixture_width}, "
                           f"chain_depth={t.chain_depth}, alpha={t.alpha}, all_ops={t.all_ops}, "
                           f"interpolation={interp!r}, fill={fill})")
    if name == "ColorJitter":
        ranges = {k: (tuple(getattr(t, k)) if getattr(t, k) is not None else None)
                  for k in ("brightness", "contrast", "saturation", "hue")}
        return Leaf("twin", make=lambda: A.ColorJitter(**ranges),
                    target="tensorops.augment.ColorJitter(" + ", ".join(f"{k}={v}" for k, v in ranges.items()) + ")")
    if name == "RandomGrayscale":
        return Leaf("twin", make=lambda: A.RandomGrayscale(t.p), target=f"tensorops.augment.RandomGrayscale({t.p})")
    if name == "RandomErasing":
        value = t.value
        if value is None or value == "random":  # v2 keeps None for "random"
            value = "random"
        elif isinstance(value, numbers.Number):
            value = float(value)
        else:
            value = [float(v) for v in value]
        scale, ratio = tuple(map(float, t.scale)), tuple(map(float, t.ratio))
        return Leaf("twin", {"float": True},
                    make=lambda: A.RandomErasing(t.p, scale, ratio, value=value, inplace=True),
                    target=f"tensorops.augment.RandomErasing(p={t.p}, scale={scale}, ratio={ratio}, "
                           f"value={value!r}, inplace=True)")
    return None


def batch_twin(t: Any) -> Optional[Leaf]:
    """v2's MixUp / CutMix / RandomChoice of them as tensorops.augment's (in place on the collate's batch)."""
    if not is_torchvision(t):
        return None
    from tensorops.augment import transforms as A
    from tensorops.augment._mixing import RandomChoice

    name = type(t).__name__
    if name in ("MixUp", "CutMix"):
        cls = A.MixUp if name == "MixUp" else A.CutMix
        alpha, classes = float(t.alpha), t.num_classes
        return Leaf("twin", make=lambda: cls(alpha, classes, inplace=True),
                    target=f"tensorops.augment.{name}(alpha={alpha}, num_classes={classes}, inplace=True)")
    if name == "RandomChoice" and not is_v1(t):
        inner = [batch_twin(u) for u in t.transforms]
        if any(leaf is None for leaf in inner):
            return None
        p = list(t.p) if t.p is not None else None
        return Leaf("twin", make=lambda: RandomChoice([leaf.make() for leaf in inner], p),
                    target="tensorops.augment.RandomChoice([" + ", ".join(leaf.target for leaf in inner)
                           + f"], p={p})")
    return None

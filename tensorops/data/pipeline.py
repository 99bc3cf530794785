"""``from_pipeline``: a training script's own pipeline (torchvision v2 or v1 ``Compose``, the classification
references' presets, timm's ``create_transform``; the batch transform: v2 ``MixUp`` / ``CutMix`` /
``RandomChoice``, timm's ``Mixup``) as the fused batch path.

How the pipeline is read, transform by transform, in order (``pipeline_plan.Plan`` prints the result):

1. conversions to a uint8 tensor first (``PILToTensor``, ``ToImage``: the tensor backend) are what the collate
   does when it reads the samples;
2. the geometry: ``RandomResizedCrop`` (torchvision's or timm's), or ``Resize(int)`` + ``CenterCrop``, becomes
   the collate's boxes and its one resampling pass, with the transform's size, scale / ratio, interpolation and
   antialias; a ``RandomHorizontalFlip`` right after a RandomResizedCrop becomes its mirror, with its ``p``;
3. then, in order, on the uint8 batch: the transforms with batched twins (auto-augment policies, ColorJitter,
   RandomGrayscale, RandomApply / RandomChoice of those) as the twins, everything else run as given per sample;
4. the conversion to float (``ToTensor``, ``ToDtype(float, scale=True)``, ``ConvertImageDtype``, timm's
   ``MaybeToTensor``) and a ``Normalize`` right after it become the collate's normalize (mean / std as given);
5. after it, on the float batch: RandomErasing (torchvision's or timm's) as its twin, anything else as given per
   sample; then the batch transform (its twin, else as given on the batch).

An evaluation pipeline (``Resize`` + ``CenterCrop``, then conversions and a ``Normalize``) is instead, with
``exact=True`` (the default), the user's own transforms up to the crop per image and their conversion and
Normalize in place in the batch (``pipeline_collate.ExactEvalCollate``): bit for bit the user's batches.

Nothing is dropped or reordered: a transform with no fused form runs in its place, and a later one that was
fusable but would have to move across it (a flip after it, a Normalize after it) runs as given too. When the
pipeline does not start with a fusable geometry nothing of the per-image part is fused: each image goes through
the transform as given, then ``default_collate``. Each transform run as given is named in one ``UserWarning``.
"""
from __future__ import annotations

import warnings
from typing import Any, List, Optional, Tuple

import torch

from tensorops.data import pipeline_timm as _timm
from tensorops.data import pipeline_torchvision as _tv
from tensorops.data.collates import ResizedCropMirrorNormalizeCollate
from tensorops.data.pipeline_collate import ExactEvalCollate, PipelineCollate, RandomInterpolationCollate
from tensorops.data.pipeline_plan import AsGivenBatch, BatchedRandomApply, BatchedRandomChoice, Leaf, PerSample, Plan

__all__ = ["from_pipeline"]

_PIL_NOTE = "your images are PIL here: torchvision's tensor arithmetic, Pillow's differs by a step or so"


def _flatten(t: Any) -> List[Any]:
    kids = _tv.children(t)
    if kids is None:
        return [t]
    return [leaf for k in kids for leaf in _flatten(k)]


def _classify(t: Any) -> Optional[Leaf]:
    return _tv.classify(t) or _timm.classify(t)


def _container(leaf: Leaf, stage: str) -> Optional[Tuple[Any, str]]:
    """A RandomApply / RandomChoice whose every transform has a twin for this stage, batched; else None."""
    if leaf.kind == "order":
        return None
    inner = [_classify(u) for t in leaf.args["transforms"] for u in _flatten(t)]
    if not inner or any(x is None or x.kind != "twin" or bool(x.args.get("float")) != (stage == "float")
                        for x in inner):
        return None
    twins = [x.make() for x in inner]
    names = ", ".join(x.target for x in inner)
    if leaf.kind == "apply":
        return (BatchedRandomApply(twins, leaf.args["p"], v1=leaf.args["v1"]),
                f"per-sample RandomApply(p={leaf.args['p']}) of [{names}]")
    if len(inner) != len(leaf.args["transforms"]):
        return None  # a Compose inside a RandomChoice: run as given
    return BatchedRandomChoice(twins, leaf.args["p"]), f"per-sample RandomChoice(p={leaf.args['p']}) of [{names}]"


def _batch_transforms(batch_transform: Any, plan: Plan) -> List[Any]:
    if batch_transform is None:
        return []
    items = list(batch_transform) if isinstance(batch_transform, (list, tuple)) else _flatten(batch_transform)
    out = []
    for t in items:
        leaf = _tv.batch_twin(t) or _timm.batch_twin(t)
        if leaf is not None:
            out.append(leaf.make())
            plan.add(t, "twin", leaf.target, "on the normalized batch, from the collate's generator")
        else:
            out.append(AsGivenBatch(t))
            plan.add(t, "batch", "run as given on the batch with the labels", "no batched twin")
    return out


def from_pipeline(transform: Any, batch_transform: Any = None, *, generator: Optional[torch.Generator] = None,
                  memory_format: torch.memory_format = torch.contiguous_format, warn: bool = True,
                  exact: bool = True) -> PipelineCollate:
    """The fused batch path for a script's own pipeline, as a DataLoader ``collate_fn``.

    Args:
        transform: the per-image transform the dataset was given: a torchvision v2 or v1 ``Compose`` (nested,
            with ``RandomApply`` / ``RandomChoice`` / ``RandomOrder``), an object of the classification
            references' ``ClassificationPresetTrain`` / ``Eval`` (its ``transforms`` attribute), or timm's
            ``create_transform(...)``. Give the dataset no transform (``transform=None``): the collate takes the
            raw samples (PIL images as ImageFolder gives them, uint8 tensors, or the files' bytes with
            ``loader=tensorops.io.loader``).
        batch_transform: what the script ran on the collated batch: v2 ``MixUp`` / ``CutMix`` /
            ``RandomChoice([...])`` (the references' ``mixup_cutmix``), timm's ``Mixup``, a list of those, or any
            ``(batch, labels) -> (batch, labels)`` callable (run as given).
        generator: the draws of the boxes, flips and twins (per DataLoader worker and epoch, repeatable:
            :mod:`tensorops.data.seeding`); transforms run as given draw from torch's / Python's global RNG.
        memory_format: of the batch. warn: one UserWarning per transform run as given.
        exact: evaluation pipelines (Resize + CenterCrop, then conversions and Normalize) give the user's
            batches bit for bit: their Resize and CenterCrop run as given per image (torch's or Pillow's own
            resize arithmetic), the crops are stacked, and their conversion and Normalize run on the batch
            (:class:`~tensorops.data.pipeline_collate.ExactEvalCollate`). ``exact=False``: the fused resize
            (faster; within 1 uint8 step of torchvision's uint8 resize, which rounds after each of its passes).
            In training, timm's geometric policy ops resampled bicubic or at random (bilinear or bicubic per op)
            run Pillow's own arithmetic, timm's values bit for bit given the draws; ``exact=False`` runs them as
            torchvision's bilinear affine instead (several times faster, within a step or so on most pixels).

    Returns: a :class:`~tensorops.data.pipeline_collate.PipelineCollate`; ``print(collate.plan)`` says what each
    transform became (the module's docstring says how they are read). Float32 normalized batches (or uint8,
    when the pipeline ends in uint8) and the labels (soft labels after mixing).

    Example:
        >>> from torchvision.transforms import v2
        >>> from tensorops.data import from_pipeline
        >>> train = v2.Compose([v2.RandomResizedCrop(176), v2.RandomHorizontalFlip(), v2.TrivialAugmentWide(),
        ...                     v2.PILToTensor(), v2.ToDtype(torch.float, scale=True),
        ...                     v2.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        >>> collate = from_pipeline(train, v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=10),
        ...                                                 v2.CutMix(alpha=1.0, num_classes=10)]))
        >>> dataset = [(torch.randint(0, 256, (3, 200, 260), dtype=torch.uint8), i) for i in range(4)]
        >>> images, soft = collate(dataset)
        >>> tuple(images.shape), tuple(soft.shape)
        ((4, 3, 176, 176), (4, 10))
    """
    leaves = _flatten(transform)
    plan = Plan()
    k, n = 0, len(leaves)
    pil = True  # what the user's pipeline holds here: PIL images until a conversion (the tensor backend's)
    while k < n and (_classify(leaves[k]) or Leaf("")).kind in ("to_u8", "noop"):
        plan.add(leaves[k], "fused", "the collate reads the samples as uint8 (PIL, arrays, tensors, encoded files)")
        pil, k = False, k + 1
    head_end = k
    first = _classify(leaves[k]) if k < n else None
    geo = None
    if first is not None and first.kind == "rrc":
        geo = dict(first.args, train=True)
        plan.add(leaves[k], "fused", "the collate's RandomResizedCrop boxes, one resampling pass",
                 _PIL_NOTE if pil else "")
        k += 1
    elif first is not None and first.kind == "resize" and k + 1 < n and \
            (_classify(leaves[k + 1]) or Leaf("")).kind == "center_crop":
        crop = _classify(leaves[k + 1])
        geo = dict(first.args, train=False, resize_size=first.args["size"], size=crop.args["size"])
        plan.add(leaves[k], "fused", "Resize + CenterCrop as one box, one resampling pass", _PIL_NOTE if pil else "")
        plan.add(leaves[k + 1], "fused", "(with the Resize)")
        k += 2
    batch = None
    if geo is None:
        plan.steps.clear()
        plan.fused = False
        for t in leaves:
            plan.add(t, "per sample", "as given")
        batch = _batch_transforms(batch_transform, plan)
        if warn:
            warnings.warn(f"tensorops.data.from_pipeline: {plan.steps[k].source if k < n else 'the pipeline'} is "
                          "not a fusable RandomResizedCrop or Resize(int) + CenterCrop: the whole transform runs as "
                          "given, per sample (see the plan)", UserWarning, stacklevel=2)
        _warn(Plan([s for s in plan.steps if s.how == "batch"]), warn)
        return PipelineCollate(plan, None, transform, batch, generator)
    if exact and not geo["train"]:
        built = _exact_eval(transform, leaves, head_end, k, batch_transform, generator, memory_format)
        if built is not None:
            _warn(Plan([s for s in built.plan.steps if s.how == "batch"]), warn)
            return built
        plan.add("(exact=True)", "note", "", "the evaluation pipeline has transforms other than conversions and "
                 "Normalize after its crop: the fused resize, within 1 uint8 step")
    mirror = 0.0
    if geo["train"] and k < n and (_classify(leaves[k]) or Leaf("")).kind == "hflip":
        mirror = _classify(leaves[k]).args["p"]
        plan.add(leaves[k], "fused", "the collate's mirror (per sample, from its generator)")
        k += 1
    augment: List[Any] = []
    after: List[Any] = []
    stage, mean, std, dtype, fresh = "u8", None, None, None, False
    for t in leaves[k:]:
        leaf = _classify(t)
        kind = leaf.kind if leaf is not None else None
        if kind == "noop" or (kind == "to_u8" and stage == "u8"):
            pil = False
            plan.add(t, "no-op", "the batch is a tensor already")
            continue
        if stage == "u8" and kind in ("to_float", "to_tensor"):
            stage, dtype, fresh, pil = "float", leaf.args.get("dtype", torch.float32), True, False
            plan.add(t, "fused", f"the collate's normalize ({dtype}, scaled to [0, 1])")
            continue
        if fresh and kind == "normalize":
            mean, std, fresh = leaf.args["mean"], leaf.args["std"], False
            plan.add(t, "fused", f"the collate's normalize (mean={mean}, std={std})")
            continue
        fresh = False
        if stage == "float" and kind == "to_float":
            plan.add(t, "no-op", "the batch is float already")
            continue
        twin = None
        if kind == "twin" and bool(leaf.args.get("float")) == (stage == "float"):
            made, note = leaf.make(), leaf.note
            if not exact and getattr(made, "interpolation", None) in ("bicubic", "random"):
                made.interpolation = "bilinear"  # timm's policies: torchvision's fast affine instead of Pillow's
                note = "exact=False: timm's geometric ops as torchvision's bilinear affine (within a step or so)"
            twin = (made, leaf.target, "; ".join(x for x in (note, _PIL_NOTE if pil else "") if x))
        elif kind in ("apply", "choice"):
            built = _container(leaf, stage)
            twin = (built[0], built[1], _PIL_NOTE if pil else "") if built else None
        if twin is not None:
            (augment if stage == "u8" else after).append(twin[0])
            plan.add(t, "twin", twin[1], twin[2])
            continue
        (augment if stage == "u8" else after).append(PerSample(t, pil=pil))
        why = {"hflip": "the flip cannot move across what runs before it", "rrc": "not the first geometry",
               "normalize": "not right after the conversion to float"}.get(kind or "", "no fused form")
        plan.add(t, "per sample", "run as given" + (" on PIL images" if pil else ""), why)
    if stage == "float" and mean is None:
        mean, std = 0.0, 1.0  # no Normalize right after the conversion: scale to [0, 1] only
    after += _batch_transforms(batch_transform, plan)
    if after and mean is None:
        raise ValueError("tensorops.data.from_pipeline: the pipeline ends in uint8 but has transforms for float batches after "
                         "it; add ToDtype(torch.float32, scale=True)")
    kw = dict(train=geo["train"], interpolation=geo["interpolation"], antialias=geo["antialias"],
              mirror_prob=mirror, generator=generator, memory_format=memory_format,
              dtype=dtype if stage == "float" else torch.uint8, augment=augment or None, after_normalize=after or None)
    if geo["train"]:
        kw.update(scale=geo["scale"], ratio=geo["ratio"])
    else:
        kw.update(resize_size=geo["resize_size"])
    size = tuple(geo["size"])
    plan.collate = {"size": size, **{k2: v for k2, v in kw.items() if k2 not in ("augment", "after_normalize",
                                                                               "generator", "memory_format")},
                    "mean": mean, "std": std}
    if isinstance(geo["interpolation"], tuple):
        kw.pop("interpolation")
        fused = RandomInterpolationCollate(size, mean, std, modes=geo["interpolation"], **kw)
    else:
        fused = ResizedCropMirrorNormalizeCollate(size, mean, std, **kw)
    _warn(plan, warn)
    return PipelineCollate(plan, fused, transform, (), generator)


def _exact_eval(transform: Any, leaves: List[Any], head_end: int, geo_end: int, batch_transform: Any,
                generator: Optional[torch.Generator], memory_format: torch.memory_format) -> Optional[PipelineCollate]:
    """The evaluation pipeline as :class:`ExactEvalCollate` (bit for bit the user's batches), or None when it has
    transforms other than conversions and one Normalize after its crop."""
    plan = Plan()
    for t in leaves[:head_end]:
        plan.add(t, "exact", "as given, per sample, on PIL images (tensors and arrays are read as they are)")
    for t in leaves[head_end:geo_end]:
        plan.add(t, "exact", "as given, per sample", "your resize's own arithmetic: torch's or Pillow's"
                 if _classify(t).kind == "resize" else "")
    convert = normalize = mean = std = None
    scale, dtype, stage = "mul", torch.float32, "u8"
    for t in leaves[geo_end:]:
        leaf = _classify(t)
        kind = leaf.kind if leaf is not None else None
        if kind == "noop" or (kind == "to_u8" and stage == "u8"):
            plan.add(t, "no-op", "the crops are read as uint8 tensors")
            continue
        if stage == "u8" and kind in ("to_float", "to_tensor"):
            convert, stage = ("div" if kind == "to_tensor" else t), "float"
            # the ops it runs: v2's to(dtype).mul_(1 / 255); v1's ConvertImageDtype and ToTensor: .div(255)
            scale = "div" if kind == "to_tensor" or _tv.is_v1(t) else "mul"
            dtype = leaf.args.get("dtype", torch.get_default_dtype())
            plan.add(t, "exact", "as given, on the stacked crops" if convert is t else
                     "to(float32).div(255) on the stacked crops, as ToTensor", "elementwise: per image's bits")
            continue
        if stage == "float" and kind == "normalize" and normalize is None:
            normalize, mean, std = t, leaf.args["mean"], leaf.args["std"]
            plan.add(t, "exact", "as given, on the batch", "elementwise: per image's bits")
            continue
        return None
    batch = _batch_transforms(batch_transform, plan)
    plan.collate = {"exact": True}
    fused = ExactEvalCollate(leaves[:head_end], leaves[head_end:geo_end], convert, normalize,
                             (scale, dtype, mean, std), batch, generator, memory_format=memory_format)
    return PipelineCollate(plan, fused, transform, (), generator)


def _warn(plan: Plan, warn: bool) -> None:
    if not warn:
        return
    for s in plan.unmapped():
        warnings.warn(f"tensorops.data.from_pipeline: {s.source} has no fused form ({s.note}): it runs {s.how}, as "
                      "given, in its place", UserWarning, stacklevel=3)

"""A faithful copy of the composition of torchvision's classification reference presets
(``references/classification/presets.py`` in torchvision's repository, which the pip package does not ship):
``ClassificationPresetTrain`` and ``ClassificationPresetEval`` build the same torchvision transforms, with the
same arguments, in the same order, as the reference does. Every transform object is torchvision's own; only the
composition is copied here, for the tests of ``tensorops.data.from_pipeline``."""
from __future__ import annotations

import torch


def get_module(use_v2):
    if use_v2:
        import torchvision.transforms.v2

        return torchvision.transforms.v2
    import torchvision.transforms

    return torchvision.transforms


def _backend_start(T, backend):
    """(the backend, lower-cased; the transforms list as both presets start it): PILToTensor first on the tensor
    backend, as the references' presets write it in each class."""
    backend = backend.lower()
    if backend == "tensor":
        return backend, [T.PILToTensor()]
    if backend != "pil":
        raise ValueError(f"backend can be 'tensor' or 'pil', but got {backend}")
    return backend, []


class ClassificationPresetTrain:
    def __init__(self, *, crop_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), interpolation=None,
                 hflip_prob=0.5, auto_augment_policy=None, ra_magnitude=9, augmix_severity=3,
                 random_erase_prob=0.0, backend="pil", use_v2=False):
        from torchvision.transforms import InterpolationMode

        interpolation = InterpolationMode.BILINEAR if interpolation is None else interpolation
        T = get_module(use_v2)
        backend, transforms = _backend_start(T, backend)
        transforms.append(T.RandomResizedCrop(crop_size, interpolation=interpolation, antialias=True))
        if hflip_prob > 0:
            transforms.append(T.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy is not None:
            if auto_augment_policy == "ra":
                transforms.append(T.RandAugment(interpolation=interpolation, magnitude=ra_magnitude))
            elif auto_augment_policy == "ta_wide":
                transforms.append(T.TrivialAugmentWide(interpolation=interpolation))
            elif auto_augment_policy == "augmix":
                transforms.append(T.AugMix(interpolation=interpolation, severity=augmix_severity))
            else:
                aa_policy = T.AutoAugmentPolicy(auto_augment_policy)
                transforms.append(T.AutoAugment(policy=aa_policy, interpolation=interpolation))
        if backend == "pil":
            transforms.append(T.PILToTensor())
        transforms.extend([
            T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
            T.Normalize(mean=mean, std=std),
        ])
        if random_erase_prob > 0:
            transforms.append(T.RandomErasing(p=random_erase_prob))
        if use_v2:
            transforms.append(T.ToPureTensor())
        self.transforms = T.Compose(transforms)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=None, backend="pil", use_v2=False):
        from torchvision.transforms import InterpolationMode

        interpolation = InterpolationMode.BILINEAR if interpolation is None else interpolation
        T = get_module(use_v2)
        backend, transforms = _backend_start(T, backend)
        transforms += [
            T.Resize(resize_size, interpolation=interpolation, antialias=True),
            T.CenterCrop(crop_size),
        ]
        if backend == "pil":
            transforms.append(T.PILToTensor())
        transforms += [
            T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
            T.Normalize(mean=mean, std=std),
        ]
        if use_v2:
            transforms.append(T.ToPureTensor())
        self.transforms = T.Compose(transforms)

    def __call__(self, img):
        return self.transforms(img)


def mixup_cutmix(*, mixup_alpha, cutmix_alpha, num_classes, use_v2=True):
    """The references' ``transforms.get_mixup_cutmix``: v2's MixUp / CutMix, one of them chosen per batch."""
    from torchvision.transforms import v2

    chosen = []
    if mixup_alpha > 0:
        chosen.append(v2.MixUp(alpha=mixup_alpha, num_classes=num_classes))
    if cutmix_alpha > 0:
        chosen.append(v2.CutMix(alpha=cutmix_alpha, num_classes=num_classes))
    if not chosen:
        return None
    return v2.RandomChoice(chosen)

"""Batched augmentation policies with per-sample draws: torchvision v2's transforms, where every sample of the
batch draws its own.

Every transform here is a ``torch.nn.Module`` taking a uint8 batch ``(N, C, H, W)`` (C = 1 or 3, CPU or CUDA,
contiguous or channels_last) and follows torchvision v2's split into ``make_params`` and ``transform``:

* ``make_params(batch, generator=None)`` draws, on the CPU, from a ``torch.Generator`` (the argument, else the
  ``generator=`` given to the constructor, else torch's global generator), one set of parameters **per sample**,
  as CPU tensors with N rows. Draws are vectorized over samples: no Python loop over samples.
* ``transform(batch, params)`` applies them (``tensorops.augment.functional.apply_ops`` once per round; a round is
  one op per sample), and returns a new batch in the input's memory format (the input is left as it was).
* ``forward(batch)`` is ``transform(batch, make_params(batch))``.

The distributions are torchvision 0.29.1's (``torchvision.transforms.v2``): the same augmentation spaces,
magnitude bins, signs, probabilities and ranges, but where v2 draws once per call (once for the whole batch when
given a batch), here every sample draws its own. The params replay bit for bit: sample ``i`` of
``transform(batch, params)`` is what torchvision's per-image code gives for image ``i`` with the draws of row
``i`` (for the geometric ops, up to what ``tensorops.augment.affine`` documents about pixels whose float32
coordinates land within rounding distance of a pixel boundary).

Auto-augment params (``TrivialAugmentWide``, ``RandAugment``, ``AutoAugment``): ``params["ops"]`` int64
``(N, ops per sample)`` indexes the transform's ``op_names`` (torchvision's names, "Identity", "ShearX", ...), and
``params["magnitudes"]`` float64 of the same shape holds, signed, exactly the magnitude torchvision's
``_AutoAugmentBase._apply_image_or_video_transform`` would be given (0.0 for ops without magnitude). Replaying a
row through torchvision::

    >>> import torch, torchvision.transforms.v2 as v2
    >>> from tensorops.augment import TrivialAugmentWide
    >>> t = TrivialAugmentWide(generator=torch.Generator().manual_seed(0))
    >>> batch = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    >>> params = t.make_params(batch)
    >>> out = t.transform(batch, params)
    >>> ref = v2.TrivialAugmentWide()._apply_image_or_video_transform(
    ...     batch[0], t.op_names[params["ops"][0, 0]], float(params["magnitudes"][0, 0]), "nearest", {})

Where they live (by family, as torchvision's ``transforms/v2/``): ``_auto_augment.py`` (TrivialAugmentWide,
RandAugment, AutoAugment, AugMix; their tables in ``_op_tables.py``), ``_color.py`` (ColorJitter,
RandomGrayscale), ``_erasing.py`` (RandomErasing), ``_mixing.py`` (MixUp, CutMix, RandomChoice), and the plumbing
they share, ``_batched.py`` (the make_params / transform protocol, the checks, one ``apply_ops`` round). This
module is the public path to all of them.
"""
from tensorops.augment._auto_augment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from tensorops.augment._batched import Params
from tensorops.augment._color import ColorJitter, RandomGrayscale
from tensorops.augment._erasing import RandomErasing
from tensorops.augment._mixing import CutMix, MixUp, RandomChoice

__all__ = [
    "AutoAugmentPolicy", "TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter",
    "RandomGrayscale", "RandomErasing", "MixUp", "CutMix",
]

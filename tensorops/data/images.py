"""Decoded images in the forms users have (PIL images, numpy arrays, tensors) as HWC uint8 tensors."""
from __future__ import annotations

import warnings
from typing import Any

import torch

__all__ = ["as_image"]


def as_image(sample: Any, where_: str = "") -> torch.Tensor:
    """A decoded image as an HWC uint8 tensor without a permuting pass: a numpy HWC (or H, W) array as a view, a
    tensor as it is, a PIL image through its array interface (``numpy.asarray`` of a PIL image makes one copy of
    its bytes; modes other than RGB, RGBA and L are converted to RGB first).

    Raises a TypeError naming ``where_`` for anything else."""
    if isinstance(sample, torch.Tensor):
        return sample
    import numpy as np

    if hasattr(sample, "mode") and hasattr(sample, "size") and hasattr(sample, "convert"):  # a PIL image
        if sample.mode not in ("RGB", "RGBA", "L"):
            sample = sample.convert("RGB")
        array = np.asarray(sample)
    elif isinstance(sample, np.ndarray):
        array = sample
    else:
        raise TypeError(f"{where_}an image must be a torch.Tensor, a numpy array or a PIL image, got "
                        f"{type(sample).__name__}")
    if array.ndim == 2:
        array = array[:, :, None]
    with warnings.catch_warnings():  # read-only arrays (PIL's) are only read
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array)

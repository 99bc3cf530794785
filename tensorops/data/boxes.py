"""The boxes the resize collate reads: torchvision's RandomResizedCrop boxes (training) and the Resize + CenterCrop
window (evaluation), for a whole batch at once in numpy (a few dozen torch ops on 32 numbers cost ~0.4 ms a batch,
more than numpy's)."""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np

__all__ = ["TRIES", "DRAWS", "random_resized_crop_boxes", "resize_center_crop_boxes"]

TRIES = 10  # RandomResizedCrop.get_params' tries
DRAWS = TRIES * 4 + 1  # uniforms a training sample draws: four per try, then the flip


def resize_center_crop_boxes(H: np.ndarray, W: np.ndarray, resize_size: int, size: Tuple[int, int]) -> np.ndarray:
    """(N, 4) float64 boxes (top, left, height, width) in the images' pixels: the window that Resize(resize_size)
    (the shorter side to resize_size, the longer ``int(resize_size * long / short)``) then CenterCrop(size)
    reads."""
    short = np.minimum(H, W)
    r = float(resize_size)
    new_h = np.where(H <= W, r, np.floor(r * H / short))
    new_w = np.where(H <= W, np.floor(r * W / short), r)
    ch, cw = size
    top = np.round((new_h - ch) / 2.0)  # CenterCrop's int(round((H - h) / 2))
    left = np.round((new_w - cw) / 2.0)
    sy, sx = H / new_h, W / new_w
    return np.stack([top * sy, left * sx, ch * sy, cw * sx], 1)


def random_resized_crop_boxes(H: np.ndarray, W: np.ndarray, u: np.ndarray, scale: Tuple[float, float],
                              ratio: Tuple[float, float]) -> np.ndarray:
    """(N, 4) float64 boxes of RandomResizedCrop.get_params for every sample at once, from ``u`` (N, TRIES, 4)
    uniforms in [0, 1): ten tries each (area fraction uniform in ``scale``, log-uniform aspect in ``ratio``), the
    first that fits wins; else the whole image cut to the ratio range, centred."""
    n = len(H)
    area = (H * W)[:, None]
    target = area * (scale[0] + u[..., 0] * (scale[1] - scale[0]))
    lr0, lr1 = math.log(ratio[0]), math.log(ratio[1])
    aspect = np.exp(lr0 + u[..., 1] * (lr1 - lr0))
    cw = np.round(np.sqrt(target * aspect))
    chh = np.round(np.sqrt(target / aspect))
    fits = (cw > 0) & (cw <= W[:, None]) & (chh > 0) & (chh <= H[:, None])
    k = fits.argmax(1)  # the first try that fits (0 where none does: the fallback below)
    rows = np.arange(n)
    h, w = chh[rows, k], cw[rows, k]
    top = np.minimum(np.floor(u[rows, k, 2] * (H - h + 1)), H - h)
    left = np.minimum(np.floor(u[rows, k, 3] * (W - w + 1)), W - w)
    in_ratio = W / H
    fw = np.where(in_ratio > ratio[1], np.round(H * ratio[1]), W)
    fh = np.where(in_ratio < ratio[0], np.round(W / ratio[0]), H)
    fallback = ~fits.any(1)
    h, w = np.where(fallback, fh, h), np.where(fallback, fw, w)
    top = np.where(fallback, np.floor((H - fh) / 2), top)
    left = np.where(fallback, np.floor((W - fw) / 2), left)
    return np.stack([top, left, h, w], 1)

"""benchmarks.isa's image-path rows: JPEG files of real photographs (``case.real_photos``: ImageNet's sizes,
quality 90, 4:2:0; photo-like images encoded alike without scikit-image) with the training boxes and flips the
collate draws, at the batch's side.

- ``resized_crop_mirror_normalize``: of the files as ``decode_jpeg`` gives them (CHW views of HWC memory), against
  v2's ``resized_crop`` + ``horizontal_flip`` + ``to_dtype`` + ``normalize`` per image, and DALI's ``fn.resize``
  (region of interest, antialiased) + ``fn.crop_mirror_normalize``.
- ``decode_resized_crop_mirror_normalize``: from the bytes, against ``decode_jpeg`` + the same v2 functions per image
  (torchvision), ``decode_jpeg`` + tensorops' resize (``decode_jpeg + resize``: bit for bit the same values, so its
  ratio is what the partial decode saves) and DALI's ``fn.decoders.image_random_crop`` + ``fn.resize`` +
  ``fn.crop_mirror_normalize`` (its own boxes, from RandomResizedCrop's distribution).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import torch

from benchmarks.resized_crop_mirror_normalize import MEAN, STD, _params

Rows = Dict[str, Dict[str, Callable[[], Any]]]


def _files(n: int, sizes: List[Any]) -> List[bytes]:
    from benchmarks.case import real_photos

    try:
        return list(real_photos(n))
    except ImportError:  # no scikit-image
        from benchmarks.decode import encode_jpegs

        return encode_jpegs(sizes)


def image_rows(n: int, side: int) -> Rows:
    import tensorops
    from torchvision.io import ImageReadMode, decode_jpeg
    from torchvision.transforms.v2 import functional as F

    from benchmarks.decode import dali_cpu
    from benchmarks.peers import dali_resize

    sizes, boxes, mirror, _ = _params(n, 300, 500, side, True, real=True)
    files = _files(n, sizes)
    data = [torch.frombuffer(bytearray(f), dtype=torch.uint8) for f in files]
    photos = [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data]
    kw = dict(size=side, boxes=boxes, mirror=mirror, crop_first=True)
    params = [tuple(int(v) for v in b) for b in boxes.tolist()]
    flips = mirror.tolist()

    def v2(im: torch.Tensor, k: int) -> torch.Tensor:
        r = F.resized_crop(im, *params[k], [side, side], antialias=True)
        r = F.horizontal_flip(r) if flips[k] else r
        return F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD)

    rows: Rows = {
        "resized_crop_mirror_normalize": {
            "tensorops": lambda: tensorops.resized_crop_mirror_normalize(photos, MEAN, STD, **kw),
            "torchvision": lambda: torch.stack([v2(p, k) for k, p in enumerate(photos)])},
        "decode_resized_crop_mirror_normalize": {
            "tensorops": lambda: tensorops.decode_resized_crop_mirror_normalize(data, MEAN, STD, **kw),
            "torchvision": lambda: torch.stack([v2(decode_jpeg(d, mode=ImageReadMode.RGB), k)
                                                for k, d in enumerate(data)]),
            "decode_jpeg + resize": lambda: tensorops.resized_crop_mirror_normalize(
                [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data], MEAN, STD, **kw)},
    }
    resize = dali_resize(photos, boxes, side, MEAN, STD)
    if resize is not None:
        rows["resized_crop_mirror_normalize"]["DALI CPU"] = resize
        rows["decode_resized_crop_mirror_normalize"]["DALI CPU"] = dali_cpu(files, True, side, side)
    return rows

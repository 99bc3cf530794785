"""Sanitizer (ASan, compute-sanitizer) calls of decode_resized_crop_mirror_normalize: the partial decode of small
JPEGs of every subsampling, progressive and restart-marker files, grayscale and CMYK, boxes touching the edges,
and damaged files. It runs on the host whatever the device (its batch is a CPU tensor); each result is checked
against resized_crop_mirror_normalize of Pillow's full decode."""
from __future__ import annotations

import io

import numpy as np
import torch

import tensorops
from benchmarks.sanitize_base import MEAN, STD, call


def _jpeg(h: int, w: int, seed: int, **kw) -> bytes:
    from PIL import Image

    g = np.random.default_rng(seed)
    a = (np.add.outer(np.arange(h), np.arange(w))[..., None] * [3, 5, 7] % 256 + g.integers(0, 40, (h, w, 3)))
    buf = io.BytesIO()
    mode = kw.pop("mode", "RGB")
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).convert(mode).save(buf, format="JPEG", **kw)
    return buf.getvalue()


def run_decode_resized_crop_mirror_normalize(device: torch.device) -> None:
    from PIL import Image

    files = [_jpeg(13, 17, 0), _jpeg(16, 9, 1, subsampling=1, progressive=True), _jpeg(8, 8, 2, subsampling=0),
             _jpeg(21, 11, 3, mode="L"), _jpeg(9, 14, 4, mode="CMYK")]

    def check():
        fulls = [torch.from_numpy(np.array(Image.open(io.BytesIO(f)).convert("RGB"))) for f in files]
        boxes = torch.tensor([[0.0, 0.0, f.shape[0], f.shape[1]] if k % 2 else
                              [f.shape[0] - 3.5, 1.0, 3.5, f.shape[1] - 1.0] for k, f in enumerate(fulls)],
                             dtype=torch.float64)
        mirror = torch.arange(len(files)) % 2 == 0
        got = tensorops.decode_resized_crop_mirror_normalize(files, MEAN, STD, size=(5, 6), boxes=boxes,
                                                             mirror=mirror)
        ref = tensorops.resized_crop_mirror_normalize(fulls, MEAN, STD, dim=-1, size=(5, 6), boxes=boxes,
                                                      mirror=mirror)
        # Pillow's decode equals libjpeg-turbo's except CMYK, which both convert the same way: bit for bit
        assert torch.equal(got, ref), "decode_resized_crop_mirror_normalize differs from the full decode"
    call("decode_resized_crop_mirror_normalize of 5 small JPEGs (4:2:0, 4:2:2 progressive, 4:4:4, gray, CMYK)",
         check)

    def damaged():
        base = files[0]
        for cut in range(0, len(base), 7):
            out, failed = tensorops.decode_resized_crop_mirror_normalize(
                [base, base[:cut]], MEAN, STD, size=4, boxes=[[0, 0, 13, 17]] * 2, on_error="fill")
            assert not failed[0], cut
            assert bool(failed[1]) or cut >= len(base) - 2, cut  # only the missing EOI marker goes unseen
    call("decode_resized_crop_mirror_normalize of a JPEG truncated at every 7th byte", damaged)

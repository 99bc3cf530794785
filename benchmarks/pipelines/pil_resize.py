"""Pillow's resize of one box per image to 224x224 (bilinear, antialiased as Pillow always is), timed per image.

Runs under any Python with Pillow (or Pillow-SIMD, which cannot share an environment with Pillow) and numpy, and
nothing else: no torch, no benchmarks imports. ``benchmarks/pipelines/pipeline.py`` runs it with its own interpreter and
with ``$TENSOROPS_PILLOW_SIMD_PYTHON``, and reads the one JSON line it prints.

    python benchmarks/pipelines/pil_resize.py --boxes boxes.json --rounds 5   # boxes.json: {"files": [...], "boxes": [[t, l, h, w], ...]}
"""
from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--boxes", required=True, help="JSON: files (JPEG paths) and boxes (top, left, height, width)")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    import PIL
    from PIL import Image, features

    with open(args.boxes, encoding="utf-8") as f:
        spec = json.load(f)
    files, boxes = spec["files"], spec["boxes"]

    def decode_all():
        out = []
        for path in files:
            with open(path, "rb") as fh:
                out.append(Image.open(fh).convert("RGB"))
        return out

    decode_ms, resize_ms = [], []
    images = decode_all()  # warm-up (file cache, allocator)
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        images = decode_all()
        t1 = time.perf_counter()
        for img, (t, l, h, w) in zip(images, boxes):
            img.resize((args.size, args.size), Image.BILINEAR, box=(l, t, l + w, t + h), reducing_gap=None)
        t2 = time.perf_counter()
        decode_ms.append((t1 - t0) / len(files) * 1e3)
        resize_ms.append((t2 - t1) / len(files) * 1e3)
    print(json.dumps({
        "pil_version": PIL.__version__,
        "simd": "post" in PIL.__version__ or "simd" in (getattr(PIL, "__file__", "") or "").lower(),
        "libjpeg_turbo": bool(features.check_feature("libjpeg_turbo")),
        "images": len(files),
        "rounds": args.rounds,
        "resize_ms_per_image": {"median": statistics.median(resize_ms), "min": min(resize_ms), "max": max(resize_ms)},
        "decode_ms_per_image": {"median": statistics.median(decode_ms), "min": min(decode_ms), "max": max(decode_ms)},
    }))


if __name__ == "__main__":
    main()

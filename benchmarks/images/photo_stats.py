"""Why the synthetic photo-like images gave higher ratios than real photographs: the same measurements on three
sets of 32 JPEGs, one torch thread (a DataLoader worker), training boxes, timed as the benchmark rows are
(``timing.measure_interleaved``: each set's statements in interleaved rounds), medians with the min-max over rounds.

The sets: the photo-like files of the benchmark rows (``case.photo_like``, sides 300-500 drawn independently),
the same generator at the real photographs' sizes (so that a difference between it and the real photos is the
pixels' content, not their number), the real photographs (``case.real_photos``), and the same photographs
encoded at quality 98 instead of 90: the same pixels in files with about twice the bits per pixel, about what
ImageNet's files hold (about 110 KB each at their sizes). Per set:

* the files: mean pixels per image, mean KB, bits per pixel (the file's bits over its pixels: how much entropy
  decoding each pixel costs);
* ``decode_jpeg`` (the whole decode), and the entropy decoding alone, approximated by Pillow's decode at 1/8
  scale (``Image.draft``): libjpeg-turbo still Huffman-decodes every coefficient of the file, but the inverse DCT
  gives one pixel per block and the colour conversion sees 1/64 of the pixels; both in ns per pixel, and the
  1/8 decode's share of Pillow's whole decode;
* the resize alone on the decoded images (HWC memory, as ``decode_jpeg`` gives them): torchvision v2 per image
  (``resized_crop`` + flip + ``to_dtype`` + ``normalize``) against ``tensorops.resized_crop_mirror_normalize``;
* the decode op against ``decode_jpeg`` + tensorops' resize and against torchvision v2 per image (decode +
  resize), and the decode's share of torchvision v2's time.

``python -m benchmarks.photo_stats [--rounds 7] [--load N] [--out DIR]`` writes ``photo_stats[_loadN].json``
(default ``benchmarks/results/local/``; ``--out benchmarks/results`` publishes it, and
``python -m benchmarks.docs_tables`` then regenerates the table in docs/guides/performance.rst).
"""
from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.case import photo_like, real_photos
from benchmarks.load import DEFAULT_LIMIT_S, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.resized_crop_mirror_normalize import MEAN, STD, _params
from benchmarks.timing import measure_interleaved

N = 32
CROP = 224
MIN_RUN_TIME = 0.04  # seconds per statement in all, as the harness's quick grid
SETS = ("photo-like (benchmark rows)", "photo-like at the real photos' sizes", "real photos (scikit-image)",
        "real photos, quality 98")


def _encode(sizes: Sequence[Tuple[int, int]], seed: int = 0) -> List[bytes]:
    """Photo-like JPEGs of these sizes, as decode.encode_jpegs makes them (quality 90, 4:2:0)."""
    from PIL import Image

    g = torch.Generator().manual_seed(seed)
    out = []
    for H, W in sizes:
        buf = io.BytesIO()
        Image.fromarray(photo_like(H, W, g).permute(1, 2, 0).numpy()).save(buf, format="JPEG", quality=90,
                                                                            subsampling="4:2:0")
        out.append(buf.getvalue())
    return out


def image_sets(n: int = N) -> Dict[str, Tuple[List[bytes], torch.Tensor, torch.Tensor]]:
    """set name -> (files, boxes, mirror): the training boxes each set's benchmark rows draw."""
    sizes, boxes, mirror, _ = _params(n, 300, 500, CROP, True)
    real_sizes, real_boxes, real_mirror, _ = _params(n, 300, 500, CROP, True, real=True)
    return {SETS[0]: (_encode(sizes), boxes, mirror),
            SETS[1]: (_encode(real_sizes), real_boxes, real_mirror),
            SETS[2]: (list(real_photos(n)), real_boxes, real_mirror),
            SETS[3]: (list(real_photos(n, quality=98)), real_boxes, real_mirror)}


def statements(files: List[bytes], boxes: torch.Tensor, mirror: torch.Tensor) -> Dict[str, Callable[[], Any]]:
    """The timed statements of one set (each over the whole set of N images)."""
    import tensorops
    from PIL import Image
    from torchvision.io import ImageReadMode, decode_jpeg
    from torchvision.transforms.v2 import functional as F

    data = [torch.frombuffer(bytearray(f), dtype=torch.uint8) for f in files]
    images = [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data]  # HWC memory
    params = [tuple(int(v) for v in b) for b in boxes.tolist()]
    flips = mirror.tolist()
    kw = dict(size=CROP, boxes=boxes, mirror=mirror, crop_first=True)

    def tv_resize(ims: Iterable[torch.Tensor]) -> torch.Tensor:
        out = []
        for im, (t, l, h, w), f in zip(ims, params, flips):
            r = F.resized_crop(im, t, l, h, w, [CROP, CROP], antialias=True)
            r = F.horizontal_flip(r) if f else r
            out.append(F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD))
        return torch.stack(out)

    def pil(draft: bool):
        for f in files:
            im = Image.open(io.BytesIO(f))
            if draft:
                im.draft("RGB", (1, 1))  # the largest reduction libjpeg offers: 1/8
            im.load()

    return {
        "decode_jpeg": lambda: [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data],
        "Pillow decode": lambda: pil(False),
        "Pillow decode at 1/8": lambda: pil(True),
        "torchvision v2 resize": lambda: tv_resize(images),
        "tensorops resize": lambda: tensorops.resized_crop_mirror_normalize(images, MEAN, STD, **kw),
        # each image decoded just before its resize, as the decode benchmark's torchvision column does
        "torchvision v2 (decode + resize)": lambda: tv_resize(decode_jpeg(d, mode=ImageReadMode.RGB) for d in data),
        "decode_jpeg + tensorops resize": lambda: tensorops.resized_crop_mirror_normalize(
            [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data], MEAN, STD, **kw),
        "tensorops decode op": lambda: tensorops.decode_resized_crop_mirror_normalize(data, MEAN, STD, **kw),
    }


def _spread(v: Sequence[float]) -> Dict[str, float]:
    return {"median": statistics.median(v), "min": min(v), "max": max(v)}


def measure(rounds: int, n: int = N) -> List[Dict[str, Any]]:
    """One record per set: the files' sizes, each statement's ms per image, and the derived ratios and shares
    (each a per-round quotient, so the machine's load in a round divides out)."""
    from PIL import Image

    sets = image_sets(n)
    out = []
    for name, (files, boxes, mirror) in sets.items():
        # the harness's timing (benchmarks.timing.measure_interleaved): the set's statements in interleaved
        # blocks, so that these times and ratios read like the benchmark rows'
        t = {k: [x / n for x in v] for k, v in measure_interleaved(statements(files, boxes, mirror), MIN_RUN_TIME,
                                                                  rounds).items()}
        pixels = sum(w * h for w, h in (Image.open(io.BytesIO(f)).size for f in files)) / n
        nbytes = sum(len(f) for f in files) / n

        def q(a: str, b: str) -> Dict[str, float]:
            return _spread([x / y for x, y in zip(t[a], t[b])])

        out.append({
            "set": name, "images": n, "pixels": pixels, "kb": nbytes / 1024, "bits_per_pixel": nbytes * 8 / pixels,
            "ms_per_image": {k: _spread([x * 1e3 for x in v]) for k, v in t.items()},
            "ns_per_pixel": {k: _spread([x * 1e9 / pixels for x in t[k]])
                             for k in ("decode_jpeg", "Pillow decode at 1/8")},
            "entropy_share_of_decode": q("Pillow decode at 1/8", "Pillow decode"),
            "decode_share_of_torchvision": q("decode_jpeg", "torchvision v2 (decode + resize)"),
            "resize_ratio": q("torchvision v2 resize", "tensorops resize"),
            "decode_op_vs_decode_jpeg_resize": q("decode_jpeg + tensorops resize", "tensorops decode op"),
            "decode_op_vs_torchvision": q("torchvision v2 (decode + resize)", "tensorops decode op"),
        })
    return out


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.photo_stats", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes (benchmarks/load.py)")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=LOCAL_RESULTS,
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.load < 0:
        p.error("--rounds must be >= 1, --load >= 0")
    start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in a DataLoader worker
    busy = BusyLoad(args.load, args.load_limit)
    try:
        busy.start()
        rows = measure(args.rounds)
        load_info = busy.describe()
    finally:
        busy.stop()
    result = {"meta": {**machine_info(), "rounds": args.rounds, "load": load_info,
                       "wall_s": time.perf_counter() - start,
                       "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "timing": "1 torch thread, training boxes; each set's statements timed in interleaved "
                                 "rounds (timing.measure_interleaved, min_run_time 0.04 s) over its 32 images; "
                                 "medians and min-max over rounds"},
              "sets": rows}
    torch.set_num_threads(threads)
    path = save_json(args.out, "photo_stats", args.load, result)
    for r in rows:
        print(f"{r['set']}: {r['pixels']:.0f} px, {r['kb']:.1f} KB, {r['bits_per_pixel']:.2f} bits/px; "
              f"decode_jpeg {r['ns_per_pixel']['decode_jpeg']['median']:.1f} ns/px, 1/8 decode "
              f"{r['ns_per_pixel']['Pillow decode at 1/8']['median']:.1f} ns/px; resize ratio "
              f"{r['resize_ratio']['median']:.2f}; decode op vs decode_jpeg + resize "
              f"{r['decode_op_vs_decode_jpeg_resize']['median']:.2f}, vs torchvision "
              f"{r['decode_op_vs_torchvision']['median']:.2f}; decode share of torchvision "
              f"{r['decode_share_of_torchvision']['median']:.0%}", file=sys.stderr)
    print(f"json: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

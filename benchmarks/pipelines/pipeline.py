"""End to end: JPEG files -> torch DataLoader (batch 32) -> (32, 3, 224, 224) float32 batches, images per second.

    python -m benchmarks.pipeline --quick            # 3-5 minutes on 2 cores
    python -m benchmarks.pipeline --quick --load 2   # with 2 busy background processes (benchmarks/load.py)

The benchmark writes its own photo-like JPEGs (``case.photo_like``, ImageNet-like sizes, quality 90) into a
temporary folder of two classes and reads them back as ``ImageFolder`` would, through five pipelines:

* (a) ``tv PIL``: PIL decode (ImageFolder's loader) + torchvision v2 transforms + ``default_collate``;
* (b) ``tv tensor``: ``torchvision.io.decode_jpeg`` + the same v2 transforms on tensors + ``default_collate``
  (the baseline of the ratios);
* (c) ``tops float``: ``decode_jpeg`` + ``tensorops.data.ResizedCropMirrorNormalizeCollate`` (float32 batches
  leave the workers);
* (d) ``tops u8+NL``: ``decode_jpeg`` + the collate with ``dtype=torch.uint8`` (uint8 batches leave the workers)
  + ``tensorops.data.NormalizingLoader`` normalizing in the consumer;
* (e) ``tops PIL``: PIL decode + the tensorops collate (PIL images taken as they are).

Training transforms: RandomResizedCrop(224) + RandomHorizontalFlip; evaluation: Resize(256) + CenterCrop(224);
then ToImage + ToDtype(float32, scale=True) + Normalize(ImageNet). Each pipeline runs with ``num_workers`` 0 and
2 (persistent workers, so an epoch does not pay for starting them); a group (mode, workers) times its five
pipelines interleaved round by round (one epoch per call, alternating order; the epoch that checks each
pipeline's batches is its warm-up), so the per-round ratios to (b) pair like with like. An epoch reads the files
in turn until it has ``--epoch`` images (320 in ``--quick``: 10 batches), so that 2 workers reach their steady
state: with one batch each, an epoch timed one worker's latency while the other core waited.

Also timed, on one torch thread (as in a DataLoader worker), in the main process:

* decode alone (``decode_jpeg(read_file)`` and PIL open + convert), and its share of the workers=0 time;
* after decode: the transforms + collate of already-decoded images, per image;
* resize only: one box per image to 224x224 uint8: ``torchvision...resized_crop`` per image, tensorops with
  ``dtype=torch.uint8``, and Pillow's ``img.resize(box=...)`` (benchmarks/pipelines/pil_resize.py) with this interpreter's
  Pillow and, when ``$TENSOROPS_PILLOW_SIMD_PYTHON`` names a Python with Pillow-SIMD (it cannot share an
  environment with Pillow), with Pillow-SIMD.

Output: the tables (markdown) and ``results/pipeline_<grid>[_loadN].json`` / ``.md``. The pipelines themselves are in
``benchmarks/pipelines/pipeline_paths.py``.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.load import DEFAULT_LIMIT_S, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.pipeline_paths import (  # the pipelines (a)-(f) and what they read
    BATCH, CROP, DESCRIBE, MEAN, PATHS, STD, check_batch, epoch, make_loader, pil_decode, tensor_decode,
    tops_collate, tv_transform, write_jpegs,
)
from benchmarks.timing import measure_interleaved, spread

SIMD_ENV = "TENSOROPS_PILLOW_SIMD_PYTHON"
GRID = {  # files, rounds, images per epoch (cycling over the files)
    "quick": (48, 3, 320),
    "full": (128, 5, 640),
}


def _ratio_spread(num: Sequence[float], den: Sequence[float]) -> Dict[str, float]:
    r = [a / b for a, b in zip(num, den)]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)}


def time_loaders(paths: Sequence[str], labels: Sequence[int], rounds: int, workers_list: Sequence[int],
                 say: Callable[[str], None], epoch_images: Optional[int] = None) -> List[Dict[str, Any]]:
    rows = []
    n = epoch_images or len(paths)
    # workers outermost: the main process' thread policy (csrc/include/tensorops/parallel.h) learns from the
    # 2-worker groups that its cores are taken, and a 0-worker group timed right after one measured the policy
    # coming round (about a second) instead of that group's steady state
    for workers in workers_list:
        for train in (True, False):
            mode = "train" if train else "eval"
            say(f"  DataLoader {mode}, num_workers={workers}: {', '.join(PATHS.values())}")
            loaders = {k: make_loader(k, train, workers, paths, labels, n) for k in PATHS}
            for k, loader in loaders.items():  # also the warm-up: starts the persistent workers
                check_batch(loader, n, f"({k}) {PATHS[k]} {mode} workers={workers}")
            # one epoch per statement and round, interleaved (alternating order); an epoch is long enough
            # (tenths of a second) to time with perf_counter, and Timer's two warm-up epochs each would double
            # the run on 2 cores
            samples: Dict[str, List[float]] = {k: [] for k in loaders}
            order = list(loaders)
            for r in range(rounds):
                for k in (order if r % 2 == 0 else order[::-1]):
                    t0 = time.perf_counter()
                    epoch(loaders[k])
                    samples[k].append(time.perf_counter() - t0)
            for k in PATHS:
                rates = [n / t for t in samples[k]]
                rows.append({
                    "mode": mode, "workers": workers, "path": k, "name": PATHS[k], "what": DESCRIBE[k],
                    "images_per_s": statistics.median(rates), "images_per_s_spread": spread(rates),
                    "epoch_s": statistics.median(samples[k]),
                    "vs_tv_tensor": _ratio_spread(samples["b"], samples[k]),
                })
            del loaders, samples
            gc.collect()
    return rows


# ------------------------------------------------------------------------------- decode, after decode, resize


def per_image(stmts: Dict[str, Callable[[], Any]], n: int, rounds: int) -> Dict[str, List[float]]:
    """Milliseconds per image of each statement (one call handles ``n`` images), interleaved rounds."""
    samples = measure_interleaved(stmts, min_run_time=0.0, rounds=rounds)
    return {k: [t / n * 1e3 for t in v] for k, v in samples.items()}


def time_decode(paths: Sequence[str], rounds: int) -> Dict[str, List[float]]:
    return per_image({
        "decode_jpeg": lambda: [tensor_decode(p) for p in paths],
        "PIL": lambda: [pil_decode(p) for p in paths],
    }, len(paths), rounds)


def time_after_decode(paths: Sequence[str], labels: Sequence[int], rounds: int) -> Dict[str, Dict[str, List[float]]]:
    from torch.utils.data import default_collate

    import tensorops

    tensors = [(tensor_decode(p), y) for p, y in zip(paths, labels)]
    pils = [(pil_decode(p), y) for p, y in zip(paths, labels)]

    def batches(samples):
        return [samples[i:i + BATCH] for i in range(0, len(samples), BATCH)]

    out = {}
    for train in (True, False):
        tf = tv_transform(train)
        collate, collate_u8 = tops_collate(train), tops_collate(train, uint8=True)
        out["train" if train else "eval"] = per_image({
            "tv tensor": lambda: [default_collate([(tf(x), y) for x, y in b]) for b in batches(tensors)],
            "tops float": lambda: [collate(b) for b in batches(tensors)],
            "tops u8+normalize": lambda: [tensorops.normalize(collate_u8(b)[0], MEAN, STD) for b in batches(tensors)],
            "tv PIL": lambda: [default_collate([(tf(x), y) for x, y in b]) for b in batches(pils)],
            "tops PIL": lambda: [collate(b) for b in batches(pils)],
        }, len(paths), rounds)
    return out


def time_resize_only(paths: Sequence[str], rounds: int, workdir: str, say: Callable[[str], None]) -> Dict[str, Any]:
    """One RandomResizedCrop box per image -> 224x224 uint8, per image: torchvision's resized_crop on tensors,
    tensorops (dtype=uint8, all images in one call), Pillow and Pillow-SIMD (subprocesses)."""
    from torchvision.transforms.v2 import functional as F

    import tensorops

    images = [tensor_decode(p) for p in paths]
    sizes = [(im.shape[-2], im.shape[-1]) for im in images]
    boxes, _ = tops_collate(True).boxes(sizes)
    ints = [tuple(int(v) for v in b) for b in boxes.tolist()]
    none = torch.zeros(len(images), dtype=torch.bool)
    times = per_image({
        "torchvision resized_crop": lambda: [F.resized_crop(im, t, l, h, w, [CROP, CROP], antialias=True)
                                             for im, (t, l, h, w) in zip(images, ints)],
        "tensorops u8": lambda: tensorops.resized_crop_mirror_normalize(images, None, None, size=CROP, boxes=boxes,
                                                                        mirror=none, dtype=torch.uint8),
    }, len(images), rounds)
    out: Dict[str, Any] = {k: {"ms_per_image": statistics.median(v), "spread": spread(v)} for k, v in times.items()}
    spec = os.path.join(workdir, "boxes.json")
    with open(spec, "w", encoding="utf-8") as f:
        json.dump({"files": list(paths), "boxes": [list(b) for b in ints]}, f)
    script = importlib.util.find_spec("benchmarks.pil_resize").origin  # run by path: it imports neither torch nor us
    pythons = [("Pillow", sys.executable)]
    simd = os.environ.get(SIMD_ENV)
    if simd and os.path.exists(simd):
        pythons.append(("Pillow-SIMD", simd))
    else:
        out["Pillow-SIMD"] = {"skipped": f"set ${SIMD_ENV} to a Python with Pillow-SIMD and numpy"
                                         + (f" ({simd!r} does not exist)" if simd else "")}
    for name, python in pythons:
        try:
            res = subprocess.run([python, script, "--boxes", spec, "--rounds", str(rounds), "--size", str(CROP)],
                                 capture_output=True, text=True, timeout=300, check=True)
            info = json.loads(res.stdout.strip().splitlines()[-1])
            out[name] = {"ms_per_image": info["resize_ms_per_image"]["median"],
                         "spread": info["resize_ms_per_image"], "decode_ms_per_image": info["decode_ms_per_image"],
                         "pil_version": info["pil_version"], "python": python}
        except (subprocess.SubprocessError, OSError, ValueError, KeyError) as exc:
            out[name] = {"skipped": f"{python} failed: {str(exc).strip()[:300]}"}
            say(f"warning: {name}: {out[name]['skipped']}")
    return out


# ------------------------------------------------------------------------------------------------ the report


def _fmt_ratio(sp: Dict[str, float]) -> str:
    s = f"{sp['median']:.2f}x"
    if sp["max"] > 1.25 * sp["min"]:
        s += f" ({sp['min']:.2f}-{sp['max']:.2f})"
    return s


def _fmt_rate(row: Dict[str, Any]) -> str:
    sp = row["images_per_s_spread"]
    return f"{row['images_per_s']:.0f} ({sp['min']:.0f}-{sp['max']:.0f})"


def markdown(result: Dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        f"resized_crop_mirror_normalize pipeline, {meta['files']} JPEGs ({meta['grid']}), epochs of "
        f"{meta.get('epoch_images', meta['files'])} images, batch {BATCH}, "
        f"{meta['rounds']} rounds, torch {meta['torch']}, tensorops compiled={meta['tensorops_compiled']}, "
        f"{meta['cpu_count']} CPUs, "
        + (f"--load {meta['load']['busy_processes']}" if meta["load"]["busy_processes"] else "no added load")
        + f", load average {meta['load']['loadavg_1_5_15_at_start']} at start",
        "",
        "DataLoader images/s: median (min-max over rounds); ratio = (b)'s epoch time / the path's, per round",
        "",
        "| mode | workers | " + " | ".join(f"({k}) {v}" for k, v in PATHS.items()) + " |",
        "|---|---:|" + "---:|" * len(PATHS),
    ]
    rows = result["loader"]
    for mode in ("train", "eval"):
        for workers in sorted({r["workers"] for r in rows}):
            group = {r["path"]: r for r in rows if r["mode"] == mode and r["workers"] == workers}
            cells = [f"{_fmt_rate(group[k])}, {_fmt_ratio(group[k]['vs_tv_tensor'])}" for k in PATHS]
            lines.append(f"| {mode} | {workers} | " + " | ".join(cells) + " |")
    dec = result["decode_ms_per_image"]
    lines += ["", "Decode alone, ms/image (1 torch thread): "
              + ", ".join(f"{k} {v['median']:.2f}" for k, v in dec.items()),
              "Decode's share of the workers=0 time per image (decode timed separately, later: over 100% means "
              "the machine's load changed between the two): "
              + ", ".join(f"{m} ({k}) {PATHS[k]} {s:.0%}" for (m, k), s in result["decode_share"].items()), ""]
    lines += ["After decode (transforms + collate of decoded images, 1 torch thread), ms/image: median "
              "(ratio = tv tensor / it)", "",
              "| mode | " + " | ".join(next(iter(result["after_decode"].values()))) + " |",
              "|---|" + "---:|" * len(next(iter(result["after_decode"].values())))]
    for mode, cols in result["after_decode"].items():
        base = cols["tv tensor"]["median"]
        lines.append(f"| {mode} | " + " | ".join(f"{v['median']:.2f} ({base / v['median']:.2f}x)"
                                                  for v in cols.values()) + " |")
    lines += ["", "Resize only (one RandomResizedCrop box -> 224x224 uint8, no flip/normalize, 1 thread), ms/image:", ""]
    for name, v in result["resize_only"].items():
        if "skipped" in v:
            lines.append(f"* {name}: skipped: {v['skipped']}")
        else:
            extra = f" (Pillow {v['pil_version']}; its decode {v['decode_ms_per_image']['median']:.2f} ms/image)" \
                if "pil_version" in v else ""
            lines.append(f"* {name}: {v['ms_per_image']:.3f} (min {v['spread']['min']:.3f}, max "
                         f"{v['spread']['max']:.3f}){extra}")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.pipeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="{} files, {} rounds, epochs of {} images (default: {} files, {} rounds, {} images)".format(
                       *GRID["quick"], *GRID["full"]))
    p.add_argument("--files", type=int, default=None, help="number of JPEG files (overrides the grid's)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (overrides the grid's)")
    p.add_argument("--epoch", type=int, default=None, metavar="IMAGES",
                   help="images per timed epoch, cycling over the files (overrides the grid's)")
    p.add_argument("--workers", default="0,2", help="num_workers values, comma-separated (default 0,2)")
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes (benchmarks/load.py)")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=LOCAL_RESULTS,
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    args = p.parse_args(argv)
    grid = "quick" if args.quick else "full"
    files, rounds, epoch_images = GRID[grid]
    files, rounds, epoch_images = args.files or files, args.rounds or rounds, args.epoch or epoch_images
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    if files < 1 or rounds < 1 or epoch_images < 1 or args.load < 0 or any(w < 0 for w in workers):
        p.error("--files, --rounds, --epoch must be >= 1; --load, --workers >= 0")

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    start = time.perf_counter()
    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory(prefix="tensorops_pipeline_") as tmp:
        say(f"writing {files} photo-like JPEGs to {tmp}")
        paths, labels = write_jpegs(os.path.join(tmp, "images"), files)
        jpeg_bytes = sum(os.path.getsize(p) for p in paths)
        busy = BusyLoad(args.load, args.load_limit)
        try:
            busy.start()
            loader_rows = time_loaders(paths, labels, rounds, workers, say, epoch_images)
            torch.set_num_threads(1)  # as in a DataLoader worker
            say("  decode alone, after decode, resize only (1 torch thread)")
            decode = time_decode(paths, rounds)
            after = time_after_decode(paths, labels, rounds)
            resize = time_resize_only(paths, rounds, tmp, say)
            load_info = busy.describe()
        finally:
            busy.stop()
            torch.set_num_threads(threads)

    decode_ms = {k: {"median": statistics.median(v), "spread": spread(v)} for k, v in decode.items()}
    share = {}
    for r in loader_rows:
        if r["workers"] == 0 and r["path"] != "f":  # (f) decodes inside its collate: no separate decode
            dec = decode_ms["PIL" if r["path"] in ("a", "e") else "decode_jpeg"]["median"]
            share[(r["mode"], r["path"])] = dec / (1e3 / r["images_per_s"])
    result = {
        "meta": {
            **machine_info(),  # cpu model and count, torch, tensorops build, git commit
            "grid": grid, "files": files, "rounds": rounds, "epoch_images": epoch_images, "workers": workers,
            "batch": BATCH,
            "jpeg_mb": jpeg_bytes / 1e6, "torch_threads": threads, "load": load_info, "wall_s": time.perf_counter() - start,
            "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "paths": DESCRIBE,
            "timing": "each (mode, workers) group times its pipelines interleaved, one epoch of epoch_images "
                      "images (the files in turn) per call, persistent workers; medians over rounds",
        },
        "loader": loader_rows,
        "decode_ms_per_image": decode_ms,
        "decode_share": share,
        "after_decode": {m: {k: {"median": statistics.median(v), "spread": spread(v)} for k, v in cols.items()}
                         for m, cols in after.items()},
        "resize_only": resize,
    }
    text = markdown(result)
    print(text)
    saved = dict(result, decode_share={f"{m} {k}": v for (m, k), v in share.items()})
    path = save_json(args.out, f"pipeline_{grid}", args.load, saved)
    with open(path[:-5] + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    print(f"json: {path}\nmd: {path[:-5] + '.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

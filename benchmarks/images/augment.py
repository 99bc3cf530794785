"""tensorops.augment against torchvision v2, on a batch of 32 images at 224x224 uint8, in ms per image:

    python -m benchmarks.augment --quick                 # 1 thread and all threads, both image sets
    python -m benchmarks.augment --quick --load 2        # with 2 busy background processes (benchmarks/load.py)
    python -m benchmarks.augment --quick --only TrivialAugmentWide,brightness --threads 1

The images: the real photographs of ``case.real_photos`` (scikit-image's sample photos at ImageNet's sizes, JPEG
q90, decoded) and, as the second set, the photo-like synthetic ones (``case.photo_like`` at the same sizes), each
resized (shorter side 224, antialias) and centre-cropped to 224x224: what a RandomResizedCrop hands the
augmentations. One (32, 3, 224, 224) contiguous uint8 batch per set; the erasing and mixing rows take it as the
recipes do, after ``to_dtype(float32, scale=True)`` + ImageNet ``normalize``.

Each row times, in the same interleaved rounds (``timing.measure_interleaved``: every column once per round, so
the per-round ratios pair like with like on a machine whose load changes):

* ``torchvision v2 per image``: the Python loop users write, one image at a time with that image's own draw (the
  functional rows: ``F.<op>(image_i, arg_i)``; the policy rows: the v2 transform called on each image, as a
  Dataset's ``__getitem__`` does), then ``torch.stack``: the baseline of the ratios;
* ``torchvision v2 batch``: the same function or transform called once on the whole batch (one draw for all
  samples: v2 has no per-sample parameters; the functional rows use sample 0's argument);
* ``kornia``: ``kornia.augmentation`` on the batch as float32 in [0, 1] (kornia's input; the conversion is not
  timed), drawing its own per-sample parameters from the same ranges; optional: without kornia the column is
  skipped and the JSON says so (it is never a dependency);
* ``tensorops``: ``tensorops.augment`` on the batch, the functional rows with the per-sample arguments of the
  per-image column (their outputs are compared with it: ``check``), the policies drawing per sample.

MixUp and CutMix exist in v2 only for batches: their ratios are to ``torchvision v2 batch`` (the row says so).
Results: ``augment_<grid>[_loadN].json`` (default ``benchmarks/results/local/``; ``--out benchmarks/results``
publishes it, and ``python -m benchmarks.docs_tables`` regenerates the tables that quote it) and the same
table as markdown beside it. The JSON's ``meta.activity`` says whether a compiler ran while it timed.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.augment_columns import kornia_modules, statements, tensorops_augment
from benchmarks.augment_rows import (  # noqa: F401  (REAL, SYNTH, image_batch, policies: importable from here)
    GRID, KORNIA, REAL, SETS, SYNTH, TOPS, TV_BATCH, TV_IMAGE, draws, image_batch, policies, row_names, select)
from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.timing import measure_interleaved, spread

# ------------------------------------------------------------------------------------------------ timing


def measure_row(name: str, batch: torch.Tensor, d: Dict[str, torch.Tensor], find: Optional[Callable[[str], Any]],
                K: Any, KA: Any, rounds: int, min_run_time: float) -> Dict[str, Any]:
    """One row: each column's ms per image over interleaved rounds, and its per-round ratio to the baseline."""
    stmts, info = statements(name, batch, d, find, K, KA)
    n = batch.shape[0]
    samples = measure_interleaved(stmts, min_run_time, rounds) if stmts else {}
    ms = {k: [t / n * 1e3 for t in v] for k, v in samples.items()}
    base = info["baseline"]
    ratios = {k: spread([b / t for b, t in zip(ms[base], v) if t > 0]) for k, v in ms.items()
              if base in ms and k != base}
    return {"row": name, **info, "images": n, "ms_per_image": {k: spread(v) for k, v in ms.items()},
            "ratio_to_baseline": ratios}


LAYOUTS = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}


def run(grid: str = "quick", threads: Sequence[int] = (1, 0), sets: Sequence[str] = SETS,
        only: Optional[Sequence[str]] = None, rounds: Optional[int] = None, load: int = 0,
        load_limit_s: float = DEFAULT_LIMIT_S, say: Callable[[str], None] = print,
        layouts: Sequence[str] = ("contiguous",)) -> Dict[str, Any]:
    """Every row on every image set at each thread count (0: all of torch's threads) and batch memory layout
    (``LAYOUTS``: the collate gives either; a per-image tensor keeps the batch's strides); returns the result
    dict (``meta``, ``rows``)."""
    n, side, grid_rounds, min_run_time = GRID[grid]
    rounds = rounds or grid_rounds
    names = list(only) if only else row_names()
    unknown = [x for x in names if x not in row_names()]
    if unknown:
        raise ValueError(f"unknown rows {unknown}; choose from {', '.join(row_names())}")
    K, KA, kornia_info = kornia_modules()
    find, tops_info = tensorops_augment()
    if K is None:
        say(f"kornia column skipped: {kornia_info}")
    if find is None:
        say(f"tensorops column skipped: {tops_info}")
    all_threads = torch.get_num_threads()
    thread_counts = [t or all_threads for t in threads]
    start = time.perf_counter()
    d = draws(n, side)
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        raise ValueError(f"unknown layouts {bad}; choose from {', '.join(LAYOUTS)}")
    batches = {s: image_batch(s, n, side) for s in sets}
    rows: List[Dict[str, Any]] = []
    busy = BusyLoad(load, load_limit_s)
    watch = ActivityWatch()
    try:
        busy.start()
        watch.start()
        for t in thread_counts:
            torch.set_num_threads(t)
            for s in sets:
                for lay in layouts:
                    say(f"  {s}, {lay}, {t} thread(s): {len(names)} rows")
                    b = batches[s].contiguous(memory_format=LAYOUTS[lay])
                    for name in names:
                        rows.append({"set": s, "layout": lay, "threads": t,
                                     **measure_row(name, b, d, find, K, KA, rounds, min_run_time)})
        load_info = busy.describe()
    finally:
        watch.stop()
        busy.stop()
        torch.set_num_threads(all_threads)
    meta = {
        **machine_info(), "torch_threads": all_threads, "grid": grid, "images": n, "side": side, "rounds": rounds,
        "min_run_time_s": min_run_time, "threads": thread_counts, "sets": list(sets), "layouts": list(layouts),
        "load": load_info,
        "activity": watch.describe(), "wall_s": time.perf_counter() - start,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "columns": {TV_IMAGE: "the v2 function / transform called on each image (its own draw), torch.stack",
                    TV_BATCH: "the v2 function / transform called once on the batch (one draw for all samples)",
                    KORNIA: "kornia.augmentation on the batch as float32 (conversion not timed), own per-sample "
                            "draws from the same ranges",
                    TOPS: "tensorops.augment on the batch, per-sample arguments / draws"},
        "kornia": kornia_info, "tensorops_augment": tops_info,
        "timing": "timing.measure_interleaved: every column of a row once per round, alternating order; ms per "
                  "image = a call's time / images; medians, spreads (min, quartiles, max) over rounds; ratios = "
                  "the baseline's time / the column's, per round",
    }
    return {"meta": meta, "rows": rows}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.augment", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="32 images, 7 rounds (default: full, 15 rounds)")
    g.add_argument("--smoke", action="store_true", help="2 tiny images, 1 round: checks that it runs (seconds)")
    p.add_argument("--threads", default="1,0", help="torch threads per pass, comma-separated; 0 = all (default 1,0)")
    p.add_argument("--sets", default="real,photo-like", help="image sets: real, photo-like (default both)")
    p.add_argument("--layouts", default="contiguous",
                   help="batch memory layouts, comma-separated: contiguous, channels_last (default contiguous)")
    p.add_argument("--only", default=None, help="comma-separated rows (default all): ops, policies, or names "
                   f"(with or without their arguments): {', '.join(row_names())}")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (overrides the grid's)")
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes (benchmarks/load.py)")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=LOCAL_RESULTS,
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    p.add_argument("--tag", default="", help="appended to the file name (a part of a run: see --merge)")
    p.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                   help="instead of timing: join these files' rows (parts of one grid timed in separate quiet "
                   "windows, e.g. --only policies and --only ops) into the file this run would write; meta.parts "
                   "keeps each part's time, commit, load and activity")
    args = p.parse_args(argv)
    grid = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.merge:
        return _merge(args.merge, args.out, grid, args.threads, args.load)
    keys = {"real": REAL, "photo-like": SYNTH}
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
        sets = [keys[s.strip()] for s in args.sets.split(",") if s.strip()]
    except (ValueError, KeyError) as exc:
        p.error(f"--threads takes integers, --sets real and/or photo-like ({exc})")
    try:
        only = select(args.only) if args.only else None
    except ValueError as exc:
        p.error(str(exc))
    if not threads or any(t < 0 for t in threads) or not sets or args.load < 0 or (args.rounds or 1) < 1:
        p.error("--threads >= 0, --sets not empty, --load >= 0, --rounds >= 1")
    if REAL in sets and importlib.util.find_spec("skimage") is None:
        print("the real-photo set needs scikit-image (pip install scikit-image): running the photo-like set only",
              file=sys.stderr)
        sets = [s for s in sets if s != REAL] or [SYNTH]

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        result = run(grid, threads, sets, only, args.rounds, args.load, args.load_limit, say,
                     [x.strip() for x in args.layouts.split(",") if x.strip()])
    except ValueError as exc:
        p.error(str(exc))
    # a run of other thread counts than the default (1 and all) says which, as the harness's files do
    suffix = "" if threads == [1, 0] else "_threads" + "-".join(str(t) for t in result["meta"]["threads"])
    return _write(result, args.out, f"augment_{grid}{suffix}" + (f"_{args.tag}" if args.tag else ""), args.load)


def _write(result: Dict[str, Any], out: str, name: str, load: int) -> int:
    from benchmarks import docs_tables

    docs_tables.write_beside(save_json(out, name, load, result), result, docs_tables.view_augment)
    return 0


def merge(parts: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """One result from parts of a grid timed separately (each row is timed within one part: its columns and ratios
    share that part's rounds): the rows in the parts' order, the first part's meta with the union of their sets
    and threads, a compiler count summed over the parts' samples, and ``meta.parts`` holding each part's own time,
    commit, load and activity."""
    if not parts:
        raise ValueError("merge: no parts")
    meta = dict(parts[0]["meta"])
    keep = ("timestamp_utc", "git_commit", "load", "activity", "wall_s", "sets", "threads", "min_run_time_s",
            "rounds", "tensorops_augment")
    meta["parts"] = [{k: p["meta"].get(k) for k in keep} | {"rows": len(p["rows"])} for p in parts]
    meta["sets"] = list(dict.fromkeys(s for p in parts for s in p["meta"]["sets"]))
    meta["threads"] = list(dict.fromkeys(t for p in parts for t in p["meta"]["threads"]))
    acts = [p["meta"].get("activity") or {} for p in parts]
    meta["activity"] = dict(acts[0], samples=sum(a.get("samples", 0) for a in acts),
                            samples_with_a_compiler=sum(a.get("samples_with_a_compiler", 0) for a in acts),
                            note="summed over meta.parts")
    meta["timestamp_utc"] = max(p["meta"]["timestamp_utc"] for p in parts)
    return {"meta": meta, "rows": [r for p in parts for r in p["rows"]]}


def _merge(files: Sequence[str], out: str, grid: str, threads: str, load: int) -> int:
    import json

    parts = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            parts.append(json.load(fh))
    counts = [int(t) for t in threads.split(",") if t.strip()]
    suffix = "" if counts == [1, 0] else "_threads" + "-".join(
        str(t) for t in dict.fromkeys(t for p in parts for t in p["meta"]["threads"]))
    return _write(merge(parts), out, f"augment_{grid}{suffix}", load)


if __name__ == "__main__":
    sys.exit(main())

"""Resident memory of a CPU DataLoader pipeline over epochs: does the batch cache (csrc/include/tensorops/batch_cache.h)
make the main process or its workers grow?

The pipeline is tensorops' CPU path: 8 non-persistent fork workers make uint8 batches with
``ResizedCropMirrorNormalizeCollate(224, None, None, dtype=torch.uint8)`` (32 x 3 x 224 x 224: 4.8 MB, from the
workers' caches), and ``NormalizingLoader`` normalizes them to float32 in the main process (19 MB, from the main
process's cache). Every epoch forks 8 fresh workers from a main process whose cache holds the blocks of the batches
that died, which is where a worker that inherited them used to keep copy-on-write duplicates once the main process
rewrote them.

Measured per epoch: the main process's VmRSS after the epoch (its workers gone) and in the middle of the epoch,
and at the middle of the epoch the sum over the live workers of VmRSS, RssAnon and Pss (``/proc/<pid>/smaps_rollup``:
shared pages divided among the processes that map them, so the sum over the main process and its workers is the
memory the pipeline holds). Synthetic images (random uint8, 256-400 px): the pixels do not matter here, only the
sizes. Runs in about 20 s on 2 cores::

    python -m benchmarks.batch_cache_rss --out benchmarks/results        # writes batch_cache_rss.json
    PYTHONPATH=/path/to/other/checkout python benchmarks/pipelines/batch_cache_rss.py --label before --out /tmp/x

``--label`` names the run in the JSON's file name (``batch_cache_rss_<label>.json``), for a run of another build.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

import torch

import tensorops
from tensorops.data import NormalizingLoader, ResizedCropMirrorNormalizeCollate

MiB = float(1 << 20)
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _status(pid: int, key: str) -> int:
    """A ``key:`` line of /proc/<pid>/status (kB) in bytes; 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":")), 0)
    except OSError:
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def _children(pid: int) -> List[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4, after the command name in parentheses
            kids.append(int(entry))
    return kids


class _Images(torch.utils.data.Dataset):
    """``n`` samples cycling through 32 distinct images of 256-400 px (8 MB in all, shared with the workers)."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.images = [torch.randint(0, 256, (3, 256 + 4 * k, 400 - 3 * k), dtype=torch.uint8, generator=g)
                       for k in range(32)]
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return self.images[i % len(self.images)], i


def measure(epochs: int, workers: int, batches_per_worker: int, batch_size: int) -> Dict[str, Any]:
    me = os.getpid()
    dataset = _Images(workers * batches_per_worker * batch_size)
    collate = ResizedCropMirrorNormalizeCollate(224, None, None, dtype=torch.uint8)
    loader = NormalizingLoader(
        torch.utils.data.DataLoader(dataset, batch_size=batch_size, collate_fn=collate, num_workers=workers,
                                    persistent_workers=False, multiprocessing_context="fork"),
        MEAN, STD, device="cpu")
    cache = getattr(tensorops._extension._C, "batch_cache_stats", None)
    rows = []
    start = time.perf_counter()
    for epoch in range(epochs):
        mid: Dict[str, Any] = {}
        n = 0
        for i, (images, _) in enumerate(loader):
            assert images.dtype == torch.float32 and images.shape == (batch_size, 3, 224, 224)
            n += 1
            if i == len(loader) // 2:  # every worker has made a batch, none has exited
                kids = _children(me)
                mid = {
                    "workers": len(kids),
                    "main_rss_mib": _status(me, "VmRSS") / MiB,
                    "main_pss_mib": _pss(me) / MiB,
                    "workers_rss_mib": sum(_status(k, "VmRSS") for k in kids) / MiB,
                    "workers_rss_anon_mib": sum(_status(k, "RssAnon") for k in kids) / MiB,
                    "workers_pss_mib": sum(_pss(k) for k in kids) / MiB,
                }
            del images
        rows.append({
            "epoch": epoch + 1,
            "batches": n,
            "main_rss_mib": _status(me, "VmRSS") / MiB,
            "main_rss_anon_mib": _status(me, "RssAnon") / MiB,
            "mid_epoch": mid,
            "main_cache": dict(cache()) if cache is not None else None,
        })
        print(json.dumps(rows[-1]), file=sys.stderr)
    first, last = rows[0], rows[-1]
    return {
        "epochs": rows,
        "main_rss_growth_after_first_epoch_mib": last["main_rss_mib"] - first["main_rss_mib"],
        "workers_pss_growth_after_first_epoch_mib": (last["mid_epoch"]["workers_pss_mib"]
                                                     - first["mid_epoch"]["workers_pss_mib"]),
        "seconds": time.perf_counter() - start,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batches-per-worker", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--label", default="", help="suffix of the JSON's name: batch_cache_rss_<label>.json")
    # benchmarks/results/local/ from this file (benchmarks/pipelines/): it runs by path too, beside another
    # checkout's benchmarks package (PYTHONPATH above), so it imports no benchmarks module, not even LOCAL_RESULTS
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--out", default=os.path.join(package, "results", "local"))
    args = p.parse_args(argv)
    torch.manual_seed(0)
    result = measure(args.epochs, args.workers, args.batches_per_worker, args.batch_size)
    try:
        from benchmarks.machine import machine_info
        meta = machine_info()
    except ImportError:  # run as a file from another checkout
        meta = {}
    result["meta"] = {**meta, "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "tensorops": os.path.dirname(tensorops.__file__), "label": args.label,
                      "workers": args.workers, "batch_size": args.batch_size,
                      "batches_per_epoch": args.workers * args.batches_per_worker}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "batch_cache_rss" + (f"_{args.label}" if args.label else "") + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(path)
    print(f"main RSS growth after epoch 1: {result['main_rss_growth_after_first_epoch_mib']:.1f} MiB; workers' Pss "
          f"sum, epoch 1 -> {args.epochs}: {result['epochs'][0]['mid_epoch']['workers_pss_mib']:.0f} -> "
          f"{result['epochs'][-1]['mid_epoch']['workers_pss_mib']:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

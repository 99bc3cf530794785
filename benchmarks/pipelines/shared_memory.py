"""What a DataLoader worker pays to write one float32 batch into shared memory, per way of getting that memory:
the bound on what reusing the workers' shared blocks (tensorops.data.shared_batches) can win end to end.

    python -m benchmarks.shared_memory                  # 1 thread, quiet; results/local/shared_memory.json
    python -m benchmarks.shared_memory --load 2         # with 2 busy background processes

Each row writes a whole batch (``fill_``: one pass over its bytes, as the normalize's output) into:

* ``private``: ``torch.empty`` (the process's own memory, which the allocator keeps between calls): the floor;
* ``fresh shared (torch)``: new shared memory as ``default_collate`` and pickling get it
  (``UntypedStorage._new_shared``): every page zero-filled by the kernel at its first touch, one fault each;
* ``fresh shared (tensorops)``: the same with its page tables filled in one ``madvise(MADV_POPULATE_WRITE)`` call
  (what a worker does with reuse off, ``TENSOROPS_REUSE_SHARED_MEMORY=0``);
* ``reused block``: one of a worker's blocks handed out again (``shared_batches.worker_batch`` in a process
  that acts as a worker, the block released each time): a new storage over the kept mapping, no fault.

Times are medians over interleaved rounds with their spread; ``per_image_ms`` divides by the batch size.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Dict, List, Optional

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.timing import measure_interleaved, spread

SHAPES = {"32 x 3 x 176 x 176": (32, 3, 176, 176), "32 x 3 x 224 x 224": (32, 3, 224, 224)}
WAYS = ("private", "fresh shared (torch)", "fresh shared (tensorops)", "reused block")


def _ways(shape: tuple) -> Dict[str, Any]:
    from tensorops.data import shared_batches as sb

    n = 1
    for s in shape:
        n *= s
    nbytes = n * 4

    def private() -> None:
        torch.empty(shape).fill_(1.0)

    def fresh_torch() -> None:
        storage = torch.UntypedStorage._new_shared(nbytes)
        torch.empty(0).set_(storage, 0, shape).fill_(1.0)

    def fresh_tensorops() -> None:
        storage = torch.UntypedStorage._new_shared(nbytes)
        sb._populate(storage.data_ptr(), nbytes)
        torch.empty(0).set_(storage, 0, shape).fill_(1.0)

    def reused() -> None:
        sb.worker_batch(shape, torch.float32, torch.contiguous_format).fill_(1.0)  # dropped: free again

    return {"private": private, "fresh shared (torch)": fresh_torch, "fresh shared (tensorops)": fresh_tensorops,
            "reused block": reused}


def run(rounds: int, min_run_time: float) -> List[Dict[str, Any]]:
    from tensorops.data import shared_batches as sb

    if not sb.reuse_enabled():
        raise RuntimeError("block reuse is off here (torch's file_system sharing strategy, not Linux, or "
                           "TENSOROPS_REUSE_SHARED_MEMORY=0)")
    sb.get_worker_info = lambda: object()  # this process takes blocks as a DataLoader worker does
    rows = []
    for name, shape in SHAPES.items():
        samples = measure_interleaved(_ways(shape), min_run_time, rounds)
        fresh = sorted(samples["fresh shared (torch)"])[len(samples["fresh shared (torch)"]) // 2]
        for way in WAYS:
            s = spread(samples[way])
            rows.append({"batch": name, "way": way, "ms": s["median"] * 1e3,
                         "per_image_ms": s["median"] * 1e3 / shape[0],
                         "spread_ms": {k: v * 1e3 for k, v in s.items()},
                         "saved_vs_fresh_torch_per_image_ms": (fresh - s["median"]) * 1e3 / shape[0]})
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.shared_memory", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--min-run-time", type=float, default=1.0)
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=LOCAL_RESULTS,
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    args = p.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # what a DataLoader worker runs
    try:
        with BusyLoad(args.load, args.load_limit) as load, ActivityWatch() as activity:
            rows = run(args.rounds, args.min_run_time)
            meta = {**machine_info(), "load": load.describe(), "activity": activity.describe(),
                    "rounds": args.rounds, "torch_threads": 1, "what": __doc__}
    finally:
        torch.set_num_threads(threads)
    path = save_json(args.out, "shared_memory", args.load, {"meta": meta, "rows": rows})
    print("| batch | way | ms per batch (min-max) | ms per image | saved vs fresh (torch), ms per image |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['batch']} | {r['way']} | {r['ms']:.2f} ({r['spread_ms']['min']:.2f}-{r['spread_ms']['max']:.2f})"
              f" | {r['per_image_ms']:.3f} | {r['saved_vs_fresh_torch_per_image_ms']:.3f} |")
    print(f"json: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

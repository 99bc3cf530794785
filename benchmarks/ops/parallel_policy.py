"""The measurements behind csrc/include/tensorops/parallel.h's constants: ``python -m benchmarks.parallel_policy
[--load N] [--out DIR]``.

* ``min_bytes``: for memory-bound passes of growing size (``torch.clamp`` of float32, number bounds: it reads
  and writes every byte once, and above torch's grain of 32768 elements it runs on torch's OpenMP threads, the
  same pool tensorops' kernels use), the time with torch's threads and with one thread; the smallest size from
  which threads are at least 10% faster at every larger size is the crossover (kParallelMinBytes).
* ``serial_bytes_per_ns``: the one-thread rate of the largest pass (the unit of kCatScanBytesPerInput).
* ``cat_scan_bytes_per_input``: tensorops.cat of 10,000 (64,) float32 tensors on one thread, minus a copy of its
  bytes at the serial rate, per input, as bytes of copy at that rate (kCatScanBytesPerInput).

Run it quiet and with ``--load 2``; the JSON (``parallel_policy[_loadN].json``) records the load. Times are
medians of interleaved rounds (threads, one thread, threads, ...).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Dict, List, Optional

import torch

from benchmarks import RESULTS
from benchmarks.load import BusyLoad, save_json

SIZES_BYTES = [2**k for k in range(16, 27)]  # 64 KB ... 64 MB of traffic (half read, half written)


def _time(fn, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def threads_vs_one(nbytes: int, rounds: int, threads: int) -> Dict[str, float]:
    x = torch.randn(max(1, nbytes // 8))
    out = torch.empty_like(x)

    def fn():
        torch.clamp(x, -0.5, 0.5, out=out)

    fn()
    single = _time(fn, 3)
    reps = max(1, int(0.01 / max(single, 1e-7)))
    many, one = [], []
    for _ in range(rounds):
        torch.set_num_threads(threads)
        many.append(_time(fn, reps))
        torch.set_num_threads(1)
        one.append(_time(fn, reps))
    torch.set_num_threads(threads)
    return {"bytes": nbytes, "threads_s": statistics.median(many), "one_thread_s": statistics.median(one),
            "threads_max_s": max(many), "one_thread_max_s": max(one)}


def cat_scan(rounds: int, rate: float) -> Optional[Dict[str, float]]:
    import tensorops

    if not tensorops.is_compiled():
        return None
    xs = [torch.randn(64) for _ in range(10000)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tensorops.cat(xs)
        t = statistics.median(_time(lambda: tensorops.cat(xs), 20) for _ in range(rounds))
    finally:
        torch.set_num_threads(threads)
    copy_s = 2 * 10000 * 64 * 4 / rate / 1e9
    per_input_ns = (t - copy_s) / 10000 * 1e9
    return {"cat_s": t, "copy_s_at_serial_rate": copy_s, "scan_ns_per_input": per_input_ns,
            "cat_scan_bytes_per_input": per_input_ns * rate}


def measure(load: int, rounds: int) -> Dict[str, Any]:
    threads = torch.get_num_threads()
    with BusyLoad(load, 900) as busy:
        sweep: List[Dict[str, float]] = [threads_vs_one(b, rounds, threads) for b in SIZES_BYTES]
        load_info = busy.describe()
        rate = SIZES_BYTES[-1] / sweep[-1]["one_thread_s"] / 1e9
        scan = cat_scan(rounds, rate)
    crossover = None
    for i in range(len(sweep)):
        if all(r["one_thread_s"] >= 1.1 * r["threads_s"] for r in sweep[i:]):
            crossover = sweep[i]["bytes"]
            break
    return {
        "threads": threads, "cpu_count": os.cpu_count(), "load": load_info, "sweep": sweep,
        "min_bytes": crossover, "serial_bytes_per_ns": rate, "cat_scan": scan,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.parallel_policy", description=__doc__.split("\n\n")[0])
    p.add_argument("--load", type=int, default=0, metavar="N", help="busy background processes while measuring")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", default=RESULTS)
    args = p.parse_args(argv)
    r = measure(args.load, args.rounds)
    for s in r["sweep"]:
        print(f"{s['bytes'] / 1e6:9.3f} MB  threads {s['threads_s'] * 1e6:10.1f} us  one thread "
              f"{s['one_thread_s'] * 1e6:10.1f} us  ratio {s['one_thread_s'] / s['threads_s']:.2f}")
    print(f"min_bytes (threads >= 10% faster from here on): {r['min_bytes']}")
    print(f"serial rate: {r['serial_bytes_per_ns']:.1f} bytes/ns")
    if r["cat_scan"]:
        print(f"cat scan: {r['cat_scan']['scan_ns_per_input']:.1f} ns/input = "
              f"{r['cat_scan']['cat_scan_bytes_per_input']:.0f} bytes/input")
    print(save_json(args.out, "parallel_policy", args.load, r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

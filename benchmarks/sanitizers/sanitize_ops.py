"""Calls every tensorops CUDA kernel, forward and backward, on small awkward inputs, for compute-sanitizer.

    compute-sanitizer --tool memcheck  --error-exitcode 1 python -m benchmarks.sanitize_ops
    compute-sanitizer --tool racecheck --error-exitcode 1 python -m benchmarks.sanitize_ops

Awkward means: odd lengths (vector loops' tails), views starting one element in (``x[1:]``: unaligned pointers),
empty tensors, channels_last and permuted layouts, broadcast statistics/bounds, 1,000 tensors for cat/split, and
zero-size pieces. Sizes stay small: the sanitizer slows kernels 10-100x (and the > 2^31-element cases belong in
the CUDA tests). Each result is also checked against native torch, so a kernel that reads out of bounds without
faulting still fails here.

The ops are tensorops.registry's: op ``<name>`` of family ``<family>`` is ``run_<name>(device)`` in
benchmarks/sanitizers/sanitize_<family>.py (a registry op without one is an error, not a skip).

Run it under ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` (gpu_check.sh does): then every tensor is its own allocation
and memcheck sees an access one past a tensor's end, which the caching allocator would otherwise hide.
``--device cpu`` runs the same calls on the CPU kernels (the test suite uses it to keep this script honest).
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from typing import Callable, List, Optional

import torch

import tensorops
from benchmarks.sanitize_base import CALLS
from tensorops import registry

__all__ = ["CALLS", "main", "runner"]


def runner(op: str) -> Callable[[torch.device], None]:
    """``run_<op>`` of benchmarks/sanitizers/sanitize_<family>.py for registry op ``op``."""
    info = registry.OPS[op]
    module = importlib.import_module(f"benchmarks.sanitize_{info.family}")
    fn = getattr(module, f"run_{op}", None)
    if fn is None:
        raise LookupError(f"benchmarks/sanitize_{info.family}.py has no run_{op}: every registry op needs its calls")
    return fn


def main(argv: Optional[List[str]] = None) -> int:
    ops = ",".join(registry.OPS)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--ops", default=ops, help="comma-separated subset of " + ops)
    p.add_argument("--stop-after", type=float, default=None, metavar="S",
                   help="start no op after S seconds: the ops not run are named and the exit code is 5 "
                   "(gpu_check.sh gives each sanitizer a fixed share of its deadline)")
    args = p.parse_args(argv)
    names = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [n for n in names if n not in registry.OPS]
    if unknown or not names:
        p.error(f"--ops: unknown {unknown}; choose from {ops}")
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("sanitize_ops: no CUDA GPU visible to torch", file=sys.stderr)
            return 2
        if not tensorops.build_info().get("cuda"):
            print(f"sanitize_ops: tensorops has no CUDA kernels ({tensorops.build_info()}): nothing to sanitize",
                  file=sys.stderr)
            return 2
    runs = [(name, runner(name)) for name in names]  # all found before the first call
    torch.manual_seed(0)
    CALLS.clear()
    start = time.monotonic()
    done: List[str] = []
    for name, fn in runs:
        if args.stop_after is not None and time.monotonic() - start >= args.stop_after:
            break
        print(f"{name}:", flush=True)
        fn(device)
        done.append(name)
    if device.type == "cuda":
        torch.cuda.synchronize()
    if len(done) < len(runs):
        not_run = [name for name, _ in runs[len(done):]]
        print(f"sanitize_ops: {len(CALLS)} calls ok on {device}; stopped at the {args.stop_after:.0f} s limit after "
              f"{len(done)} of {len(runs)} ops, not run: {', '.join(not_run)}", flush=True)
        return 5
    print(f"sanitize_ops: {len(CALLS)} calls ok on {device} (ops run: {', '.join(names)})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

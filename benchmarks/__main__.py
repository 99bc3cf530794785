"""Entry point: ``python -m benchmarks [--quick] [--device cpu|cuda|all] [--ops normalize,clamp,cat,split] [--load N]
[--out DIR]``. The ops are tensorops.registry's (a benchmark module's name, e.g. ``cat_split``, stands for its ops)."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from benchmarks import LOCAL_RESULTS

# a run writes here unless told otherwise (git ignores it), so running the benchmarks never changes the published
# results in benchmarks/results/ that the docs' tables are generated from: publish with --out benchmarks/results
DEFAULT_OUT = LOCAL_RESULTS


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    from benchmarks.harness import benchmarked_ops, resolve_ops

    choices = ",".join(benchmarked_ops())

    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time tensorops against native eager torch and torch.compile of the same expression, "
        "with the bandwidth of a copy of the same bytes as the yardstick.",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="the small grid (under 2 minutes on a 2-core CPU)")
    g.add_argument("--smoke", action="store_true", help="a tiny grid that only checks the harness works (seconds)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "all"],
                   help="auto (default): cpu, plus cuda when a GPU is visible; all: cpu and cuda (cuda required)")
    p.add_argument("--ops", default=choices,
                   help=f"comma-separated subset of {choices}, or a benchmark module's name (cat_split: cat,split) "
                   "(default: all)")
    p.add_argument("--out", default=DEFAULT_OUT, help="directory for the JSON and PNG (default: benchmarks/results/local/, ignored by git; "
                   "--out benchmarks/results publishes a run, then python -m benchmarks.docs_tables)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op threads for the run (default: torch's choice). On a machine other jobs "
                   "are loading, --threads 1 avoids OpenMP threads waiting for a descheduled peer (that costs "
                   "milliseconds per parallel op)")
    p.add_argument("--load", type=int, default=0, metavar="N",
                   help="run N busy background processes while timing (a machine kept busy by a training loop or "
                   "DataLoader workers); they stop when the run ends, or after --load-limit seconds even if this "
                   "process is killed. The JSON records the load (meta.load) and gets a _loadN suffix")
    p.add_argument("--load-limit", type=float, default=None, metavar="S",
                   help="seconds after which the --load processes stop whatever happens (default 3600)")
    p.add_argument("--min-run-time", type=float, default=None,
                   help="seconds each statement is timed for (default depends on the grid)")
    args = p.parse_args(argv)
    names = [o.strip() for o in args.ops.split(",") if o.strip()]
    if not names:
        p.error(f"--ops: no op given; choose from {choices}")
    try:
        args.ops = resolve_ops(names)
    except ValueError as exc:
        p.error(f"--ops: {exc}")
    if args.threads is not None and args.threads < 1:
        p.error("--threads must be >= 1")
    if args.load < 0:
        p.error("--load must be >= 0")
    if args.load_limit is not None and not args.load_limit > 0:
        p.error("--load-limit must be > 0")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    from benchmarks import harness, report

    if args.device == "auto":
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    elif args.device == "all":
        devices = ["cpu", "cuda"]
    else:
        devices = [args.device]
    if "cuda" in devices and not torch.cuda.is_available():
        print("error: --device cuda/all asked for CUDA but torch sees no GPU", file=sys.stderr)
        return 2
    grid = "smoke" if args.smoke else ("quick" if args.quick else "full")
    result = harness.run(
        devices=devices, grid=grid, ops=args.ops, out_dir=args.out, do_compile=not args.no_compile,
        progress=not args.no_progress, min_run_time=args.min_run_time, threads=args.threads,
        load=args.load, load_limit_s=args.load_limit,
    )
    print(report.format_table(result))
    for kind, path in result["files"].items():
        if path:
            print(f"{kind}: {path}")
    bad = [r for r in result["rows"] if r["check"] != "ok"]
    if bad:
        print(f"error: tensorops failed or differed from native torch in {len(bad)} row(s):", file=sys.stderr)
        for r in bad:
            print(f"  {r['device']} {r['op']} {r['case']} {r['shape']} {r['dtype']} {r['layout']}: {r['check']}",
                  file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

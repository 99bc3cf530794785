"""Timing one benchmark row: native eager torch, ``torch.compile`` of the very same eager function (compiled once
per case, the compile and its warm-up kept out of the timings; a compile failure is recorded in the row, not
raised) and tensorops, in the same process, with ``torch.utils.benchmark.Timer`` (the Timer synchronizes CUDA and
is told to use all of torch's threads: its default is one), interleaved round by round; and a copy of the same
number of bytes on the same device (``dst.copy_(src)``, half the bytes read, half written), measured once per size
in the same run, so that "% of copy" compares like with like.

The bytes a row counts are the bytes the op must move (reads + writes), given by the case.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.utils.benchmark as tbench

from benchmarks.case import Case
from benchmarks.report import fmt_time, short_error

# Each statement gets at most this many seconds to collect its samples (unless one call is longer).
MAX_STMT_S = 2.0

IMPLS = ("eager", "compile", "tensorops")

# Keys every row has (the smoke test and gpu_summary.py rely on them).
ROW_KEYS = (
    "op", "times", "series", "case", "shape", "dtype", "layout", "device", "bytes", "eager_expr",
    "eager_s", "compile_s", "tensorops_s", "copy_s", "extras_s",
    "speedup_vs_eager", "speedup_vs_compile",
    "gbps", "copy_gbps", "pct_of_copy", "eager_pct_of_copy", "compile_pct_of_copy",
    "compile_error", "compile_warmup_s", "check", "notes",
    "rounds", "spread_s", "speedup_vs_eager_spread", "speedup_vs_compile_spread",
)


def measure(stmt: Callable[[], Any], min_run_time: float, min_samples: int = 1) -> float:
    """Median seconds per call of ``stmt`` (Timer synchronizes CUDA around its blocks), over at least
    ``min_samples`` blocks when that fits in MAX_STMT_S."""
    timer = tbench.Timer(stmt="stmt()", globals={"stmt": stmt}, num_threads=torch.get_num_threads())
    if min_samples > 1:
        single = timer.timeit(1).mean  # also a warm-up
        min_run_time = max(min_run_time, min(min_samples * single * 1.05, MAX_STMT_S))
    return float(timer.blocked_autorange(min_run_time=min_run_time).median)


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def measure_interleaved(stmts: Dict[str, Callable[[], Any]], min_run_time: float, rounds: int) -> Dict[str, List[float]]:
    """Seconds per call of each statement in ``rounds`` blocks, the statements' blocks interleaved (round r times
    every statement once, in an order that alternates between rounds), so that a machine whose load changes
    during the run slows every column alike and the per-round ratios pair like with like. Each statement runs
    about ``min_run_time`` seconds in all (at least one call per block; at most MAX_STMT_S unless one call is
    longer)."""
    timers = {k: tbench.Timer(stmt="stmt()", globals={"stmt": s}, num_threads=torch.get_num_threads())
              for k, s in stmts.items()}
    number: Dict[str, int] = {}
    for k, t in timers.items():
        t.timeit(1)  # warm-up
        single = t.timeit(1).mean
        if single < 1e-4:  # one call of a tiny op is mostly timer overhead: estimate from a few hundred
            single = t.timeit(200).mean
        budget = min(max(min_run_time, rounds * single), MAX_STMT_S)
        number[k] = max(1, int(budget / rounds / max(single, 1e-9)))
    samples: Dict[str, List[float]] = {k: [] for k in stmts}
    order = list(stmts)
    for r in range(rounds):
        for k in (order if r % 2 == 0 else order[::-1]):
            samples[k].append(float(timers[k].timeit(number[k]).mean))
    return samples


def spread(xs: Optional[Sequence[float]]) -> Optional[Dict[str, float]]:
    """min, quartiles, median and max of a list of samples (None for none)."""
    if not xs:
        return None
    return {"min": min(xs), "q1": _quantile(xs, 0.25), "median": _quantile(xs, 0.5), "q3": _quantile(xs, 0.75),
            "max": max(xs)}


class CopyBaseline:
    """``dst.copy_(src)`` moving ``nbytes`` (half read, half written), measured once per (device, nbytes)."""

    def __init__(self, min_run_time: float, min_samples: int = 1) -> None:
        self.min_run_time = min_run_time
        self.min_samples = min_samples
        self.cache: Dict[Tuple[str, int], float] = {}

    def __call__(self, device: torch.device, nbytes: int) -> float:
        key = (str(device), int(nbytes))
        if key not in self.cache:
            n = max(1, int(nbytes) // 2)
            src = torch.randint(0, 256, (n,), dtype=torch.uint8, device=device)
            dst = torch.empty_like(src)
            dst.copy_(src)
            self.cache[key] = measure(lambda: dst.copy_(src), self.min_run_time, self.min_samples)
            del src, dst
        return self.cache[key]


def _flatten(out: Any) -> List[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o)]
    return []


def check_same(expected: Any, actual: Any, atol: Optional[float] = None) -> str:
    """'ok', or what differs between the native result and tensorops' (a benchmark of a wrong answer is void).
    ``atol``: an absolute tolerance for floating results instead of the default (a row's ``check_atol``)."""
    exp, act = _flatten(expected), _flatten(actual)
    if len(exp) != len(act):
        return f"mismatch: {len(act)} tensors, native gives {len(exp)}"
    try:
        for i, (e, a) in enumerate(zip(exp, act)):
            if e.shape != a.shape or e.dtype != a.dtype:
                return f"mismatch: tensor {i} is {a.dtype}{tuple(a.shape)}, native gives {e.dtype}{tuple(e.shape)}"
            if e.is_floating_point():
                # Loose enough for a different summation order in reduced gradients (sums over millions of
                # elements), tight enough that a broken kernel's garbage never passes.
                tol = 1e-2 if e.element_size() < 4 else 1e-3
                scale = max(1.0, float(e.abs().max())) if e.numel() else 1.0
                if atol is None:
                    torch.testing.assert_close(a, e, rtol=tol, atol=tol * scale, equal_nan=True)
                else:
                    torch.testing.assert_close(a, e, rtol=0.0, atol=atol, equal_nan=True)
            else:
                torch.testing.assert_close(a, e, rtol=0, atol=0)
    except AssertionError as exc:
        first = str(exc).strip().splitlines()
        return "mismatch: " + (first[0] if first else "values differ")
    return "ok"


def _ratio(num: Optional[float], den: Optional[float]) -> Optional[float]:
    if num is None or den is None or den <= 0:
        return None
    return num / den


def run_case(
    case: Case,
    device: torch.device,
    grid: str,
    copy: CopyBaseline,
    min_run_time: float,
    do_compile: bool,
    compile_skip: str = "",
    min_samples: int = 1,
    rounds: int = 5,
) -> Dict[str, Any]:
    """Time one case and return its row (a flat dict with ROW_KEYS)."""
    bench = case.make(device)
    notes = [n for n in (case.notes, bench.notes) if n]
    nbytes = int(bench.nbytes if bench.nbytes is not None else case.nbytes)
    times: Dict[str, Optional[float]] = {k: None for k in IMPLS}
    compile_error: Optional[str] = None
    compile_warmup: Optional[float] = None

    eager_stmt = bench.stmt(bench.eager)
    tops_stmt = bench.stmt(bench.tensorops)
    # A raising op is recorded in the row (and fails the run at the end), not raised mid-grid.
    expected = actual = None
    try:
        expected = eager_stmt()
    except Exception as exc:
        check = f"error: native torch raised {short_error(exc)}"
    else:
        try:
            actual = tops_stmt()
        except Exception as exc:
            check = f"error: tensorops raised {short_error(exc)}"
        else:
            check = check_same(expected, actual, case.check_atol)
    del expected, actual

    compiled_stmt = None
    if case.no_compile_reason:
        compile_error = f"not run: {case.no_compile_reason}"
    elif not do_compile:
        compile_error = f"not run: {compile_skip or 'disabled (--no-compile)'}"
    elif check.startswith("error: native"):
        compile_error = "not run: the eager expression failed"
    elif grid not in case.compile_grids:
        compile_error = f"not run in the {grid} grid" + (" (the full grid times it)" if grid != "full" else "")
    else:
        # One cache entry per case: dynamo keys its cache on the function's code, so rows that share an eager
        # function would otherwise pile up recompilations (and guard checks) on the same entry.
        torch._dynamo.reset()
        t0 = time.perf_counter()
        try:
            compiled = torch.compile(bench.eager, dynamic=False)
            compiled_stmt = bench.stmt(compiled)
            compiled_stmt()
            compiled_stmt()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        except Exception as exc:  # record, don't crash: the other columns are still worth having
            compile_error = short_error(exc)
            compiled_stmt = None
        compile_warmup = time.perf_counter() - t0

    # eager, compile and tensorops timed interleaved, round by round (see measure_interleaved)
    stmts: Dict[str, Callable[[], Any]] = {}
    if not check.startswith("error: native"):
        stmts["eager"] = eager_stmt
    if compiled_stmt is not None:
        stmts["compile"] = compiled_stmt
    if not check.startswith("error: tensorops") and not check.startswith("error: native"):
        stmts["tensorops"] = tops_stmt
    if "tensorops" in stmts:
        stmts.update(bench.paired)
    samples = measure_interleaved(stmts, min_run_time, rounds) if stmts else {}
    for k, xs in samples.items():
        times[k] = _quantile(xs, 0.5)
    compiled = compiled_stmt = None  # type: ignore[assignment]

    def paired(k: str) -> Optional[List[float]]:
        if k not in samples or "tensorops" not in samples:
            return None
        return [a / b for a, b in zip(samples[k], samples["tensorops"]) if b > 0]

    extras = {name: measure(stmt, min_run_time, min_samples) for name, stmt in bench.extras.items()}
    extras.update({name: times[name] for name in bench.paired if name in times})
    # per round, the paired statement's time over tensorops' (1.0: as fast; below: faster)
    paired_ratios = {name: spread([a / b for a, b in zip(samples[name], samples["tensorops"]) if b > 0])
                     for name in bench.paired if name in samples and "tensorops" in samples}
    del bench, eager_stmt, tops_stmt
    copy_s = copy(device, nbytes)

    t_ops = times["tensorops"]
    for name, t in extras.items():
        ratio = _ratio(t_ops, t)
        notes.append(f"{name} {fmt_time(t)}" + ("" if ratio is None else f" (tensorops takes {ratio:.2f}x that)"))
    return {
        "op": case.op,
        "times": case.times,
        "series": case.series,
        "case": case.case,
        "shape": case.shape,
        "dtype": case.dtype,
        "layout": case.layout,
        "device": str(device),
        "bytes": nbytes,
        "eager_expr": case.eager_expr,
        "eager_s": times["eager"],
        "compile_s": times["compile"],
        "tensorops_s": t_ops,
        "copy_s": copy_s,
        "extras_s": extras,
        "speedup_vs_eager": _ratio(times["eager"], t_ops),
        "speedup_vs_compile": _ratio(times["compile"], t_ops),
        "rounds": len(samples.get("tensorops") or samples.get("eager") or []),
        "spread_s": {k: spread(xs) for k, xs in samples.items()},
        "speedup_vs_eager_spread": spread(paired("eager")),
        "speedup_vs_compile_spread": spread(paired("compile")),
        "paired_ratio_spread": paired_ratios,
        "gbps": _ratio(nbytes / 1e9, t_ops),
        "copy_gbps": _ratio(nbytes / 1e9, copy_s),
        "pct_of_copy": None if t_ops is None else 100.0 * copy_s / t_ops,
        "eager_pct_of_copy": None if times["eager"] is None else 100.0 * copy_s / times["eager"],
        "compile_pct_of_copy": None if times["compile"] is None else 100.0 * copy_s / times["compile"],
        "compile_error": compile_error,
        "compile_warmup_s": compile_warmup,
        "check": check,
        "notes": "; ".join(notes),
    }

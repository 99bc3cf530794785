"""The common benchmark harness: one timing loop, one row format, the table, the JSON and the plot.

Each family module (normalize.py, clamp.py, cat_split.py) only describes *what* to time, as a list of `Case`s;
this module times every case the same way:

* native eager torch, ``torch.compile`` of the very same eager function (compiled once per case, the compile and
  its warm-up kept out of the timings; a compile failure is recorded in the row, not raised) and tensorops,
  in the same process, with ``torch.utils.benchmark.Timer.blocked_autorange`` (medians; the Timer synchronizes
  CUDA and is told to use all of torch's threads: its default is one);
* a copy of the same number of bytes on the same device (``dst.copy_(src)``, half the bytes read, half written),
  measured once per size in the same run, so that "% of copy" compares like with like.

The bytes a row counts are the bytes the op must move (reads + writes), given by the case.
"""
from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.utils.benchmark as tbench

GRIDS = ("smoke", "quick", "full")
# Seconds each timed statement runs for (blocked_autorange's min_run_time), per grid.
MIN_RUN_TIME = {"smoke": 0.002, "quick": 0.04, "full": 0.1}
# ... but at least this many timed blocks, so a median of a slow statement is a median and not one sample
# (each statement gets at most MAX_STMT_S seconds for that).
MIN_SAMPLES = {"smoke": 1, "quick": 3, "full": 5}
MAX_STMT_S = 2.0
# Interleaved rounds per row (eager, compile and tensorops each timed once per round), per grid.
ROUNDS = {"smoke": 2, "quick": 7, "full": 9}
# A safety net so --quick keeps its time limit on a slow machine: once this many seconds went into
# torch.compile (cold caches), the remaining rows of the run skip their compiled column, and say so.
COMPILE_BUDGET_S = {"smoke": 60.0, "quick": 60.0, "full": 300.0}

IMPLS = ("eager", "compile", "tensorops")

# Keys every row has (the smoke test and gpu_summary.py rely on them).
ROW_KEYS = (
    "op", "series", "case", "shape", "dtype", "layout", "device", "bytes", "eager_expr",
    "eager_s", "compile_s", "tensorops_s", "copy_s", "extras_s",
    "speedup_vs_eager", "speedup_vs_compile",
    "gbps", "copy_gbps", "pct_of_copy", "eager_pct_of_copy", "compile_pct_of_copy",
    "compile_error", "compile_warmup_s", "check", "notes",
    "rounds", "spread_s", "speedup_vs_eager_spread", "speedup_vs_compile_spread",
)


@dataclasses.dataclass
class Bench:
    """The tensors and functions of one row, built on the device only when the row runs.

    ``eager`` and ``tensorops`` are functions of ``*args``; ``torch.compile(eager)`` is the compiled column.
    ``run(fn)`` turns one of them into the timed no-argument statement (default: ``fn(*args)``; the
    forward+backward rows wrap it with ``torch.autograd.grad``). ``extras`` are further no-argument statements
    timed in the same row (a reference copy, another native spelling of the op).
    """

    eager: Callable[..., Any]
    tensorops: Callable[..., Any]
    args: Tuple[Any, ...]
    run: Optional[Callable[[Callable[..., Any]], Callable[[], Any]]] = None
    extras: Dict[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)

    def stmt(self, fn: Callable[..., Any]) -> Callable[[], Any]:
        if self.run is not None:
            return self.run(fn)
        args = self.args
        return lambda: fn(*args)


@dataclasses.dataclass
class Case:
    """One row of the grid: what it is (for the table and the plot) and how to build it."""

    op: str  # "normalize", "clamp", "clamp_fwd_bwd", "cat", "split"
    series: str  # the plot line this row belongs to (a family of rows differing only in size)
    case: str  # short label within the op, e.g. "imagenet" or "x10000"
    shape: str
    dtype: str
    layout: str
    nbytes: int  # bytes the op must move: reads + writes
    make: Callable[[torch.device], Bench]
    requires: str  # the tensorops attribute this row needs (the row is skipped when it is missing)
    eager_expr: str  # what "native eager" means for this row, spelled out in the JSON
    compile_grids: Tuple[str, ...] = GRIDS  # grids in which the compiled column is timed
    no_compile_reason: str = ""  # why compile is never timed for this row (e.g. 10,000 graph inputs)
    notes: str = ""


# ----------------------------------------------------------------------------------------------------------
# timing


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


def check_same(expected: Any, actual: Any) -> str:
    """'ok', or what differs between the native result and tensorops' (a benchmark of a wrong answer is void)."""
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
                torch.testing.assert_close(a, e, rtol=tol, atol=tol * scale, equal_nan=True)
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


def _short_error(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:300] if msg else ''}"


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
    notes = [case.notes] if case.notes else []
    bench = case.make(device)
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
        check = f"error: native torch raised {_short_error(exc)}"
    else:
        try:
            actual = tops_stmt()
        except Exception as exc:
            check = f"error: tensorops raised {_short_error(exc)}"
        else:
            check = check_same(expected, actual)
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
            compile_error = _short_error(exc)
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
    samples = measure_interleaved(stmts, min_run_time, rounds) if stmts else {}
    for k, xs in samples.items():
        times[k] = _quantile(xs, 0.5)
    compiled = compiled_stmt = None  # type: ignore[assignment]

    def paired(k: str) -> Optional[List[float]]:
        if k not in samples or "tensorops" not in samples:
            return None
        return [a / b for a, b in zip(samples[k], samples["tensorops"]) if b > 0]

    extras = {name: measure(stmt, min_run_time, min_samples) for name, stmt in bench.extras.items()}
    del bench, eager_stmt, tops_stmt
    copy_s = copy(device, case.nbytes)

    t_ops = times["tensorops"]
    for name, t in extras.items():
        ratio = _ratio(t_ops, t)
        notes.append(f"{name} {fmt_time(t)}" + ("" if ratio is None else f" (tensorops takes {ratio:.2f}x that)"))
    return {
        "op": case.op,
        "series": case.series,
        "case": case.case,
        "shape": case.shape,
        "dtype": case.dtype,
        "layout": case.layout,
        "device": str(device),
        "bytes": int(case.nbytes),
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
        "gbps": _ratio(case.nbytes / 1e9, t_ops),
        "copy_gbps": _ratio(case.nbytes / 1e9, copy_s),
        "pct_of_copy": None if t_ops is None else 100.0 * copy_s / t_ops,
        "eager_pct_of_copy": None if times["eager"] is None else 100.0 * copy_s / times["eager"],
        "compile_pct_of_copy": None if times["compile"] is None else 100.0 * copy_s / times["compile"],
        "compile_error": compile_error,
        "compile_warmup_s": compile_warmup,
        "check": check,
        "notes": "; ".join(notes),
    }


# ----------------------------------------------------------------------------------------------------------
# machine description


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> Optional[str]:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10,
            cwd=os.path.dirname(os.path.abspath(__file__)),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def machine_info() -> Dict[str, Any]:
    import tensorops

    info: Dict[str, Any] = {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "tensorops_build_info": tensorops.build_info(),
        "tensorops_compiled": tensorops.is_compiled(),
        "git_commit": _git_commit(),
        "gpus": [],
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append({
                "name": p.name,
                "compute_capability": f"{p.major}.{p.minor}",
                "memory_gib": round(p.total_memory / 2**30, 1),
                "multiprocessors": p.multi_processor_count,
            })
    info["gpu_name"] = info["gpus"][0]["name"] if info["gpus"] else None
    return info


# ----------------------------------------------------------------------------------------------------------
# the run


def _families() -> Dict[str, Any]:
    from benchmarks import cat_split, clamp, crop_mirror_normalize, normalize, stack_chunk_foreach

    return {"normalize": normalize, "clamp": clamp, "cat": cat_split, "split": cat_split,
            "crop_mirror_normalize": crop_mirror_normalize,
            "stack": stack_chunk_foreach, "chunk": stack_chunk_foreach, "clip_grad_value": stack_chunk_foreach}


OPS = ("normalize", "clamp", "cat", "split", "crop_mirror_normalize", "stack", "chunk", "clip_grad_value")


def collect_cases(
    device: torch.device, grid: str, ops: Sequence[str], say: Callable[[str], None] = print
) -> Tuple[List[Case], List[Dict[str, str]]]:
    """The cases to run for ``ops`` on ``device``, and a note for each family skipped because tensorops lacks it."""
    import tensorops

    families = _families()
    cases: List[Case] = []
    skipped: List[Dict[str, str]] = []
    seen_modules = set()
    for op in ops:
        module = families[op]
        if id(module) in seen_modules:
            continue
        seen_modules.add(id(module))
        for c in module.cases(device, grid):
            if c.op.split("_")[0] not in ops and c.op not in ops:
                continue
            cases.append(c)
    wanted: List[Case] = []
    for c in cases:
        if hasattr(tensorops, c.requires):
            wanted.append(c)
        elif not any(s["name"] == c.requires for s in skipped):
            reason = f"tensorops has no `{c.requires}` on this branch/build: skipping its benchmarks"
            skipped.append({"name": c.requires, "device": str(device), "reason": reason})
            say(f"note: {reason}")
    return wanted, skipped


def run(
    devices: Sequence[str] = ("cpu",),
    grid: str = "quick",
    ops: Sequence[str] = OPS,
    out_dir: Optional[str] = None,
    do_compile: bool = True,
    progress: bool = True,
    min_run_time: Optional[float] = None,
    say: Callable[[str], None] = print,
    threads: Optional[int] = None,
    load: int = 0,
    load_limit_s: Optional[float] = None,
) -> Dict[str, Any]:
    """Run the grid and return ``{"meta": ..., "rows": [...], "skipped": [...], "files": {...}}``.

    With ``out_dir`` the JSON and the PNG are written there (file names say the devices and the grid).
    ``threads`` sets torch's intra-op threads for the whole run (default: torch's choice, all cores).
    ``load`` busy processes (benchmarks/load.py) run while the rows are timed and stop with the run, or after
    ``load_limit_s`` seconds; ``meta["load"]`` records them.
    """
    from benchmarks.load import DEFAULT_LIMIT_S, BusyLoad

    if threads is not None:
        torch.set_num_threads(threads)
    if grid not in GRIDS:
        raise ValueError(f"grid must be one of {GRIDS}, got {grid!r}")
    unknown = [o for o in ops if o not in OPS]
    if unknown:
        raise ValueError(f"unknown ops {unknown}; choose from {OPS}")
    mrt = MIN_RUN_TIME[grid] if min_run_time is None else min_run_time
    start = time.perf_counter()
    try:  # many shapes through one function must not hit dynamo's recompile limit and silently run eager
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    except AttributeError:
        pass

    plan: List[Tuple[torch.device, Case]] = []
    skipped: List[Dict[str, str]] = []
    for d in devices:
        dev = torch.device(d)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda was asked for but torch sees no CUDA GPU")
        cases, sk = collect_cases(dev, grid, ops, say)
        plan += [(dev, c) for c in cases]
        skipped += sk

    copy = CopyBaseline(mrt, MIN_SAMPLES[grid])
    rows: List[Dict[str, Any]] = []
    compile_spent = 0.0
    budget = COMPILE_BUDGET_S[grid]
    bar = None
    try:
        from tqdm import tqdm
    except ImportError:  # e.g. a bare GPU machine: run without a progress bar
        progress = False
    if progress:
        bar = tqdm(total=len(plan), desc="benchmarks", unit="row", file=sys.stderr, dynamic_ncols=True)
    busy = BusyLoad(load, DEFAULT_LIMIT_S if load_limit_s is None else load_limit_s)
    try:
        busy.start()
        for dev, case in plan:
            if bar is not None:
                bar.set_postfix_str(f"{dev.type} {case.op} {case.case} {case.dtype} {case.layout}", refresh=False)
            over = compile_spent > budget
            row = run_case(
                case, dev, grid, copy, mrt, do_compile and not over,
                compile_skip=f"compile budget of {budget:.0f} s for this grid spent" if over else "",
                min_samples=MIN_SAMPLES[grid], rounds=ROUNDS[grid],
            )
            compile_spent += row["compile_warmup_s"] or 0.0
            rows.append(row)
            gc.collect()
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            if bar is not None:
                bar.update(1)
        load_info = busy.describe()
    finally:
        busy.stop()
        if bar is not None:
            bar.close()
        torch._dynamo.reset()

    meta = machine_info()
    meta.update({
        "grid": grid,
        "devices": [str(d) for d in devices],
        "ops": list(ops),
        "min_run_time_s": mrt,
        "min_samples": MIN_SAMPLES[grid],
        "rounds": ROUNDS[grid],
        "timing": "eager, compile and tensorops interleaved: each row times every column once per round; times "
                  "are medians over rounds, spreads are over rounds, ratio spreads pair each round's times",
        "load": load_info,
        "compile": do_compile,
        "compile_seconds_total": compile_spent,
        "wall_s": time.perf_counter() - start,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "copy_baseline": "dst.copy_(src) of uint8 buffers holding half the row's bytes each, same device, same run",
    })
    result: Dict[str, Any] = {"meta": meta, "rows": rows, "skipped": skipped, "files": {}}
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.join(out_dir, f"bench_{'_'.join(torch.device(d).type for d in devices)}_{grid}"
                            + (f"_load{load}" if load else ""))
        result["files"] = {"json": stem + ".json", "png": stem + ".png"}
        try:
            plot(result, stem + ".png")
        except Exception as exc:  # a broken matplotlib must not lose the numbers
            result["files"]["png"] = None
            result["meta"]["plot_error"] = _short_error(exc)
            say(f"warning: could not write the plot: {_short_error(exc)}")
        write_json(result, stem + ".json")
        with open(stem + ".md", "w", encoding="utf-8") as f:
            f.write(f"<!-- {format_table(result).splitlines()[0]} -->\n" + markdown_table(result) + "\n")
        result["files"]["md"] = stem + ".md"
    return result


def write_json(result: Dict[str, Any], path: str) -> None:
    def clean(v: Any) -> Any:  # JSON has no NaN/inf
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v

    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(clean(result), f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------------------
# output


def fmt_time(s: Optional[float]) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} GB"


def _fmt(v: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{suffix}"


# A ratio whose rounds spread wider than this (max/min) is shown with its range, not as one number.
WIDE_SPREAD = 1.25


def fmt_ratio(v: Optional[float], sp: Optional[Dict[str, float]] = None) -> str:
    """'3.15x', or '3.15x (1.9-4.2)' (min-max over the interleaved rounds) when the rounds disagree widely."""
    if v is None:
        return "-"
    if sp and sp["min"] > 0 and sp["max"] / sp["min"] > WIDE_SPREAD:
        return f"{v:.2f}x ({sp['min']:.2f}-{sp['max']:.2f})"
    return f"{v:.2f}x"


TABLE_COLUMNS = (
    "device", "op", "case", "shape", "dtype", "layout", "bytes", "eager", "compile", "tensorops",
    "vs eager", "vs compile", "GB/s", "% copy", "notes",
)


def table_rows(rows: Sequence[Dict[str, Any]]) -> List[List[str]]:
    out = []
    for r in rows:
        notes = []
        if r["check"] != "ok":
            notes.append("PROBLEM: " + r["check"])
        if r["compile_error"] and not r["compile_error"].startswith("not run"):
            notes.append("compile failed: " + r["compile_error"][:60])
        if r["notes"]:
            notes.append(r["notes"])
        out.append([
            r["device"], r["op"], r["case"], r["shape"], r["dtype"], r["layout"], fmt_bytes(r["bytes"]),
            fmt_time(r["eager_s"]), fmt_time(r["compile_s"]), fmt_time(r["tensorops_s"]),
            fmt_ratio(r["speedup_vs_eager"], r.get("speedup_vs_eager_spread")),
            fmt_ratio(r["speedup_vs_compile"], r.get("speedup_vs_compile_spread")),
            _fmt(r["gbps"], ".1f"), _fmt(r["pct_of_copy"], ".0f", "%"), "; ".join(notes),
        ])
    return out


def _load_text(load: Optional[Dict[str, Any]]) -> str:
    if not load:
        return "load not recorded"
    n = load.get("busy_processes", 0)
    avg = load.get("loadavg_1_5_15_at_start")
    return (f"--load {n} ({n} busy processes)" if n else "no added load") + (
        f", load average {avg[0]:.2f} at start" if avg else "")


def format_table(result: Dict[str, Any]) -> str:
    """The rows as a plain-text table with aligned columns (numbers right-aligned), plus a short header."""
    meta = result["meta"]
    info = meta.get("tensorops_build_info", {})
    lines = [
        f"tensorops {info.get('version')} (compiled={info.get('compiled')}, cuda kernels={info.get('cuda')}) | "
        f"torch {meta['torch']} | CPU: {meta['cpu_model']} x{meta['cpu_count']} ({meta['torch_threads']} threads)"
        + (f" | GPU: {meta['gpu_name']}" if meta.get("gpu_name") else "")
        + f" | grid {meta['grid']} | {meta['wall_s']:.0f} s"
        + f" | {_load_text(meta.get('load'))}",
        "times are medians of interleaved rounds; 'vs eager'/'vs compile' = their time / tensorops' time (with the "
        "min-max over rounds where it is wide); '% copy' = a copy of the same bytes' time / tensorops' time",
    ]
    if not info.get("compiled"):
        lines.append("WARNING: the tensorops extension is not compiled: its column is the native-torch fallback")
    body = table_rows(result["rows"])
    header = list(TABLE_COLUMNS)
    widths = [max([len(header[i])] + [len(b[i]) for b in body]) for i in range(len(header))]
    right = {"bytes", "eager", "compile", "tensorops", "vs eager", "vs compile", "GB/s", "% copy"}

    def line(cells: Sequence[str]) -> str:
        parts = []
        for i, c in enumerate(cells):
            if header[i] == "notes":
                parts.append(c)
            elif header[i] in right:
                parts.append(c.rjust(widths[i]))
            else:
                parts.append(c.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    lines.append(line(header))
    lines.append(line(["-" * w for w in widths]))
    lines += [line(b) for b in body]
    for s in result.get("skipped", []):
        lines.append(f"skipped on {s['device']}: {s['reason']}")
    return "\n".join(lines)


def markdown_table(result: Dict[str, Any]) -> str:
    """The rows as the README's markdown table (ratios with their min-max over rounds where that is wide)."""
    lines = [
        "| op | shape | dtype | layout | eager | torch.compile | tensorops | vs eager | vs compile | % of copy |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['layout']} | {fmt_time(r['eager_s'])} | "
            f"{fmt_time(r['compile_s'])} | {fmt_time(r['tensorops_s'])} | "
            f"{fmt_ratio(r['speedup_vs_eager'], r.get('speedup_vs_eager_spread'))} | "
            f"{fmt_ratio(r['speedup_vs_compile'], r.get('speedup_vs_compile_spread'))} | "
            f"{_fmt(r['pct_of_copy'], '.0f', '%')} |"
        )
    return "\n".join(lines)


def plot(result: Dict[str, Any], path: str) -> None:
    """Speedup of tensorops over native eager against bytes moved, log-log, one line per series (a family of
    rows differing only in size); one panel per (device, op family) so the lines stay readable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["speedup_vs_eager"]]
    devices = sorted({r["device"] for r in rows}) or ["cpu"]
    families = [f for f in ("normalize", "clamp", "cat", "split", "crop") if any(r["op"].startswith(f) for r in rows)]
    families = families or ["normalize"]
    from matplotlib.ticker import FuncFormatter

    ncols = min(2, len(families))
    per_device = (len(families) + ncols - 1) // ncols
    fig, axes = plt.subplots(per_device * len(devices), ncols, figsize=(7.5 * ncols, 4.8 * per_device * len(devices)),
                             squeeze=False)
    for k in range(len(families), ncols * per_device):  # the empty panel of an odd number of families
        for i in range(len(devices)):
            axes[i * per_device + k // ncols][k % ncols].set_visible(False)
    times_x = FuncFormatter(lambda v, _: f"{v:g}x")
    meta = result["meta"]
    for i, dev in enumerate(devices):
        where = meta.get("gpu_name") if dev.startswith("cuda") else f"{meta['cpu_model']} x{meta['cpu_count']}"
        for j, fam in enumerate(families):
            ax = axes[i * per_device + j // ncols][j % ncols]
            series: Dict[str, List[Tuple[int, float]]] = {}
            for r in rows:
                if r["device"] == dev and r["op"].startswith(fam):
                    series.setdefault(r["series"], []).append((r["bytes"], r["speedup_vs_eager"]))
            colors = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
            for k, (name, pts) in enumerate(sorted(series.items())):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=colors(k), label=name)
            ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(times_x)
            ax.yaxis.set_minor_formatter(times_x)
            ax.set_xlabel("bytes moved by the op")
            ax.set_ylabel("speedup vs native eager (x)")
            ax.set_title(f"{fam} on {dev} ({where})", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if series:
                ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"tensorops {meta.get('tensorops_build_info', {}).get('version')} vs native torch "
                 f"{meta['torch']} ({meta['grid']} grid; > 1 is faster)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

"""The benchmark runner: which rows to run (the ops of ``tensorops.registry``, whose ``bench`` names the
benchmarks/ops/<bench>.py module that lists their ``Case``s), timing each the same way (timing.py), with the load of
``--load N`` (load.py), and the table, JSON, markdown and plot (report.py) with the machine's description
(machine.py). The family modules import only benchmarks/case.py; this module finds them by name, so no module
imports back.
"""
from __future__ import annotations

import gc
import importlib.util
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from benchmarks.case import GRIDS, Case
from benchmarks.load import DEFAULT_LIMIT_S, BusyLoad
from benchmarks.machine import machine_info
from benchmarks.report import format_table, markdown_table, plot, short_error, write_json
from benchmarks.timing import CopyBaseline, run_case
from tensorops import registry

# Seconds each timed statement runs for (blocked_autorange's min_run_time), per grid.
MIN_RUN_TIME = {"smoke": 0.002, "quick": 0.04, "full": 0.1}
# ... but at least this many timed blocks, so a median of a slow statement is a median and not one sample
# (each statement gets at most timing.MAX_STMT_S seconds for that).
MIN_SAMPLES = {"smoke": 1, "quick": 3, "full": 5}
# Interleaved rounds per row (eager, compile and tensorops each timed once per round), per grid.
ROUNDS = {"smoke": 2, "quick": 7, "full": 9}
# A safety net so --quick keeps its time limit on a slow machine: once this many seconds went into
# torch.compile (cold caches), the remaining rows of the run skip their compiled column, and say so.
COMPILE_BUDGET_S = {"smoke": 60.0, "quick": 60.0, "full": 300.0}


def module_cases(bench: str, device: torch.device, grid: str) -> List[Case]:
    """The cases of benchmarks/ops/<bench>.py, each checked to time a registry op whose ``bench`` is that module
    (a row for an op the registry does not list, or lists elsewhere, is an error, never skipped)."""
    cases = importlib.import_module("benchmarks." + bench).cases(device, grid)
    for c in cases:
        info = registry.OPS.get(c.times)
        if info is None or info.bench != bench:
            where = "not in tensorops.registry" if info is None else f"registered with bench={info.bench!r}"
            raise ValueError(f"benchmarks/{bench}.py: row {c.op} {c.case} times {c.times!r}, {where}")
    return cases


def benchmarked_ops() -> Tuple[str, ...]:
    """The registry ops that some row of the full grid times (on CPU or CUDA), in registry order: the default
    and the choices of ``--ops``."""
    timed = {c.times for bench in registry.benchmark_modules() for d in ("cpu", "cuda")
             for c in module_cases(bench, torch.device(d), "full")}
    return tuple(name for name in registry.OPS if name in timed)


def resolve_ops(names: Sequence[str]) -> List[str]:
    """``--ops`` items as registry op names: an op name, or a benchmark module's name for all of its ops
    (``cat_split``: cat and split); raises ValueError naming what is unknown or has no benchmark rows."""
    choices = benchmarked_ops()
    out: List[str] = []
    for name in names:
        if name in registry.OPS:
            out.append(name)
        elif name in registry.benchmark_modules():
            out += [o for o in choices if registry.OPS[o].bench == name]
        else:
            raise ValueError(f"unknown op {name!r}; choose from {','.join(choices)}")
    missing = [o for o in out if o not in choices]
    if missing:
        raise ValueError(f"no benchmark rows time {missing}; choose from {','.join(choices)}")
    return list(dict.fromkeys(out))


def collect_cases(device: torch.device, grid: str, ops: Sequence[str]) -> List[Case]:
    """The cases that time ``ops`` (registry names) on ``device``, module by module in the order of ``ops``."""
    cases: List[Case] = []
    for bench in dict.fromkeys(registry.OPS[op].bench for op in ops):
        cases += [c for c in module_cases(bench, device, grid) if c.times in ops]
    return cases


# how to get each optional package a row may need (Case.requires names the module)
INSTALL = {
    "torchvision": "pip install --no-build-isolation -e '.[torchvision]' adds the torchvision paired with your torch",
    "skimage": "pip install scikit-image: its wheel ships the sample photographs the real-photo rows are cut from",
}


def missing_packages(case: Case) -> List[str]:
    """The optional packages ``case`` needs that are not installed (found without importing them)."""
    return [name for name in case.requires if importlib.util.find_spec(name) is None]


def drop_unavailable(plan: List[Tuple[torch.device, Case]], say: Callable[[str], None]
                     ) -> Tuple[List[Tuple[torch.device, Case]], List[Dict[str, Any]]]:
    """The plan without the rows whose optional packages are missing, and one record per skipped op and package
    (said once each, so a run on a bare install says what it left out and how to get it)."""
    kept: List[Tuple[torch.device, Case]] = []
    skipped: Dict[Tuple[str, str], int] = {}
    for dev, case in plan:
        missing = missing_packages(case)
        if missing:
            key = (case.op, ",".join(missing))
            skipped[key] = skipped.get(key, 0) + 1
        else:
            kept.append((dev, case))
    records = []
    for (op, packages), count in skipped.items():
        how = "; ".join(INSTALL.get(name, f"pip install {name}") for name in packages.split(","))
        say(f"skipped {count} {op} row(s): they need {packages} (not installed; {how})")
        records.append({"op": op, "rows": count, "needs": packages})
    return kept, records


def _parallel_stats() -> Dict[str, int]:
    """The CPU thread policy's decision counts so far (tensorops._C.parallel_stats), {} without the extension."""
    import tensorops

    c = tensorops._extension._C
    return dict(c.parallel_stats()) if c is not None and hasattr(c, "parallel_stats") else {}


def _stats_delta(before: Dict[str, int], after: Dict[str, int]) -> Dict[str, int]:
    """What the policy decided during one row: counts as differences, the recent wait ratio as it was at the end."""
    counts = ("parallel_passes", "serial_passes", "probes", "costly_regions", "descheduled_ns")
    out = {k: after[k] - before.get(k, 0) for k in counts if k in after}
    if "recent_wait_ratio_1024" in after:
        out["recent_wait_ratio_after"] = round(after["recent_wait_ratio_1024"] / 1024, 3)
    return out


def run(
    devices: Sequence[str] = ("cpu",),
    grid: str = "quick",
    ops: Optional[Sequence[str]] = None,
    out_dir: Optional[str] = None,
    do_compile: bool = True,
    progress: bool = True,
    min_run_time: Optional[float] = None,
    say: Callable[[str], None] = print,
    threads: Optional[int] = None,
    load: int = 0,
    load_limit_s: Optional[float] = None,
) -> Dict[str, Any]:
    """Run the grid and return ``{"meta": ..., "rows": [...], "files": {...}}``.

    ``ops``: tensorops.registry names (default: every op with benchmark rows, ``benchmarked_ops()``).

    With ``out_dir`` the JSON and the PNG are written there (file names say the devices and the grid).
    ``threads`` sets torch's intra-op threads for the whole run (default: torch's choice, all cores).
    ``load`` busy processes (benchmarks/load.py) run while the rows are timed and stop with the run, or after
    ``load_limit_s`` seconds; ``meta["load"]`` records them.
    """
    if threads is not None:
        torch.set_num_threads(threads)
    if grid not in GRIDS:
        raise ValueError(f"grid must be one of {GRIDS}, got {grid!r}")
    ops = benchmarked_ops() if ops is None else resolve_ops(ops)
    mrt = MIN_RUN_TIME[grid] if min_run_time is None else min_run_time
    start = time.perf_counter()
    try:  # many shapes through one function must not hit dynamo's recompile limit and silently run eager
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    except AttributeError:
        pass

    plan: List[Tuple[torch.device, Case]] = []
    for d in devices:
        dev = torch.device(d)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda was asked for but torch sees no CUDA GPU")
        plan += [(dev, c) for c in collect_cases(dev, grid, ops)]
    plan, skipped_rows = drop_unavailable(plan, say)

    stem = None
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        stem = os.path.join(out_dir, f"bench_{'_'.join(torch.device(d).type for d in devices)}_{grid}"
                            + (f"_threads{threads}" if threads else "") + (f"_load{load}" if load else ""))
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
        "compile": do_compile,
        "copy_baseline": "dst.copy_(src) of uint8 buffers holding half the row's bytes each, same device, same run",
        "rows_planned": len(plan),
        "rows_skipped": skipped_rows,
    })

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
            before = _parallel_stats()
            row = run_case(
                case, dev, grid, copy, mrt, do_compile and not over,
                compile_skip=f"compile budget of {budget:.0f} s for this grid spent" if over else "",
                min_samples=MIN_SAMPLES[grid], rounds=ROUNDS[grid],
            )
            compile_spent += row["compile_warmup_s"] or 0.0
            row["parallel_policy"] = _stats_delta(before, _parallel_stats())
            rows.append(row)
            if stem is not None:  # the rows so far, so that a run killed from outside keeps what it measured
                write_json({"meta": dict(meta, partial=True, rows_done=len(rows),
                                         wall_s=time.perf_counter() - start), "rows": rows, "files": {}},
                           stem + ".json")
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

    meta.update({
        "partial": False,
        "rows_done": len(rows),
        "load": load_info,
        "compile_seconds_total": compile_spent,
        "wall_s": time.perf_counter() - start,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    result: Dict[str, Any] = {"meta": meta, "rows": rows, "files": {}}
    if stem is not None:
        result["files"] = {"json": stem + ".json", "png": stem + ".png"}
        try:
            plot(result, stem + ".png")
        except Exception as exc:  # a broken matplotlib must not lose the numbers
            result["files"]["png"] = None
            result["meta"]["plot_error"] = short_error(exc)
            say(f"warning: could not write the plot: {short_error(exc)}")
        write_json(result, stem + ".json")
        with open(stem + ".md", "w", encoding="utf-8") as f:
            f.write(f"<!-- {format_table(result).splitlines()[0]} -->\n" + markdown_table(result) + "\n")
        result["files"]["md"] = stem + ".md"
    return result

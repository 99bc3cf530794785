"""The summary gpu_check.sh rewrites after every step: the steps (status, seconds), tests passed/failed (from the
junit XML), the `-m cuda` tests collected, sanitizer error counts (from the compute-sanitizer logs) and each op's %
of copy bandwidth (from the benchmark JSON).

    python -m benchmarks.gpu_summary OUTDIR [--steps-file OUTDIR/steps.tsv --deadline S [--dry-run]]

reads OUTDIR/steps.tsv, OUTDIR/collected.json, OUTDIR/junit.xml, OUTDIR/memcheck.log, OUTDIR/racecheck.log and
OUTDIR/bench_*.json (whatever exists: a missing file is reported as "not run"), prints the summary, writes it to
OUTDIR/summary.txt and OUTDIR/summary.json (each replaced atomically, so a kill never leaves half a file), and exits
1 if anything failed or is missing, 0 if all is clean. With --steps-file (gpu_check.sh's call) it exits 0 whenever
it could write the summary: the script decides its own exit code from the steps.

This module is also a pytest plugin (``pytest -p benchmarks.gpu_summary``): after collection it writes
$GPU_CHECK_OUTDIR/collected.json with the number of selected tests and how many of them are marked ``slow``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional

COPY_FLOOR_PCT = 85.0  # the issues' CUDA target: >= 85% of the measured copy bandwidth for large inputs


def parse_junit(path: str) -> Dict[str, Any]:
    """Counts from a pytest junit XML (root <testsuites> or <testsuite>), and the ids of failed tests."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed: List[str] = []
    for s in suites:
        for key in counts:
            counts[key] += int(s.get(key, 0) or 0)
        for case in s.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    counts["failed"] = counts["failures"] + counts["errors"]
    counts["passed"] = counts["tests"] - counts["failed"] - counts["skipped"]
    counts["failed_tests"] = failed
    return counts


_ERROR_SUMMARY = re.compile(r"=+\s*ERROR SUMMARY:\s*(\d+)\s+error", re.IGNORECASE)
_RACECHECK_SUMMARY = re.compile(r"=+\s*RACECHECK SUMMARY:\s*(\d+)\s+hazards? displayed\s*\((\d+)\s+errors?,\s*(\d+)\s+warnings?\)",
                                re.IGNORECASE)


def parse_sanitizer_log(path: str) -> Dict[str, Any]:
    """Error count from a compute-sanitizer log: the last ``ERROR SUMMARY: N errors`` line (racecheck's
    ``RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)`` when that is all there is).
    ``errors`` is None when no summary line is found (the tool did not finish)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    out: Dict[str, Any] = {"errors": None, "warnings": None, "summary": None}
    race = _RACECHECK_SUMMARY.findall(text)
    if race:
        out["warnings"] = int(race[-1][2])
        out["errors"] = int(race[-1][1])
        out["summary"] = "RACECHECK SUMMARY: {} hazards ({} errors, {} warnings)".format(*race[-1])
    err = _ERROR_SUMMARY.findall(text)
    if err:
        out["errors"] = max(int(err[-1]), out["errors"] or 0)
        out["summary"] = (out["summary"] + "; " if out["summary"] else "") + f"ERROR SUMMARY: {err[-1]} errors"
    return out


def pytest_collection_finish(session) -> None:
    """pytest hook: the selected tests' counts, for summary.json (cuda_tests_collected, ..._large_...)."""
    outdir = os.environ.get("GPU_CHECK_OUTDIR")
    if not outdir:
        return
    items = session.items
    counts = {
        "collected": len(items),
        "slow": sum(1 for it in items if it.get_closest_marker("slow") is not None),
        "markexpr": session.config.getoption("markexpr", "") or "",
    }
    _write_atomic(os.path.join(outdir, "collected.json"), json.dumps(counts))


def pytest_runtest_logreport(report) -> None:
    """pytest hook: each test's outcome appended to $GPU_CHECK_OUTDIR/test_progress.jsonl as it finishes, so a
    test run killed at the deadline (pytest then writes no junit XML) still counts what ran."""
    outdir = os.environ.get("GPU_CHECK_OUTDIR")
    if not outdir or not (report.when == "call" or report.outcome != "passed"):
        return
    if report.when == "teardown" and report.outcome == "skipped":
        return
    with open(os.path.join(outdir, "test_progress.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}) + "\n")


def parse_progress(path: str) -> Dict[str, Any]:
    """Counts from test_progress.jsonl (one line per test outcome), like parse_junit's."""
    passed = skipped = 0
    failed: List[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut by the kill
            if r.get("outcome") == "failed":
                failed.append(f"{r.get('nodeid')} ({r.get('when')})")
            elif r.get("outcome") == "skipped":
                skipped += 1
            elif r.get("when") == "call":
                passed += 1
    return {"tests": passed + len(failed) + skipped, "passed": passed, "failed": len(failed), "skipped": skipped,
            "failed_tests": failed, "partial": True}


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def read_steps(path: str) -> List[Dict[str, Any]]:
    """gpu_check.sh's steps.tsv: name, status, seconds, note per line."""
    steps = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or not parts[0]:
                continue
            try:
                secs: Any = int(parts[2])
            except ValueError:
                secs = None
            steps.append({"name": parts[0], "status": parts[1], "seconds": secs,
                          "note": parts[3] if len(parts) > 3 else ""})
    return steps


def bench_summary(rows: List[Dict[str, Any]], device_type: str = "cuda") -> List[Dict[str, Any]]:
    """One entry per (op, series) on ``device_type``: the largest row's % of copy bandwidth and speedups."""
    by_series: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in rows:
        if str(r.get("device", "")).split(":")[0] == device_type:
            by_series.setdefault((r["op"], r["series"]), []).append(r)
    out = []
    for (op, series), rs in sorted(by_series.items()):
        largest = max(rs, key=lambda r: r["bytes"])
        pcts = [r["pct_of_copy"] for r in rs if r.get("pct_of_copy") is not None]
        out.append({
            "op": op,
            "series": series,
            "largest_case": f"{largest['shape']} {largest['dtype']}",
            "bytes": largest["bytes"],
            "pct_of_copy": largest.get("pct_of_copy"),
            "gbps": largest.get("gbps"),
            "copy_gbps": largest.get("copy_gbps"),
            "speedup_vs_eager": largest.get("speedup_vs_eager"),
            "speedup_vs_compile": largest.get("speedup_vs_compile"),
            "min_pct_of_copy": min(pcts) if pcts else None,
            "wrong_results": sum(1 for r in rs if r.get("check") != "ok"),
        })
    return out


def _f(v: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{suffix}"


# gpu_check.sh's steps whose skip for the deadline, or partial run (status "partial": sanitize_ops stopped at the end
# of the step's share, naming the ops it did not run), is recorded but is not a problem.
SANITIZER_STEPS = ("memcheck", "racecheck")


def summarize(outdir: str, device_type: str = "cuda", steps_file: Optional[str] = None,
              deadline: Optional[int] = None, dry_run: bool = False) -> Dict[str, Any]:
    """Everything the summary says, as a dict (``ok`` is False when something failed or is missing).

    With ``steps_file`` (gpu_check.sh) only what the steps that ran should have produced is required, a step
    that failed, timed out or was killed is a problem, and a sanitizer recorded as unavailable is not."""
    result: Dict[str, Any] = {"outdir": outdir, "problems": [], "deadline_s": deadline, "dry_run": dry_run}
    problems: List[str] = result["problems"]
    steps = read_steps(steps_file) if steps_file and os.path.exists(steps_file) else None
    result["steps"] = steps if steps is not None else []
    status = {st["name"]: st["status"] for st in result["steps"]}
    result["elapsed_s"] = sum(st["seconds"] or 0 for st in result["steps"])
    for st in result["steps"]:
        # a sanitizer step skipped for the deadline (its fixed share too short) is recorded with its reason, not a
        # problem: the sanitizers never make a correct build fail its deadline
        if st["status"] in ("failed", "timeout", "killed") or (
                st["status"] == "skipped" and not dry_run and st["name"] not in SANITIZER_STEPS):
            problems.append(f"step {st['name']} {st['status']}" + (f" ({st['note']})" if st["note"] else ""))

    def expected(step: str) -> bool:  # should this step's output be here?
        return steps is None or (status.get(step) in ("ok", "failed", "partial") and not dry_run)

    collected = os.path.join(outdir, "collected.json")
    result["cuda_tests_collected"] = result["cuda_large_tests_collected"] = None
    if os.path.exists(collected):
        try:
            with open(collected, encoding="utf-8") as f:
                c = json.load(f)
            result["cuda_tests_collected"], result["cuda_large_tests_collected"] = c["collected"], c["slow"]
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"collected.json unreadable: {exc}")

    junit = os.path.join(outdir, "junit.xml")
    if os.path.exists(junit):
        try:
            result["tests"] = parse_junit(junit)
            if result["tests"]["failed"]:
                problems.append(f"{result['tests']['failed']} test(s) failed")
            if result["tests"]["tests"] == 0:
                problems.append("no tests ran")
        except ET.ParseError as exc:
            result["tests"] = None
            problems.append(f"junit.xml unreadable: {exc}")
    elif os.path.exists(os.path.join(outdir, "test_progress.jsonl")):
        result["tests"] = parse_progress(os.path.join(outdir, "test_progress.jsonl"))
        problems.append(f"tests did not finish (no junit.xml; {result['tests']['tests']} results recorded)")
        if result["tests"]["failed"]:
            problems.append(f"{result['tests']['failed']} test(s) failed")
    else:
        result["tests"] = None
        if expected("tests"):
            problems.append("tests not run (no junit.xml)")
    t = result["tests"] or {}
    result["tests_passed"], result["tests_failed"] = t.get("passed"), t.get("failed")

    result["sanitizers"] = {}
    result["sanitizer_errors"] = {}
    for tool in ("memcheck", "racecheck"):
        log = os.path.join(outdir, f"{tool}.log")
        result["sanitizer_errors"][tool] = None
        if status.get(tool) == "unavailable" or dry_run:
            result["sanitizers"][tool] = {"errors": None, "warnings": None, "unavailable": True,
                                          "summary": status.get(tool, "not run") if not dry_run else "dry run"}
            continue
        if not os.path.exists(log) or not expected(tool):
            result["sanitizers"][tool] = None
            if expected(tool):
                problems.append(f"{tool} not run (no {tool}.log)")
            continue
        s = parse_sanitizer_log(log)
        result["sanitizers"][tool] = s
        result["sanitizer_errors"][tool] = s["errors"]
        if s["errors"] is None:
            problems.append(f"{tool} did not finish (no summary line in {tool}.log)")
        elif s["errors"]:
            problems.append(f"{tool} found {s['errors']} error(s)")

    jsons = sorted(glob.glob(os.path.join(outdir, "bench_*.json")))
    result["bench_files"] = jsons
    rows: List[Dict[str, Any]] = []
    for path in jsons:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        rows += data.get("rows", [])
        result.setdefault("bench_meta", data.get("meta", {}))
        meta = data.get("meta", {})
        if meta.get("partial"):  # written row by row: a run stopped from outside leaves the rows it finished
            result["bench_partial"] = f"{meta.get('rows_done')} of {meta.get('rows_planned')} rows"
            problems.append(f"benchmarks did not finish ({os.path.basename(path)}: {result['bench_partial']})")
    result["bench"] = bench_summary(rows, device_type)
    result["pct_of_copy"] = {f"{b['op']}: {b['series']}": b["pct_of_copy"] for b in result["bench"]}
    if not jsons:
        if expected("bench"):
            problems.append("benchmarks not run (no bench_*.json)")
    elif not result["bench"]:
        problems.append(f"no {device_type} rows in the benchmark JSON")
    wrong = sum(b["wrong_results"] for b in result["bench"])
    if wrong:
        problems.append(f"{wrong} benchmark row(s) where tensorops' result differs from native torch")
    result["ok"] = not problems
    return result


def format_summary(s: Dict[str, Any]) -> str:
    lines = [f"== gpu_check summary ({s['outdir']})" + (" DRY RUN" if s.get("dry_run") else "")]
    if s.get("steps"):
        lines.append(f"steps ({s.get('elapsed_s')} s of a {s.get('deadline_s')} s deadline):")
        lines += [f"  {st['name']:<10} {st['status']:<11} {st['seconds']} s" + (f"  {st['note']}" if st["note"] else "")
                  for st in s["steps"]]
    if s.get("cuda_tests_collected") is not None:
        lines.append(f"-m cuda tests collected: {s['cuda_tests_collected']} "
                     f"({s['cuda_large_tests_collected']} of them large/slow)")
    meta = s.get("bench_meta") or {}
    if meta:
        lines.append(f"machine: {meta.get('gpu_name') or 'no GPU'}; torch {meta.get('torch')}; "
                     f"tensorops build {json.dumps(meta.get('tensorops_build_info'))}")
    t = s.get("tests")
    if t:
        lines.append(f"tests: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped (of {t['tests']})"
                     + (" - INCOMPLETE: the run was stopped" if t.get("partial") else ""))
        lines += [f"  FAILED {name}" for name in t["failed_tests"][:20]]
    else:
        lines.append("tests: not run")
    for tool, san in s["sanitizers"].items():
        if san is None:
            lines.append(f"{tool}: not run")
        elif san.get("unavailable"):
            lines.append(f"{tool}: unavailable ({san['summary']})")
        elif san["errors"] is None:
            lines.append(f"{tool}: NO SUMMARY LINE (did not finish?)")
        else:
            lines.append(f"{tool}: {san['errors']} errors ({san['summary']})")
    if s["bench"]:
        lines.append(f"benchmarks (largest size of each series; the target is >= {COPY_FLOOR_PCT:.0f}% of copy)"
                     + (f" - INCOMPLETE: {s['bench_partial']}" if s.get("bench_partial") else "") + ":")
        w = max(len(b["series"]) for b in s["bench"])
        for b in s["bench"]:
            flag = "" if b["pct_of_copy"] is None or b["pct_of_copy"] >= COPY_FLOOR_PCT else "  < target"
            lines.append(
                f"  {b['series']:<{w}}  {_f(b['pct_of_copy'], '5.0f', '%')} of copy "
                f"({_f(b['gbps'], '.0f')} of {_f(b['copy_gbps'], '.0f')} GB/s)  "
                f"vs eager {_f(b['speedup_vs_eager'], '.2f', 'x')}  vs compile {_f(b['speedup_vs_compile'], '.2f', 'x')}"
                f"{flag}"
            )
    else:
        lines.append("benchmarks: not run")
    if meta.get("plot_error"):
        lines.append(f"  plot not written: {meta['plot_error']}")
    lines.append("RESULT: " + ("all clean" if s["ok"] else "PROBLEMS: " + "; ".join(s["problems"])))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_summary", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir", help="the directory gpu_check.sh wrote into")
    p.add_argument("--device-type", default="cuda", help="which benchmark rows to summarize (default: cuda)")
    p.add_argument("--steps-file", help="gpu_check.sh's steps.tsv (name, status, seconds, note)")
    p.add_argument("--deadline", type=int, help="gpu_check.sh's global deadline in seconds")
    p.add_argument("--elapsed", type=int, help="seconds since gpu_check.sh started")
    p.add_argument("--dry-run", action="store_true", help="gpu_check.sh --dry-run: no test/bench/sanitizer output expected")
    args = p.parse_args(argv)
    if not os.path.isdir(args.outdir):
        p.error(f"{args.outdir} is not a directory")
    s = summarize(args.outdir, args.device_type, args.steps_file, args.deadline, args.dry_run)
    if args.elapsed is not None:
        s["elapsed_s"] = args.elapsed
    text = format_summary(s)
    print(text)
    _write_atomic(os.path.join(args.outdir, "summary.json"), json.dumps(s, indent=1))
    _write_atomic(os.path.join(args.outdir, "summary.txt"), text + "\n")
    if args.steps_file:
        return 0
    return 0 if s["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

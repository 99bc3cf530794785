"""The summary gpu_check.sh prints at the end: tests passed/failed (from the junit XML), sanitizer error counts
(from the compute-sanitizer logs) and each op's % of copy bandwidth (from the benchmark JSON).

    python -m benchmarks.gpu_summary OUTDIR

reads OUTDIR/junit.xml, OUTDIR/memcheck.log, OUTDIR/racecheck.log and OUTDIR/bench_*.json (whatever exists: a
missing file is reported as "not run"), prints the summary, writes it to OUTDIR/summary.txt and
OUTDIR/summary.json, and exits 1 if anything failed or is missing, 0 if all is clean.
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


def summarize(outdir: str, device_type: str = "cuda") -> Dict[str, Any]:
    """Everything the summary says, as a dict (``ok`` is False when something failed or is missing)."""
    result: Dict[str, Any] = {"outdir": outdir, "problems": []}
    problems: List[str] = result["problems"]

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
    else:
        result["tests"] = None
        problems.append("tests not run (no junit.xml)")

    result["sanitizers"] = {}
    for tool in ("memcheck", "racecheck"):
        log = os.path.join(outdir, f"{tool}.log")
        if not os.path.exists(log):
            result["sanitizers"][tool] = None
            problems.append(f"{tool} not run (no {tool}.log)")
            continue
        s = parse_sanitizer_log(log)
        result["sanitizers"][tool] = s
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
        result.setdefault("bench_skipped", []).extend(data.get("skipped", []))
    result["bench"] = bench_summary(rows, device_type)
    if not jsons:
        problems.append("benchmarks not run (no bench_*.json)")
    elif not result["bench"]:
        problems.append(f"no {device_type} rows in the benchmark JSON")
    wrong = sum(b["wrong_results"] for b in result["bench"])
    if wrong:
        problems.append(f"{wrong} benchmark row(s) where tensorops' result differs from native torch")
    result["ok"] = not problems
    return result


def format_summary(s: Dict[str, Any]) -> str:
    lines = [f"== gpu_check summary ({s['outdir']})"]
    meta = s.get("bench_meta") or {}
    if meta:
        lines.append(f"machine: {meta.get('gpu_name') or 'no GPU'}; torch {meta.get('torch')}; "
                     f"tensorops build {json.dumps(meta.get('tensorops_build_info'))}")
    t = s.get("tests")
    if t:
        lines.append(f"tests: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped (of {t['tests']})")
        lines += [f"  FAILED {name}" for name in t["failed_tests"][:20]]
    else:
        lines.append("tests: not run")
    for tool, san in s["sanitizers"].items():
        if san is None:
            lines.append(f"{tool}: not run")
        elif san["errors"] is None:
            lines.append(f"{tool}: NO SUMMARY LINE (did not finish?)")
        else:
            lines.append(f"{tool}: {san['errors']} errors ({san['summary']})")
    if s["bench"]:
        lines.append(f"benchmarks (largest size of each series; the target is >= {COPY_FLOOR_PCT:.0f}% of copy):")
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
    for sk in s.get("bench_skipped", []):
        lines.append(f"  skipped: {sk.get('reason')}")
    lines.append("RESULT: " + ("all clean" if s["ok"] else "PROBLEMS: " + "; ".join(s["problems"])))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_summary", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir", help="the directory gpu_check.sh wrote into")
    p.add_argument("--device-type", default="cuda", help="which benchmark rows to summarize (default: cuda)")
    args = p.parse_args(argv)
    if not os.path.isdir(args.outdir):
        p.error(f"{args.outdir} is not a directory")
    s = summarize(args.outdir, args.device_type)
    text = format_summary(s)
    print(text)
    with open(os.path.join(args.outdir, "summary.txt"), "w", encoding="utf-8") as f:
        f.write(text + "\n")
    with open(os.path.join(args.outdir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(s, f, indent=1)
    return 0 if s["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

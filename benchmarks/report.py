"""What a benchmark run writes: the plain-text table, the README's markdown table, the JSON and the plot."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple


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


def short_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters), for a row or the JSON's meta."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:300] if msg else ''}"


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
    rows differing only in size); one panel per (device, registry op timed) so the lines stay readable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["speedup_vs_eager"]]
    devices = sorted({r["device"] for r in rows}) or ["cpu"]
    families = list(dict.fromkeys(r["times"] for r in rows)) or ["normalize"]  # one panel per op timed
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
                if r["device"] == dev and r["times"] == fam:
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

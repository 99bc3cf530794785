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


# the families whose rows are the image pipeline (one batch of photo-sized images each): the plot's first panel
IMAGE_OPS = ("crop_mirror_normalize", "resized_crop_mirror_normalize", "decode_resized_crop_mirror_normalize")
_SHORT = (("decode_resized_crop_mirror_normalize jpeg->f32", "JPEG bytes -> batch (decode+resize)"),
          ("resized_crop_mirror_normalize", "resize"), (" u8->f32", ""), (" hwc", ", HWC memory"),
          (" vs torch-native", ""))


def peer(row: Dict[str, Any]) -> str:
    """Whom the row's eager column is: torchvision v2, Pillow + torch, or torch alone."""
    expr = row.get("eager_expr") or ""
    if expr.startswith("torchvision"):
        return "torchvision v2"
    if expr.startswith("Pillow"):
        return "Pillow + torch"
    return "torch"


def bar_label(row: Dict[str, Any], with_device: bool = False) -> str:
    """A row's name on a bar: its series, shortened, and its case where the series does not say it."""
    name = row["series"]
    for long, short in _SHORT:
        name = name.replace(long, short)
    if row["case"] not in row["series"] and row["case"] not in ("imagenet",):
        name += f" [{row['case']}]"
    return (f"{row['device']}: " if with_device else "") + name


def is_image_row(row: Dict[str, Any]) -> bool:
    return row["times"] in IMAGE_OPS or "augment" in row["times"]


def plot_groups(rows: Sequence[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]],
                                                          List[Dict[str, Any]], List[Tuple[str, str]]]:
    """How :func:`plot` places the rows: (image-pipeline bars, bars of series timed at one size, rows of series
    at several sizes, the (device, op) line panels those fill). Every row is in exactly one of the first three."""
    images = [r for r in rows if is_image_row(r)]
    others = [r for r in rows if not is_image_row(r)]
    counts: Dict[Tuple[str, str], int] = {}
    for r in others:
        counts[(r["device"], r["series"])] = counts.get((r["device"], r["series"]), 0) + 1
    single = [r for r in others if counts[(r["device"], r["series"])] == 1]
    lines = [r for r in others if counts[(r["device"], r["series"])] > 1]
    return images, single, lines, list(dict.fromkeys((r["device"], r["times"]) for r in lines))


def plot(result: Dict[str, Any], path: str) -> None:
    """The run at a glance: speedup of tensorops over the row's native eager code (> 1: tensorops is faster).

    * first, one bar per image-pipeline row (crop, resize, decode, augment: a batch of photo-sized images),
      coloured by whom the eager column is (torchvision v2, or torch / Pillow alone where torchvision is absent);
    * then one bar per row timed at a single size (a line needs two points);
    * then, per (device, op) with rows at several sizes, speedup against bytes moved, log-log, one line per
      series.
    Bars carry their ratio and the min-max over the interleaved rounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    rows = [r for r in result["rows"] if r["speedup_vs_eager"]]
    devices = sorted({r["device"] for r in rows}) or ["cpu"]
    several = len(devices) > 1
    images, single, lines, panels = plot_groups(rows)
    ncols = 2
    line_rows = (len(panels) + ncols - 1) // ncols
    bar_h = [0.32 * len(b) + 1.0 for b in (images, single) if b]
    heights = bar_h + [4.2] * line_rows
    fig = plt.figure(figsize=(15, sum(heights) + 1.0), layout="constrained")
    meta = result["meta"]
    where = {d: (meta.get("gpu_name") if d.startswith("cuda") else f"{meta['cpu_model']} x{meta['cpu_count']}, "
                 f"{meta['torch_threads']} threads") for d in devices}
    fig.suptitle(f"tensorops {meta.get('tensorops_build_info', {}).get('version')} against native code, torch "
                 f"{meta['torch']}, {meta['grid']} grid: speedup = native time / tensorops time (> 1: tensorops is "
                 f"faster)\n" + "; ".join(f"{d}: {w}" for d, w in where.items()), fontsize=11)
    if not heights:
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return
    grid = fig.add_gridspec(len(heights), ncols, height_ratios=heights)
    times_x = FuncFormatter(lambda v, _: f"{v:g}x")
    colors = {"torchvision v2": "tab:blue", "torch": "tab:orange", "Pillow + torch": "tab:green"}

    def bars(ax, chosen: List[Dict[str, Any]], title: str, by_peer: bool) -> None:
        labels = [bar_label(r, several) + (f"  (vs {peer(r)})" if by_peer else "") for r in chosen]
        vals = [r["speedup_vs_eager"] for r in chosen]
        lo = [v - (r.get("speedup_vs_eager_spread") or {}).get("min", v) for r, v in zip(chosen, vals)]
        hi = [(r.get("speedup_vs_eager_spread") or {}).get("max", v) - v for r, v in zip(chosen, vals)]
        ys = list(range(len(chosen)))[::-1]
        col = [colors.get(peer(r), "tab:grey") if by_peer else "tab:purple" for r in chosen]
        ax.barh(ys, vals, color=col, xerr=[[max(0.0, x) for x in lo], [max(0.0, x) for x in hi]],
                error_kw=dict(ecolor="black", elinewidth=0.8, capsize=2), height=0.7)
        ax.set_yticks(ys, labels, fontsize=8)
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
        top = max(vals + [v + h for v, h in zip(vals, hi)])
        ax.set_xlim(min(0.5, min(vals) * 0.8), top * 2.2)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(times_x)
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        for y, v, h in zip(ys, vals, hi):
            ax.text(v + h, y, f" {v:.2f}x", va="center", fontsize=8)
        ax.set_xlabel("speedup vs native (x, log scale); whiskers: min-max over rounds")
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(True, axis="x", which="major", alpha=0.3)
        if by_peer:
            seen = list(dict.fromkeys(peer(r) for r in chosen))
            handles = [plt.Rectangle((0, 0), 1, 1, color=colors.get(p, "tab:grey")) for p in seen]
            ax.legend(handles, [f"native = {p}" for p in seen], fontsize=8, loc="lower right")

    k = 0
    if images:
        bars(fig.add_subplot(grid[k, :]), images, "Image batches (32 photo-sized images unless the label says "
             "otherwise): crop, resize, decode, augment against the per-image code a user writes", True)
        k += 1
    if single:
        bars(fig.add_subplot(grid[k, :]), single, "Other ops, at one size each, against native eager torch", False)
        k += 1
    for j, (dev, fam) in enumerate(panels):
        ax = fig.add_subplot(grid[k + j // ncols, j % ncols])
        series: Dict[str, List[Tuple[int, float]]] = {}
        for r in lines:
            if r["device"] == dev and r["times"] == fam:
                series.setdefault(r["series"], []).append((r["bytes"], r["speedup_vs_eager"]))
        cmap = plt.get_cmap("tab10")
        for c, (name, pts) in enumerate(sorted(series.items())):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=cmap(c % 10), label=name)
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ys = [p[1] for pts in series.values() for p in pts] + [1.0]
        narrow = max(ys) / min(ys) < 5  # less than a decade: ticks at finer steps, so the axis still reads
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
                                              if narrow else (1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(times_x)
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.set_xlabel("bytes moved by the op")
        ax.set_ylabel("speedup vs native eager (x)")
        ax.set_title(f"{fam} on {dev}, by size", fontsize=10, loc="left")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.savefig(path, dpi=100)
    plt.close(fig)

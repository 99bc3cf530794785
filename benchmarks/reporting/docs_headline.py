"""The README's headline: which rows of which results files it shows (``HEADLINE``), each row's ratio to each
peer (``headline_data``), as a table (``view_headline``) and as a picture (``draw``: docs/_static/headline.png,
its numbers in docs/_static/headline.json)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from benchmarks.docs_views import Table, load
from benchmarks.report import fmt_ratio

FIGURE = "docs/_static/headline.png"
FIGURE_DATA = "docs/_static/headline.json"

# The README's headline: (label, file, how to find the row, the peers it is compared with). A row that is no
# longer in its file is an error, so renaming a benchmark row means choosing the headline again, on purpose.
QUICK = "benchmarks/results/bench_cpu_quick.json"
RCMN = "benchmarks/results/resized_crop_mirror_normalize/bench_cpu_quick_threads1.json"
DECODE = "benchmarks/results/decode_resized_crop_mirror_normalize/bench_cpu_quick_threads1.json"
PIPELINE = "benchmarks/results/pipeline_quick.json"
HEADLINE: Tuple[Tuple[str, str, Dict[str, Any], Tuple[str, ...]], ...] = (
    ("normalize u8->f32, 32x3x224x224", QUICK,
     dict(op="normalize", shape="32x3x224x224", dtype="u8->f32", layout="NCHW"), ("eager", "compile")),
    ("normalize u8->f32, NHWC->NCHW", QUICK,
     dict(op="normalize", shape="32x3x224x224", dtype="u8->f32", layout="NHWC->NCHW"), ("eager", "compile")),
    ("clamp, (1,3,1,1) bounds", QUICK,
     dict(op="clamp", shape="32x3x224x224", dtype="f32", layout="NCHW, (1,3,1,1) bounds"), ("eager", "compile")),
    ("clamp, number bounds", QUICK,
     dict(op="clamp", shape="32x3x224x224", dtype="f32", layout="NCHW, scalar bounds"), ("eager", "compile")),
    ("clamp forward+backward", QUICK,
     dict(op="clamp_fwd_bwd", shape="32x3x224x224", dtype="f32"), ("eager", "compile")),
    ("cat of 10,000 (64,) tensors", QUICK, dict(op="cat", shape="10000 x (64), dim 0"), ("eager",)),
    ("split into 100 pieces", QUICK, dict(op="split", shape="(6400) -> 100 pieces, dim 0"), ("eager",)),
    ("stack 8 images", QUICK, dict(op="stack", shape="8 x (3,224,224), dim 0"), ("eager", "compile")),
    ("crop_mirror_normalize, 32 images", QUICK,
     dict(op="crop_mirror_normalize", shape="32xlist of (3,256-320,256-320)->224x224"), ("eager",)),
    # the resize and decode rows twice: synthetic photo-like images, and real photographs (case.real_photos)
    ("resized_crop_mirror_normalize, train, decode_jpeg's layout, 1 thread, photo-like", RCMN,
     dict(series="resized_crop_mirror_normalize u8->f32 train hwc"), ("torchvision",)),
    ("resized_crop_mirror_normalize, train, decode_jpeg's layout, 1 thread, real photos", RCMN,
     dict(series="resized_crop_mirror_normalize u8->f32 train hwc real photos"), ("torchvision",)),
    ("resized_crop_mirror_normalize, eval, decode_jpeg's layout, 1 thread, photo-like", RCMN,
     dict(series="resized_crop_mirror_normalize u8->f32 eval hwc"), ("torchvision",)),
    ("resized_crop_mirror_normalize, eval, decode_jpeg's layout, 1 thread, real photos", RCMN,
     dict(series="resized_crop_mirror_normalize u8->f32 eval hwc real photos"), ("torchvision",)),
    ("JPEG bytes to batch (decode op), train, 1 thread, photo-like", DECODE,
     dict(series="decode_resized_crop_mirror_normalize jpeg->f32 train"), ("torchvision",)),
    ("JPEG bytes to batch (decode op), train, 1 thread, real photos", DECODE,
     dict(series="decode_resized_crop_mirror_normalize jpeg->f32 train real photos"), ("torchvision",)),
    ("DataLoader from JPEG bytes, train, 2 workers (path f)", PIPELINE, dict(mode="train", workers=2, path="f"),
     ("dataloader",)),
)
PEERS = {  # peer -> (column title, the JSON field of the ratio, of its spread)
    "eager": ("vs eager torch", "speedup_vs_eager", "speedup_vs_eager_spread"),
    "compile": ("vs torch.compile", "speedup_vs_compile", "speedup_vs_compile_spread"),
    "torchvision": ("vs torchvision v2", "speedup_vs_eager", "speedup_vs_eager_spread"),
    "dataloader": ("vs torchvision v2", "vs_tv_tensor", "vs_tv_tensor"),
}
COLUMNS = ("vs eager torch", "vs torch.compile", "vs torchvision v2")


def find(result: Dict[str, Any], where: Dict[str, Any], path: str) -> Dict[str, Any]:
    rows = result.get("rows") or result.get("loader") or []
    hits = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    if len(hits) != 1:
        raise LookupError(f"{path}: {len(hits)} rows match {where} (want exactly one): choose the headline again")
    return hits[0]


def headline_data() -> List[Dict[str, Any]]:
    """What the README's headline table and figure show: per row, each peer's median ratio and min-max."""
    out = []
    for label, path, where, peers in HEADLINE:
        row = find(load(path), where, path)
        ratios = {}
        for peer in peers:
            title, key, spread_key = PEERS[peer]
            v = row[key]["median"] if isinstance(row[key], dict) else row[key]
            sp = row.get(spread_key) or {}
            if v is not None:
                ratios[title] = {"median": v, "min": sp.get("min", v), "max": sp.get("max", v)}
        out.append({"label": label, "file": path, "ratios": ratios})
    return out


def view_headline(paths: Sequence[str], results: Sequence[Dict[str, Any]]) -> Table:
    rows = []
    for d in headline_data():
        cells = [d["label"]]
        for col in COLUMNS:
            r = d["ratios"].get(col)
            cells.append(fmt_ratio(r["median"], r) if r else "-")
        rows.append(cells)
    return ["what", *COLUMNS], rows


def loaded(path: str) -> str:
    """The ``--load 2`` run beside a quiet one: bench_cpu_quick.json -> bench_cpu_quick_load2.json."""
    return path[:-len(".json")] + "_load2.json"


def view_quiet_vs_loaded(paths: Sequence[str], results: Sequence[Dict[str, Any]]) -> Table:
    """The headline's rows, each peer's ratio on a quiet machine and under ``--load 2`` (two busy processes), one
    line per (row, peer): the block names the quiet files and their ``_load2`` twins. A row missing from a loaded
    file shows "–"."""
    rows = []
    for d, (label, path, where, peers) in zip(headline_data(), HEADLINE):
        try:
            busy = find(load(loaded(path)), where, loaded(path))
        except (LookupError, FileNotFoundError):
            busy = None
        for peer in peers:
            title, key, spread_key = PEERS[peer]
            q = d["ratios"].get(title)
            v = None if busy is None else busy.get(key)
            v = v["median"] if isinstance(v, dict) else v
            rows.append([label, title, fmt_ratio(q["median"], q) if q else "–",
                         "–" if v is None else fmt_ratio(v, busy.get(spread_key))])
    return ["what", "ratio", "quiet", "--load 2"], rows


def draw(data: List[Dict[str, Any]], path: str) -> None:
    """The headline as one picture: a horizontal bar per (row, peer), the bar the median ratio, the whisker the
    min-max over the interleaved rounds; log scale, 1x marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = dict(zip(COLUMNS, ("tab:blue", "tab:orange", "tab:green")))
    fig, ax = plt.subplots(figsize=(9, 0.42 * sum(len(d["ratios"]) for d in data) + 1.6))
    y, ticks, labels, seen = 0.0, [], [], set()
    for d in reversed(data):
        start = y
        for col in reversed(COLUMNS):
            r = d["ratios"].get(col)
            if not r:
                continue
            err = [[r["median"] - r["min"]], [r["max"] - r["median"]]]
            ax.barh(y, r["median"], height=0.8, color=colors[col], xerr=err, capsize=2,
                    label=None if col in seen else col)
            ax.text(max(r["max"], r["median"]) * 1.06, y, f"{r['median']:.2f}x", va="center", fontsize=7)
            seen.add(col)
            y += 1
        ticks.append((start + y - 1) / 2)
        labels.append(d["label"])
        y += 0.6
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("peer's time / tensorops' time (> 1: tensorops is faster); whiskers: min-max over rounds")
    metas = [load(p)["meta"] for p in sorted({d["file"] for d in data})]
    torches = ", ".join(sorted({m["torch"] for m in metas}))
    dates = sorted(m.get("timestamp_utc", "?")[:10] for m in metas)
    ax.set_title(f"tensorops against each peer: CPU ({metas[0].get('cpu_model') or '?'}, "
                 f"{metas[0]['cpu_count']} CPUs), quiet machine, torch {torches}, runs of "
                 f"{dates[0]}{'' if dates[0] == dates[-1] else ' to ' + dates[-1]}", fontsize=8)
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    handles, names = ax.get_legend_handles_labels()
    order = [names.index(c) for c in COLUMNS if c in names]
    ax.legend([handles[i] for i in order], [names[i] for i in order], fontsize=8, loc="lower right")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)

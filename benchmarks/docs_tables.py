"""The numbers in README.md and docs/ come from here, read from ``benchmarks/results/``; none is typed by hand.

Every generated block sits between two markers that name the results file(s) it is drawn from and the view:

    <!-- generated from benchmarks/results/bench_cpu_quick.json (table) -->     (README.md, markdown)
    ...
    <!-- end -->

    .. generated from benchmarks/results/bench_cpu_quick.json (table)            (docs/**/*.rst)

    ...
    .. end generated

``python -m benchmarks.docs_tables`` rewrites every block (and draws the headline figure,
``docs/_static/headline.png``, with the numbers it plots in ``docs/_static/headline.json``);
``--check`` rewrites nothing and exits 1 naming each block (or the figure's data) that differs from what its
files give. tests/test_docs.py runs the check, so a results file and the text that quotes it cannot drift apart.

Views: ``table`` (a harness JSON: every row, eager / torch.compile / tensorops and their ratios),
``vs_torchvision`` (a resized_crop_mirror_normalize JSON: tensorops against torchvision v2 per image),
``loader`` (a ``benchmarks.pipeline`` JSON: DataLoader images/s per path), ``batch_cache_rss`` (a
``benchmarks.batch_cache_rss`` JSON: resident memory per epoch), ``photo_stats`` (a ``benchmarks.photo_stats``
JSON: why synthetic and real photographs give different ratios), ``augment`` / ``augment_policies`` (a ``benchmarks.augment`` JSON: every row, or the policy rows),
``recipes`` (a ``benchmarks.recipes`` JSON: the training recipes end to end), ``headline`` (the README's table:
the rows of HEADLINE, from several files). Each block starts with the run's machine, torch, date and commit
from the JSON's ``meta``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from benchmarks.report import fmt_ratio, fmt_time, markdown_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURE = "docs/_static/headline.png"
FIGURE_DATA = "docs/_static/headline.json"

MD_BLOCK = re.compile(r"(<!-- generated from (?P<files>[^()]+?) \((?P<view>\w+)\) -->\n)(?P<body>.*?)(<!-- end -->)",
                      re.S)
RST_BLOCK = re.compile(r"(^\.\. generated from (?P<files>[^()\n]+?) \((?P<view>\w+)\)\n\n)(?P<body>.*?)(^\.\. end generated$)",
                       re.S | re.M)

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


def load(path: str) -> Dict[str, Any]:
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


def describe(path: str, result: Dict[str, Any]) -> str:
    """One line: the run's machine, threads, load, torch, date and commit, as its meta records them."""
    m = result["meta"]
    cpu = f"{m['cpu_model']}, {m['cpu_count']} CPUs" if m.get("cpu_model") else f"{m.get('cpu_count')} CPUs"
    gpu = f", GPU {m['gpu_name']}" if m.get("gpu_name") else ", no GPU"
    load_ = (m.get("load") or {}).get("busy_processes", 0)
    load_txt = "quiet" if not load_ else f"{load_} busy processes (--load {load_})"
    commit = (m.get("git_commit") or "")[:10] or "not recorded"
    act = m.get("activity")  # load.ActivityWatch's samples, where the run took them
    if act and act.get("samples"):
        load_txt += (f", no compiler ran ({act['samples']} samples)" if not act["samples_with_a_compiler"] else
                     f", a compiler ran in {act['samples_with_a_compiler']} of {act['samples']} samples")
    return (f"`{path}`: {cpu}{gpu}, {m.get('torch_threads')} torch threads, {load_txt}, torch {m['torch']}, "
            f"{m.get('timestamp_utc', '?')}, commit {commit}")


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


# ---- views: each gives (header, rows) ----------------------------------------------------------------------
Table = Tuple[List[str], List[List[str]]]


def view_table(path: str, result: Dict[str, Any]) -> Table:
    lines = markdown_table(result).splitlines()
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]
    return cells[0], cells[2:]


def case_name(row: Dict[str, Any], prefix: str) -> str:
    """A row's series without the op's prefix and the words other columns say (the layout); the real-photo rows
    (series ending in " real photos") say so by their case, "real photos (scikit-image)"."""
    name = row["series"].replace(prefix, "").replace(" hwc", "")
    if name.endswith(" real photos"):
        return f"{name[:-len(' real photos')]}, {row['case']}"
    return name


def vs_torchvision(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The rows whose eager column is torchvision v2 (the Quickstart's rows against torch alone are left out)."""
    return [r for r in rows if not r["series"].endswith(" vs torch-native")]


def view_vs_torchvision(path: str, result: Dict[str, Any]) -> Table:
    rows = []
    for r in vs_torchvision(result["rows"]):
        case = case_name(r, "resized_crop_mirror_normalize ")
        rows.append([case, r["layout"], fmt_time(r["eager_s"]), fmt_time(r["tensorops_s"]),
                     fmt_ratio(r["speedup_vs_eager"], r.get("speedup_vs_eager_spread"))])
    return ["case", "image layout", "torchvision v2 per image", "tensorops", "ratio (min-max)"], rows


def view_decode(path: str, result: Dict[str, Any]) -> Table:
    """decode_resized_crop_mirror_normalize rows: each paired path's time and its time over the op's (the
    per-round medians of benchmarks/decode.py's paired columns), torchvision v2 first."""
    paired = ("decode_jpeg + tensorops resize", "PIL + tensorops resize", "DALI CPU", "tensorops reduced_scale")
    rows = []
    for r in vs_torchvision(result["rows"]):
        name = case_name(r, "decode_resized_crop_mirror_normalize jpeg->f32 ")
        cells = [name if r["series"].endswith(" real photos") else f"{name} ({r['case']})",
                 fmt_time(r["tensorops_s"]),
                 f"{fmt_time(r['eager_s'])}, {fmt_ratio(r['speedup_vs_eager'], r.get('speedup_vs_eager_spread'))}"]
        for name in paired:
            sp = (r.get("paired_ratio_spread") or {}).get(name)
            t = (r.get("extras_s") or {}).get(name)
            cells.append("-" if sp is None or t is None else f"{fmt_time(t)}, {fmt_ratio(sp['median'], sp)}")
        rows.append(cells)
    return ["case", "tensorops", "torchvision v2 per image", *paired], rows


def view_loader(path: str, result: Dict[str, Any]) -> Table:
    paths = result["meta"]["paths"]
    keys = sorted(paths)
    rows = []
    for mode in ("train", "eval"):
        for workers in result["meta"]["workers"]:
            cells = [mode, str(workers)]
            for k in keys:
                r = [x for x in result["loader"] if (x["mode"], x["workers"], x["path"]) == (mode, workers, k)]
                if not r:
                    cells.append("-")
                    continue
                sp = r[0]["vs_tv_tensor"]
                ratio = fmt_ratio(sp["median"], sp)
                cells.append(f"{r[0]['images_per_s']:.0f}, {ratio}")
            rows.append(cells)
    return ["mode", "workers"] + [f"({k}) {paths[k]}" for k in keys], rows


def view_photo_stats(path: str, result: Dict[str, Any]) -> Table:
    """A ``benchmarks.photo_stats`` JSON: per image set, what its files cost to entropy-decode and how the
    ratios follow (medians of per-round quotients, min-max where the rounds disagree by more than 25%)."""
    def ms(r: Dict[str, Any], key: str) -> str:
        return f"{r['ms_per_image'][key]['median']:.2f}"

    def ratio(sp: Dict[str, float]) -> str:
        return fmt_ratio(sp["median"], sp)

    rows = []
    for r in result["sets"]:
        ns = r["ns_per_pixel"]
        rows.append([r["set"], f"{r['pixels'] / 1e3:.0f}k", f"{r['kb']:.1f}", f"{r['bits_per_pixel']:.2f}",
                     f"{ns['decode_jpeg']['median']:.1f}", f"{ns['Pillow decode at 1/8']['median']:.1f}",
                     f"{r['entropy_share_of_decode']['median']:.0%}",
                     f"{r['decode_share_of_torchvision']['median']:.0%}",
                     f"{ms(r, 'torchvision v2 resize')} / {ms(r, 'tensorops resize')}", ratio(r["resize_ratio"]),
                     ms(r, "tensorops decode op"), ratio(r["decode_op_vs_decode_jpeg_resize"]),
                     ratio(r["decode_op_vs_torchvision"])])
    return ["images (32 JPEGs, 4:2:0)", "pixels per image", "KB per file", "bits per pixel",
            "decode_jpeg ns/pixel", "1/8-scale decode ns/pixel (entropy decoding)",
            "1/8 decode / whole decode (Pillow)",
            "decode share of torchvision v2", "resize ms/image: torchvision v2 / tensorops", "resize ratio",
            "decode op ms/image", "decode op vs decode_jpeg + resize", "decode op vs torchvision v2"], rows


def view_headline(paths: Sequence[str], results: Sequence[Dict[str, Any]]) -> Table:
    rows = []
    for d in headline_data():
        cells = [d["label"]]
        for col in COLUMNS:
            r = d["ratios"].get(col)
            cells.append(fmt_ratio(r["median"], r) if r else "-")
        rows.append(cells)
    return ["what", *COLUMNS], rows


def view_batch_cache_rss(path: str, result: Dict[str, Any]) -> Table:
    """A ``benchmarks.batch_cache_rss`` JSON: per epoch, the main process's VmRSS after it, and at its middle the
    sums over the live workers (MiB), and the main process's cache hits / misses so far."""
    rows = []
    for e in result["epochs"]:
        mid, c = e["mid_epoch"], e.get("main_cache") or {}
        rows.append([str(e["epoch"]), f"{e['main_rss_mib']:.1f}", str(mid["workers"]), f"{mid['workers_rss_mib']:.0f}",
                     f"{mid['workers_rss_anon_mib']:.0f}", f"{mid['workers_pss_mib']:.0f}",
                     f"{c.get('hits', '-')} / {c.get('misses', '-')}"])
    return ["epoch", "main VmRSS after it (MiB)", "workers", "workers' VmRSS (MiB)", "workers' RssAnon (MiB)",
            "workers' Pss (MiB)", "main cache hits / misses"], rows


AUGMENT_COLUMNS = ("torchvision v2 per image", "torchvision v2 batch", "kornia", "tensorops")


def view_augment(path: str, result: Dict[str, Any], policies_only: bool = False,
                 threads: Optional[int] = None) -> Table:
    """A ``benchmarks.augment`` JSON: per image set, thread count and row, each column's ms per image and its
    ratio to the row's baseline (torchvision v2 per image; v2 on the batch for MixUp / CutMix, marked *), medians
    of per-round ratios with their min-max where the rounds disagree; tensorops' check against torchvision.
    ``policies_only``: the policy rows; ``threads``: one thread count."""
    rows = []
    for r in result["rows"]:
        if (policies_only and r["kind"] != "policy") or (threads is not None and r["threads"] != threads):
            continue
        cells = [r["set"] + ("" if r.get("layout", "contiguous") == "contiguous" else f", {r['layout']}"),
                 str(r["threads"]), r["row"]]
        for col in AUGMENT_COLUMNS:
            t = r["ms_per_image"].get(col)
            if t is None:
                cells.append("-")
            elif col == r["baseline"]:
                cells.append(f"{t['median']:.3f} ms" + ("*" if col != AUGMENT_COLUMNS[0] else ""))
            else:
                sp = r["ratio_to_baseline"].get(col)
                cells.append(f"{t['median']:.3f} ms, {fmt_ratio(sp['median'], sp)}" if sp else f"{t['median']:.3f} ms")
        check = r.get("check") or ""
        cells.append("-" if check.startswith("not compared") else check.split(" (affine")[0] or "-")
        rows.append(cells)
    return ["images", "threads", "row", *(f"{c} (ms/image, ratio)" for c in AUGMENT_COLUMNS),
            "tensorops vs torchvision per image"], rows


def view_augment_policies(path: str, result: Dict[str, Any]) -> Table:
    """The policy rows (of every image set and thread count the file holds)."""
    return view_augment(path, result, policies_only=True)


def view_recipes(path: str, result: Dict[str, Any]) -> Table:
    """A ``benchmarks.recipes`` JSON: per recipe and path, DataLoader images/s (median, min-max over rounds), the
    CPU ms per image all processes spent (main + workers), and the per-round ratio to torchvision v2's path."""
    rows = []
    for r in result["rows"]:
        if "skipped" in r:
            rows.append([r["recipe"], r["path"], str(r["workers"]), f"skipped: {r['skipped']}", "-", "-"])
            continue
        sp = r["images_per_s_spread"]
        ratio = r.get("vs_torchvision")
        cpu = r.get("cpu_ms_per_image")
        rows.append([r["recipe"], r["path"], str(r["workers"]),
                     f"{r['images_per_s']:.0f} ({sp['min']:.0f}-{sp['max']:.0f})",
                     "-" if cpu is None else f"{cpu['median']:.2f}",
                     "-" if ratio is None else fmt_ratio(ratio["median"], ratio)])
    return ["recipe", "path", "workers", "images/s (min-max)", "CPU ms/image (all processes)",
            "vs torchvision v2"], rows


VIEWS: Dict[str, Callable[[str, Dict[str, Any]], Table]] = {
    "table": view_table, "vs_torchvision": view_vs_torchvision, "decode": view_decode, "loader": view_loader,
    "batch_cache_rss": view_batch_cache_rss, "photo_stats": view_photo_stats, "augment": view_augment,
    "augment_policies": view_augment_policies, "recipes": view_recipes}


# ---- rendering -------------------------------------------------------------------------------------------------
def markdown(header: List[str], rows: List[List[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def rst(header: List[str], rows: List[List[str]]) -> str:
    def cell(c: str) -> str:
        c = c.replace("*", "\\*").replace("`", "")
        return c if c.strip() else "\\ "

    out = [".. list-table::", "   :header-rows: 1", ""]
    for r in [header] + rows:
        out.append("   * - " + cell(r[0]))
        out += ["     - " + cell(c) for c in r[1:]]
    return "\n".join(out) + "\n"


def render(files: str, view: str, fmt: str) -> str:
    paths = [p.strip() for p in files.split(",")]
    results = [load(p) for p in paths]
    if view == "headline":
        header, rows = view_headline(paths, results)
    else:
        if len(paths) != 1 or view not in VIEWS:
            raise ValueError(f"unknown generated block: {files} ({view})")
        header, rows = VIEWS[view](paths[0], results[0])
    sources = [describe(p, r) for p, r in zip(paths, results)]
    if fmt == "md":
        return "".join(f"<sub>{s}</sub><br>\n" for s in sources) + "\n" + markdown(header, rows)
    return "".join(f"| {s.replace('`', '``')}\n" for s in sources) + "\n" + rst(header, rows) + "\n"


def regenerate(text: str, fmt: str) -> str:
    pattern = MD_BLOCK if fmt == "md" else RST_BLOCK
    return pattern.sub(lambda m: m.group(1) + render(m.group("files"), m.group("view"), fmt) + m.group(5), text)


def documents() -> List[str]:
    return ["README.md"] + sorted(os.path.relpath(p, ROOT)
                                  for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.rst"), recursive=True))


def blocks(path: str) -> List[Tuple[str, str]]:
    """(files, view) of every generated block of a document."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    pattern = MD_BLOCK if path.endswith(".md") else RST_BLOCK
    return [(m.group("files"), m.group("view")) for m in pattern.finditer(text)]


def stale() -> List[str]:
    """The documents (and the figure's data) that differ from what the results files give."""
    bad = []
    for path in documents():
        with open(os.path.join(ROOT, path)) as f:
            text = f.read()
        if regenerate(text, "md" if path.endswith(".md") else "rst") != text:
            bad.append(path)
    want = json.dumps(headline_data(), indent=1, sort_keys=True) + "\n"
    try:
        with open(os.path.join(ROOT, FIGURE_DATA)) as f:
            have = f.read()
    except FileNotFoundError:
        have = None
    if have != want or not os.path.exists(os.path.join(ROOT, FIGURE)):
        bad.append(FIGURE_DATA)
    return bad


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


def write() -> List[str]:
    changed = []
    for path in documents():
        full = os.path.join(ROOT, path)
        with open(full) as f:
            text = f.read()
        new = regenerate(text, "md" if path.endswith(".md") else "rst")
        if new != text:
            with open(full, "w") as f:
                f.write(new)
            changed.append(path)
    data = headline_data()
    os.makedirs(os.path.join(ROOT, os.path.dirname(FIGURE)), exist_ok=True)
    draw(data, os.path.join(ROOT, FIGURE))
    with open(os.path.join(ROOT, FIGURE_DATA), "w") as f:
        f.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return changed


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated block is stale")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for path in bad:
            print(f"stale: {path} (run python -m benchmarks.docs_tables)")
        return 1 if bad else 0
    for path in write():
        print(f"rewrote {path}")
    print(f"drew {FIGURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

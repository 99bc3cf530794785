"""The views of ``benchmarks/results/`` files that the docs quote: each turns one results JSON into a table
(header, rows); ``load`` reads a file and ``describe`` names its run (machine, threads, load, torch, date,
commit). ``docs_tables.py`` renders them into README.md and docs/ (the view a block names: ``VIEWS``)."""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

from benchmarks import REPO
from benchmarks.report import fmt_ratio, fmt_time, markdown_table

ROOT = REPO  # the checkout: README.md, docs/ and benchmarks/results/ are read from here


def load(path: str) -> Dict[str, Any]:
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


def describe(path: str, result: Dict[str, Any]) -> str:
    """One line: the run's machine, threads, load, torch, date and commit, as its meta records them."""
    m = result["meta"]
    cpu = f"{m['cpu_model']}, {m['cpu_count']} CPUs" if m.get("cpu_model") else f"{m.get('cpu_count')} CPUs"
    if m.get("cpu_isa"):  # recorded since the CPU builds were measured apart
        cpu += f", tensorops' {ISA_NAMES.get(m['cpu_isa'], m['cpu_isa'])} build"
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
    per-round medians of benchmarks/ops/decode.py's paired columns), torchvision v2 first."""
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
    """A ``benchmarks.pipeline`` JSON: a row per path (its letter and what it runs), a column per (mode, workers):
    images/s and the per-round ratio to path (b). (A column per path, each headed by its description, was eight
    columns and 1,330 px wide.)"""
    paths = result["meta"]["paths"]
    cols = [(mode, w) for mode in ("train", "eval") for w in result["meta"]["workers"]]
    rows = []
    for k in sorted(paths):
        cells = [f"({k}) {paths[k]}"]
        for mode, workers in cols:
            r = [x for x in result["loader"] if (x["mode"], x["workers"], x["path"]) == (mode, workers, k)]
            if not r:
                cells.append("-")
                continue
            sp = r[0]["vs_tv_tensor"]
            cells.append(f"{r[0]['images_per_s']:.0f}, {fmt_ratio(sp['median'], sp)}")
        rows.append(cells)
    return ["path", *(f"{mode}, {w} workers: images/s, vs (b)" for mode, w in cols)], rows


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
    CPU ms per image all processes spent (main + workers), and the per-round ratios to torchvision v2's path and
    to the recipe's reference (what its users run: torchvision's reference on PIL, timm's own; older files have
    no reference column: "-")."""
    rows = []
    for r in result["rows"]:
        if "skipped" in r:
            rows.append([r["recipe"], r["path"], str(r["workers"]), f"skipped: {r['skipped']}", "-", "-", "-"])
            continue
        sp = r["images_per_s_spread"]
        cpu = r.get("cpu_ms_per_image")
        ratios = [r.get("vs_torchvision"), r.get("vs_reference")]
        rows.append([r["recipe"], r["path"], str(r["workers"]),
                     f"{r['images_per_s']:.0f} ({sp['min']:.0f}-{sp['max']:.0f})",
                     "-" if cpu is None else f"{cpu['median']:.2f}",
                     *("-" if x is None else fmt_ratio(x["median"], x) for x in ratios)])
    return ["recipe", "path", "workers", "images/s (min-max)", "CPU ms/image (all processes)",
            "vs torchvision v2", "vs the recipe's reference"], rows


ISA_NAMES = {"avx512": "AVX-512", "avx2": "AVX2", "base": "baseline", "base-nofma": "baseline without FMA"}
ISA_PEERS = ("torchvision", "albumentations", "DALI CPU", "decode_jpeg + resize")


def view_isa(path: str, result: Dict[str, Any]) -> Table:
    """A ``benchmarks.isa`` JSON: per row, each CPU build's tensorops ms per image and its ratios to each peer the
    file holds (the peer's ms / tensorops', medians; "–" where a build's row lacks that peer), the build and the
    level torch's own kernels ran at named in the header. Two columns a build, so three builds fit a laptop."""
    builds = result["builds"]
    peers = [p for p in ISA_PEERS if any(f"vs_{p}" in r for b in builds for r in b["rows"])]
    names = list(dict.fromkeys(r["row"] for b in builds for r in b["rows"]))
    header = ["row"]
    for b in builds:
        header += [f"{b['isa']} build (torch {b.get('torch_cpu_capability', '?')}): ms/image",
                   f"{b['isa']}: vs " + " / ".join(peers)]
    rows = []
    for name in names:
        cells = [name]
        for b in builds:
            r = next((x for x in b["rows"] if x["row"] == name), None)
            t = (r or {}).get("tensorops", {}).get("ms_per_image")
            cells.append("–" if t is None else f"{t:.3f}")
            cells.append(" / ".join("–" if r is None or r.get(f"vs_{p}") is None else f"{r[f'vs_{p}']:.2f}x"
                                    for p in peers) or "–")
        rows.append(cells)
    return header, rows


VIEWS: Dict[str, Callable[[str, Dict[str, Any]], Table]] = {
    "table": view_table, "vs_torchvision": view_vs_torchvision, "decode": view_decode, "loader": view_loader,
    "batch_cache_rss": view_batch_cache_rss, "photo_stats": view_photo_stats, "augment": view_augment,
    "augment_policies": view_augment_policies, "recipes": view_recipes, "isa": view_isa}

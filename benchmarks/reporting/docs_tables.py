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
``recipes`` (a ``benchmarks.recipes`` JSON: the training recipes end to end), ``isa`` (a ``benchmarks.isa``
JSON: each CPU build's ms/image and ratios to each peer), ``headline`` (the README's table: the rows of HEADLINE,
from several files), ``quiet_vs_loaded`` (those rows quiet and under ``--load 2``: the quiet files and their
``_load2`` twins). The docs' blocks are ``csv-table`` blocks, a line a row.
Each block starts with the run's machine, torch, date and commit
from the JSON's ``meta``.

This module finds the blocks, renders them and checks them; the views are ``docs_views.py``, the headline's rows,
table and figure ``docs_headline.py``.
"""
from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import os
import re
import sys
from typing import List, Optional, Tuple

from benchmarks.docs_headline import FIGURE, FIGURE_DATA, draw, headline_data, view_headline, view_quiet_vs_loaded
from benchmarks.docs_views import ROOT, VIEWS, describe, load
from benchmarks.docs_views import view_augment  # noqa: F401  (benchmarks.augment reads its view here)

MD_BLOCK = re.compile(r"(<!-- generated from (?P<files>[^()]+?) \((?P<view>\w+)\) -->\n)(?P<body>.*?)(<!-- end -->)",
                      re.S)
RST_BLOCK = re.compile(r"(^\.\. generated from (?P<files>[^()\n]+?) \((?P<view>\w+)\)\n\n)(?P<body>.*?)(^\.\. end generated$)",
                       re.S | re.M)
# the views of several files (the headline's rows); every other view reads one file (docs_views.VIEWS)
MULTI_VIEWS = {"headline": view_headline, "quiet_vs_loaded": view_quiet_vs_loaded}


# ---- rendering -------------------------------------------------------------------------------------------------
def markdown(header: List[str], rows: List[List[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def write_beside(path: str, result: dict, view) -> str:
    """A results file's table as markdown in ``<path>.md`` beside its JSON (the run's line first), printed with
    both paths: what a benchmark's main does after save_json. Returns the table."""
    text = markdown(*view(path, result))
    with open(path[:-5] + ".md", "w", encoding="utf-8") as f:
        f.write(describe(path, result) + "\n\n" + text)
    print(text)
    print(f"json: {path}\nmd: {path[:-5] + '.md'}")
    return text


def rst(header: List[str], rows: List[List[str]]) -> str:
    """A ``csv-table``: one line a row (a ``list-table`` took a line a cell: 11 lines a row of the ops table).
    A lone "-" (no value) is written "–": alone in a cell, rST reads "-" as an empty bullet list."""
    def cell(c: str) -> str:
        c = c.replace("*", "\\*").replace("`", "").strip()
        return "–" if c == "-" else c

    def line(r: List[str]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow([cell(c) for c in r])
        return buf.getvalue()

    out = [".. csv-table::", "   :header: " + line(header), "   :widths: auto", ""]
    out += ["   " + line(r) for r in rows]
    return "\n".join(out) + "\n"


def render(files: str, view: str, fmt: str) -> str:
    paths = [p.strip() for p in files.split(",")]
    results = [load(p) for p in paths]
    if view in MULTI_VIEWS:
        header, rows = MULTI_VIEWS[view](paths, results)
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

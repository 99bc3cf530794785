"""The documentation builds with warnings as errors, its examples run, and its tables match their results files.

The Sphinx builds skip (saying why) where Sphinx is not installed: `pip install -e ".[docs]"` adds it. The
generated-tables check needs nothing but the tree: it regenerates every block between
``<!-- generated from benchmarks/results/... -->`` / ``.. generated from benchmarks/results/...`` markers in
README.md and docs/ and fails when one differs from what its results file gives.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

requires_sphinx = pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None, reason="Sphinx is not installed: pip install -e '.[docs]'")


def _sphinx(builder: str, out: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", builder,
           os.path.join(ROOT, "docs"), out]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@requires_sphinx
@pytest.mark.parametrize("builder", ["html", "doctest"])
def test_docs_build(builder, tmp_path):
    """html: every page and docstring renders without a warning; doctest: every example in them runs."""
    r = _sphinx(builder, str(tmp_path / builder))
    assert r.returncode == 0, f"sphinx -b {builder} failed:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"


def test_generated_tables_match_results():
    """Every table between generated-from markers in README.md and docs/, and the headline figure's data, is what
    its results file gives (`python -m benchmarks.docs_tables` rewrites them)."""
    from benchmarks import docs_tables

    assert docs_tables.blocks("README.md"), "README.md has no generated block: its numbers would be typed"
    assert docs_tables.stale() == [], "stale generated blocks: run python -m benchmarks.docs_tables"


def test_generated_check_sees_an_edited_number():
    """The check is not vacuous: one number changed by hand in a generated block makes it fail."""
    from benchmarks import docs_tables

    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = docs_tables.MD_BLOCK.search(text)
    body = m.group("body")
    edited = text[:m.start("body")] + body.replace("x", "1x", 1) + text[m.end("body"):]
    assert docs_tables.regenerate(edited, "md") != edited
    assert docs_tables.regenerate(text, "md") == text


def test_readme_quickstart_is_two_bash_blocks():
    """CI extracts and runs the two ```bash blocks under ## Quickstart: they must stay there, two of them."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert section.count("```bash") == 2
    assert "## Tests" in text


def test_readme_one_call_each_runs():
    """README's "One call each" block (an example per op) runs as written, and each op in it ran its kernel."""
    import re

    import torch

    from conftest import kernel_ran

    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = re.search(r"^## One call each\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no '## One call each' section"
    (code,) = re.findall(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    scope: dict = {}
    _, names = kernel_ran(exec, code, scope)
    assert isinstance(scope["batch"], torch.Tensor) and scope["batch"].shape == (8, 3, 32, 32)
    assert scope["decoded"].shape == (1, 3, 32, 32)
    import tensorops

    if tensorops.is_compiled():
        # stack and chunk are one cat / split pass each
        for op in ("normalize", "clamp", "cat", "split", "foreach_clamp", "crop_mirror_normalize",
                   "resized_crop_mirror_normalize") + (("decode_resized_crop_mirror_normalize",)
                                                       if tensorops.build_info()["libjpeg"] else ()):
            assert any(n.startswith(f"tensorops::{op}") for n in names), (op, sorted(names))


def test_isa_table_names_each_build_and_marks_a_missing_peer():
    """The ISA view: a column pair per build (named with torch's level), every peer any row has, "–" where one
    build's row lacks it; a row only one build has is still shown."""
    from benchmarks import docs_views

    def row(name, ms, **peers):
        r = {"row": name, "tensorops": {"ms_per_image": ms}}
        for p, v in peers.items():
            r[p.replace("_", " ")] = {"ms_per_image": ms * v}
            r["vs_" + p.replace("_", " ")] = v
        return r

    result = {"builds": [
        {"isa": "avx512", "torch_cpu_capability": "AVX512",
         "rows": [row("hue", 0.1, torchvision=3.0, albumentations=2.0, DALI_CPU=1.5), row("extra", 0.2, torchvision=1.0)]},
        {"isa": "avx2", "torch_cpu_capability": "AVX2", "rows": [row("hue", 0.2, torchvision=1.5)]}]}
    header, rows = docs_views.view_isa("isa.json", result)
    assert header == ["row", "avx512 build (torch AVX512): ms/image", "avx512: vs torchvision / albumentations / DALI CPU",
                      "avx2 build (torch AVX2): ms/image", "avx2: vs torchvision / albumentations / DALI CPU"]
    assert rows[0] == ["hue", "0.100", "3.00x / 2.00x / 1.50x", "0.200", "1.50x / – / –"]
    assert rows[1] == ["extra", "0.200", "1.00x / – / –", "–", "– / – / –"]


@requires_sphinx
def test_every_page_fits_a_laptop_screen(tmp_path):
    """The built pages in headless Chromium at 1280 x 800: no page wider than the window (no horizontal
    scrollbar), no table past the text column (docs/width_check.py measures; it prints every page's widths)."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import width_check

    if not width_check.find_browser():
        pytest.skip("no Chromium binary on PATH (apt-get install chromium; CHROMIUM=path names another): the "
                    "built pages' widths were not measured")
    r = _sphinx("html", str(tmp_path / "html"))
    assert r.returncode == 0, f"sphinx -b html failed:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
    results = width_check.measure(str(tmp_path / "html"), 1280, 800)
    assert len(results) == len(width_check.pages(str(tmp_path / "html"))) > 10
    assert any(t for p in results for t in p.get("tables", [])), "no table measured: the harness saw no page"
    assert width_check.problems(results) == []


def test_width_check_names_what_does_not_fit():
    """The check is not vacuous: a page wider than the window and a table past the column are each reported."""
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    import width_check

    fits = {"page": "a.html", "client": 1280, "scroll": 1280, "tables": [{"index": 0, "width": 600, "over": -40,
                                                                        "first_cell": "op"}]}
    wide = {"page": "b.html", "client": 1280, "scroll": 1746, "tables": [{"index": 3, "width": 1326, "over": 666,
                                                                         "first_cell": "mode"}]}
    assert width_check.problems([fits]) == []
    bad = width_check.problems([fits, wide])
    assert len(bad) == 2 and all(b.startswith("b.html") for b in bad)

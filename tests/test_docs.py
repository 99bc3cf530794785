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

"""Sphinx configuration for tensorops' documentation.

Build (HTML, warnings are errors) and run every example (doctest builder):

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python -m sphinx -W --keep-going -b doctest docs docs/_build/doctest

or both at once: ``python docs/build.py``. tests/test_docs.py runs the same, so CI's test run covers it.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # the tensorops of this tree (its compiled _C*.so beside it when built in place)

project = "tensorops"
author = "tensorops developers"
from tensorops._version import __version__ as release  # noqa: E402

version = release

extensions = [
    "sphinx.ext.autodoc",  # the API reference is the docstrings: one text, read by help() and by these pages
    "sphinx.ext.napoleon",  # the docstrings are Google style (Args:/Returns:/Example:)
    "sphinx.ext.doctest",  # every >>> example in the pages and the docstrings runs in the doctest build
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"  # hints under Parameters, so the headings stay one short line
autodoc_default_options = {"members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

# The examples see what a user's session has after `import torch, tensorops`.
doctest_global_setup = """
import importlib.util
import torch
import tensorops
torch.manual_seed(0)
HAS_CUDA = torch.cuda.is_available() and tensorops.build_info()["cuda"]
HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None
HAS_RAY = importlib.util.find_spec("ray") is not None
try:  # the policies, where this tensorops has them (not another checkout's, lent by an editable install)
    import os.path
    import tensorops.augment.transforms
    HAS_AUGMENT = tensorops.augment.transforms.__file__.startswith(os.path.dirname(tensorops.__file__) + os.sep)
    from tensorops.augment import *  # noqa: F401,F403  (the names tensorops.augment's docstring examples use)
except Exception:  # absent, or not built into this library (tests/test_augment_*.py report that)
    HAS_AUGMENT = False
"""
doctest_default_flags = 0
import doctest as _doctest  # noqa: E402

doctest_default_flags = _doctest.ELLIPSIS | _doctest.NORMALIZE_WHITESPACE | _doctest.DONT_ACCEPT_TRUE_FOR_1

exclude_patterns = ["_build"]
html_theme = "alabaster"  # ships with Sphinx: no theme dependency
html_static_path = ["_static"]
# a 1240 px page (alabaster's default is 940 px, a 660 px text column) so that the results tables fit a 1280 px
# window; _static/custom.css (which alabaster links) sets the tables' type and wrapping. docs/width_check.py checks.
html_theme_options = {"description": "fused PyTorch preprocessing kernels", "fixed_sidebar": True,
                      "page_width": "1240px", "sidebar_width": "200px", "body_max_width": "none"}
nitpicky = False
suppress_warnings = []

# The optional integrations are documented even where their package is absent (their pages then come from
# the docstrings alone); the examples that need them are skipped by their :skipif: flags.
import importlib.util as _util  # noqa: E402

autodoc_mock_imports = [m for m in ("ray", "torchvision", "PIL") if _util.find_spec(m) is None]


def _registry_table() -> None:
    """docs/_generated/registry.rst: tensorops.registry.OPS as a table, written at every build, so the fidelity
    page shows exactly what tests/test_registry.py holds each op to."""
    from tensorops.registry import OPS

    cols = ["op", "drop-in for", "devices", "autograd", "forward AD", "vmap", "torch.compile", "out=",
            "in place", "lists"]
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    rows = [[f"``{o.name if o.module == 'tensorops' else o.qualname}``", f"``{o.torch_name}``", ", ".join(o.devices), yes(o.autograd),
             yes(o.forward_ad), yes(o.vmap), yes(o.compile), yes(o.out), yes(o.inplace), yes(o.tensor_list)]
            for o in OPS.values()]
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for r in [cols] + rows:
        lines.append("   * - " + r[0])
        lines += ["     - " + c for c in r[1:]]
    out = os.path.join(ROOT, "docs", "_generated")
    os.makedirs(out, exist_ok=True)
    text = "\n".join(lines) + "\n"
    path = os.path.join(out, "registry.rst")
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


_registry_table()
exclude_patterns.append("_generated")

"""Build the documentation and run its examples: ``python docs/build.py`` (from the repository root or anywhere).

Runs, with warnings as errors and a fresh environment each time (so a warning is never hidden by a cached page):

    python -m sphinx -E -W --keep-going -b html    docs docs/_build/html
    python -m sphinx -E -W --keep-going -b doctest docs docs/_build/doctest

and first checks that the generated tables and the headline figure match ``benchmarks/results``
(``python -m benchmarks.docs_tables --check``). Exits non-zero on the first step that fails.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def commands(out: str = os.path.join("docs", "_build")) -> list:
    sphinx = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q"]
    return [
        [sys.executable, "-m", "benchmarks.docs_tables", "--check"],
        sphinx + ["-b", "html", "docs", os.path.join(out, "html")],
        sphinx + ["-b", "doctest", "docs", os.path.join(out, "doctest")],
    ]


def main() -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    for cmd in commands():
        print("+", " ".join(cmd), flush=True)
        rc = subprocess.call(cmd, cwd=ROOT, env=env)
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Small C++ probe programs built from tensorops' own headers with the host compiler: how the tests check the
__host__ __device__ code that the CUDA kernels run (index width, fast divisors, copy units) without a GPU.

Not a test module (leading underscore). ``build`` compiles a program once per test module (call it from a
module-scoped fixture); ``run`` feeds it text on stdin and returns what it printed.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Sequence

import pytest

HEADER_DIR = Path(__file__).resolve().parent.parent / "csrc" / "include"


def build(tmp_path_factory, name: str, program: str, *, opt: str = "-O1", defines: Sequence[str] = (),
          torch_headers: bool = False) -> Path:
    """Compiles ``program`` against csrc/include (and torch's headers where it includes c10) into an executable;
    skips the calling test where the machine has no C++ compiler."""
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip(f"needs a C++ compiler to build the {name} probe")
    includes = [f"-I{HEADER_DIR}"]
    if torch_headers:
        from torch.utils.cpp_extension import include_paths

        includes += [f"-I{p}" for p in include_paths()]
    d = tmp_path_factory.mktemp(name.replace(" ", "_").replace("-", "_"))
    (d / "probe.cpp").write_text(program)
    subprocess.run([cxx, "-std=c++17", opt, *defines, *includes, str(d / "probe.cpp"), "-o", str(d / "probe")],
                   check=True, capture_output=True, text=True)
    return d / "probe"


def run(exe: Path, text: str) -> str:
    """The probe's stdout for ``text`` on its stdin (a non-zero exit raises)."""
    return subprocess.run([str(exe)], input=text, check=True, capture_output=True, text=True).stdout

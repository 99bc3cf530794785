"""The emulated CUDA tier: these tests call ``torch.ops.tensorops_emu.<op>`` on CPU tensors, which runs the CUDA
launch code and kernels of csrc/cuda on the emulated device (tests/_emulated.py, csrc/include/tensorops/emu).

They run in a child process per build (plain, ASan+UBSan, TSan) started by tests/test_emulated.py, which sets
``TENSOROPS_EMU_SO``; to run them by hand in this process, name a build:
``TENSOROPS_EMU_VARIANT=plain python -m pytest tests/emulated -q``. Without either variable they are not collected
(so the default test run does not run them twice). ``TENSOROPS_EMU_REPORT=<file>`` writes the names of the kernels
that ran (for the parent's coverage check).
"""
from __future__ import annotations

import json
import os
import re

import pytest
import torch

import _emulated

ACTIVE = bool(os.environ.get("TENSOROPS_EMU_SO") or os.environ.get("TENSOROPS_EMU_VARIANT"))
if not ACTIVE:
    collect_ignore_glob = ["test_*.py"]

_RAN: dict[str, set[str]] = {}  # kernel name -> the full instantiations that ran


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.emulated)


@pytest.fixture(scope="session")
def emu():
    """The emulated extension (its module: events(), set_capturing(), set_block_filter())."""
    return _emulated.load()


@pytest.fixture(autouse=True)
def _device_state(emu):
    """Every test starts with no events, no capture and every block run, and its launches are recorded."""
    emu.clear_events()
    emu.set_capturing(False)
    emu.set_block_filter([])
    yield
    for e in emu.events():
        m = re.match(r"launch .*?tensorops::kernels::(\w+)(.*) grid=", e)
        if m:
            _RAN.setdefault(m.group(1), set()).add(m.group(1) + m.group(2))
    emu.set_capturing(False)
    emu.set_block_filter([])


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TENSOROPS_EMU_REPORT")
    if path and ACTIVE:
        with open(path, "w") as f:
            json.dump({k: sorted(v) for k, v in _RAN.items()}, f, indent=1)


def ops():
    return torch.ops.tensorops_emu


def launches(emu, kernel: str | None = None) -> list[dict]:
    """The launches recorded since the test began: name (short), full (instantiation), grid, block, smem, ran."""
    out = []
    for e in emu.events():
        m = re.match(r"launch (.*?) grid=(\d+) block=(\d+) smem=(\d+) ran=(\d+)$", e)
        if not m:
            continue
        short = re.search(r"tensorops::kernels::(\w+)", m.group(1))
        d = {"name": short.group(1) if short else m.group(1), "full": m.group(1), "grid": int(m.group(2)),
             "block": int(m.group(3)), "smem": int(m.group(4)), "ran": int(m.group(5))}
        if kernel is None or d["name"] == kernel:
            out.append(d)
    return out


def template_args(launch: dict) -> list[str]:
    """The kernel instantiation's template arguments, e.g. ['float', 'int', 'true', 'true']."""
    m = re.search(r"<([^<>]*)>\(", launch["full"])
    assert m, f"no template arguments in {launch['full']}"
    return [a.strip() for a in m.group(1).split(",")]


# where each plan kernel keeps its index type among its template arguments
INDEX_ARG = {"clamp_scalar_contig_kernel": 1, "clamp_strided_kernel": 1, "clamp_backward_kernel": 2,
             "clamp_scalar_backward_kernel": 1, "normalize_kernel": 3, "normalize_backward_kernel": 3}


def index_type(launch: dict) -> str:
    """'int' or 'long': the launch's index type (the 32- or 64-bit path)."""
    t = template_args(launch)[INDEX_ARG[launch["name"]]]
    assert t in ("int", "long"), launch["full"]
    return t

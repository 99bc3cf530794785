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
from pathlib import Path

import pytest

import _emulated

ACTIVE = bool(os.environ.get("TENSOROPS_EMU_SO") or os.environ.get("TENSOROPS_EMU_VARIANT"))
# The CUDA kernels round torchvision's affine grid as (x * t0 + y * t1) + t2; the CPU kernels as torch's CPU bmm
# does on this machine for the image's size (on some CPUs fused: augment.cpp's grid_fuses). The tier compares the
# two, so in the tier's child process (only there: this file is also collected by the main suite, whose CPU tests
# compare with torch) the CPU kernels round as the CUDA ones.
if ACTIVE:
    os.environ["TENSOROPS_AFFINE_GRID"] = "plain"
if not ACTIVE:
    collect_ignore_glob = ["test_*.py"]

_RAN: dict[str, set[str]] = {}  # kernel name -> the full instantiations that ran


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:  # the hook sees the whole session's items: mark only this directory's
        if HERE in Path(str(item.fspath)).resolve().parents:
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
        # a kernel counts as run only where threads executed its body: a launch whose block filter matched no block
        # (ran=0), or that failed before any thread entered, proves nothing
        m = re.match(r"launch .*?tensorops::kernels::(\w+)(.*) grid=(\d+) block=(\d+) smem=\d+ ran=(\d+) entered=(\d+)$", e)
        if m and int(m.group(3)) * int(m.group(4)) > 0 and int(m.group(5)) > 0 and int(m.group(6)) > 0:
            _RAN.setdefault(m.group(1), set()).add(m.group(1) + m.group(2))
    emu.set_capturing(False)
    emu.set_block_filter([])


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TENSOROPS_EMU_REPORT")
    if path and ACTIVE:
        with open(path, "w") as f:
            json.dump({k: sorted(v) for k, v in _RAN.items()}, f, indent=1)

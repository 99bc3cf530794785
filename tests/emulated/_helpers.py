"""Helpers of the emulated tier's tests: the ops, and what the emulated device recorded of its launches."""
from __future__ import annotations

import os
import re

import torch

# ThreadSanitizer makes every thread start and barrier ~10x dearer: under it, the parameter grids of the elementwise
# kernels (no shared memory, barriers or atomics: little for TSan to see) shrink to their corners. Every kernel and
# launch variant still runs.
TSAN = os.environ.get("TENSOROPS_EMU_VARIANT") == "tsan"


def corners(values: list, keep: list) -> list:
    """``values``, or under ThreadSanitizer only those in ``keep``."""
    return [v for v in values if v in keep] if TSAN else values


def ops():
    return torch.ops.tensorops_emu


def launches(emu, kernel: str | None = None) -> list[dict]:
    """The launches recorded since the test began: name (short), full (instantiation), grid, block, smem, ran (blocks
    run), entered (kernel threads that entered the body)."""
    out = []
    for e in emu.events():
        m = re.match(r"launch (.*?) grid=(\d+) block=(\d+) smem=(\d+) ran=(\d+) entered=(\d+)$", e)
        if not m:
            continue
        short = re.search(r"tensorops::kernels::(\w+)", m.group(1))
        d = {"name": short.group(1) if short else m.group(1), "full": m.group(1), "grid": int(m.group(2)),
             "block": int(m.group(3)), "smem": int(m.group(4)), "ran": int(m.group(5)),
             "entered": int(m.group(6))}
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

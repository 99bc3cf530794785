"""pytest plugin for .ci/asan_cpu.sh (``-p asan_select``, .ci on sys.path): deselects, by test function name, the
tests that compile with torch.compile or run opcheck (minutes of Inductor and fake-tensor tracing in uninstrumented
code, calling the same kernels the eager tests call), and keeps every test that proves the compiled kernel ran.

Exact rule, on the function's own name (not the module, class or parameter ids, which a ``-k`` substring also
matches): deselected when the name contains ``compile`` or ``opcheck``, unless it contains ``kernel_ran``
(``test_compiled_kernel_ran``: eager calls profiled to show tensorops' kernels ran). The terminal summary says how
many tests were kept and deselected; ASAN_SELECT_LIST=1 lists the deselected node ids.
"""
from __future__ import annotations

import os

_DROPPED: list[str] = []


def deselected(name: str) -> bool:
    return ("compile" in name or "opcheck" in name) and "kernel_ran" not in name


def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        fn = getattr(item, "originalname", None) or item.name.split("[")[0]
        (drop if deselected(fn) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    _DROPPED.extend(i.nodeid for i in drop)


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.write_line(f"asan_select: deselected {len(_DROPPED)} torch.compile/opcheck tests (kernel-ran tests kept)")
    if os.environ.get("ASAN_SELECT_LIST"):
        for nodeid in _DROPPED:
            tr.write_line(f"  deselected {nodeid}")

"""pytest plugin for .ci/run: the README's test command runs as a newcomer runs it (no extras installed); then,
with the extras installed, the tests that ran without them run again: those that skipped, those that looked for
an extra and went on without it (a reference that falls back to Pillow without torchvision), and those that exist
only with the extras.

Loaded with ``-p ci_skips`` (``.ci`` on PYTHONPATH), in one of two modes:

``--ci-skips-record=FILE`` (and ``--ci-skips-extras=torchvision,ray,...``, the extras' top-level modules)
    The run writes FILE (JSON): ``skipped``, the ids that skipped (a module that skipped whole at collection is
    one id, ``tests/test_ray.py``; xfails are not skips); ``looked``, the ids of the tests, and of the modules
    at their import, that tried to import (or find) an extra and did not find it: a meta path finder placed
    last, which Python consults only for a module that no other finder found, notes each such attempt; and
    ``seen``, every test id collected.
``--ci-skips-rerun=FILE``
    Of the tests it collects, the run keeps those under an id FILE lists as skipped or looked, and those the
    recorded run never collected in a file it collected (parametrized over what an extra provides); it deselects
    the others, and says how many it kept of each kind. Tests skipped for reasons the extras do not change (no
    GPU) skip again, quickly. (A file the recorded run did not reach stays out: record the same selection.)

An attempt made outside any test or test module (a conftest's import) is not attributed, and the record run
counts those in its summary line; one that code makes once and remembers (a module-level ``try: import``) is
attributed to the test or module that made it first, and extras looked for in subprocesses are not seen.

The first run's command is README.md's, unchanged: CI passes the options through PYTEST_ADDOPTS and ``.ci``
through PYTHONPATH. Loaded, the plugin takes both out of the environment, so the Python processes and nested
pytest runs that tests start (the emulated tier's child) see the newcomer's environment.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_addoption(parser):
    group = parser.getgroup("ci_skips", "CI: the tests that ran without the extras, rerun with them (.ci/ci_skips.py)")
    group.addoption("--ci-skips-record", metavar="FILE", default=None,
                    help="write the skipped, the extra-seeking and the collected test ids to FILE (JSON)")
    group.addoption("--ci-skips-extras", metavar="NAMES", default="",
                    help="comma-separated top-level modules of the extras (the imports the record run notes)")
    group.addoption("--ci-skips-rerun", metavar="FILE", default=None,
                    help="run only the tests FILE recorded as skipped or extra-seeking, and those its run never "
                         "collected")


def _leave_the_environment() -> None:
    """Takes the plugin's own settings out of os.environ (they were read already): PYTEST_ADDOPTS where it loads
    this plugin, and this directory's entry of PYTHONPATH."""
    if "ci_skips" in os.environ.get("PYTEST_ADDOPTS", ""):
        del os.environ["PYTEST_ADDOPTS"]
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.abspath(p) != _HERE]
    if parts:
        os.environ["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        os.environ.pop("PYTHONPATH", None)


class _NotFound:
    """A meta path finder placed last: Python consults it only for a module no other finder found. It finds
    nothing, and notes the extras looked for."""

    def __init__(self, extras: set, note):
        self.extras, self.note = extras, note

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.extras:
            self.note()
        return None


class _Record:
    def __init__(self, path: str, extras: set):
        self.path = path
        self.skipped: set = set()
        self.looked: set = set()
        self.seen: list = []
        self.unattributed = 0
        self.current: list = []  # the ids of the test running, or of the collectors importing their modules
        self.finder = _NotFound(extras, self._note)
        sys.meta_path.append(self.finder)

    def _note(self):
        if self.current and self.current[-1] is not None:
            self.looked.add(self.current[-1])
        else:
            self.unattributed += 1

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        # a test module's import is its own; a directory's (its conftest.py) is not attributed to all its tests
        self.current.append(collector.nodeid if isinstance(collector, pytest.Module) else None)
        try:
            return (yield)
        finally:
            self.current.pop()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item):
        self.current.append(item.nodeid)
        try:
            return (yield)
        finally:
            self.current.pop()

    def pytest_itemcollected(self, item):
        self.seen.append(item.nodeid)

    def pytest_collectreport(self, report):
        if report.skipped:  # a module (or class) that skipped whole: pytest.importorskip at module level
            self.skipped.add(report.nodeid)

    def pytest_runtest_logreport(self, report):
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.add(report.nodeid)

    def pytest_sessionfinish(self, session):
        if self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"skipped": sorted(self.skipped), "looked": sorted(self.looked), "seen": self.seen}, f,
                      indent=0)

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line(
            f"ci_skips: of {len(self.seen)} tests collected, {len(self.skipped)} ids skipped and {len(self.looked)} "
            f"looked for an extra ({sorted(self.finder.extras)}) without finding it ({self.unattributed} such "
            f"imports outside any test or test module); written to {self.path}")


class _Rerun:
    def __init__(self, path: str):
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        self.path = path
        self.skipped = set(recorded["skipped"])
        self.looked = set(recorded.get("looked", ()))
        self.seen = set(recorded["seen"])
        self.files = {nodeid.split("::")[0] for nodeid in self.seen | self.skipped}
        self.counts = (0, 0, 0, 0)

    @staticmethod
    def _under(nodeid: str, ids: set) -> bool:
        parts = nodeid.split("::")
        return any("::".join(parts[:i]) in ids for i in range(1, len(parts) + 1))

    @pytest.hookimpl(trylast=True)  # after -m/-k have deselected theirs
    def pytest_collection_modifyitems(self, config, items):
        keep, drop, looked, new = [], [], 0, 0
        for item in items:
            if self._under(item.nodeid, self.skipped):
                keep.append(item)
            elif self._under(item.nodeid, self.looked):
                keep.append(item)
                looked += 1
            elif item.nodeid not in self.seen and item.nodeid.split("::")[0] in self.files:
                keep.append(item)
                new += 1
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep
        self.counts = (len(keep) - looked - new, looked, new, len(drop))

    def pytest_terminal_summary(self, terminalreporter):
        skipped, looked, new, dropped = self.counts
        terminalreporter.write_line(
            f"ci_skips: rerun {skipped} tests the recorded run skipped, {looked} that looked for an extra there and "
            f"{new} it never collected; {dropped} others deselected ({self.path})")


def pytest_configure(config):
    _leave_the_environment()
    record, rerun = config.getoption("ci_skips_record"), config.getoption("ci_skips_rerun")
    if record and rerun:
        raise pytest.UsageError("--ci-skips-record and --ci-skips-rerun are two runs: give one")
    if record:
        extras = {name.strip() for name in config.getoption("ci_skips_extras").split(",") if name.strip()}
        if not extras:
            raise pytest.UsageError("--ci-skips-record needs --ci-skips-extras (the extras' top-level modules)")
        config.pluginmanager.register(_Record(record, extras), "ci_skips_record")
    elif rerun:
        config.pluginmanager.register(_Rerun(rerun), "ci_skips_rerun")

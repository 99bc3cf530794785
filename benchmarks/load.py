"""Background CPU load for ``python -m benchmarks --load N``: N busy processes that keep N cores busy while the
benchmark times, the way a training loop or DataLoader workers keep a machine busy in practice.

Each process is a plain Python loop (one thread, no memory traffic to speak of) that stops by itself:

* when the benchmark process that started it is gone (its parent pid changes: the benchmark ended, crashed or
  was killed, even with SIGKILL), checked every few milliseconds;
* after ``limit_s`` seconds whatever happens;
* when ``BusyLoad`` is closed (the ``with`` block ends): it is terminated, then killed, and waited for.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

# The busy loop: spin, and every ~5 ms check the deadline and that the parent is still the one that started us.
_BUSY = (
    "import os, sys, time\n"
    "parent, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])\n"
    "while os.getppid() == parent and time.monotonic() < deadline:\n"
    "    for _ in range(20000):\n"
    "        pass\n"
)

DEFAULT_LIMIT_S = 3600.0


def loadavg() -> Optional[List[float]]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def save_json(out_dir: str, name: str, load: int, data: Any) -> str:
    """Writes ``data`` to ``out_dir/name[_loadN].json`` (the suffix names a run under ``--load N``); returns the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + (f"_load{load}" if load else "") + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return path


class BusyLoad:
    """``with BusyLoad(n, limit_s) as load:`` runs ``n`` busy processes for the block (none for n == 0)."""

    def __init__(self, n: int, limit_s: float = DEFAULT_LIMIT_S) -> None:
        if n < 0:
            raise ValueError(f"load: the number of busy processes must be >= 0, got {n}")
        if not limit_s > 0:
            raise ValueError(f"load: limit_s must be > 0, got {limit_s}")
        self.n = int(n)
        self.limit_s = float(limit_s)
        self.procs: List[subprocess.Popen] = []
        self.started_at: Optional[float] = None
        self.loadavg_start: Optional[List[float]] = None

    def start(self) -> "BusyLoad":
        self.loadavg_start = loadavg()
        self.started_at = time.monotonic()
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(
                [sys.executable, "-c", _BUSY, str(os.getpid()), str(self.limit_s)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))
        if self.n:
            time.sleep(0.2)  # let them start spinning before anything is timed
        return self

    def alive(self) -> int:
        return sum(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def describe(self) -> Dict[str, Any]:
        """What the JSON records: how many busy processes ran, of what kind, and the load average around them."""
        return {
            "busy_processes": self.n,
            "kind": "single-threaded Python busy loop per process" if self.n else "none (quiet run)",
            "limit_s": self.limit_s if self.n else None,
            "still_running_at_end": self.alive(),
            "loadavg_1_5_15_at_start": self.loadavg_start,
            "loadavg_1_5_15_at_end": loadavg(),
            "cpu_count": os.cpu_count(),
        }

    def __enter__(self) -> "BusyLoad":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# What other engineers' builds run: a timing taken while one of these ran is not a quiet figure.
COMPILERS = ("cc1plus", "cc1", "nvcc", "cicc", "ptxas", "ninja")


def _compilers_running() -> List[str]:
    """The names of the compiler processes running now (from /proc/*/comm; empty where /proc is absent)."""
    found = []
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
                name = f.read().strip()
        except OSError:
            continue
        if name in COMPILERS:
            found.append(name)
    return found


def _procs_running() -> Optional[int]:
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            for line in f:
                if line.startswith("procs_running"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


class ActivityWatch:
    """Samples, every ``interval_s`` in a background thread while a benchmark times, whether a compiler runs
    (``COMPILERS``) and how many tasks are runnable (``/proc/stat``'s procs_running, which counts this process's
    running threads and the ``--load`` processes too), so that the results file says what else ran: a figure
    taken while someone's build ran is marked as such rather than passed off as quiet."""

    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = interval_s
        self.samples = 0
        self.with_compiler = 0
        self.compilers: Dict[str, int] = {}
        self.runnable: Dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _sample(self) -> None:
        names = _compilers_running()
        self.samples += 1
        if names:
            self.with_compiler += 1
        for n in set(names):
            self.compilers[n] = self.compilers.get(n, 0) + 1
        r = _procs_running()
        if r is not None:
            self.runnable[r] = self.runnable.get(r, 0) + 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval_s)

    def start(self) -> "ActivityWatch":
        self._thread = threading.Thread(target=self._loop, name="ActivityWatch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def describe(self) -> Dict[str, Any]:
        return {
            "interval_s": self.interval_s,
            "samples": self.samples,
            "samples_with_a_compiler": self.with_compiler,
            "compiler_samples_by_name": dict(sorted(self.compilers.items())),
            "procs_running_histogram": {str(k): v for k, v in sorted(self.runnable.items())},
            "note": "procs_running counts this benchmark's own running threads and its --load processes",
        }

    def __enter__(self) -> "ActivityWatch":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

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

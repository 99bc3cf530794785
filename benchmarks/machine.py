"""The machine a benchmark ran on, for the JSON's ``meta``: CPU, GPUs, torch, tensorops' build and the git commit."""
from __future__ import annotations

import os
import platform
import subprocess
from typing import Any, Dict, Optional

import torch

from benchmarks import REPO


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> Optional[str]:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
            cwd=REPO,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10,
            cwd=REPO,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def machine_info() -> Dict[str, Any]:
    import tensorops

    info: Dict[str, Any] = {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "tensorops_build_info": tensorops.build_info(),
        # the CPU build the run used (TENSOROPS_CPU_ISA caps it) and the level torch's own kernels ran at
        "cpu_isa": tensorops._extension._C.cpu_isa() if tensorops.is_compiled() else None,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "tensorops_compiled": tensorops.is_compiled(),
        "git_commit": _git_commit(),
        "gpus": [],
    }
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append({
                "name": p.name,
                "compute_capability": f"{p.major}.{p.minor}",
                "memory_gib": round(p.total_memory / 2**30, 1),
                "multiprocessors": p.multi_processor_count,
            })
    info["gpu_name"] = info["gpus"][0]["name"] if info["gpus"] else None
    return info

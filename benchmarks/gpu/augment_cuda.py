"""tensorops.augment's policies on a CUDA batch, for benchmarks/gpu/gpu_check.sh: each policy on the device (the
NormalizingLoader's ``augment=`` path) against torchvision v2 per image and on the batch, on the same device,
interleaved rounds (benchmarks.timing). Each row also replays the draws on the CPU kernels and records whether the
device's output equals them (``check``: contrast's mean may round apart on CUDA, docs/guides/fidelity.rst).

    python -m benchmarks.augment_cuda --device cuda --out DIR      # writes DIR/bench_augment_cuda.json

The GPU machine has no scikit-image: the images are random-textured 224 x 224 uint8 (photo-like content does not
move these kernels' cost). ``--device cpu --smoke`` checks the plumbing anywhere (tests/test_benchmarks.py)."""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Callable, Dict, List

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.timing import measure_interleaved


def _policies() -> Dict[str, Callable[[torch.Generator], Any]]:
    from tensorops import augment as A

    return {
        "TrivialAugmentWide": lambda g: A.TrivialAugmentWide(generator=g),
        "RandAugment(2, 9)": lambda g: A.RandAugment(generator=g),
        "AutoAugment(ImageNet)": lambda g: A.AutoAugment(generator=g),
        "AugMix": lambda g: A.AugMix(generator=g),
        "ColorJitter(0.4, 0.4, 0.4, 0.1)": lambda g: A.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g),
        "RandomErasing()": lambda g: A.RandomErasing(generator=g),
    }


def _torchvision(name: str):
    try:
        import torchvision.transforms.v2 as v2
    except ImportError:
        return None
    return {
        "TrivialAugmentWide": v2.TrivialAugmentWide, "RandAugment(2, 9)": v2.RandAugment,
        "AutoAugment(ImageNet)": v2.AutoAugment, "AugMix": v2.AugMix,
        "ColorJitter(0.4, 0.4, 0.4, 0.1)": lambda: v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
        "RandomErasing()": v2.RandomErasing,
    }[name]()


def run(device: str, n: int, size: int, rounds: int, min_run_time: float) -> List[Dict[str, Any]]:
    g = torch.Generator().manual_seed(0)
    base = torch.randint(0, 256, (n, 3, size // 8, size // 8), generator=g, dtype=torch.uint8)
    batch = torch.nn.functional.interpolate(base.float(), size=(size, size), mode="bilinear",
                                            align_corners=False).round().to(torch.uint8).to(device)
    rows = []
    for name, make in _policies().items():
        ours = make(torch.Generator().manual_seed(1))
        params = ours.make_params(batch)
        got = ours.transform(batch, params)
        cpu = ours.transform(batch.cpu(), {k: (v.cpu() if isinstance(v, torch.Tensor) else v)
                                           for k, v in params.items()})
        check = "equal to the CPU kernels" if torch.equal(got.cpu(), cpu) else (
            f"{int((got.cpu() != cpu).sum())} of {cpu.numel()} values differ from the CPU kernels")
        stmts = {"tensorops": lambda o=ours: o(batch)}
        tv = _torchvision(name)
        if tv is not None:
            stmts["torchvision v2 per image"] = lambda t=tv: [t(batch[i]) for i in range(n)]
            stmts["torchvision v2 batch"] = lambda t=tv: t(batch)
        samples = measure_interleaved(stmts, min_run_time, rounds)
        med = {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
        row = {"row": name, "device": device, "images": n, "size": size, "check": check,
               "ms_per_image": {k: v / n * 1e3 for k, v in med.items()},
               "samples_s": samples}
        for k in ("torchvision v2 per image", "torchvision v2 batch"):
            if k in med:
                row[f"ratio vs {k}"] = med[k] / med["tensorops"]
        rows.append(row)
        print(f"{name:34s} " + "  ".join(f"{k} {v:.4f} ms/img" for k, v in row["ms_per_image"].items()) +
              f"  [{check}]", flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", default=LOCAL_RESULTS)
    p.add_argument("--smoke", action="store_true", help="4 tiny images, 1 round (seconds)")
    a = p.parse_args(argv)
    n, size, rounds, t = (4, 32, 1, 0.01) if a.smoke else (64, 224, 3, 0.15)
    rows = run(a.device, n, size, rounds, t)
    os.makedirs(a.out, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu",
            "torch": torch.__version__, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "threads": torch.get_num_threads()}
    with open(os.path.join(a.out, "bench_augment_cuda.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

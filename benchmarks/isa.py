"""The CPU builds side by side: each of tensorops' CPU builds (AVX-512 where the CPU has it, AVX2, baseline) on the
same augmentation and resize rows, with torchvision v2 per image on torch's own kernels of the same level.

    python -m benchmarks.isa                  # 1 thread, 32 real photos at 224; results/local/isa.json
    python -m benchmarks.isa --load 2         # with 2 busy background processes

Each build runs in a process of its own (``TENSOROPS_CPU_ISA`` caps tensorops' build, ``ATEN_CPU_CAPABILITY``
torch's: an AVX2-only machine runs torch's AVX2 kernels; ``base`` leaves torch's choice as it is, torch has no
baseline level of its own on x86). The AVX2 and baseline figures of an AVX-512 machine are those builds on this
core at its clock: a machine without AVX-512 may clock and cache differently. Rows: the functional ops at
magnitudes the policies draw (one per sample), ColorJitter(0.4, 0.4, 0.4, 0.1) and TrivialAugmentWide on the
batch (tensorops) against the same transforms per image (torchvision v2), and resized_crop_mirror_normalize of the
decoded photos (HWC, decode_jpeg's layout as a numpy-free permute) against v2's resized_crop + to_dtype +
normalize per image. ms per image, median of interleaved rounds with their spread.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

import torch

from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.timing import measure_interleaved, spread

ISAS = ("avx512", "avx2", "base")
ATEN = {"avx512": "avx512", "avx2": "avx2", "base": None}
N, SIDE = 32, 224


def _rows(batch: torch.Tensor, photos: List[torch.Tensor], tv: Any) -> Dict[str, Dict[str, Callable[[], Any]]]:
    """Per row, {"tensorops": fn, "torchvision": fn}."""
    from tensorops import augment as A
    from tensorops import resized_crop_mirror_normalize

    g = torch.Generator().manual_seed(0)
    mag = {"brightness": (0.5, 1.5), "contrast": (0.5, 1.5), "saturation": (0.5, 1.5), "hue": (-0.2, 0.2),
           "sharpness": (0.5, 1.5)}
    rows: Dict[str, Dict[str, Callable[[], Any]]] = {}
    for name, (lo, hi) in mag.items():
        m = lo + (hi - lo) * torch.rand(N, generator=g, dtype=torch.float64)
        ours = getattr(A, f"adjust_{name}")
        theirs = getattr(tv.functional, f"adjust_{name}") if tv else None
        rows[name] = {"tensorops": (lambda f=ours, m=m: f(batch, m))}
        if tv:
            rows[name]["torchvision"] = lambda f=theirs, m=m: [f(batch[i], float(m[i])) for i in range(N)]
    angles = (-30 + 60 * torch.rand(N, generator=g, dtype=torch.float64))
    for interp in ("nearest", "bilinear"):
        rows[f"rotate {interp}"] = {"tensorops": lambda a=angles, ip=interp: A.rotate(batch, a, interpolation=ip)}
        if tv:
            mode = getattr(tv.InterpolationMode, interp.upper())
            rows[f"rotate {interp}"]["torchvision"] = lambda a=angles, md=mode: [
                tv.functional.rotate(batch[i], float(a[i]), interpolation=md) for i in range(N)]
    for name, ours, theirs in (("ColorJitter(0.4, 0.4, 0.4, 0.1)", A.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                tv.ColorJitter(0.4, 0.4, 0.4, 0.1) if tv else None),
                               ("TrivialAugmentWide", A.TrivialAugmentWide(),
                                tv.TrivialAugmentWide() if tv else None)):
        rows[name] = {"tensorops": lambda t=ours: t.transform(batch, t.make_params(batch, generator=g))}
        if tv:
            rows[name]["torchvision"] = lambda t=theirs: [t(batch[i]) for i in range(N)]
    boxes = torch.tensor([[0.1 * p.shape[1], 0.1 * p.shape[2], 0.8 * p.shape[1], 0.8 * p.shape[2]] for p in photos],
                         dtype=torch.float64).round()
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    rows["resized_crop_mirror_normalize"] = {"tensorops": lambda: resized_crop_mirror_normalize(
        photos, mean, std, size=SIDE, boxes=boxes)}
    if tv:
        F = tv.functional
        rows["resized_crop_mirror_normalize"]["torchvision"] = lambda: torch.stack([F.normalize(F.to_dtype(
            F.resized_crop(p, *[int(v) for v in b], [SIDE, SIDE], antialias=True), torch.float32, scale=True),
            mean, std) for p, b in zip(photos, boxes)])
    return rows


def child(out: str, rounds: int, min_run_time: float, n: int, side: int) -> None:
    """One build: every row timed (tensorops and torchvision interleaved), written to ``out`` (JSON)."""
    global N, SIDE
    N, SIDE = n, side
    import torchvision.transforms.v2 as tv

    import tensorops
    from benchmarks.augment import REAL, SYNTH, image_batch
    from benchmarks.case import photo_like, real_photo_sizes

    torch.set_num_threads(1)
    try:
        batch = image_batch(REAL, N, SIDE)
        images = REAL
    except ImportError:  # no scikit-image: the photo-like set
        batch = image_batch(SYNTH, N, SIDE)
        images = SYNTH
    g = torch.Generator().manual_seed(1)
    # the resize's sources as decode_jpeg gives them: CHW views of HWC memory
    photos = [photo_like(h, w, g).permute(1, 2, 0).contiguous().permute(2, 0, 1) for h, w in real_photo_sizes(N)]
    result = {"isa": tensorops._extension._C.cpu_isa(), "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "images": images, "rows": []}
    for name, fns in _rows(batch, photos, tv).items():
        samples = measure_interleaved(fns, min_run_time, rounds)
        row: Dict[str, Any] = {"row": name}
        for impl, xs in samples.items():
            s = spread([x * 1e3 / N for x in xs])
            row[impl] = {"ms_per_image": s["median"], "spread": s}
        if "torchvision" in row:
            row["vs_torchvision"] = row["torchvision"]["ms_per_image"] / row["tensorops"]["ms_per_image"]
        result["rows"].append(row)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.isa", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--min-run-time", type=float, default=0.5)
    p.add_argument("--load", type=int, default=0, metavar="N")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--isas", default=",".join(ISAS), help="the builds to run (those this CPU has)")
    p.add_argument("--images", type=int, default=N, help="images per batch (default 32)")
    p.add_argument("--side", type=int, default=SIDE, help="the batch's side and the resize's output (default 224)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "local"),
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.rounds, args.min_run_time, args.images, args.side)
        return 0
    import tensorops

    best = tensorops._extension._C.cpu_isa()
    isas = [i for i in args.isas.split(",") if i in ISAS and ISAS.index(i) >= ISAS.index(best)]
    builds = []
    with BusyLoad(args.load, args.load_limit) as load, ActivityWatch() as activity, \
            tempfile.TemporaryDirectory() as tmp:
        for isa in isas:
            env = dict(os.environ, TENSOROPS_CPU_ISA=isa)
            if ATEN[isa]:
                env["ATEN_CPU_CAPABILITY"] = ATEN[isa]
            out = os.path.join(tmp, f"{isa}.json")
            subprocess.run([sys.executable, "-m", "benchmarks.isa", "--child", out, "--rounds", str(args.rounds),
                            "--min-run-time", str(args.min_run_time), "--images", str(args.images),
                            "--side", str(args.side)], env=env, check=True)
            with open(out, encoding="utf-8") as f:
                builds.append(json.load(f))
        meta = {**machine_info(), "load": load.describe(), "activity": activity.describe(), "torch_threads": 1,
                "images": args.images, "side": args.side, "what": __doc__}
    path = save_json(args.out, "isa", args.load, {"meta": meta, "builds": builds})
    print("| row | " + " | ".join(f"{b['isa']} ms/image (vs torchvision {b['torch_cpu_capability']})"
                                    for b in builds) + " |")
    print("|---|" + "---|" * len(builds))
    for k, row in enumerate(builds[0]["rows"]):
        cells = []
        for b in builds:
            r = b["rows"][k]
            ratio = f", {r['vs_torchvision']:.2f}x" if "vs_torchvision" in r else ""
            cells.append(f"{r['tensorops']['ms_per_image']:.3f}{ratio}")
        print(f"| {row['row']} | " + " | ".join(cells) + " |")
    print(f"json: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The CPU builds side by side: each of tensorops' CPU builds (AVX-512 where the CPU has it, AVX2, baseline) on the
same augmentation and resize rows, with torchvision v2 per image on torch's own kernels of the same level, and
albumentations and DALI's CPU operators where they are installed (benchmarks/images/peers.py says what each runs).

    python -m benchmarks.isa                  # 1 thread, 32 real photos at 224; results/local/isa.json
    python -m benchmarks.isa --load 2         # with 2 busy background processes

Each build runs in a process of its own (``TENSOROPS_CPU_ISA`` caps tensorops' build, ``ATEN_CPU_CAPABILITY``
torch's: an AVX2-only machine runs torch's AVX2 kernels; ``base`` leaves torch's choice as it is, torch has no
baseline level of its own on x86; on a CPU with FMA the baseline build's augment loops run their FMA variant, and
``--isas base-nofma`` runs them as a CPU without FMA does). The AVX2 and baseline figures of an AVX-512 machine are those builds on this
core at its clock: a machine without AVX-512 may clock and cache differently. Rows: the functional ops at
magnitudes the policies draw (one per sample), ColorJitter(0.4, 0.4, 0.4, 0.1), TrivialAugmentWide, RandAugment,
AutoAugment and AugMix on the batch (tensorops) against the same transforms per image (torchvision v2), and the
image path from real photographs' JPEG files with training boxes: resized_crop_mirror_normalize of the decoded
images and the decode op from the bytes (isa_images.py says against what). ms per image, median of interleaved
rounds with their spread.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.peers import opencv_isa_env
from benchmarks.timing import measure_interleaved, spread

# base-nofma (on request: --isas base-nofma): the baseline build as an x86 CPU without FMA runs it, where "base" on
# a CPU with FMA runs augment's FMA variant (csrc/include/tensorops/cpu_isa.h)
ISAS = ("avx512", "avx2", "base", "base-nofma")
DEFAULT_ISAS = ISAS[:3]
ATEN = {"avx512": "avx512", "avx2": "avx2", "base": None, "base-nofma": None}
N, SIDE = 32, 224


def magnitudes(n: int, side: int) -> Dict[str, torch.Tensor]:
    """Per-sample arguments at the magnitudes the policies draw, the same for every column."""
    g = torch.Generator().manual_seed(0)

    def u(lo: float, hi: float) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(n, generator=g, dtype=torch.float64)

    m = {k: u(0.5, 1.5) for k in ("brightness", "contrast", "saturation", "sharpness")}
    m.update(hue=u(-0.2, 0.2), angle=u(-30, 30), shear=u(-17, 17),
             bits=torch.randint(4, 9, (n,), generator=g), threshold=u(0, 256).floor())
    area = u(0.02, 0.33) * side * side
    ratio = torch.exp(u(math.log(0.3), math.log(3.3)))
    eh = (area * ratio).sqrt().clamp(1, side).floor().long()
    ew = (area / ratio).sqrt().clamp(1, side).floor().long()
    top = (torch.rand(n, generator=g, dtype=torch.float64) * (side - eh + 1)).floor().long()
    left = (torch.rand(n, generator=g, dtype=torch.float64) * (side - ew + 1)).floor().long()
    m["erase"] = torch.stack([top, left, eh, ew], 1)
    return m


def _rows(batch: torch.Tensor, tv: Any) -> Dict[str, Dict[str, Callable[[], Any]]]:
    """Per row, {"tensorops": fn, "torchvision": fn, and the peers that have it}."""
    from benchmarks.isa_images import image_rows
    from benchmarks.peers import albumentations_rows, dali_rows
    from tensorops import augment as A

    g = torch.Generator().manual_seed(0)
    m = magnitudes(N, SIDE)
    F = tv.functional
    rows: Dict[str, Dict[str, Callable[[], Any]]] = {}

    def add(name: str, ours: Callable[[], Any], theirs: Callable[[int], Any]) -> None:
        rows[name] = {"tensorops": ours, "torchvision": lambda: [theirs(i) for i in range(N)]}

    for name in ("brightness", "contrast", "saturation", "hue", "sharpness"):
        ours, theirs = getattr(A, f"adjust_{name}"), getattr(F, f"adjust_{name}")
        add(name, lambda f=ours, v=m[name]: f(batch, v), lambda i, f=theirs, v=m[name]: f(batch[i], float(v[i])))
    add("posterize", lambda: A.posterize(batch, m["bits"]), lambda i: F.posterize(batch[i], int(m["bits"][i])))
    add("solarize", lambda: A.solarize(batch, m["threshold"]),
        lambda i: F.solarize(batch[i], float(m["threshold"][i])))
    add("autocontrast", lambda: A.autocontrast(batch), lambda i: F.autocontrast(batch[i]))
    add("equalize", lambda: A.equalize(batch), lambda i: F.equalize(batch[i]))
    for interp in ("nearest", "bilinear"):
        mode = getattr(tv.InterpolationMode, interp.upper())
        add(f"rotate {interp}", lambda ip=interp: A.rotate(batch, m["angle"], interpolation=ip),
            lambda i, md=mode: F.rotate(batch[i], float(m["angle"][i]), interpolation=md))
    shear_x = torch.stack([m["shear"], torch.zeros(N, dtype=torch.float64)], 1)
    add("shear bilinear", lambda: A.affine(batch, shear=shear_x, interpolation="bilinear"),
        lambda i: F.affine(batch[i], angle=0.0, translate=[0, 0], scale=1.0, shear=[float(m["shear"][i]), 0.0],
                           interpolation=tv.InterpolationMode.BILINEAR))
    add("erasing", lambda: A.erase(batch, m["erase"], 0), lambda i: F.erase(batch[i], *m["erase"][i].tolist(), v=0))
    for name, ours, theirs in (("ColorJitter(0.4, 0.4, 0.4, 0.1)", A.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                tv.ColorJitter(0.4, 0.4, 0.4, 0.1)),
                               ("TrivialAugmentWide", A.TrivialAugmentWide(), tv.TrivialAugmentWide()),
                               ("RandAugment", A.RandAugment(), tv.RandAugment()),
                               ("AutoAugment", A.AutoAugment(), tv.AutoAugment()),
                               ("AugMix", A.AugMix(), tv.AugMix())):
        add(name, lambda t=ours: t.transform(batch, t.make_params(batch, generator=g)),
            lambda i, t=theirs: t(batch[i]))
    rows.update(image_rows(N, SIDE))
    for peer in (albumentations_rows(batch, m), dali_rows(batch, m, m["erase"])):
        for name, fns in peer.items():
            rows[name].update(fns)
    return rows


def child(out: str, rounds: int, min_run_time: float, n: int, side: int) -> None:
    """One build: every row timed (tensorops and torchvision interleaved), written to ``out`` (JSON)."""
    global N, SIDE
    N, SIDE = n, side
    import torchvision.transforms.v2 as tv

    import tensorops
    from benchmarks.augment import REAL, SYNTH, image_batch

    torch.set_num_threads(1)
    try:
        batch = image_batch(REAL, N, SIDE)
        images = REAL
    except ImportError:  # no scikit-image: the photo-like set
        batch = image_batch(SYNTH, N, SIDE)
        images = SYNTH
    isa = tensorops._extension._C.cpu_isa()
    if isa == "base" and os.environ.get("TENSOROPS_CPU_ISA") == "base-nofma":
        isa = "base-nofma"
    result = {"isa": isa, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "images": images, "rows": []}
    for name, fns in _rows(batch, tv).items():
        samples = measure_interleaved(fns, min_run_time, rounds)
        row: Dict[str, Any] = {"row": name}
        for impl, xs in samples.items():
            s = spread([x * 1e3 / N for x in xs])
            row[impl] = {"ms_per_image": s["median"], "spread": s}
        for impl in samples:
            if impl != "tensorops":
                row[f"vs_{impl}"] = row[impl]["ms_per_image"] / row["tensorops"]["ms_per_image"]
        result["rows"].append(row)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.isa", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--min-run-time", type=float, default=0.5)
    p.add_argument("--load", type=int, default=0, metavar="N")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--isas", default=",".join(DEFAULT_ISAS),
                   help="the builds to run (those this CPU has; base-nofma on request)")
    p.add_argument("--images", type=int, default=N, help="images per batch (default 32)")
    p.add_argument("--side", type=int, default=SIDE, help="the batch's side and the resize's output (default 224)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=LOCAL_RESULTS,
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
            env.update(opencv_isa_env(isa))
            out = os.path.join(tmp, f"{isa}.json")
            subprocess.run([sys.executable, "-m", "benchmarks.isa", "--child", out, "--rounds", str(args.rounds),
                            "--min-run-time", str(args.min_run_time), "--images", str(args.images),
                            "--side", str(args.side)], env=env, check=True)
            with open(out, encoding="utf-8") as f:
                builds.append(json.load(f))
        meta = {**machine_info(), "load": load.describe(), "activity": activity.describe(), "torch_threads": 1,
                "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "images": args.images, "side": args.side, "what": __doc__}
    path = save_json(args.out, "isa", args.load, {"meta": meta, "builds": builds})
    peers = [p for p in ("torchvision", "albumentations", "DALI CPU", "decode_jpeg + resize")
             if any(p in r for b in builds for r in b["rows"])]
    print("| row | " + " | ".join(f"{b['isa']} ms/image (vs " + ", ".join(peers) + ")" for b in builds) + " |")
    print("|---|" + "---|" * len(builds))
    for k, row in enumerate(builds[0]["rows"]):
        cells = []
        for b in builds:
            r = b["rows"][k]
            ratios = " / ".join(f"{r[f'vs_{p}']:.2f}x" if f"vs_{p}" in r else "-" for p in peers)
            cells.append(f"{r['tensorops']['ms_per_image']:.3f} ({ratios})")
        print(f"| {row['row']} | " + " | ".join(cells) + " |")
    print(f"json: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

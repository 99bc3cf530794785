"""Images/s through Ray Data: ``python -m benchmarks.ray_pipeline [--images 768] [--batch 32] [--actors 1 2]``.

Opt-in (not in the harness: it starts a local Ray instance); prints a note and exits 0 when ray is not installed.
A folder of JPEGs (random sizes around ``--side``) is written once; each case runs ``read_images(mode="RGB")
-> map_batches(stage, actor pool of k actors) -> iter_torch_batches`` and reports images per second over the
second half of the images received: actor start-up (seconds on a busy machine) is left out, and with a
small object store (100 MB) Ray's backpressure keeps the reads from running far ahead, so the rate is that of
decode and stage together. The end-to-end time is reported too.
Stages: tensorops.ray.ResizedCropMirrorNormalize (one op call per batch)
against the same training transform written with torchvision v2 per image (RandomResizedCrop,
RandomHorizontalFlip, ToDtype(scale=True), Normalize, then torch.stack).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any, Dict, List, Tuple

import numpy as np
import torch

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


class TorchvisionStage:
    """The baseline: torchvision v2 per image, then a stack (what a per-sample Dataset transform does)."""

    def __init__(self, size: int, mean: List[float], std: List[float]) -> None:
        from torchvision.transforms import v2

        self.pipeline = v2.Compose([v2.RandomResizedCrop(size, antialias=True), v2.RandomHorizontalFlip(),
                                    v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std)])

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        images = [self.pipeline(torch.from_numpy(np.asarray(im)).permute(2, 0, 1)) for im in batch["image"]]
        return {**batch, "image": torch.stack(images).numpy()}


def _write_images(folder: str, n: int, side: int) -> None:
    import PIL.Image

    rng = np.random.default_rng(0)
    for i in range(n):
        h, w = (int(v) for v in rng.integers(int(side * 0.8), int(side * 1.25), 2))
        # smooth content (JPEG of noise decodes slower than photographs do)
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([(x * 255 // w), (y * 255 // h), ((x + y + i) % 256)], -1).astype(np.uint8)
        PIL.Image.fromarray(img).save(os.path.join(folder, f"img{i:05d}.jpg"), quality=90)


def _run(ray: Any, folder: str, stage: Any, kwargs: Dict[str, Any], actors: int, batch: int) -> Tuple[float, float]:
    """(images/s over the second half of the rows, end-to-end seconds) of read_images -> stage -> iter_torch_batches."""
    ds = ray.data.read_images(folder, mode="RGB", num_cpus=0.5)  # half a CPU: reads run beside the actors
    ds = ds.map_batches(stage, batch_format="numpy", batch_size=batch, concurrency=actors, num_cpus=0.5,
                        fn_constructor_kwargs=kwargs)
    start = time.perf_counter()
    marks = [(start, 0)]
    for b in ds.iter_torch_batches(batch_size=batch):
        marks.append((time.perf_counter(), marks[-1][1] + int(b["image"].shape[0])))
    end, rows = marks[-1]
    t_mid, n_mid = next(m for m in marks if m[1] >= rows / 2)
    rate = (rows - n_mid) / (end - t_mid) if end > t_mid else float("nan")
    return rate, end - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=768)
    p.add_argument("--side", type=int, default=320, help="typical image side in pixels")
    p.add_argument("--size", type=int, default=224, help="output side")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--actors", type=int, nargs="+", default=[1, 2])
    p.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    args = p.parse_args()
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        print("benchmarks.ray_pipeline: ray is not installed (pip install 'tensorops[ray]'); skipped")
        return
    import tensorops
    from tensorops.ray import ResizedCropMirrorNormalize

    stages = [("tensorops.ray stage", ResizedCropMirrorNormalize, dict(size=args.size, mean=MEAN, std=STD, seed=0))]
    try:
        import torchvision  # noqa: F401

        stages.append(("torchvision v2 per image", TorchvisionStage, dict(size=args.size, mean=MEAN, std=STD)))
    except ImportError:
        print("torchvision is not installed: the baseline rows are skipped")
    with tempfile.TemporaryDirectory() as folder:
        _write_images(folder, args.images, args.side)
        ray.init(num_cpus=args.cpus, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        try:
            print(f"{args.images} JPEGs of ~{args.side} px -> {args.size}x{args.size} float32, batch {args.batch}, "
                  f"{args.cpus} CPUs; compiled extension: {tensorops.is_compiled()}")
            print("| stage | actors | images/s | end to end (s) |\n|---|---|---|---|")
            for name, stage, kwargs in stages:
                for k in args.actors:
                    rate, total = _run(ray, folder, stage, kwargs, k, args.batch)
                    print(f"| {name} | {k} | {rate:.0f} | {total:.1f} |", flush=True)
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()

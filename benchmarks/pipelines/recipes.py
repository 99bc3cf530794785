"""Two training recipes (torchvision's reference and timm's DeiT) end to end: JPEG files -> DataLoader (2 workers,
batch 32) -> augmented, normalized, mixed float32 batches with soft labels; images per second and CPU milliseconds
per image (all processes).

    python -m benchmarks.recipes --quick             # both recipes, real photos, 2 workers
    python -m benchmarks.recipes --quick --load 2    # with 2 busy background processes (benchmarks/load.py)

The recipes, the two most used ImageNet training pipelines:

* (a) torchvision's reference recipe (ResNet-50, references/classification): RandomResizedCrop(176) +
  RandomHorizontalFlip + TrivialAugmentWide + ToDtype + Normalize + RandomErasing(0.1), and per batch one of
  MixUp(alpha 0.2) / CutMix(alpha 1.0) (RandomChoice, in the collate as the reference's train.py does);
* (b) timm's (DeiT): RandomResizedCrop(224) + flip + ``rand-m9-mstd0.5-inc1`` + Normalize + RandomErasing(0.25,
  per-pixel normal noise: timm's ``pixel`` mode, v2's ``value="random"``) + MixUp(0.8) / CutMix(1.0) per batch.

The paths of a recipe, each a DataLoader over the same files with the same number of workers (the ratio to the
reference, ``vs_reference``, is against what the recipe's users run: torchvision's reference on PIL for (a),
timm's own pipeline for (b); ``recipe_references.py``):

* ``torchvision v2``: ``decode_jpeg(read_file)`` + the v2 transforms per image in the Dataset, ``default_collate``
  + ``RandomChoice([MixUp, CutMix])`` in the collate. timm's policy string has no v2 spelling: its column runs
  v2's ``RandAugment(num_ops=2, magnitude=9)`` (timm's magnitude noise, mstd0.5, and its increasing ops, inc1,
  left out), the baseline of the ratios;
* ``torchvision v2 PIL``: the same on PIL images (ImageFolder's loader, the reference scripts' default backend)
  up to the policy, then ``PILToTensor``;
* ``tensorops``: the file bytes (``tensorops.io.loader``) to ``ResizedCropMirrorNormalizeCollate``, which decodes
  each JPEG where its box reads into a uint8 batch, runs the policy on it (``augment=``), normalizes into the
  worker's shared memory, then runs RandomErasing and ``RandomChoice([MixUp, CutMix])`` of ``tensorops.augment``
  on the float batch in place (``after_normalize=``, ``inplace=True``: the collate's batch is fresh, nothing else
  holds it); recipe (b)'s policy from timm's string (``tensorops.augment.from_timm_string``). The workers write
  later batches into the shared blocks of batches no process can read any more
  (``tensorops.data.shared_batches``);
* ``timm`` (recipe (b)): timm's ``create_transform`` on PIL images and its ``Mixup`` after ``default_collate``;
* ``tensorops from_pipeline``: ``tensorops.data.from_pipeline`` of the reference's own transform and batch
  transform, the Dataset giving the files' bytes (the one line a user changes; its plan is in the JSON);
* ``tensorops, fresh memory``: the same as ``tensorops`` with that reuse off (``TENSOROPS_REUSE_SHARED_MEMORY=0`` in the workers:
  every batch in fresh shared memory, as ``default_collate``'s: its page faults are the workers' to pay).

A round times one epoch (``--epoch`` images, cycling over the files) of every path of a recipe, interleaved in
alternating order; the ratio is torchvision's epoch time over the path's, per round. CPU time is the user +
system time of the main process and of the workers (``/proc``) over the epoch, per image. Results:
``recipes_<grid>[_loadN].json`` (default ``benchmarks/results/local/``; ``--out benchmarks/results`` publishes),
the table as markdown beside it; ``meta.activity`` says whether a compiler ran while it timed.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from benchmarks import LOCAL_RESULTS
from benchmarks import augment as bench_augment
from benchmarks.case import real_photos
from benchmarks.load import DEFAULT_LIMIT_S, ActivityWatch, BusyLoad, save_json
from benchmarks.machine import machine_info
from benchmarks.pipeline_paths import (BATCH, MEAN, STD, Files, cpu_seconds, epoch, pil_decode, tensor_decode,
                                       worker_pids, write_jpegs)
from benchmarks.recipe_references import PIPE, REFERENCE, TIMM, TimmCollate, pipeline_collate, timm_objects
from benchmarks.timing import spread

NUM_CLASSES = 1000
TV, TV_PIL, TOPS, TOPS_FRESH = ("torchvision v2", "torchvision v2 PIL", "tensorops", "tensorops, fresh memory")
PATHS = {"a": (TV, TV_PIL, TOPS, TOPS_FRESH, PIPE), "b": (TV, TV_PIL, TIMM, TOPS, TOPS_FRESH, PIPE)}
GRID = {  # files, rounds, images per epoch (cycling over the files)
    "smoke": (4, 1, 8),
    "quick": (64, 3, 320),
    "full": (128, 5, 640),
}
RECIPES: Dict[str, Dict[str, Any]] = {
    "a": dict(name="torchvision reference: RRC 176 + flip + TrivialAugmentWide + RandomErasing(0.1) + "
                   "MixUp(0.2) / CutMix(1.0)",
              crop=176, policy="TrivialAugmentWide", erase_p=0.1, erase_value=0.0, mixup=0.2, cutmix=1.0),
    "b": dict(name="timm: RRC 224 + flip + rand-m9-mstd0.5-inc1 + RandomErasing(0.25, pixel) + "
                   "MixUp(0.8) / CutMix(1.0)",
              crop=224, policy="rand-m9-mstd0.5-inc1", erase_p=0.25, erase_value="random", mixup=0.8, cutmix=1.0),
}
IMAGES = ("real", "photo-like")
# what tensorops.augment (its timm module) may call the parser of timm's policy strings: timm's own name first
TIMM_PARSERS = ("from_timm_string", "rand_augment_transform", "from_timm", "from_string", "policy_from_string")


# ------------------------------------------------------------------------------------------------ torchvision


def tv_policy(policy: str) -> Any:
    from torchvision.transforms import v2

    if policy == "TrivialAugmentWide":
        return v2.TrivialAugmentWide(interpolation=v2.InterpolationMode.BILINEAR)  # as the reference's presets
    return v2.RandAugment(num_ops=2, magnitude=9)  # timm's string's closest v2 spelling


def tv_transform(recipe: Dict[str, Any], pil: bool = False) -> Any:
    """The per-image v2 transform the recipe's Dataset applies (the reference's ClassificationPresetTrain; ``pil``:
    its default backend, PIL images up to the policy, then PILToTensor)."""
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(recipe["crop"], antialias=True), v2.RandomHorizontalFlip(), tv_policy(recipe["policy"]),
        *([v2.PILToTensor()] if pil else []), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD),
        v2.RandomErasing(p=recipe["erase_p"], value=recipe["erase_value"]),
        v2.ToPureTensor(),
    ])


class TvCollate:
    """default_collate, then one of MixUp / CutMix per batch (RandomChoice), as the reference's train.py."""

    def __init__(self, recipe: Dict[str, Any]) -> None:
        from torchvision.transforms import v2

        self.mix = v2.RandomChoice([v2.MixUp(alpha=recipe["mixup"], num_classes=NUM_CLASSES),
                                    v2.CutMix(alpha=recipe["cutmix"], num_classes=NUM_CLASSES)])

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, torch.Tensor]:
        from torch.utils.data import default_collate

        return self.mix(*default_collate(samples))


# ------------------------------------------------------------------------------------------------ tensorops


def _need(find: Callable[[str], Any], name: str) -> Any:
    obj = find(name)
    if obj is None:
        raise NotImplementedError(f"tensorops.augment has no {name} (yet)")
    return obj


def tops_policy(find: Callable[[str], Any], policy: str) -> Tuple[Callable[[torch.Tensor], torch.Tensor], str]:
    """The recipe's policy from tensorops.augment, and how it was built (said in the JSON)."""
    if policy == "TrivialAugmentWide":
        return (_need(find, "TrivialAugmentWide")(interpolation="bilinear"),
                'TrivialAugmentWide(interpolation="bilinear")')  # as the torchvision path (the reference's presets)
    for name in TIMM_PARSERS:
        fn = find(name)
        if fn is None:
            continue
        # timm's create_transform at 224: translate_const int(224 * 0.45), img_mean the ImageNet mean in bytes
        hparams = dict(translate_const=int(RECIPES["b"]["crop"] * 0.45),
                       img_mean=tuple(min(255, round(255 * m)) for m in MEAN))
        for args, kw in (((policy,), dict(hparams=hparams)), ((policy, hparams), {}), ((policy,), {})):
            try:
                return fn(*args, **kw), f"tensorops.augment.{name}({policy!r}, hparams={hparams})"
            except TypeError:
                continue
    return _need(find, "RandAugment")(num_ops=2, magnitude=9), \
        f"RandAugment(num_ops=2, magnitude=9): no parser of timm's {policy!r} in tensorops.augment.timm yet"


class TopsCollate:
    """The tensorops path's collate: the decode collate into a uint8 batch, the policy on the batch, the normalize,
    then RandomErasing and one of MixUp / CutMix per batch, in place on the collate's fresh float batch: its
    ``augment=`` and ``after_normalize=`` arguments, everything drawn from the collate's per-worker stream."""

    def __init__(self, recipe: Dict[str, Any], find: Callable[[str], Any]) -> None:
        from tensorops.data import ResizedCropMirrorNormalizeCollate

        self.policy, self.policy_how = tops_policy(find, recipe["policy"])
        after = [
            _need(find, "RandomErasing")(p=recipe["erase_p"], value=recipe["erase_value"], inplace=True),
            _need(find, "RandomChoice")([
                _need(find, "MixUp")(alpha=recipe["mixup"], num_classes=NUM_CLASSES, inplace=True),
                _need(find, "CutMix")(alpha=recipe["cutmix"], num_classes=NUM_CLASSES, inplace=True)]),
        ]
        self.collate = ResizedCropMirrorNormalizeCollate(recipe["crop"], MEAN, STD, train=True, augment=self.policy,
                                                         after_normalize=after)

    def __call__(self, samples: Sequence[Tuple[Any, Any]]) -> Tuple[torch.Tensor, torch.Tensor]:
        return self.collate(samples)


# ------------------------------------------------------------------------------------------------ timing


def make_loader(path: str, recipe: Dict[str, Any], files: Sequence[str], labels: Sequence[int], workers: int,
                length: int, find: Optional[Callable[[str], Any]]) -> Tuple[Any, Dict[str, Any]]:
    from torch.utils.data import DataLoader

    from tensorops import io as tio

    if path in (TV, TV_PIL):
        pil = path == TV_PIL
        data = Files(files, labels, pil_decode if pil else tensor_decode, tv_transform(recipe, pil), length)
        collate, how = TvCollate(recipe), {}
    elif path == TIMM:
        transform, mix = timm_objects(recipe, NUM_CLASSES)
        data, collate, how = Files(files, labels, pil_decode, transform, length), TimmCollate(mix), {}
    elif path == PIPE:
        collate = pipeline_collate(recipe, NUM_CLASSES, tv_transform(recipe, pil=True), TvCollate(recipe))
        data, how = Files(files, labels, tio.loader, None, length), {"plan": str(collate.plan)}
    else:
        if find is None:
            raise NotImplementedError("tensorops.augment is not in this build")
        collate = TopsCollate(recipe, find)
        data = Files(files, labels, tio.loader, None, length)
        how = {"policy": collate.policy_how,
               "augment_in": "the collate's augment= (uint8, then its normalize) and after_normalize= "
                             "(RandomErasing, RandomChoice([MixUp, CutMix]), inplace=True)"}
    loader = DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=workers, collate_fn=collate,
                        persistent_workers=workers > 0,
                        worker_init_fn=fresh_memory_worker if path == TOPS_FRESH else None)
    if path in (TOPS, TOPS_FRESH):
        how["loader"] = "DataLoader(...): the workers reuse their shared blocks (tensorops.data.shared_batches)" \
            if path == TOPS else "DataLoader(...) with TENSOROPS_REUSE_SHARED_MEMORY=0 in the workers: every " \
            "batch in fresh shared memory, as default_collate's"
    return loader, how


def fresh_memory_worker(worker_id: int) -> None:
    """worker_init_fn of the fresh-memory path: this worker's batches in fresh shared memory (no reuse)."""
    os.environ["TENSOROPS_REUSE_SHARED_MEMORY"] = "0"


def check(loader: Any, crop: int, n: int, what: str) -> None:
    """One epoch (also the warm-up that starts the persistent workers): float32 (B, 3, crop, crop) batches with
    soft labels (B, NUM_CLASSES), ``n`` images in all."""
    seen = 0
    for x, y in loader:
        if x.dtype != torch.float32 or tuple(x.shape[1:]) != (3, crop, crop) or tuple(y.shape) != (x.shape[0],
                                                                                                    NUM_CLASSES):
            raise RuntimeError(f"{what}: batch {x.dtype}{tuple(x.shape)}, labels {tuple(y.shape)}; want float32 "
                               f"(B, 3, {crop}, {crop}) and soft labels (B, {NUM_CLASSES})")
        seen += x.shape[0]
    if seen != n:
        raise RuntimeError(f"{what}: an epoch gave {seen} images, want {n}")


def time_recipe(key: str, files: Sequence[str], labels: Sequence[int], workers: int, rounds: int, n: int,
                find: Optional[Callable[[str], Any]], say: Callable[[str], None]) -> List[Dict[str, Any]]:
    recipe = RECIPES[key]
    loaders: Dict[str, Any] = {}
    rows: List[Dict[str, Any]] = []
    skipped: Dict[str, str] = {}
    for path in PATHS[key]:
        try:
            loaders[path], how = make_loader(path, recipe, files, labels, workers, n, find)
            check(loaders[path], recipe["crop"], n, f"recipe ({key}) {path}")
        except NotImplementedError as exc:
            skipped[path] = str(exc)
            say(f"  recipe ({key}) {path}: skipped: {exc}")
            loaders.pop(path, None)
            continue
        rows.append({"recipe": key, "recipe_name": recipe["name"], "path": path, "workers": workers, **how})
    samples: Dict[str, List[float]] = {p: [] for p in loaders}
    cpu: Dict[str, List[float]] = {p: [] for p in loaders}
    order = list(loaders)
    me = os.getpid()
    for r in range(rounds):
        for p in (order if r % 2 == 0 else order[::-1]):
            pids = [me] + worker_pids(loaders[p])
            c0, t0 = cpu_seconds(pids), time.perf_counter()
            epoch(loaders[p])
            t1, c1 = time.perf_counter(), cpu_seconds(pids)
            samples[p].append(t1 - t0)
            cpu[p].append((c1 - c0) / n * 1e3)
    for row in rows:
        p = row["path"]
        rates = [n / t for t in samples[p]]
        row.update({
            "images_per_s": statistics.median(rates), "images_per_s_spread": spread(rates),
            "epoch_s": statistics.median(samples[p]), "cpu_ms_per_image": spread(cpu[p]),
            "vs_torchvision": spread([a / b for a, b in zip(samples[TV], samples[p])]) if TV in samples else None,
            "reference": REFERENCE[key], "vs_reference": spread([a / b for a, b in zip(samples[REFERENCE[key]],
                                                                                        samples[p])])
            if REFERENCE[key] in samples else None,
        })
    for p, why in skipped.items():
        rows.append({"recipe": key, "recipe_name": recipe["name"], "path": p, "workers": workers, "skipped": why})
    del loaders
    gc.collect()
    return rows


def write_files(kind: str, root: str, n: int) -> Tuple[List[str], List[int]]:
    """``n`` JPEGs in ``root/class{0,1}/``: the real photographs (case.real_photos) or photo-like ones."""
    if kind == "photo-like":
        return write_jpegs(root, n)
    paths, labels = [], []
    for k, data in enumerate(real_photos(n)):
        folder = os.path.join(root, f"class{k % 2}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"img{k:04d}.jpg")
        with open(path, "wb") as f:
            f.write(data)
        paths.append(path)
        labels.append(k % 2)
    return paths, labels


def run(grid: str = "quick", recipes: Sequence[str] = ("a", "b"), images: str = "real", workers: int = 2,
        files: Optional[int] = None, rounds: Optional[int] = None, epoch_images: Optional[int] = None,
        load: int = 0, load_limit_s: float = DEFAULT_LIMIT_S, say: Callable[[str], None] = print) -> Dict[str, Any]:
    n_files, n_rounds, n_epoch = GRID[grid]
    n_files, n_rounds, n_epoch = files or n_files, rounds or n_rounds, epoch_images or n_epoch
    find, tops_info = bench_augment.tensorops_augment()
    start = time.perf_counter()
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tensorops_recipes_") as tmp:
        say(f"writing {n_files} {images} JPEGs to {tmp}")
        paths, labels = write_files(images, os.path.join(tmp, "images"), n_files)
        jpeg_mb = sum(os.path.getsize(p) for p in paths) / 1e6
        busy = BusyLoad(load, load_limit_s)
        watch = ActivityWatch(interval_s=1.0)
        try:
            busy.start()
            watch.start()
            for key in recipes:
                say(f"  recipe ({key}): {RECIPES[key]['name']}, {workers} workers")
                rows += time_recipe(key, paths, labels, workers, n_rounds, n_epoch, find, say)
            load_info = busy.describe()
        finally:
            watch.stop()
            busy.stop()
    meta = {
        **machine_info(), "grid": grid, "images": images, "files": n_files, "jpeg_mb": jpeg_mb, "rounds": n_rounds,
        "epoch_images": n_epoch, "batch": BATCH, "workers": workers, "num_classes": NUM_CLASSES,
        "recipes": {k: RECIPES[k] for k in recipes}, "load": load_info, "activity": watch.describe(),
        "tensorops_augment": tops_info, "wall_s": time.perf_counter() - start,
        "timestamp_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "timing": "per recipe, its paths' epochs interleaved round by round (alternating order), persistent "
                  "workers, the first epoch of each path (checked) not timed; images/s medians and min-max over "
                  "rounds; CPU ms per image: user + system time of the main process and its workers over the epoch",
        "paths": {TV: "decode_jpeg(read_file) + the recipe's v2 transforms per image in the Dataset; default_collate "
                      "+ RandomChoice([MixUp, CutMix]) in the collate (recipe (b): v2 RandAugment(2, 9) for timm's "
                      "string); the ratios' baseline",
                  TV_PIL: "the same with PIL images (ImageFolder's loader; the reference's default backend) up to "
                          "the policy, then PILToTensor",
                  TOPS: "file bytes to the collate: decode into a uint8 batch where each box reads, the policy on "
                        "the batch (augment=), tensorops.normalize into the worker's shared memory, RandomErasing, "
                        "RandomChoice([MixUp, CutMix]) of tensorops.augment in place (after_normalize=, "
                        "inplace=True); the workers reuse the shared blocks of batches no process can read any more",
                  TOPS_FRESH: "the same with TENSOROPS_REUSE_SHARED_MEMORY=0 in the workers: every batch in fresh "
                              "shared memory (its page faults in the worker), as torchvision's default_collate"},
    }
    return {"meta": meta, "rows": rows}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.recipes", description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="{} files, {} rounds, epochs of {} images".format(
        *GRID["quick"]))
    g.add_argument("--smoke", action="store_true", help="a few files, one round: checks that it runs")
    p.add_argument("--recipes", default="a,b", help="a (torchvision reference), b (timm); default a,b")
    p.add_argument("--images", default="real", choices=IMAGES, help="real photographs (default) or photo-like")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (default 2)")
    p.add_argument("--files", type=int, default=None)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--epoch", type=int, default=None, metavar="IMAGES")
    p.add_argument("--load", type=int, default=0, metavar="N", help="N busy background processes (benchmarks/load.py)")
    p.add_argument("--load-limit", type=float, default=DEFAULT_LIMIT_S, metavar="S")
    p.add_argument("--out", default=LOCAL_RESULTS,
                   help="default benchmarks/results/local/ (ignored by git); --out benchmarks/results publishes")
    args = p.parse_args(argv)
    recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]
    if not recipes or any(r not in RECIPES for r in recipes):
        p.error(f"--recipes: choose from {','.join(RECIPES)}")
    if args.workers < 0 or args.load < 0 or any(v is not None and v < 1 for v in (args.files, args.rounds, args.epoch)):
        p.error("--workers, --load >= 0; --files, --rounds, --epoch >= 1")
    grid = "smoke" if args.smoke else "quick" if args.quick else "full"

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    result = run(grid, recipes, args.images, args.workers, args.files, args.rounds, args.epoch, args.load,
                 args.load_limit, say)
    name = f"recipes_{grid}" + ("" if args.images == "real" else "_photo_like")
    path = save_json(args.out, name, args.load, result)
    from benchmarks import docs_tables, docs_views

    docs_tables.write_beside(path, result, docs_views.view_recipes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""decode_resized_crop_mirror_normalize benchmarks: JPEG files (bytes, as ``torchvision.io.read_file`` gives them)
of photo-like images -> one resized, randomly mirrored, ImageNet-normalized float batch: decode included.

Native eager is what a torchvision v2 pipeline runs per image: ``decode_jpeg(mode=RGB)`` + ``resized_crop``
(bilinear, antialias) [+ ``horizontal_flip``] + ``to_dtype(float32, scale=True)`` + ``normalize``, then
``torch.stack`` (evaluation: ``resize(256)`` + ``center_crop(224)``). Paired in the same rounds: the full decode
followed by tensorops' resize (``decode_jpeg`` + ``resized_crop_mirror_normalize``: the same values bit for bit,
so its ratio is what the partial decode and the fusion save) and Pillow's decode (``Image.open`` + ``convert``)
followed by the same resize. The JPEGs are encoded once per row (quality 90) from ``photo_like`` images, and the
real-photo rows take ``case.real_photos`` (scikit-image's sample photographs cropped and rescaled to ImageNet's
sizes, quality 90, 4:2:0; skipped, saying so, without scikit-image); ``python -m benchmarks.decode --images DIR``
measures your files.
Without torchvision (the Quickstart's bare install) the rows "vs torch-native" time what a user writes with
Pillow (a dependency) and torch alone, per image: ``Image.open`` + ``convert("RGB")`` + ``numpy.asarray`` as a
tensor, then the torch-native resize of benchmarks/ops/resized_crop_mirror_normalize.py (``F.interpolate`` with
antialias, flip, arithmetic) and ``torch.stack``.
Bytes moved: the files read once and the float batch written once.
"""
from __future__ import annotations

import io
import math
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

from benchmarks.case import Bench, Case, photo_like, real_photos
from benchmarks.resized_crop_mirror_normalize import (MEAN, NATIVE, ONE_STEP, REAL_LABEL, REAL_NOTES, STD, _params,
                                                      native_resize)


def encode_jpegs(sizes: Sequence[Tuple[int, int]], quality: int = 90, seed: int = 0,
                 progressive: bool = False) -> List[bytes]:
    """JPEG files (4:2:0, as cameras and ImageNet's; progressive, as many web images, when asked) of photo-like
    images of these (H, W) sizes."""
    from PIL import Image

    g = torch.Generator().manual_seed(seed)
    out = []
    for H, W in sizes:
        buf = io.BytesIO()
        Image.fromarray(photo_like(H, W, g).permute(1, 2, 0).numpy()).save(buf, format="JPEG", quality=quality,
                                                                            progressive=progressive)
        out.append(buf.getvalue())
    return out


def _make(files: Callable[[], List[bytes]], boxes: torch.Tensor, mirror: torch.Tensor, crop: int, train: bool,
          resize_size: int, reduced: bool = False):
    """The row's Bench factory. ``files``: a function giving the JPEGs (called when the row runs, so that listing
    the grid stays instant)."""
    def make(device: torch.device) -> Bench:
        import numpy as np
        import tensorops
        from PIL import Image
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms.v2 import functional as F

        files_ = files()
        data = [torch.frombuffer(bytearray(f), dtype=torch.uint8) for f in files_]
        params = [tuple(int(v) for v in b) for b in boxes.tolist()]
        flips = mirror.tolist()
        kw = dict(size=crop, boxes=boxes, mirror=mirror if train else None, crop_first=train)

        def eager(data):
            out = []
            for d, (t, l, h, w), f in zip(data, params, flips):
                im = decode_jpeg(d, mode=ImageReadMode.RGB)
                if train:
                    r = F.resized_crop(im, t, l, h, w, [crop, crop], antialias=True)
                    r = F.horizontal_flip(r) if f else r
                else:
                    r = F.center_crop(F.resize(im, resize_size, antialias=True), [crop, crop])
                out.append(F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD))
            return torch.stack(out)

        def tops(data):
            return tensorops.decode_resized_crop_mirror_normalize(data, MEAN, STD, **kw)

        def full_then_resize():
            ims = [decode_jpeg(d, mode=ImageReadMode.RGB) for d in data]
            return tensorops.resized_crop_mirror_normalize(ims, MEAN, STD, **kw)

        def pil_then_resize():
            ims = [torch.from_numpy(np.asarray(Image.open(io.BytesIO(f)).convert("RGB"))) for f in files_]
            return tensorops.resized_crop_mirror_normalize(ims, MEAN, STD, dim=-1, **kw)

        paired = {"decode_jpeg + tensorops resize": full_then_resize, "PIL + tensorops resize": pil_then_resize}
        dali = dali_cpu(files_, train, crop, resize_size)
        if dali is not None:
            paired["DALI CPU"] = dali
        if reduced:
            paired["tensorops reduced_scale"] = lambda: tensorops.decode_resized_crop_mirror_normalize(
                data, MEAN, STD, reduced_scale=True, **kw)
        return Bench(eager=eager, tensorops=tops, args=(data,), paired=paired,
                     nbytes=sum(len(f) for f in files_) + len(files_) * 3 * crop * crop * 4,
                     notes=reduced_scale_distance(files_, boxes, crop, train) if reduced else "")

    return make


def dali_cpu(files: List[bytes], train: bool, crop: int, resize_size: int) -> Optional[Callable[[], Any]]:
    """NVIDIA DALI's CPU pipeline for the same batch, where DALI is installed (an optional column, never a
    dependency): ``fn.decoders.image_random_crop`` (libjpeg-turbo partial decode; DALI draws its own boxes from
    RandomResizedCrop's distribution) + ``fn.resize`` (antialiased) + ``fn.crop_mirror_normalize`` with a random
    flip, or for evaluation ``fn.decoders.image`` + ``fn.resize(resize_shorter)`` + the centre crop; as many
    DALI threads as torch has. None without DALI."""
    try:
        import numpy as np
        from nvidia.dali import fn, pipeline_def, types
    except ImportError:
        return None
    arrays = [np.frombuffer(f, np.uint8) for f in files]
    mean, std = [m * 255 for m in MEAN], [s * 255 for s in STD]

    @pipeline_def(batch_size=len(files), num_threads=torch.get_num_threads(), device_id=None, exec_dynamic=True,
                  seed=0)
    def pipe():
        jpegs = fn.external_source(source=lambda: arrays, batch=True, no_copy=True)
        if train:
            im = fn.decoders.image_random_crop(jpegs, device="cpu", output_type=types.RGB)
            im = fn.resize(im, resize_x=crop, resize_y=crop, antialias=True)
            return fn.crop_mirror_normalize(im, dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std,
                                            mirror=fn.random.coin_flip())
        im = fn.resize(fn.decoders.image(jpegs, device="cpu", output_type=types.RGB), resize_shorter=resize_size,
                       antialias=True)
        return fn.crop_mirror_normalize(im, dtype=types.FLOAT, output_layout="CHW", mean=mean, std=std,
                                        crop=(crop, crop))

    p = pipe()
    p.build()
    p.run()
    return p.run


def reduced_scale_distance(files: List[bytes], boxes: torch.Tensor, crop: int, crop_first: bool) -> str:
    """How far reduced_scale=True lands from the exact path on these files and boxes (uint8 outputs): PSNR over
    the batch and the largest difference in uint8 steps."""
    import tensorops

    kw = dict(size=crop, boxes=boxes, crop_first=crop_first, dtype=torch.uint8)
    exact = tensorops.decode_resized_crop_mirror_normalize(files, None, None, **kw).double()
    fast = tensorops.decode_resized_crop_mirror_normalize(files, None, None, reduced_scale=True, **kw).double()
    mse = (exact - fast).pow(2).mean().item()
    psnr = float("inf") if mse == 0 else 10 * math.log10(255 ** 2 / mse)
    return f"reduced_scale vs exact (uint8 outputs): PSNR {psnr:.1f} dB, max {int((exact - fast).abs().max())} steps"


def _case(n: int, lo: int, hi: int, crop: int, label: str, train: bool = True, progressive: bool = False,
          real: bool = False) -> Case:
    sizes, boxes, mirror, resize_size = _params(n, lo, hi, crop, train, real=real)
    files = (lambda: list(real_photos(n))) if real else (lambda: encode_jpegs(sizes, progressive=progressive))
    reduced = hi > 1000  # large photos: the row also times the reduced-scale decode, and says how far it lands
    mode = "train" if train else "eval"
    how = "resized_crop (bilinear, antialias), horizontal_flip" if train else \
        f"resize({resize_size}, antialias), center_crop({crop})"
    return Case(
        op="decode_resized_crop_mirror_normalize",
        series=f"decode_resized_crop_mirror_normalize jpeg->f32 {mode}" + (" real photos" if real else ""),
        case=REAL_LABEL if real else label,
        shape=f"{n}x JPEG ({lo}-{hi})^2 q90 4:2:0{' progressive' if progressive else ''} ->{crop}x{crop} {mode}",
        dtype="jpeg->f32",
        layout="NCHW",
        nbytes=None,  # the files' bytes + the batch's: the Bench counts them once it has encoded the files
        make=_make(files, boxes, mirror, crop, train, resize_size, reduced),
        eager_expr=f"torchvision v2 per image: decode_jpeg(RGB), {how}, to_dtype(float32, scale=True), normalize; "
                   "torch.stack",
        compile_grids=(),  # decode_jpeg is an opaque op: torch.compile has nothing to fuse
        check_atol=ONE_STEP,
        requires=("torchvision", "skimage") if real else ("torchvision",),
        notes=f"{REAL_NOTES if real else 'photo-like JPEGs encoded by the benchmark'}; checked within 1 uint8 step "
              "(torchvision rounds the resized pixels to uint8); the decode_jpeg + tensorops column is "
              "bit-identical to tensorops",
    )


def _make_native(files: Callable[[], List[bytes]], boxes: torch.Tensor, mirror: torch.Tensor, crop: int, train: bool,
                 resize_size: int):
    def make(device: torch.device) -> Bench:
        import numpy as np
        import tensorops
        from PIL import Image

        files_ = files()
        params = [tuple(int(v) for v in b) for b in boxes.tolist()]
        flips = mirror.tolist() if train else [False] * len(files_)
        mean, std = torch.tensor(MEAN).view(3, 1, 1), torch.tensor(STD).view(3, 1, 1)

        def eager(files_):
            out = []
            with warnings.catch_warnings():  # Pillow's arrays are read-only: torch warns, and they are only read
                warnings.simplefilter("ignore", UserWarning)
                for f, box, flip in zip(files_, params, flips):
                    im = torch.from_numpy(np.asarray(Image.open(io.BytesIO(f)).convert("RGB"))).permute(2, 0, 1)
                    x = native_resize(im, box, crop, train, resize_size)
                    out.append(((x.flip(-1) if flip else x) / 255 - mean) / std)
            return torch.stack(out)

        def tops(files_):
            return tensorops.decode_resized_crop_mirror_normalize(files_, MEAN, STD, size=crop, boxes=boxes,
                                                                  mirror=mirror if train else None,
                                                                  crop_first=train)

        return Bench(eager=eager, tensorops=tops, args=(files_,),
                     nbytes=sum(len(f) for f in files_) + len(files_) * 3 * crop * crop * 4)

    return make


def _native_case(n: int, lo: int, hi: int, crop: int, label: str, train: bool = True) -> Case:
    sizes, boxes, mirror, resize_size = _params(n, lo, hi, crop, train)
    mode = "train" if train else "eval"
    return Case(
        op="decode_resized_crop_mirror_normalize",
        series=f"decode_resized_crop_mirror_normalize jpeg->f32 {mode}{NATIVE}",
        case=label,
        shape=f"{n}x JPEG ({lo}-{hi})^2 q90 4:2:0 ->{crop}x{crop} {mode}",
        dtype="jpeg->f32",
        layout="NCHW",
        nbytes=None,
        make=_make_native(lambda: encode_jpegs(sizes), boxes, mirror, crop, train, resize_size),
        eager_expr="Pillow + torch per image (no torchvision): Image.open, convert(RGB), numpy.asarray as a tensor, "
                   f"box slice, .float(), F.interpolate(bilinear, antialias=True){', flip(-1)' if train else ''}, "
                   "(x / 255 - mean) / std; torch.stack",
        compile_grids=(),
        check_atol=ONE_STEP,  # Pillow's libjpeg-turbo and tensorops' may round an IDCT differently
        notes="photo-like JPEGs encoded by the benchmark; needs no torchvision",
    )


def native_cases(grid: str) -> List[Case]:
    """The rows against Pillow + torch alone (the Quickstart's picture without torchvision)."""
    if grid == "smoke":
        return [_native_case(2, 20, 28, 8, "tiny")]
    # training only outside the full grid: the Quickstart's run stays about as long as it was (the resize rows
    # show evaluation; an eval decode row's per-image Resize of the whole image costs the most to time)
    modes = (True, False) if grid == "full" else (True,)
    return [_native_case(32, 300, 500, 224, "imagenet", train=t) for t in modes]


def cases(device: torch.device, grid: str) -> List[Case]:
    # the op decodes on the host: a CUDA run times the same host work (its rows take no device)
    if grid == "smoke":
        return [_case(2, 20, 28, 8, "tiny"), *native_cases(grid)]
    rows = [_case(32, 300, 500, 224, "imagenet"), _case(32, 300, 500, 224, "imagenet", train=False)]
    # real photographs beside the photo-like ones (the synthetic files alone overstated the ratios: Performance)
    rows += [_case(32, 300, 500, 224, "imagenet", train=t, real=True) for t in (True, False)]
    if grid == "full":  # the 2-12 MP photos of today's datasets, with the reduced-scale column (~20 s to encode)
        rows += [_case(8, 1400, 3500, 224, "2-12MP"), _case(8, 1400, 3500, 224, "2-12MP", train=False)]
        # progressive, as web images often are: reduced_scale at 1/8 then reads no luma AC scan (jpeg.h)
        rows += [_case(8, 1400, 3500, 224, "2-12MP progressive", train=t, progressive=True) for t in (True, False)]
    return rows + native_cases(grid)


def main(argv=None) -> None:
    """``python -m benchmarks.decode --images DIR [--threads 1] [--train/--eval]``: your own JPEGs, the op against
    decode_jpeg + tensorops' resize and the torchvision v2 pipeline, medians of interleaved rounds."""
    import argparse
    import pathlib
    import statistics
    import time

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--images", required=True, help="a directory of JPEG files (searched recursively)")
    p.add_argument("--count", type=int, default=32, help="images per batch (default 32)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1, a DataLoader worker)")
    p.add_argument("--eval", action="store_true", help="Resize(256) + CenterCrop(224) instead of training boxes")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    paths = sorted(q for q in pathlib.Path(args.images).rglob("*") if q.suffix.lower() in (".jpg", ".jpeg"))
    files = [q.read_bytes() for q in paths[: args.count]]
    if not files:
        raise SystemExit(f"no .jpg/.jpeg files under {args.images}")
    from tensorops import io as tio
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    sizes = [tio.image_size(f)[:2] for f in files]
    collate = ResizedCropMirrorNormalizeCollate(224, MEAN, STD, train=not args.eval,
                                                generator=torch.Generator().manual_seed(0))
    boxes, mirror = collate.boxes(sizes)
    bench = _make(lambda: files, boxes, mirror, 224, not args.eval, collate.resize_size)(torch.device("cpu"))
    fns = {"tensorops decode op": lambda: bench.tensorops(*bench.args), **bench.paired,
           "torchvision v2": lambda: bench.eager(*bench.args)}
    times = {k: [] for k in fns}
    for _ in range(args.rounds):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - t0) / len(files) * 1e3)
    base = statistics.median(times["tensorops decode op"])
    print(f"{len(files)} files from {args.images}, {args.threads} thread(s), {'eval' if args.eval else 'train'}")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"  {k:32s} {m:7.3f} ms/image [{min(v):.3f}-{max(v):.3f}]  {m / base:5.2f}x the op's time")


if __name__ == "__main__":
    main()

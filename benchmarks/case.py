"""What one benchmark row is: a ``Case`` (what it times, for the table and the plot) that builds a ``Bench`` (the
tensors and functions) on the device only when the row runs, and the small helpers the family modules share.

The family modules (benchmarks/ops/<bench>.py, named by ``tensorops.registry``) import only this module; the runner
(harness.py) imports them by name, so nothing imports back.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

GRIDS = ("smoke", "quick", "full")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int32": torch.int32}
SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32"}


@dataclasses.dataclass
class Bench:
    """The tensors and functions of one row, built on the device only when the row runs.

    ``eager`` and ``tensorops`` are functions of ``*args``; ``torch.compile(eager)`` is the compiled column.
    ``run(fn)`` turns one of them into the timed no-argument statement (default: ``fn(*args)``; the
    forward+backward rows wrap it with ``torch.autograd.grad``). ``extras`` are further no-argument statements
    timed in the same row (a reference copy, another native spelling of the op); ``paired`` ones are timed in
    the same interleaved rounds as the columns.
    """

    eager: Callable[..., Any]
    tensorops: Callable[..., Any]
    args: Tuple[Any, ...]
    run: Optional[Callable[[Callable[..., Any]], Callable[[], Any]]] = None
    extras: Dict[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)
    # further no-argument statements timed interleaved with the columns, round by round (a variant of the
    # tensorops call, e.g. with out=, whose ratio to it must not be blurred by the machine's load); their
    # medians join extras_s, their spreads spread_s, and their per-round ratios to tensorops paired_ratio_spread
    paired: Dict[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)
    # facts that exist only once the inputs do (rows whose inputs are costly to make, e.g. encoded files, make
    # them in ``make`` so that listing the grid stays instant): the bytes moved, in place of Case.nbytes, and
    # notes appended to Case.notes
    nbytes: Optional[int] = None
    notes: str = ""

    def stmt(self, fn: Callable[..., Any]) -> Callable[[], Any]:
        if self.run is not None:
            return self.run(fn)
        args = self.args
        return lambda: fn(*args)


@dataclasses.dataclass
class Case:
    """One row of the grid: what it is (for the table and the plot) and how to build it."""

    op: str  # the row's label in the table and JSON: "normalize", "clamp", "clamp_fwd_bwd", "cat", ...
    series: str  # the plot line this row belongs to (a family of rows differing only in size)
    case: str  # short label within the op, e.g. "imagenet" or "x10000"
    shape: str
    dtype: str
    layout: str
    nbytes: Optional[int]  # bytes the op must move: reads + writes (None: the Bench says, once built)
    make: Callable[[torch.device], Bench]
    eager_expr: str  # what "native eager" means for this row, spelled out in the JSON
    compile_grids: Tuple[str, ...] = GRIDS  # grids in which the compiled column is timed
    no_compile_reason: str = ""  # why compile is never timed for this row (e.g. 10,000 graph inputs)
    notes: str = ""
    # the tensorops.registry op this row times (default: ``op``; "clamp" for clamp_fwd_bwd); --ops selects by it
    times: str = ""
    # absolute tolerance of the check against eager, for rows whose native spelling rounds differently (None:
    # timing.check_same's default); the row's notes say why
    check_atol: Optional[float] = None
    # optional packages the row's columns import (e.g. "torchvision" for rows whose eager column is torchvision
    # v2): where one is not installed the harness skips the row and says which package it needs
    requires: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.times = self.times or self.op


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def random_tensor(shape: Sequence[int], dtype: torch.dtype, device: torch.device, int_range: int = 100) -> torch.Tensor:
    """Normal values for a floating dtype, integers in [-int_range, int_range) otherwise."""
    if dtype.is_floating_point:
        return torch.randn(tuple(shape), device=device).to(dtype)
    return torch.randint(-int_range, int_range, tuple(shape), dtype=dtype, device=device)


def image_label(shape: Sequence[int], imagenet: Sequence[int] = (32, 3, 224, 224)) -> str:
    """'imagenet', or 'tiny' / 'mid' / 'large' by element count against an ImageNet batch."""
    if tuple(shape) == tuple(imagenet):
        return "imagenet"
    n = numel(shape)
    return "tiny" if n <= 1024 else ("large" if n > numel(imagenet) else "mid")


def photo_like(height: int, width: int, generator: torch.Generator, channels: int = 3) -> torch.Tensor:
    """A (channels, height, width) uint8 image that resamples like a photograph: smooth shapes (coarse noise
    upsampled bicubically), finer texture and a little pixel noise. White noise is the worst case for a
    resampling filter and compresses like no photo does (JPEG files of it are 5-10x larger); these encode to
    about 80 KB at 500x375, quality 90 (ImageNet's files average about 110 KB)."""
    import torch.nn.functional as F

    def layer(step: int) -> torch.Tensor:
        coarse = torch.rand(1, channels, max(2, height // step), max(2, width // step), generator=generator)
        return F.interpolate(coarse, size=(height, width), mode="bicubic", align_corners=False)[0]

    img = (0.55 * layer(48) + 0.25 * layer(8) + 0.15 * layer(2)
           + 0.03 * torch.randn(channels, height, width, generator=generator))
    return (img.clamp(0, 1) * 255).round().to(torch.uint8)



# scikit-image's sample photographs that its wheel ships (skimage.data loads them without a network): the colour
# photographs of scenes and things, as ImageNet's are, and three of other kinds that photo datasets also hold
# (microscopy, a telescope's deep field, a retina's fundus image, with their dark backgrounds)
REAL_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "motorcycle", "immunohistochemistry",
               "hubble_deep_field", "retina")


def real_photo_sizes(n: int, seed: int = 0, lo: int = 300, hi: int = 500) -> List[Tuple[int, int]]:
    """The (H, W) of ``real_photos(n, seed)``, without making them (cheap: listing a grid needs the sizes only):
    each side in [lo, hi], aspect ratio between 3:4 and 4:3, as ImageNet's photos are (mostly 500x375,
    375x500, 500x333)."""
    g = torch.Generator().manual_seed(seed)
    out: List[Tuple[int, int]] = []
    while len(out) < n:
        h, w = (int(v) for v in torch.randint(lo, hi + 1, (2,), generator=g))
        if 3 * max(h, w) <= 4 * min(h, w):
            out.append((h, w))
    return out


@functools.lru_cache(maxsize=4)
def real_photos(n: int, seed: int = 0, quality: int = 90) -> Tuple[bytes, ...]:
    """``n`` JPEG files of real photographs at ImageNet's sizes (``real_photo_sizes``), made deterministically
    from ``seed``: image i is a crop of ``REAL_PHOTOS[i % 8]`` (scikit-image's sample photographs, 300x451 to
    1411x1411) with the aspect ratio of its target size, its side 60-100% of the largest such crop and never
    smaller than the target where the photograph allows (a downscale, as Flickr's 500-pixel copies of camera
    photos are), at a random place, rescaled with Pillow's LANCZOS filter and encoded as ImageNet's files are:
    baseline JPEG, quality 90, 4:2:0. Needs scikit-image (ImportError saying so without it)."""
    import io

    import numpy as np
    from PIL import Image

    try:
        from skimage import data
    except ImportError as e:
        raise ImportError("the real-photo rows need scikit-image (pip install scikit-image): its wheel ships the "
                          "sample photographs they are cut from") from e

    def load(name: str) -> Image.Image:
        arr = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
        return Image.fromarray(np.ascontiguousarray(arr)).convert("RGB")

    sources = [load(name) for name in REAL_PHOTOS]
    g = torch.Generator().manual_seed(seed + 1000)
    out = []
    for i, (h, w) in enumerate(real_photo_sizes(n, seed)):
        src = sources[i % len(sources)]
        sw, sh = src.size
        fit = min(sh, sw * h / w)  # the height of the largest crop with the target's aspect ratio
        low = min(1.0, max(0.6, h / fit))
        u = torch.rand(3, generator=g, dtype=torch.float64).tolist()
        ch = fit * (low + (1.0 - low) * u[0])
        cw = ch * w / h
        top, left = (sh - ch) * u[1], (sw - cw) * u[2]
        img = src.resize((w, h), Image.LANCZOS, box=(left, top, left + cw, top + ch))
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=quality, subsampling="4:2:0")
        out.append(buf.getvalue())
    return tuple(out)

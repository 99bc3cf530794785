"""resized_crop_mirror_normalize benchmarks: decoded uint8 images of different sizes -> one resized, randomly
mirrored, ImageNet-normalized float batch, as torchvision's training (RandomResizedCrop + RandomHorizontalFlip)
and evaluation (Resize(256) + CenterCrop(224)) transforms make it. The images: synthetic photo-like ones
(``case.photo_like``), and real photographs (``case.real_photos``: JPEGs of scikit-image's sample photos at
ImageNet's sizes, decoded by ``decode_jpeg``; the rows need scikit-image and are skipped, saying so, without it).

Native eager is the torchvision v2 composition run per image, then ``torch.stack``: ``resized_crop`` (bilinear,
or bicubic in the bicubic row, antialias) [+ ``horizontal_flip``] + ``to_dtype(float32, scale=True)`` + ``normalize``; the evaluation rows run
``resize(256)`` + ``center_crop(224)`` instead of ``resized_crop``. The boxes (and flips) are drawn once per row by
``tensorops.data.ResizedCropMirrorNormalizeCollate.boxes`` (torchvision's ``get_params``), outside the timing,
and given to both columns. Bytes moved: each box's pixels read once (1 byte per element) and the float output
written once (the evaluation rows count the box only, not the whole image that ``resize`` reads).

torchvision resizes uint8 images to uint8 (rounded) before normalizing; tensorops normalizes the unrounded
filter output, so the two differ by up to one uint8 step, 1 / (255 * std): the rows check within that.

Without torchvision (the Quickstart's bare install) the rows "vs torch-native" (series ending in ``NATIVE``) time
the composition a user writes in torch alone, per image: slice the box, ``.float()``,
``torch.nn.functional.interpolate(bilinear, antialias=True)`` (what torchvision's float resize calls),
``flip(-1)``, ``(x / 255 - mean) / std``, then ``torch.stack``; it lands within float rounding of tensorops'
unrounded filter. Where ``tensorops.augment`` exists, one such row adds a per-sample ColorJitter (brightness,
contrast, saturation, each factor uniform in [0.6, 1.4]) on the uint8 crops: tensorops' batched ops against
torchvision v2's formulas written in torch per image.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import torch

from benchmarks.case import GRIDS, Bench, Case, photo_like, real_photo_sizes, real_photos

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# one uint8 step after normalizing (the largest 1 / (255 * std)), plus float32 slack
ONE_STEP = 1.0 / (255.0 * min(STD)) * 1.01


def _params(n: int, lo: int, hi: int, crop: int, train: bool, seed: int = 0, real: bool = False):
    """(image sizes, boxes (n, 4) float64 of top, left, height, width, mirror (n,) bool), fixed per row; ``real``:
    the sizes of ``case.real_photos(n, seed)`` (each side in [lo, hi], aspect ratio 3:4 to 4:3)."""
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    if real:
        sizes = real_photo_sizes(n, seed, lo, hi)
    else:
        g = torch.Generator().manual_seed(seed)
        sizes = [tuple(int(v) for v in torch.randint(lo, hi + 1, (2,), generator=g)) for _ in range(n)]
    collate = ResizedCropMirrorNormalizeCollate(crop, MEAN, STD, train=train, resize_size=max(crop, int(crop / 0.875)),
                                                generator=torch.Generator().manual_seed(seed + 1))
    boxes, mirror = collate.boxes(sizes)
    return sizes, boxes, mirror, collate.resize_size


# The image layouts users have: HWC memory seen as CHW (strides (1, 3W, 3)) is what torchvision.io.decode_jpeg
# returns and what ToImage / pil_to_tensor make of a PIL image; contiguous CHW is what a .contiguous() or a
# batch slice gives.
LAYOUTS = {"hwc": "HWC memory (decode_jpeg)", "chw": "NCHW"}


def _make(sizes: Sequence[Tuple[int, int]], boxes: torch.Tensor, mirror: torch.Tensor, crop: int, train: bool,
          resize_size: int, interpolation: str, layout: str = "chw", real: bool = False):
    def make(device: torch.device) -> Bench:
        import tensorops
        from torchvision.io import ImageReadMode, decode_jpeg
        from torchvision.transforms.v2 import functional as F

        mode = F.InterpolationMode(interpolation)

        if real:  # the real photographs' JPEGs, decoded as a pipeline decodes them: HWC memory
            images = [decode_jpeg(torch.frombuffer(bytearray(f), dtype=torch.uint8), mode=ImageReadMode.RGB)
                      for f in real_photos(len(sizes))]
            assert [tuple(im.shape[1:]) for im in images] == [tuple(s) for s in sizes]
            if layout == "chw":
                images = [im.contiguous() for im in images]
            images = [im.to(device) for im in images]
        else:
            g = torch.Generator().manual_seed(0)
            images = [photo_like(H, W, g).to(device) for H, W in sizes]
            if layout == "hwc":
                images = [im.permute(1, 2, 0).contiguous().permute(2, 0, 1) for im in images]
        params = [tuple(int(v) for v in b) for b in boxes.tolist()]
        flips = mirror.tolist()

        if train:
            def eager(images):
                out = []
                for im, (t, l, h, w), f in zip(images, params, flips):
                    r = F.resized_crop(im, t, l, h, w, [crop, crop], interpolation=mode, antialias=True)
                    if f:
                        r = F.horizontal_flip(r)
                    out.append(F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD))
                return torch.stack(out)
        else:
            def eager(images):
                out = []
                for im in images:
                    r = F.center_crop(F.resize(im, resize_size, interpolation=mode, antialias=True), [crop, crop])
                    out.append(F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD))
                return torch.stack(out)

        def tops(images):
            return tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=crop, boxes=boxes,
                                                           mirror=mirror if train else None, crop_first=train,
                                                           interpolation=interpolation)

        # the same call writing a preallocated batch (out=), timed in the same interleaved rounds
        result = torch.empty(len(sizes), 3, crop, crop, device=device)
        paired = {"tensorops out=": lambda: tensorops.resized_crop_mirror_normalize(
            images, MEAN, STD, size=crop, boxes=boxes, mirror=mirror if train else None, crop_first=train,
            interpolation=interpolation, out=result)}
        return Bench(eager=eager, tensorops=tops, args=(images,), paired=paired)

    return make


# what the real-photo rows are called in the tables (their series end in " real photos")
REAL_LABEL = "real photos (scikit-image)"
REAL_NOTES = ("real photographs: scikit-image's sample photos cropped and rescaled to ImageNet's sizes (LANCZOS), "
              "JPEG quality 90 4:2:0 (benchmarks.case.real_photos)")


def _case(n: int, lo: int, hi: int, crop: int, label: str, train: bool = True,
          compile_grids: Sequence[str] = GRIDS, interpolation: str = "bilinear", layout: str = "chw",
          real: bool = False) -> Case:
    sizes, boxes, mirror, resize_size = _params(n, lo, hi, crop, train, real=real)
    read = int(sum(round(float(h)) * round(float(w)) for h, w in boxes[:, 2:].tolist())) * 3
    numel = n * 3 * crop * crop
    mode = "train" if train else "eval"
    how = (f"resized_crop ({interpolation}, antialias), horizontal_flip" if train
           else f"resize({resize_size}, {interpolation}, antialias), center_crop({crop})")
    # torchvision's uint8 bicubic rounds between its passes: up to 2.3 steps from the float64 result on these
    # photos, where tensorops is within 1e-4 of it (README)
    steps = 3 if interpolation == "bicubic" else 1
    return Case(
        op="resized_crop_mirror_normalize",
        series=f"resized_crop_mirror_normalize u8->f32 {mode}" + ("" if interpolation == "bilinear" else
                                                                  f" {interpolation}")
        + ("" if layout == "chw" else f" {layout}") + (" real photos" if real else ""),
        case=REAL_LABEL if real else label,
        shape=f"{n}x list of (3,{lo}-{hi},{lo}-{hi})->{crop}x{crop} {mode}",
        dtype="u8->f32",
        layout=LAYOUTS[layout],
        nbytes=read + numel * 4,
        make=_make(sizes, boxes, mirror, crop, train, resize_size, interpolation, layout, real),
        eager_expr=f"torchvision v2 per image: {how}, to_dtype(float32, scale=True), normalize; torch.stack",
        compile_grids=tuple(compile_grids),
        check_atol=steps * ONE_STEP,
        requires=("torchvision", "skimage") if real else ("torchvision",),
        notes=f"{REAL_NOTES if real else 'photo-like images'}; checked within {steps} uint8 step(s) (torchvision "
              "rounds the resized pixels to uint8)",
    )


# the series suffix of the rows whose eager column is torch alone (no torchvision): the docs' torchvision tables
# leave them out, the Quickstart's plot shows them
NATIVE = " vs torch-native"
NATIVE_EXPR = ("torch per image (no torchvision): box slice, .float(), F.interpolate(bilinear, antialias=True)"
               "{flip}, (x / 255 - mean) / std; torch.stack")


def native_resize(im: torch.Tensor, box: Tuple[int, int, int, int], crop: int, train: bool, resize_size: int
                  ) -> torch.Tensor:
    """One image resized as a user writes it in torch alone (float32 (3, crop, crop), 0-255): training, the box
    sliced and interpolated to crop x crop; evaluation, Resize(resize_size) (the shorter side, the longer
    ``int(resize_size * long / short)``) then the centred crop, as torchvision's Resize + CenterCrop."""
    import torch.nn.functional as F

    if train:
        t, l, h, w = box
        return F.interpolate(im[None, :, t:t + h, l:l + w].float(), size=(crop, crop), mode="bilinear",
                             antialias=True, align_corners=False)[0]
    H, W = im.shape[-2:]
    nh, nw = (resize_size, int(resize_size * W / H)) if H <= W else (int(resize_size * H / W), resize_size)
    x = F.interpolate(im[None].float(), size=(nh, nw), mode="bilinear", antialias=True, align_corners=False)[0]
    top, left = int(round((nh - crop) / 2)), int(round((nw - crop) / 2))
    return x[:, top:top + crop, left:left + crop]


def _make_native(sizes: Sequence[Tuple[int, int]], boxes: torch.Tensor, mirror: torch.Tensor, crop: int, train: bool,
                 resize_size: int, jitter: bool = False):
    def make(device: torch.device) -> Bench:
        import tensorops

        g = torch.Generator().manual_seed(0)
        # decode_jpeg's and PIL's layout (HWC memory): what a pipeline that decodes, with or without torchvision, has
        images = [photo_like(H, W, g).permute(1, 2, 0).contiguous().permute(2, 0, 1).to(device) for H, W in sizes]
        params = [tuple(int(v) for v in b) for b in boxes.tolist()]
        flips = mirror.tolist() if train else [False] * len(sizes)
        mean = torch.tensor(MEAN, device=device).view(3, 1, 1)
        std = torch.tensor(STD, device=device).view(3, 1, 1)
        kw = dict(size=crop, boxes=boxes, mirror=mirror if train else None, crop_first=train)
        if not jitter:
            def eager(images):
                out = []
                for im, box, f in zip(images, params, flips):
                    x = native_resize(im, box, crop, train, resize_size)
                    out.append(((x.flip(-1) if f else x) / 255 - mean) / std)
                return torch.stack(out)

            def tops(images):
                return tensorops.resized_crop_mirror_normalize(images, MEAN, STD, **kw)

            return Bench(eager=eager, tensorops=tops, args=(images,))

        from tensorops.augment import functional as A

        factors = 0.6 + 0.8 * torch.rand(3, len(sizes), generator=torch.Generator().manual_seed(1),
                                         dtype=torch.float64)
        per_image = factors.t().tolist()

        def eager(images):
            out = []
            for im, box, f, (b, c, s) in zip(images, params, flips, per_image):
                x = native_resize(im, box, crop, train, resize_size)
                x = (x.flip(-1) if f else x).round_().clamp_(0, 255).to(torch.uint8)
                x = jitter_native(x, b, c, s)
                out.append((x / 255 - mean) / std)
            return torch.stack(out)

        def tops(images):
            x = tensorops.resized_crop_mirror_normalize(images, None, None, dtype=torch.uint8, **kw)
            x = A.adjust_saturation(A.adjust_contrast(A.adjust_brightness(x, factors[0]), factors[1]), factors[2])
            return tensorops.normalize(x, MEAN, STD)

        return Bench(eager=eager, tensorops=tops, args=(images,))

    return make


def _blend(a: torch.Tensor, b: torch.Tensor, ratio: float) -> torch.Tensor:
    """torchvision v2's ``_blend`` on uint8: ``ratio * a + (1 - ratio) * b`` in float32, clamped, truncated."""
    return a.mul(ratio).add_(b.mul(1.0 - ratio)).clamp_(0, 255).to(a.dtype)


def jitter_native(x: torch.Tensor, brightness: float, contrast: float, saturation: float) -> torch.Tensor:
    """ColorJitter's brightness, contrast and saturation on one uint8 (3, H, W) image in torch alone: torchvision
    v2's adjust_brightness, adjust_contrast and adjust_saturation formulas, written out."""
    x = _blend(x, torch.zeros_like(x), brightness)
    r, g, b = x.unbind(-3)
    gray = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).floor_().unsqueeze(-3)
    x = _blend(x, gray.mean(dim=(-3, -2, -1), keepdim=True), contrast)
    r, g, b = x.unbind(-3)
    gray = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114).floor_().unsqueeze(-3)
    return _blend(x, gray, saturation)


def _native_case(n: int, lo: int, hi: int, crop: int, label: str, train: bool = True, jitter: bool = False) -> Case:
    sizes, boxes, mirror, resize_size = _params(n, lo, hi, crop, train)
    read = int(sum(round(float(h)) * round(float(w)) for h, w in boxes[:, 2:].tolist())) * 3
    mode = "train" if train else "eval"
    expr = NATIVE_EXPR.format(flip=", flip(-1)" if train else "")
    if jitter:
        expr = expr.replace(", (x / 255", ", .round().to(uint8), ColorJitter's brightness, contrast and saturation "
                                          "(torchvision v2's formulas), (x / 255")
    return Case(
        op="resized_crop_mirror_normalize",
        series=f"resized_crop_mirror_normalize{' + color jitter' if jitter else ''} u8->f32 {mode} hwc{NATIVE}",
        case=label,
        shape=f"{n}x list of (3,{lo}-{hi},{lo}-{hi})->{crop}x{crop} {mode}",
        dtype="u8->f32",
        layout=LAYOUTS["hwc"],
        nbytes=read + n * 3 * crop * crop * 4,
        make=_make_native(sizes, boxes, mirror, crop, train, resize_size, jitter),
        eager_expr=expr,
        compile_grids=(),  # 32 differently sized images: 32 graphs, minutes to compile on 2 cores
        # the jitter row rounds to uint8 before the colour ops (round half to even, tensorops half up): a pixel
        # at an exact .5 may move a step, which brightness, contrast and saturation scale by up to 1.4 each
        # (2.7 steps) before each truncates (one more): the clean CI clone's quick run met 4 steps (1 in 640 values)
        check_atol=(5 if jitter else 1) * ONE_STEP,
        requires=("tensorops.augment",) if jitter else (),
        notes="photo-like images in decode_jpeg's / PIL's layout; needs no torchvision"
              + ("; tensorops: uint8 resize, tensorops.augment's adjust_brightness, adjust_contrast, "
                 "adjust_saturation with per-sample factors, normalize" if jitter else ""),
    )


def _has_augment() -> bool:
    """Whether this tensorops has a working ``tensorops.augment.functional`` (one that imports, from the same
    tree as tensorops itself: an editable install of another checkout can otherwise lend its subpackage)."""
    import os

    import tensorops

    try:
        from tensorops.augment import functional
    except Exception:  # absent, or present but not built (its ops are not in this build's library)
        return False
    here = os.path.dirname(os.path.abspath(tensorops.__file__))
    return os.path.abspath(functional.__file__).startswith(here + os.sep)


def native_cases(grid: str) -> List[Case]:
    """The rows against torch alone (the Quickstart's picture without torchvision); the jitter row where
    tensorops.augment exists."""
    n, lo, hi, crop, label = (2, 20, 28, 8, "tiny") if grid == "smoke" else (32, 300, 500, 224, "imagenet")
    rows = [_native_case(n, lo, hi, crop, label, train=t) for t in (True, False)]
    if _has_augment():
        rows.append(_native_case(n, lo, hi, crop, label, jitter=True))
    return rows


def cases(device: torch.device, grid: str) -> List[Case]:
    if grid == "smoke":
        return [_case(2, 20, 28, 8, "tiny", compile_grids=()), *native_cases(grid)]
    # torch.compile of 32 differently sized images (32 resize graphs) costs minutes on 2 cores: full grid only
    out = [
        # decode_jpeg's layout first: what a pipeline that decodes has (torchvision's resize is fastest there)
        _case(32, 300, 500, 224, "imagenet", compile_grids=("full",), layout="hwc"),
        _case(32, 300, 500, 224, "imagenet", train=False, compile_grids=("full",), layout="hwc"),
        _case(32, 300, 500, 224, "imagenet", compile_grids=("full",)),
        _case(32, 300, 500, 224, "imagenet", train=False, compile_grids=("full",)),
        # the same on real photographs (decoded JPEGs of scikit-image's sample photos at ImageNet's sizes): the
        # synthetic images alone overstated the ratio (docs/guides/performance.rst says by how much, and why)
        *(_case(32, 300, 500, 224, "imagenet", train=t, compile_grids=(), layout=lay, real=True)
          for lay in ("hwc", "chw") for t in (True, False)),
        # bicubic evaluation (timm resizes bicubically for many models): Resize(256, bicubic) + CenterCrop(224)
        _case(32, 300, 500, 224, "imagenet", train=False, compile_grids=(), interpolation="bicubic"),
    ]
    if grid == "full" or device.type == "cuda":
        out.append(_case(256, 300, 500, 224, "large", compile_grids=("full",)))
    return out + native_cases(grid)

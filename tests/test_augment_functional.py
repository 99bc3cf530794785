"""tensorops.augment's functional ops against torchvision.transforms.v2.functional, sample by sample.

The colour ops and erase are bit for bit (``torch.equal``) on real photographs (scikit-image's astronaut, coffee,
chelsea and rocket at 224x224), random images, odd sizes (17x23, 3x3, 2x5), one and three channels, contiguous and
channels_last (the result keeps the layout), empty and one-sample batches, a number for every sample and one value
per sample. affine and rotate follow torchvision's float32 grid; where its coordinates fall within rounding
distance of a pixel boundary a pixel may differ (bilinear: by 1 step; nearest: the neighbouring source pixel):
the bounds below come from measurement. Rotations by quarter turns (torchvision's fast paths) are exact.

Also: the input is left as it was, bad arguments are named, the compiled kernel ran (the profiler sees
``tensorops::augment_apply`` once per call), opcheck and torch.compile(fullgraph=True). torchvision is an optional
extra: the comparisons skip without it, saying so.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import pytest
import torch

import tensorops.augment as A
from tensorops.augment.functional import OPS
from conftest import kernel_ran, requires_compiled

U8 = torch.uint8
F64 = torch.float64


@pytest.fixture(scope="module")
def F():
    return pytest.importorskip("torchvision.transforms.v2.functional",
                               reason="the reference is torchvision v2 (an optional extra: "
                               "pip install '.[torchvision]')")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _random(shape, seed=0) -> torch.Tensor:
    return torch.randint(0, 256, shape, dtype=U8, generator=_gen(seed))


_PHOTOS: Dict[int, torch.Tensor] = {}


def _photos() -> torch.Tensor:
    """scikit-image's astronaut, coffee, chelsea and rocket, resized to 224x224 (antialiased bilinear, rounded):
    (4, 3, 224, 224) uint8."""
    if not _PHOTOS:
        data = pytest.importorskip("skimage.data", reason="the real photographs are scikit-image's sample images "
                                   "(an extra CI installs: pip install scikit-image)")
        ims = []
        for name in ("astronaut", "coffee", "chelsea", "rocket"):
            a = torch.from_numpy(getattr(data, name)().copy()).permute(2, 0, 1)[None].float()
            r = torch.nn.functional.interpolate(a, size=(224, 224), mode="bilinear", antialias=True,
                                                align_corners=False)
            ims.append(r.round().clamp(0, 255).to(U8)[0])
        _PHOTOS[0] = torch.stack(ims)
    return _PHOTOS[0]


# the image sets: name -> make(); every set runs contiguous and channels_last
IMAGES: Dict[str, Callable[[], torch.Tensor]] = {
    "photos": _photos,
    "random": lambda: _random((5, 3, 31, 29), seed=1),
    "17x23": lambda: _random((3, 3, 17, 23), seed=2),
    "3x3": lambda: _random((3, 3, 3, 3), seed=3),
    "2x5": lambda: _random((3, 3, 2, 5), seed=4),
    "one-channel": lambda: _random((3, 1, 19, 13), seed=5),
    "one-sample": lambda: _random((1, 3, 8, 9), seed=6),
}
LAYOUTS = {"contiguous": torch.contiguous_format, "channels_last": torch.channels_last}


def _layout(x: torch.Tensor, layout: str) -> torch.Tensor:
    return x.contiguous(memory_format=LAYOUTS[layout])


def _assert_layout(out: torch.Tensor, batch: torch.Tensor) -> None:
    """A dense result in the batch's layout: channels_last where the batch is channels_last and not also
    contiguous (one channel, an empty batch: both), contiguous otherwise."""
    if batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        assert out.is_contiguous(memory_format=torch.channels_last), out.stride()
    else:
        assert out.is_contiguous(), out.stride()


@pytest.fixture(autouse=True)
def _no_tf32(monkeypatch):
    """torchvision's sharpness on CUDA is a cuDNN conv2d, which may run in TF32 (not float32) unless told not to."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)


def _reference(F, fn, batch: torch.Tensor, args: Sequence[tuple]) -> torch.Tensor:
    """``fn(F, image_i, *args[i])`` for each sample, stacked (an empty batch: empty), on the batch's device: a CUDA
    result is compared with torchvision's on the same CUDA images (the colour ops; the geometric tests pass their
    CPU batch: the CUDA kernels equal the CPU ones there, tests/test_augment_cuda.py)."""
    if batch.shape[0] == 0:
        return batch.clone()
    return torch.stack([fn(F, batch[i], *args[i]) for i in range(batch.shape[0])])


def _call(fn, batch, *args, **kwargs) -> torch.Tensor:
    """fn on the batch, checking that the batch is left as it was and the result is a new uint8 tensor."""
    before = batch.clone()
    out = fn(batch, *args, **kwargs)
    assert torch.equal(batch, before), "the input was changed"
    assert out.dtype == U8 and out.device == batch.device
    assert out.numel() == 0 or out.data_ptr() != batch.data_ptr(), "the result shares the input's memory"
    return out


def _assert_equal(out: torch.Tensor, want: torch.Tensor, what: str = "", max_step: int = 0) -> None:
    out, want = out.cpu(), want.cpu()
    if not torch.equal(out, want):
        d = (out.int() - want.int()).abs()
        if max_step and int(d.max()) <= max_step:
            return
        bad = (d > 0).nonzero()[:5].tolist()
        raise AssertionError(f"{what}: {int((d > 0).sum())} of {d.numel()} values differ (max {int(d.max())}), "
                             f"first at {bad}")


# ---- colour ops: per-sample arguments, every image set, both layouts ----------------------------------------------
def _factors(n, seed, lo=0.0, hi=2.0) -> torch.Tensor:
    return torch.rand(n, generator=_gen(seed), dtype=F64) * (hi - lo) + lo


# name: (per-sample argument (n, seed) -> (N,) tensor or None, torchvision's call (F, image, value))
COLOUR: Dict[str, Tuple[Optional[Callable], Callable]] = {
    "adjust_brightness": (_factors, lambda F, im, v: F.adjust_brightness(im, v)),
    "adjust_contrast": (_factors, lambda F, im, v: F.adjust_contrast(im, v)),
    "adjust_saturation": (_factors, lambda F, im, v: F.adjust_saturation(im, v)),
    "adjust_sharpness": (lambda n, s: _factors(n, s, 0.0, 3.0), lambda F, im, v: F.adjust_sharpness(im, v)),
    "adjust_hue": (lambda n, s: _factors(n, s, -0.5, 0.5), lambda F, im, v: F.adjust_hue(im, v)),
    "posterize": (lambda n, s: torch.randint(0, 9, (n,), generator=_gen(s)), lambda F, im, v: F.posterize(im, int(v))),
    "solarize": (lambda n, s: _factors(n, s, 0.0, 255.0), lambda F, im, v: F.solarize(im, v)),
    "autocontrast": (None, lambda F, im: F.autocontrast(im)),
    "equalize": (None, lambda F, im: F.equalize(im)),
    "invert": (None, lambda F, im: F.invert(im)),
    "rgb_to_grayscale": (None, lambda F, im: F.rgb_to_grayscale(im, im.shape[0])),
}


def _step(name: str, device: str) -> int:
    """The values may differ by this much: contrast on CUDA takes the image mean as torch's CUDA mean (sum times
    1 / count), which may round apart from the CPU's and from torchvision's by one step (the lead's CUDA contract,
    tests/test_augment_cuda.py); everything else is bit for bit."""
    return 1 if name in ("adjust_contrast", "contrast") and device == "cuda" else 0


def _colour(name: str, batch: torch.Tensor, values: Optional[torch.Tensor]):
    if name == "rgb_to_grayscale":
        return _call(A.rgb_to_grayscale, batch, batch.shape[1])
    fn = getattr(A, name)
    return _call(fn, batch) if values is None else _call(fn, batch, values)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("images", IMAGES)
@pytest.mark.parametrize("name", COLOUR)
def test_colour_ops_equal_torchvision_per_sample(F, device, name, images, layout):
    batch = _layout(IMAGES[images](), layout).to(device)
    draw, theirs = COLOUR[name]
    n = batch.shape[0]
    values = draw(n, list(IMAGES).index(images)) if draw else None
    out = _colour(name, batch, values)
    _assert_layout(out, batch)
    args = [(v.item(),) for v in values] if values is not None else [()] * n
    _assert_equal(out, _reference(F, theirs, batch, args), f"{name} on {images} ({layout})", _step(name, device))


@pytest.mark.parametrize("name", [k for k, v in COLOUR.items() if v[0] is not None])
def test_a_number_is_every_samples_argument(F, device, name):
    batch = _random((4, 3, 12, 14), seed=7).to(device)
    draw, theirs = COLOUR[name]
    value = draw(1, 3)[0].item()
    out = getattr(A, name)(batch, value)
    _assert_equal(out, getattr(A, name)(batch, torch.full((4,), value, dtype=F64)), f"{name}({value})")
    _assert_equal(out, _reference(F, theirs, batch, [(value,)] * 4), f"{name}({value}) vs torchvision",
                  _step(name, device))


@pytest.mark.parametrize("name", list(COLOUR) + ["erase", "affine", "rotate", "apply_ops"])
def test_empty_batch(device, name, layout="channels_last"):
    for c in (1, 3):
        batch = torch.empty(0, c, 7, 5, dtype=U8, device=device).contiguous(memory_format=torch.channels_last)
        extra = {"erase": (torch.empty(0, 4, dtype=torch.int64),), "rotate": (30.0,),
                 "apply_ops": (torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=F64))}
        if name in COLOUR:
            out = _colour(name, batch, torch.empty(0, dtype=F64) if COLOUR[name][0] else None)
        else:
            out = _call(getattr(A, name), batch, *extra.get(name, ()))
        assert out.shape == batch.shape or (name == "rgb_to_grayscale" and out.shape[0] == 0)
        _assert_layout(out, batch)


def test_posterize_every_bit_count(F, device):
    batch = _random((9, 3, 11, 13), seed=8).to(device)
    bits = torch.arange(9)
    _assert_equal(A.posterize(batch, bits), _reference(F, lambda F, im, b: F.posterize(im, b), batch,
                                                       [(b,) for b in range(9)]), "posterize 0..8")
    for b in (0, 8):
        _assert_equal(A.posterize(batch, b), batch.cpu() if b == 8 else torch.zeros_like(batch.cpu()), f"bits={b}")


def test_solarize_thresholds(F, device):
    """Exact integers (the values at the threshold are inverted: >=), halves, 0 (every value) and 255."""
    thresholds = [0.0, 0.5, 1.0, 127.0, 127.5, 128.0, 200.0, 254.5, 255.0, 254.99999]
    batch = torch.arange(256, dtype=U8).view(1, 1, 16, 16).expand(len(thresholds), 3, 16, 16).contiguous().to(device)
    out = A.solarize(batch, torch.tensor(thresholds, dtype=F64))
    _assert_equal(out, _reference(F, lambda F, im, t: F.solarize(im, t), batch, [(t,) for t in thresholds]),
                  "solarize")
    _assert_equal(A.solarize(batch, 255), torch.where(batch.cpu() == 255, 0, batch.cpu()).to(U8), "solarize 255")
    _assert_equal(A.solarize(batch, 0), 255 - batch.cpu(), "solarize 0")


def test_autocontrast_constant_channels(F, device):
    """A constant channel (torchvision: unchanged, its bound is 0 where min == max) beside stretched ones."""
    batch = _random((4, 3, 9, 10), seed=9) // 3 + 40
    batch[0, 1] = 77
    batch[1] = 0
    batch[2] = 255
    batch[3, 0], batch[3, 2] = 13, 200
    batch = batch.to(device)
    _assert_equal(A.autocontrast(batch), _reference(F, lambda F, im: F.autocontrast(im), batch, [()] * 4),
                  "autocontrast")
    one = batch[:, :1].contiguous()
    _assert_equal(A.autocontrast(one), _reference(F, lambda F, im: F.autocontrast(im), one, [()] * 4),
                  "autocontrast, one channel")


def test_equalize_constant_and_two_valued_images(F, device):
    g = _gen(10)
    ims = [torch.full((3, 12, 11), v, dtype=U8) for v in (0, 77, 255)]
    for low, high, p in ((10, 200, 0.5), (0, 255, 0.9), (100, 101, 0.3), (5, 250, 1 / 132)):
        mask = torch.rand(3, 12, 11, generator=g) < p
        ims.append(torch.where(mask, high, low).to(U8))
    one_pixel = torch.full((3, 12, 11), 40, dtype=U8)
    one_pixel[:, 5, 5] = 41  # a single pixel of the second value
    ims.append(one_pixel)
    batch = torch.stack(ims).to(device)
    _assert_equal(A.equalize(batch), _reference(F, lambda F, im: F.equalize(im), batch, [()] * len(ims)),
                  "equalize")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rgb_to_grayscale_output_channels(F, device, layout):
    for c in (1, 3):
        batch = _layout(_random((3, c, 10, 7), seed=11 + c), layout).to(device)
        for k in (1, 3):
            out = _call(A.rgb_to_grayscale, batch, k)
            assert out.shape == (3, k, 10, 7)
            _assert_layout(out, batch)
            _assert_equal(out, _reference(F, lambda F, im: F.rgb_to_grayscale(im, k), batch, [()] * 3),
                          f"rgb_to_grayscale C={c} -> {k}")


@pytest.mark.parametrize("shape", [(2, 3, 1, 1), (2, 3, 2, 2), (2, 3, 5, 2), (2, 3, 2, 9), (2, 1, 1, 4)])
def test_sharpness_leaves_images_without_an_inner_pixel_unchanged(F, device, shape):
    """torchvision blends only the inner pixels (its blur keeps the border): H or W <= 2 leaves the image as it was."""
    batch = _random(shape, seed=12).to(device)
    out = A.adjust_sharpness(batch, torch.tensor([0.0, 2.5], dtype=F64))
    _assert_equal(out, batch.cpu(), f"sharpness {shape}")
    _assert_equal(out, _reference(F, lambda F, im, v: F.adjust_sharpness(im, v), batch, [(0.0,), (2.5,)]),
                  "vs torchvision")


# ---- erase ------------------------------------------------------------------------------------------------------
BOXES = torch.tensor([[0, 0, 3, 4], [5, 2, 40, 40], [2, 3, 0, 5], [10, 11, 7, 1], [30, 0, 2, 2]])  # clipped, empty


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("value", ["number", "per-sample", "per-channel", "per-pixel"])
def test_erase_equals_torchvision(F, device, value, layout):
    batch = _layout(_random((5, 3, 17, 23), seed=13), layout).to(device)
    g = _gen(14)
    v = {"number": 200, "per-sample": torch.tensor([1, 50, 100, 150, 255]),
         "per-channel": torch.randint(0, 256, (5, 3), generator=g, dtype=U8),
         "per-pixel": _random((5, 3, 17, 23), seed=15).to(device)}[value]
    out = _call(A.erase, batch, BOXES.to(device), v)
    _assert_layout(out, batch)

    def theirs(F, im, i):
        t, l, h, w = BOXES[i].tolist()
        if value == "per-pixel":
            vi = v[i, :, t:t + h, l:l + w]
        elif value == "per-channel":
            vi = v[i].view(3, 1, 1)
        else:
            vi = torch.tensor(v if value == "number" else int(v[i]), dtype=U8)
        return F.erase(im, t, l, h, w, vi)

    _assert_equal(out, _reference(F, theirs, batch, [(i,) for i in range(5)]), f"erase {value} ({layout})")


def test_erase_one_channel(F, device):
    batch = _random((2, 1, 6, 6), seed=16).to(device)
    boxes = torch.tensor([[1, 1, 2, 3], [0, 4, 6, 6]])
    out = A.erase(batch, boxes, torch.tensor([7, 9]))
    want = _reference(F, lambda F, im, i: F.erase(im, *boxes[i].tolist(), torch.tensor([7, 9][i], dtype=U8)),
                      batch, [(0,), (1,)])
    _assert_equal(out, want, "erase C=1")


# ---- affine and rotate ----------------------------------------------------------------------------------------
# Measured (torchvision 0.29.1, CPU kernels with the grid in torch's bmm order, 2bf839d): random angles, scales,
# shears and translations on the 224x224 photographs: bilinear at most 0.0005% of values (1 step), nearest none; on
# random 31x29 / 37x29 images: bilinear at most 0.008% (1 step), nearest none. (Before 2bf839d, with a fused grid:
# photos 0.0017%, and nearest 0.09% on 37x29 at 45 degrees about (10, 10).) The bound, with margin:
MAX_DIFF_FRACTION = 0.0005  # 0.05% of the values
MAX_BILINEAR_STEP = 2


def _source(F, h: int, w: int, angle: float, translate, scale: float, shear, center) -> Callable:
    """torchvision's inverse map in float64: output pixel (y, x) -> source pixel coordinates (sy, sx)
    (_get_inverse_affine_matrix on the centred base grid, then grid_sample's align_corners=False)."""
    from torchvision.transforms.v2.functional._geometry import _get_inverse_affine_matrix

    c = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    m = _get_inverse_affine_matrix(c, angle, list(translate), scale, list(shear))

    def at(y: int, x: int) -> Tuple[float, float]:
        bx, by = x - (w - 1) / 2, y - (h - 1) / 2
        return (m[3] * bx + m[4] * by + m[5] + (h - 1) / 2, m[0] * bx + m[1] * by + m[2] + (w - 1) / 2)

    return at


def _assert_close_geometry(out, want, batch, interpolation, sources, fill, what, max_fraction=MAX_DIFF_FRACTION):
    """At most max_fraction of the values differ; bilinear by at most MAX_BILINEAR_STEP; nearest only where both
    values are source pixels next to torchvision's exact source coordinate (or the fill): a rounding tie."""
    out, want, batch = out.cpu(), want.cpu(), batch.cpu()
    diff = (out.int() - want.int()).abs()
    bad = (diff > 0).nonzero().tolist()
    frac = len(bad) / max(diff.numel(), 1)
    assert frac <= max_fraction, (f"{what}: {len(bad)} of {diff.numel()} values differ ({frac:.4%}), "
                                  f"max {int(diff.max())}")
    if interpolation == "bilinear":
        assert not bad or int(diff.max()) <= MAX_BILINEAR_STEP, f"{what}: a value {int(diff.max())} steps off"
        return
    n_, c_, h, w = batch.shape
    for n, c, y, x in bad:
        sy, sx = sources[n](y, x)
        near = {0, *([] if fill is None else ([fill] if isinstance(fill, (int, float)) else [fill[c % len(fill)]]))}
        for yy in range(math.floor(sy) - 1, math.ceil(sy) + 2):
            for xx in range(math.floor(sx) - 1, math.ceil(sx) + 2):
                if 0 <= yy < h and 0 <= xx < w:
                    near.add(int(batch[n, c, yy, xx]))
        assert int(out[n, c, y, x]) in near and int(want[n, c, y, x]) in near, (
            f"{what}: sample {n} ({c}, {y}, {x}) is {int(out[n, c, y, x])}, torchvision {int(want[n, c, y, x])}: "
            f"not a pixel next to the source ({sy:.4f}, {sx:.4f})")


def _affine_params(n: int, seed: int):
    g = _gen(seed)
    u = lambda *s: torch.rand(*s, generator=g, dtype=F64)  # noqa: E731
    return (u(n) - 0.5) * 90, (u(n, 2) - 0.5) * 10, u(n) * 0.6 + 0.7, (u(n, 2) - 0.5) * 40


GEOMETRY_IMAGES = {"photos": _photos, "random": lambda: _random((5, 3, 31, 29), seed=17),
                   "one-channel": lambda: _random((3, 1, 23, 17), seed=18)}
FILLS = {"no-fill": None, "fill-number": 7, "fill-per-channel": [10, 20, 30]}


@pytest.mark.parametrize("center", [None, (3.0, 5.5)], ids=["centre", "center-given"])
@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("images", GEOMETRY_IMAGES)
def test_affine_follows_torchvision(F, device, images, interpolation, fill, center):
    batch = GEOMETRY_IMAGES[images]()
    n, c, h, w = batch.shape
    fill_v = FILLS[fill] if not (isinstance(FILLS[fill], list) and c == 1) else [10]
    angle, translate, scale, shear = _affine_params(n, seed=len(images) + (fill_v is None))
    layout = "channels_last" if fill == "fill-number" else "contiguous"
    x = _layout(batch, layout).to(device)
    out = _call(A.affine, x, angle, translate, scale, shear, interpolation=interpolation, fill=fill_v, center=center)
    _assert_layout(out, x)
    args = [(float(angle[i]), translate[i].tolist(), float(scale[i]), shear[i].tolist()) for i in range(n)]
    want = _reference(F, lambda F, im, a, t, s, sh: F.affine(im, a, t, s, sh, interpolation=interpolation,
                                                             fill=fill_v, center=center), batch, args)
    sources = [_source(F, h, w, *args[i], center) for i in range(n)]
    _assert_close_geometry(out, want, batch, interpolation, sources, fill_v, f"affine {images} {interpolation}")


@pytest.mark.parametrize("center", [None, (3.0, 5.5)], ids=["centre", "center-given"])
@pytest.mark.parametrize("fill", ["no-fill", "fill-per-channel"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("images", ["photos", "random"])
def test_rotate_follows_torchvision(F, device, images, interpolation, fill, center):
    batch = GEOMETRY_IMAGES[images]()
    n, c, h, w = batch.shape
    angle = (torch.rand(n, generator=_gen(19), dtype=F64) - 0.5) * 340
    x = batch.to(device)
    out = _call(A.rotate, x, angle, interpolation=interpolation, fill=FILLS[fill], center=center)
    want = _reference(F, lambda F, im, a: F.rotate(im, a, interpolation=interpolation, fill=FILLS[fill],
                                                   center=center), batch, [(float(a),) for a in angle])
    sources = [_source(F, h, w, -float(a), (0.0, 0.0), 1.0, (0.0, 0.0), center) for a in angle]
    _assert_close_geometry(out, want, batch, interpolation, sources, FILLS[fill], f"rotate {images} {interpolation}")


QUARTER_TURNS = [0.0, 90.0, 180.0, 270.0, -90.0, -180.0, -270.0, 360.0, 450.0, -720.0]


@pytest.mark.parametrize("fill", ["no-fill", "fill-per-channel"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_quarter_turns_are_exact(F, device, interpolation, fill, layout):
    """torchvision's fast paths (center None): 0 and 180 degrees on any image, 90 and 270 on square ones, in any
    turn of the angle (negative, above 360), per sample: bit for bit."""
    for batch in (_photos()[:2], _random((2, 3, 31, 29), seed=20), _random((2, 1, 6, 6), seed=21)):
        square = batch.shape[-1] == batch.shape[-2]
        angles = [a for a in QUARTER_TURNS if square or a % 180 == 0]
        big = _layout(batch[torch.arange(len(angles)) % batch.shape[0]], layout).to(device)
        fill_v = FILLS[fill] if FILLS[fill] is None or batch.shape[1] == 3 else [10]
        out = _call(A.rotate, big, torch.tensor(angles, dtype=F64), interpolation=interpolation, fill=fill_v)
        _assert_layout(out, big)
        want = _reference(F, lambda F, im, a: F.rotate(im, a, interpolation=interpolation, fill=fill_v), big,
                          [(a,) for a in angles])
        _assert_equal(out, want, f"rotate by {angles} on {tuple(batch.shape)}")
        for a in angles:  # and one number for the batch
            _assert_equal(A.rotate(big, a, interpolation=interpolation), _reference(
                F, lambda F, im: F.rotate(im, a, interpolation=interpolation), big, [()] * len(angles)),
                f"rotate by {a}")


def test_rotate_quarter_turns_about_a_given_center(F, device):
    """With a center given torchvision takes no fast path: an exact quarter turn about a half-pixel centre puts
    whole columns of bilinear results exactly on a half, where torchvision's float32 weights decide the rounding.
    Measured (CPU kernels at 2bf839d, torchvision 0.29.1): 37x29 about (3, 5.5): bilinear 0.15% of the values
    (1 step), nearest none; 36x36 and 24x24: bilinear 0.16%. (Before 2bf839d's grid order, nearest differed in 1.29%.)
    The bilinear bound holds that with margin; docs/guides/fidelity.rst is where it should be stated."""
    batch = _random((4, 3, 37, 29), seed=22)
    n, c, h, w = batch.shape
    for interpolation, bound in (("nearest", MAX_DIFF_FRACTION), ("bilinear", 0.005)):
        for a in (90.0, 270.0, -90.0):
            out = A.rotate(batch.to(device), a, interpolation=interpolation, center=(3.0, 5.5))
            want = _reference(F, lambda F, im: F.rotate(im, a, interpolation=interpolation, center=[3.0, 5.5]),
                              batch, [()] * n)
            sources = [_source(F, h, w, -a, (0.0, 0.0), 1.0, (0.0, 0.0), (3.0, 5.5))] * n
            _assert_close_geometry(out, want, batch, interpolation, sources, None,
                                   f"rotate {a} about (3, 5.5) {interpolation}", max_fraction=bound)


@pytest.mark.parametrize("translate", [0.5, 2.5, 0.1, 2.75, -3.5])
def test_bilinear_ties_of_decimal_translations(F, device, translate):
    """A translation by a short decimal fraction puts many bilinear results exactly on a half (0.5: every pixel
    whose two taps have an odd sum; 0.1: (9a + b) / 10), where torchvision's float32 weights, a few ulp off, decide
    the rounding: then our 1-step differences are as many as the ties. Measured (29x29 random images, CPU kernels at
    2bf839d, torchvision 0.29.1): 0.5 -> 2.0% of values, 0.1 -> 0.78%, 2.75 -> 0.92%, 2.5 -> 1.8%, all 1 step;
    nearest 0%.
    Policy magnitudes (TrivialAugmentWide's 32 / 30 * k, RandAugment's 150 / 331 * W * k / 30) measured 0%.
    The bound holds the measurement with margin (the general bound is MAX_DIFF_FRACTION)."""
    batch = _random((6, 3, 29, 29), seed=31)
    n, c, h, w = batch.shape
    for interpolation, bound in (("bilinear", 0.03), ("nearest", MAX_DIFF_FRACTION)):
        out = A.affine(batch.to(device), 0.0, (translate, -translate), interpolation=interpolation)
        want = _reference(F, lambda F, im: F.affine(im, 0.0, [translate, -translate], 1.0, [0.0, 0.0],
                                                    interpolation=interpolation), batch, [()] * n)
        sources = [_source(F, h, w, 0.0, (translate, -translate), 1.0, (0.0, 0.0), None)] * n
        _assert_close_geometry(out, want, batch, interpolation, sources, None, f"translate {translate} {interpolation}",
                               max_fraction=bound)


def test_affine_and_rotate_take_interpolation_modes(F):
    batch = _random((2, 3, 9, 9), seed=23)
    for mode in (F.InterpolationMode.NEAREST, F.InterpolationMode.BILINEAR):
        _assert_equal(A.rotate(batch, 180.0, interpolation=mode), A.rotate(batch, 180.0, interpolation=mode.value),
                      str(mode))
        _assert_equal(A.affine(batch, 10.0, interpolation=mode), A.affine(batch, 10.0, interpolation=mode.value),
                      str(mode))


# ---- apply_ops: one op per sample --------------------------------------------------------------------------------
def _apply_ops_reference(F, name: str, im: torch.Tensor, m: float, interpolation: str, fill):
    """The contract of tensorops.augment.apply_ops (notes/augment_api.md) for one sample."""
    if name == "identity":
        return im.clone()
    factor = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast, "saturation": F.adjust_saturation,
              "sharpness": F.adjust_sharpness, "hue": F.adjust_hue, "solarize": F.solarize}
    if name in factor:
        return factor[name](im, m)
    if name == "posterize":
        return F.posterize(im, int(m))
    if name in ("autocontrast", "equalize", "invert"):
        return getattr(F, name)(im)
    if name == "grayscale":
        return F.rgb_to_grayscale(im, im.shape[0])
    if name == "solarize_add":  # timm only: its Pillow table written as torch ops (no torchvision twin)
        return torch.where(im < 128, (im.to(torch.int16) + int(m)).clamp(max=255).to(U8), im)
    if name == "rotate":
        return F.rotate(im, m, interpolation=interpolation, fill=fill)
    kw = dict(interpolation=interpolation, fill=fill)
    if name == "shear_x":
        return F.affine(im, 0.0, [0, 0], 1.0, [m, 0.0], center=[0, 0], **kw)
    if name == "shear_y":
        return F.affine(im, 0.0, [0, 0], 1.0, [0.0, m], center=[0, 0], **kw)
    t = [m, 0.0] if name == "translate_x" else [0.0, m]
    return F.affine(im, 0.0, t, 1.0, [0.0, 0.0], **kw)


MAGNITUDES = {"identity": 0.0, "brightness": 1.6, "contrast": 0.3, "saturation": 1.9, "hue": -0.3, "sharpness": 0.1,
              "posterize": 3.0, "solarize": 128.0, "autocontrast": 0.0, "equalize": 0.0, "invert": 0.0,
              "grayscale": 0.0, "shear_x": 17.0, "shear_y": -9.5, "translate_x": 4.0, "translate_y": -7.0,
              "rotate": 90.0, "solarize_add": 70.0}
GEOMETRIC = {"shear_x", "shear_y", "translate_x", "translate_y", "rotate"}


@pytest.mark.parametrize("fill", ["no-fill", "fill-per-channel"])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("images", ["photos", "random", "one-channel"])
def test_apply_ops_gives_each_sample_its_op(F, device, images, interpolation, fill):
    assert set(MAGNITUDES) == set(OPS)
    src = GEOMETRY_IMAGES[images]() if images != "random" else _random((4, 3, 29, 29), seed=24)
    n_ops = len(OPS)
    # every op twice, each on a different image; rotate also by a non-quarter angle (the affine path), translate_x
    # also by TrivialAugmentWide's 7th bin (32 / 30 * 7 pixels; halves and tenths: test_bilinear_ties_...)
    idx = torch.arange(2 * n_ops) % n_ops
    mags = torch.tensor([MAGNITUDES[OPS[i]] for i in idx.tolist()], dtype=F64)
    mags[n_ops + OPS.index("rotate")] = -33.0
    mags[n_ops + OPS.index("translate_x")] = 32 / 30 * 7
    batch = src[torch.arange(2 * n_ops) % src.shape[0]]
    c = batch.shape[1]
    fill_v = None if fill == "no-fill" else [10, 20, 30][:c] if c == 3 else [10]
    x = _layout(batch, "channels_last").to(device)
    out = _call(A.apply_ops, x, idx, mags, interpolation=interpolation, fill=fill_v)
    _assert_layout(out, x)
    out = out.cpu()
    geometric: List[Tuple[int, torch.Tensor, Callable]] = []  # (sample, torchvision's, its source map)
    for i, (o, m) in enumerate(zip(idx.tolist(), mags.tolist())):
        name = OPS[o]
        want = _apply_ops_reference(F, name, batch[i], m, interpolation, fill_v)
        if name in GEOMETRIC:
            h, w = batch.shape[-2:]
            if name == "rotate":
                src_map = _source(F, h, w, -m, (0.0, 0.0), 1.0, (0.0, 0.0), None)
            elif name.startswith("shear"):
                shear = (m, 0.0) if name == "shear_x" else (0.0, m)
                src_map = _source(F, h, w, 0.0, (0.0, 0.0), 1.0, shear, (0.0, 0.0))
            else:
                src_map = _source(F, h, w, 0.0, (m, 0.0) if name == "translate_x" else (0.0, m), 1.0, (0.0, 0.0), None)
            geometric.append((i, want, src_map))
        else:
            _assert_equal(out[i], want, f"apply_ops sample {i} ({name} {m})", _step(name, device))
    # the geometric samples together (a fraction of one small image's values would allow no pixel at all)
    rows = [i for i, _, _ in geometric]
    _assert_close_geometry(out[rows], torch.stack([w for _, w, _ in geometric]), batch[rows], interpolation,
                           [s for _, _, s in geometric], fill_v, f"apply_ops geometric samples {rows}")


def test_apply_ops_takes_a_number_and_rotates_quarter_turns_exactly(F):
    batch = _random((3, 3, 12, 12), seed=25)
    rot = OPS.index("rotate")
    out = A.apply_ops(batch, torch.full((3,), rot), 270.0)
    _assert_equal(out, torch.rot90(batch, 3, dims=(-2, -1)), "rotate 270 through apply_ops")


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_apply_ops_k_ops_per_sample_equal_k_rounds(device, interpolation):
    """ops (N, K): each sample's K ops in order in one call, the same as K calls of one op per sample."""
    batch = _layout(_random((6, 3, 20, 20), seed=32), "channels_last").to(device)
    g = _gen(33)
    ops = torch.randint(0, len(OPS), (6, 3), generator=g)
    mags = torch.stack([torch.tensor([MAGNITUDES[OPS[o]] for o in row.tolist()], dtype=F64) for row in ops])
    out, names = kernel_ran(A.apply_ops, batch, ops, mags, interpolation=interpolation, fill=[1, 2, 3])
    want = batch
    for j in range(3):
        want = A.apply_ops(want, ops[:, j], mags[:, j], interpolation=interpolation, fill=[1, 2, 3])
    _assert_equal(out, want, f"K ops {ops.tolist()}")
    _assert_layout(out, batch)


# ---- mix: AugMix's weighted sum of chains -------------------------------------------------------------------------
def _v2_mix(batch, augmented, weights):
    """torchvision 0.29.1's v2.AugMix: ``mix = m[:, 0] * batch`` then ``mix.add_(w_i * chain_i)`` in float32, in that
    order, then ``.to(uint8)`` (pure torch: its own arithmetic is the reference)."""
    dims = (batch.shape[0], 1, 1, 1)
    out = weights[:, 0].reshape(dims) * batch
    for i, a in enumerate(augmented):
        out.add_(weights[:, 1 + i].reshape(dims) * a)
    return out.to(U8)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k", [1, 3, 8, 9])  # 9: more than the kernel holds (torch's ops)
@pytest.mark.parametrize("images", ["photos", "random", "one-channel", "2x5"])
def test_mix_equals_augmix_float32_order(device, images, k, layout):
    batch = _layout(IMAGES[images](), layout).to(device)
    n = batch.shape[0]
    g = _gen(40 + k)
    augs = [_layout(_random(tuple(batch.shape), seed=41 + i), layout).to(device) for i in range(k)]
    r = torch.rand(n, 1 + k, generator=g)
    w = r / r.sum(1, keepdim=True)  # AugMix's weights sum to 1: products near integers, truncation at the edge
    w[0] = 0.0
    w[0, 0] = 1.0  # the batch itself
    w = w.to(device)
    out = _call(A.mix, batch, augs, w)
    _assert_layout(out, batch)
    _assert_equal(out, _v2_mix(batch, augs, w), f"mix of {k} ({images}, {layout})")


def test_mix_of_an_empty_batch(device):
    batch = torch.empty(0, 3, 4, 4, dtype=U8, device=device)
    assert A.mix(batch, [batch.clone()], torch.empty(0, 2, device=device)).shape == (0, 3, 4, 4)


# ---- bad arguments are named (the catalogue, tests/test_bad_input.py, holds the rest) ------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda x: A.adjust_brightness(x.float(), 1.0), TypeError, r"\bbatch\b.*uint8"),
    (lambda x: A.invert(x[:, :2]), ValueError, r"\bbatch\b.*channels"),
    (lambda x: A.adjust_contrast(x, torch.ones(3)), ValueError, r"\bcontrast_factor\b"),
    (lambda x: A.adjust_saturation(x, torch.tensor([1.0, -1.0])), ValueError, r"saturation_factor of sample 1\b"),
    (lambda x: A.adjust_hue(x, torch.tensor([0.0, 0.51])), ValueError, r"hue_factor of sample 1\b"),
    (lambda x: A.posterize(x, torch.tensor([3, 9])), ValueError, r"bits of sample 1\b"),
    (lambda x: A.solarize(x, torch.tensor([256.0, 0.0])), ValueError, r"threshold of sample 0\b"),
    (lambda x: A.affine(x, scale=torch.tensor([1.0, -1.0])), ValueError, r"scale of sample 1\b"),
    (lambda x: A.affine(x, shear=torch.zeros(2, 3)), ValueError, r"\bshear\b"),
    (lambda x: A.rotate(x, 10.0, interpolation="bicubic"), ValueError, r"\binterpolation\b"),
    (lambda x: A.rotate(x, 10.0, fill=[1, 2]), ValueError, r"\bfill\b"),
    (lambda x: A.erase(x, torch.zeros(2, 4)), TypeError, r"\bboxes\b"),
    (lambda x: A.erase(x, torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, 2)), ValueError, r"\bvalue\b"),
    (lambda x: A.apply_ops(x, torch.tensor([0, 99]), torch.zeros(2)), ValueError, r"\bops of sample 1\b"),
    (lambda x: A.apply_ops(x, torch.tensor([6, 6]), torch.tensor([2.0, 2.5])), ValueError,
     r"magnitudes \(posterize\) of sample 1\b"),
    (lambda x: A.apply_ops(x, torch.full((2,), OPS.index("solarize_add")), torch.tensor([2.0, 256.0])), ValueError,
     r"magnitudes \(solarize_add\) of sample 1\b"),
    (lambda x: A.rgb_to_grayscale(x, 2), ValueError, r"\bnum_output_channels\b"),
])
def test_bad_arguments_are_named(call, exc, match):
    x = _random((2, 3, 5, 5))
    before = x.clone()
    with pytest.raises(exc, match=match):
        call(x)
    assert torch.equal(x, before)


# ---- the compiled kernels: they ran, opcheck, torch.compile ------------------------------------------------------
def _events(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn()
    return out, [e.name for e in prof.events() if e.name.startswith("tensorops::")]


@requires_compiled
@pytest.mark.parametrize("name, schema, call", [
    ("adjust_hue", "augment_apply", lambda x: A.adjust_hue(x, torch.linspace(-0.5, 0.5, x.shape[0]))),
    ("affine", "augment_apply", lambda x: A.affine(x, 10.0, interpolation="bilinear")),
    ("apply_ops", "augment_apply", lambda x: A.apply_ops(x, torch.arange(x.shape[0]) % len(OPS),
                                                         torch.zeros(x.shape[0], dtype=F64))),
    ("erase", "augment_erase", lambda x: A.erase(x, torch.tensor([[1, 1, 3, 3]] * x.shape[0]), 0)),
    ("mix", "augment_mix", lambda x: A.mix(x, [255 - x, x.flip(-1)], torch.full((x.shape[0], 3), 1 / 3,
                                                                                device=x.device))),
])
def test_compiled_kernel_ran_once_for_the_batch(device, name, schema, call):
    x = _random((17, 3, 16, 16), seed=26).to(device)
    out, names = _events(lambda: call(x))
    assert f"tensorops::{schema}" in names, f"{name}: the compiled kernel did not run ({names})"
    assert names.count(f"tensorops::{schema}") == 1, f"{name}: one kernel call for the batch, got {names}"
    _, ran = kernel_ran(call, x)
    assert ran == {f"tensorops::{schema}"}


@requires_compiled
def test_opcheck():
    apply = torch.ops.tensorops.augment_apply.default
    erase = torch.ops.tensorops.augment_erase.default
    x = _random((3, 3, 7, 6), seed=27)
    sq = _random((3, 1, 6, 6), seed=28)
    codes = torch.tensor([1, 12, 9])  # brightness, affine, equalize
    params = torch.zeros(3, 9, dtype=F64)
    params[:, 0], params[:, 1], params[:, 4] = 1.5, 20.0, 1.0
    for batch in (x, x.contiguous(memory_format=torch.channels_last)):
        torch.library.opcheck(apply, (batch, codes, params, 1, [1.0, 2.0, 3.0]))
        torch.library.opcheck(apply, (batch, codes, params, 0, None))
        torch.library.opcheck(erase, (batch, torch.tensor([[0, 0, 2, 2], [1, 2, 9, 9], [0, 0, 0, 3]]),
                                      torch.full((3, 3), 9, dtype=U8)))
        torch.library.opcheck(erase, (batch, torch.tensor([[0, 0, 2, 2]] * 3), 255 - batch))
    torch.library.opcheck(apply, (sq.contiguous(memory_format=torch.channels_last), torch.tensor([13, 14, 15]),
                                  params, 0, [5.0]))
    torch.library.opcheck(apply, (torch.empty(0, 3, 4, 4, dtype=U8), torch.empty(0, dtype=torch.int64),
                                  torch.empty(0, 9, dtype=F64), 0, None))
    mix = torch.ops.tensorops.augment_mix.default
    for batch in (x, x.contiguous(memory_format=torch.channels_last)):
        torch.library.opcheck(mix, (batch, [255 - batch, batch // 2], torch.rand(3, 3)))


@requires_compiled
def test_compile_fullgraph(device):
    torch._dynamo.reset()

    def f(x, factors, boxes, ops, mags):
        y = A.adjust_brightness(x, factors)
        y = A.apply_ops(y, ops, mags, interpolation="bilinear")
        y = A.rotate(y, 180.0)
        y = A.erase(y, boxes, 3)
        return A.mix(y, [x], torch.stack([factors.float() / 4, 1 - factors.float() / 4], 1))

    x = _random((4, 3, 12, 12), seed=29).to(device)
    # hue, equalize, rotate 90 (a quarter turn), shear_x
    args = (torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=F64), torch.tensor([[0, 0, 3, 3]] * 4),
            torch.tensor([4, 9, 16, 12]), torch.tensor([0.2, 0.0, 90.0, 11.0], dtype=F64))
    compiled = torch.compile(f, fullgraph=True)
    _assert_equal(compiled(x, *args), f(x, *args).cpu(), "compiled")
    args2 = (args[0].flip(0), args[1] + 1, args[2].flip(0), args[3].flip(0))
    _assert_equal(compiled(x.flip(0), *args2), f(x.flip(0), *args2).cpu(), "compiled, other values")
    names = _events(lambda: compiled(x, *args))[1]
    assert {"tensorops::augment_apply", "tensorops::augment_erase", "tensorops::augment_mix"} <= set(names), names


def test_no_compiled_extension_falls_back_to_torchvision(F, monkeypatch):
    """Without the kernels (a build without them, or TENSOROPS_DISABLE_EXTENSION=1) the ops run torchvision per
    sample: the same results."""
    from tensorops import _extension

    batch = _random((4, 3, 10, 10), seed=30)
    ops, mags = torch.tensor([1, 9, 16, 6]), torch.tensor([1.4, 0.0, 90.0, 2.0], dtype=F64)
    boxes = torch.tensor([[0, 0, 3, 3], [2, 2, 9, 9], [0, 0, 0, 0], [5, 1, 2, 7]])
    fast = (A.apply_ops(batch, ops, mags), A.erase(batch, boxes, 4), A.adjust_hue(batch, 0.2))
    monkeypatch.setattr(_extension, "kernels_for", lambda device: False)
    slow = (A.apply_ops(batch, ops, mags), A.erase(batch, boxes, 4), A.adjust_hue(batch, 0.2))
    for a, b in zip(fast, slow):
        _assert_equal(a, b, "fallback")

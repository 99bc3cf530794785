"""compute-sanitizer calls of the tensorops.augment kernels (augment_apply, augment_erase) on awkward batches.

Awkward means: odd sizes (17x23, 2x5, 1x1: sharpness's border-only images, affine's edge taps), a batch whose data
starts one element into its storage (``x[1:]``), channels_last, one channel, an empty batch, and 67 samples with a
different argument each. Each result is checked: on the CPU against torchvision v2 per sample where torchvision is
installed (bit for bit; affine and rotate on exact arguments only), on CUDA against the CPU kernels (the same
params replay bit for bit on both devices; contrast within one step: its mean on CUDA is torch's CUDA mean, which
may round apart from the CPU's).
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

import tensorops.augment as A
from benchmarks.sanitize_base import call, unaligned

# the (N, C, H, W) batches every op runs on: (label, make(device))
SHAPES = (
    ("17x23 x[1:]", lambda d: unaligned((3, 3, 17, 23), torch.uint8, d)),
    ("2x5 channels_last", lambda d: torch.randint(0, 256, (2, 3, 2, 5), dtype=torch.uint8, device=d)
     .contiguous(memory_format=torch.channels_last)),
    ("1x1 one channel", lambda d: torch.randint(0, 256, (2, 1, 1, 1), dtype=torch.uint8, device=d)),
    ("67 samples 9x7", lambda d: torch.randint(0, 256, (67, 3, 9, 7), dtype=torch.uint8, device=d)),
    ("empty", lambda d: torch.empty(0, 3, 5, 4, dtype=torch.uint8, device=d)),
)


def _torchvision():
    try:
        from torchvision.transforms.v2 import functional as F
    except ImportError:
        return None
    return F


def _check(op: str, ours: Callable[[torch.Tensor], torch.Tensor], batch: torch.Tensor,
           theirs: Optional[Callable] = None, contrast: Optional[torch.Tensor] = None) -> None:
    """``ours(batch)`` against the CPU kernels (batch on CUDA) or ``theirs(F, image, i)`` per sample (on the CPU).
    ``contrast``: the samples (bool (N,)) that ran contrast, within one step of the CPU kernels on CUDA."""
    before = batch.clone()
    out = ours(batch)
    assert torch.equal(batch, before), f"{op}: the input changed"
    assert out.dtype == torch.uint8 and out.device == batch.device, (op, out.dtype, out.device)
    if batch.device.type != "cpu":
        want, got = ours(batch.cpu()), out.cpu()
        if contrast is not None and bool(contrast.any()):
            assert (got[contrast].int() - want[contrast].int()).abs().max() <= 1, f"{op}: contrast off by more than 1"
            got, want = got[~contrast], want[~contrast]
        assert torch.equal(got, want.contiguous()), f"{op}: differs from the CPU kernels"
        return
    else:
        F = _torchvision()
        if F is None or theirs is None or batch.shape[0] == 0:
            return
        want = torch.stack([theirs(F, batch[i], i) for i in range(batch.shape[0])])
    assert torch.equal(out, want.contiguous()), f"{op}: differs from torchvision"


def _factors(n, lo=0.0, hi=2.0):
    return torch.linspace(lo, hi, n, dtype=torch.float64) if n else torch.zeros(0, dtype=torch.float64)


def _each_shape(op: str, device: torch.device, ours, theirs=None) -> None:
    for label, make in SHAPES:
        call(f"{op} {label}", lambda make=make: _check(op, ours, make(device), theirs))


def _factor_op(op: str, lo=0.0, hi=2.0):
    def run_sized(device: torch.device) -> None:
        fn = getattr(A, op)
        for label, make in SHAPES:
            def one(make=make):
                x = make(device)
                f = _factors(x.shape[0], lo, hi)
                every = torch.ones(x.shape[0], dtype=torch.bool) if op == "adjust_contrast" else None
                _check(op, lambda b: fn(b, f), x, lambda F, im, i: getattr(F, op)(im, float(f[i])), every)
            call(f"{op} {label}", one)
    return run_sized


run_adjust_brightness = _factor_op("adjust_brightness")
run_adjust_contrast = _factor_op("adjust_contrast")
run_adjust_saturation = _factor_op("adjust_saturation")
run_adjust_sharpness = _factor_op("adjust_sharpness")
run_adjust_hue = _factor_op("adjust_hue", -0.5, 0.5)


def run_posterize(device: torch.device) -> None:
    _each_shape("posterize", device, lambda x: A.posterize(x, torch.arange(x.shape[0]) % 9),
                lambda F, im, i: F.posterize(im, i % 9))


def run_solarize(device: torch.device) -> None:
    _each_shape("solarize", device, lambda x: A.solarize(x, torch.arange(x.shape[0], dtype=torch.float64) * 37.5 % 256),
                lambda F, im, i: F.solarize(im, i * 37.5 % 256))


def run_autocontrast(device: torch.device) -> None:
    _each_shape("autocontrast", device, A.autocontrast, lambda F, im, i: F.autocontrast(im))


def run_equalize(device: torch.device) -> None:
    _each_shape("equalize", device, A.equalize, lambda F, im, i: F.equalize(im))


def run_invert(device: torch.device) -> None:
    _each_shape("invert", device, A.invert, lambda F, im, i: F.invert(im))


def run_rgb_to_grayscale(device: torch.device) -> None:
    _each_shape("rgb_to_grayscale", device, lambda x: A.rgb_to_grayscale(x, 3),
                lambda F, im, i: F.rgb_to_grayscale(im, 3))


def run_affine(device: torch.device) -> None:
    for interpolation in ("nearest", "bilinear"):
        # arbitrary maps (against the CPU kernels on CUDA; run, not compared, on the CPU: rounding-boundary pixels)
        _each_shape(f"affine {interpolation}", device, lambda x, m=interpolation: A.affine(
            x, _factors(x.shape[0], -40, 40), torch.stack([_factors(x.shape[0], -3, 3)] * 2, 1),
            _factors(x.shape[0], 0.7, 1.3), torch.stack([_factors(x.shape[0], -20, 20)] * 2, 1), interpolation=m,
            fill=[10, 20, 30] if x.shape[1] == 3 else 5))
    # integer translations, exact on both: compared on the CPU too
    _each_shape("affine translate", device, lambda x: A.affine(x, translate=(2.0, -1.0)),
                lambda F, im, i: F.affine(im, 0.0, [2.0, -1.0], 1.0, [0.0, 0.0]))


def run_rotate(device: torch.device) -> None:
    _each_shape("rotate 180/0", device, lambda x: A.rotate(x, torch.arange(x.shape[0], dtype=torch.float64) % 2 * 180),
                lambda F, im, i: F.rotate(im, i % 2 * 180.0))
    _each_shape("rotate bilinear centred", device, lambda x: A.rotate(
        x, _factors(x.shape[0], -170, 170), interpolation="bilinear", center=(1.5, 0.5)))


def _box(i, h, w):
    """Sample i's box (top, left, height, width): some partly outside the image, some empty."""
    return [i % max(h, 1), i % 3, i % (h + 2), (i * 5) % (w + 3)]


def run_erase(device: torch.device) -> None:
    def boxes(x):
        return torch.tensor([_box(i, *x.shape[-2:]) for i in range(x.shape[0])], dtype=torch.int64).view(-1, 4)

    _each_shape("erase value", device, lambda x: A.erase(x, boxes(x), 200),
                lambda F, im, i: F.erase(im, *_box(i, *im.shape[-2:]), v=torch.tensor(200, dtype=torch.uint8)))
    _each_shape("erase per-pixel", device, lambda x: A.erase(x, boxes(x), 255 - x))


def run_mix(device: torch.device) -> None:
    for k in (1, 3, 8):  # 8: the most the kernel takes (more: torch's ops)
        for label, make in SHAPES:
            def one(make=make, k=k):
                x = make(device)
                augs = [255 - x if i % 2 else x.flip(-1).contiguous(memory_format=_format(x)) for i in range(k)]
                w = torch.rand(x.shape[0], 1 + k, device=device)
                w = w / w.sum(1, keepdim=True)  # AugMix's convex weights: the mix stays within uint8
                out = A.mix(x, augs, w)
                dims = (x.shape[0], 1, 1, 1)
                want = w[:, 0].reshape(dims) * x
                for i, a in enumerate(augs):
                    want.add_(w[:, 1 + i].reshape(dims) * a)
                assert torch.equal(out, want.to(torch.uint8)), f"mix of {k}: differs from v2's float32 mix"
            call(f"mix {k} chains {label}", one)


def _format(x: torch.Tensor) -> torch.memory_format:
    cl = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
    return torch.channels_last if cl else torch.contiguous_format


def run_apply_ops(device: torch.device) -> None:
    from tensorops.augment.functional import OPS

    def ours(x, interpolation):
        n, _, h, w = x.shape
        ops = torch.arange(n) % len(OPS)
        if h != w:  # quarter turns need a square image: rotate by 30 degrees there instead
            mags = torch.where(ops == OPS.index("rotate"), 30.0, 0.0).double()
        else:
            mags = torch.where(ops == OPS.index("rotate"), 90.0, 0.0).double()
        mags = torch.where(ops < OPS.index("posterize"), 0.3, mags)  # factors (hue 0.3 too)
        mags = torch.where(ops == OPS.index("posterize"), 3.0, mags)
        mags = torch.where(ops == OPS.index("solarize"), 99.5, mags)
        mags = torch.where(ops >= OPS.index("shear_x"), mags + 4.0, mags)
        return A.apply_ops(x, ops, mags, interpolation=interpolation)

    for interpolation in ("nearest", "bilinear"):
        for label, make in SHAPES:
            def one(make=make, m=interpolation):
                x = make(device)
                contrast = torch.arange(x.shape[0]) % len(OPS) == OPS.index("contrast")
                _check("apply_ops", lambda b: ours(b, m), x, contrast=contrast)
            call(f"apply_ops {interpolation} {label}", one)

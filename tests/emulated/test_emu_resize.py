"""resized_crop_mirror_normalize's CUDA kernel on the emulated device, against tensorops.reference (the dense
weight matrices; csrc/cuda/resize_cuda.cu, kernels/resize.cuh): the three interpolations (bicubic of uint8 clamped
to its range), antialias on and off, crop_first on and off, fractional boxes and boxes past the image (pad),
mirror, per-sample statistics, padded channels, HWC and CHW images, uint8 / float16 / float32 / float64 outputs,
channels_last, and the table in the kernel's parameters (up to 20 samples) or uploaded (more)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import corners, launches, ops
from tensorops import reference


def samples(n, hwc=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    sizes = [(9 + (i % 4) * 3, 11 + (i % 3) * 4) for i in range(n)]
    images = [torch.randint(0, 256, ((h, w, 3) if hwc else (3, h, w)), generator=g, dtype=torch.uint8)
              for h, w in sizes]
    boxes = torch.tensor([[(i % 3) * 0.75 - 0.5, (i % 4) * 0.5 - 1.0, h * 0.8 + 0.3, w * 0.6 + 1.7]
                          for i, (h, w) in enumerate(sizes)], dtype=torch.float64)
    mirror = torch.tensor([i % 2 == 1 for i in range(n)])
    mean = torch.rand(n, 3, generator=g) * 0.5
    std = torch.rand(1, 3, generator=g) + 0.5
    return images, mean, std, boxes, mirror


def run(images, mean, std, boxes, mirror, size, *, dim=-3, interpolation=1, antialias=True, crop_first=True,
        dtype=torch.float32, memory_format=torch.contiguous_format, channels=4, fill=0.25, pad=True):
    u8 = dtype == torch.uint8
    scale = 1.0 if u8 else 1 / 255
    if u8:
        mean, std = torch.zeros(1, 1), torch.ones(1, 1)
    got = ops().resized_crop_mirror_normalize_list(images, mean, std, boxes, mirror, size, dim, scale, interpolation,
                                                   antialias, crop_first, dtype, memory_format, channels, fill, pad)
    want = reference.resized_crop_mirror_normalize(
        images, mean, std, boxes, mirror, size, dim=dim, scale=scale, interpolation=interpolation,
        antialias=antialias, crop_first=crop_first, dtype=dtype, memory_format=memory_format, channels=channels,
        fill=fill, pad=pad)
    return got, want


@pytest.mark.parametrize("n", corners([5, 20, 21], [5, 21]), ids=lambda n: {5: "5", 20: "20_in_parameters",
                                                                        21: "21_uploaded"}[n])
@pytest.mark.parametrize("mode", corners(["aa", "bilinear", "nearest", "bicubic_aa", "bicubic"], ["aa", "bicubic"]))
def test_list_against_reference(emu, n, mode):
    images, mean, std, boxes, mirror = samples(n)
    interpolation, antialias = {"aa": (1, True), "bilinear": (1, False), "nearest": (0, False),
                                "bicubic_aa": (2, True), "bicubic": (2, False)}[mode]
    got, want = run(images, mean, std, boxes, mirror, [7, 6], interpolation=interpolation, antialias=antialias)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    ev = emu.events()
    assert "copy_to_device blocking" not in ev, ev
    assert ("copy_to_device async" in ev) == (n > 20), ev
    (l,) = launches(emu)
    assert l["name"] == "resized_crop_mirror_normalize_kernel"
    assert ("SampleDeviceTable<" in l["full"]) == (n > 20), l["full"]


@pytest.mark.parametrize("dtype", corners([torch.uint8, torch.float16, torch.float64], [torch.uint8]))
def test_hwc_upscale_resize_then_crop_dtypes(emu, dtype):
    images, mean, std, boxes, mirror = samples(4, hwc=True, seed=1)
    got, want = run(images, mean, std, boxes, mirror, [19, 23], dim=-1, crop_first=False, dtype=dtype, channels=3)
    if dtype == torch.uint8:  # one rounding apart at most (float sums in a different order)
        assert (got.int() - want.int()).abs().max() <= 1
        assert (got != want).double().mean() < 0.01
    else:
        tol = 2e-3 if dtype == torch.float16 else 1e-9
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_batch_channels_last_downscale(emu):
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 256, (3, 3, 40, 37), generator=g, dtype=torch.uint8)
    boxes = torch.tensor([[0.0, 0.0, 40.0, 37.0], [3.5, 2.0, 30.0, 20.25], [10.0, 10.0, 29.0, 26.0]], dtype=torch.float64)
    mirror = torch.tensor([True, False, True])
    mean, std = torch.rand(1, 3, generator=g), torch.rand(1, 3, generator=g) + 0.5
    got = ops().resized_crop_mirror_normalize(x, mean, std, boxes, mirror, [6, 5], -3, 1 / 255, 1, True, True,
                                              torch.float32, torch.channels_last, 3, 0.0, False)
    want = reference.resized_crop_mirror_normalize(
        x, mean, std, boxes, mirror, [6, 5], dim=-3, scale=1 / 255, interpolation=1, antialias=True, crop_first=True,
        dtype=torch.float32, memory_format=torch.channels_last, channels=3, fill=0.0, pad=False)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    assert got.is_contiguous(memory_format=torch.channels_last)

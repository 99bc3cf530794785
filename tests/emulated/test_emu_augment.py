"""tensorops.augment's CUDA kernels on the emulated device (csrc/cuda/augment_cuda.cu, kernels/augment.cuh)
against the CPU kernels (which tests/test_augment_functional.py holds bit for bit to torchvision v2): every op
code, 1 and 3 channels, odd sizes, NCHW and channels_last, nearest and bilinear with and without fill, the table
in the kernel's parameters (up to 40 samples) and uploaded (more), mixed ops in one batch, erase by value and by
pixels. Image sizes whose pixel count is a power of two keep contrast's mean identical on both devices (CUDA's
torch.mean multiplies by 1 / count, the CPU's divides: augment.h contrast_mean)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import corners, launches, ops

CODES = list(range(18))  # math/augment.h's Op
MAGNITUDE = {1: 1.3, 2: 0.6, 3: 1.7, 4: 0.21, 5: 2.5, 6: 3.0, 7: 100.5, 16: 70.0}


def batch(shape, channels_last=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    b = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    if shape[2] > 2:  # a flat region and extremes: equalize's and autocontrast's corner cases
        b[0, :, : shape[2] // 2] = 77
    return b.contiguous(memory_format=torch.channels_last) if channels_last else b


def params(n, code):
    p = torch.zeros(n, 9, dtype=torch.float64)
    p[:, 0] = MAGNITUDE.get(code, 0.0)
    p[:, 1] = 17.0  # angle
    p[:, 2] = 1.5  # translate x
    p[:, 4] = 1.0  # scale
    p[:, 5] = 8.0  # shear x
    return p


def pil_params(n, shape, pil_filter):
    """kAffinePil: Pillow's filter in the magnitude column, its data (a 17 degree rotation) in the next six."""
    from tensorops.augment._kernel_call import pil_data

    p = params(n, 17)
    p[:, 0] = pil_filter
    p[:, 1:7] = torch.tensor(pil_data("pil_rotate", 17.0, shape[2], shape[3])[1], dtype=torch.float64)
    return p


def both(b, codes, p, interpolation=0, fill=None):
    cpu = torch.ops.tensorops.augment_apply(b, codes, p, interpolation, fill)
    emu = ops().augment_apply(b, codes, p, interpolation, fill)
    return cpu, emu


LAYOUTS = [((2, 3, 16, 16), False), ((3, 3, 9, 13), True), ((3, 1, 8, 8), False), ((2, 3, 2, 5), True)]


@pytest.mark.parametrize("shape,channels_last", corners(LAYOUTS, LAYOUTS[1:3]))
@pytest.mark.parametrize("code", CODES)
def test_every_op_equals_the_cpu_kernel(emu, shape, channels_last, code):
    if code in (13, 15) and shape[2] != shape[3]:
        pytest.skip("quarter turns are for square images (rotate's fast path)")
    b = batch(shape, channels_last)
    n = shape[0]
    codes = torch.full((n,), code, dtype=torch.int64)
    geometric = code in (12, 17)
    for interpolation in ((0, 1) if geometric else (0,)):  # 17: Pillow's bilinear (1) and bicubic (2) filters
        for fill in ((None, [3.0, 100.0, 250.0][: shape[1]]) if geometric else (None,)):
            emu.clear_events()
            p = pil_params(n, shape, interpolation + 1) if code == 17 else params(n, code)
            cpu, got = both(b, codes, p, interpolation if code == 12 else 0, fill)
            assert torch.equal(got, cpu), (code, interpolation, fill)
            assert got.stride() == cpu.stride()
            names = [l["name"] for l in launches(emu)]
            lut = code in (1, 2, 6, 7, 8, 9, 10, 16)
            assert names == (["augment_lut_kernel"] if lut else []) + ["augment_pixel_kernel"], names


@pytest.mark.parametrize("n", corners([5, 40, 41], [41]), ids=lambda n: {5: "5", 40: "40_in_parameters",
                                                                          41: "41_uploaded"}[n])
def test_mixed_ops_in_one_batch(emu, n):
    b = batch((n, 3, 8, 8), seed=n)
    codes = torch.arange(n, dtype=torch.int64) % 16
    p = torch.cat([params(1, int(c)) for c in codes])
    emu.clear_events()
    cpu, got = both(b, codes, p, 1)
    assert torch.equal(got, cpu)
    ls = launches(emu)
    assert [l["name"] for l in ls] == ["augment_lut_kernel", "augment_pixel_kernel"]
    assert ("SampleDeviceTable<" in ls[1]["full"]) == (n > 40), ls[1]["full"]
    assert ls[0]["grid"] == n


@pytest.mark.parametrize("per_pixel", [False, True])
@pytest.mark.parametrize("channels_last", corners([False, True], [True]))
def test_erase(emu, per_pixel, channels_last):
    b = batch((3, 3, 7, 9), channels_last)
    boxes = torch.tensor([[1, 2, 3, 4], [0, 0, 0, 5], [5, 6, 10, 10]])
    value = batch((3, 3, 7, 9), seed=5) if per_pixel else torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]],
                                                                         dtype=torch.uint8)
    emu.clear_events()
    got = ops().augment_erase(b, boxes, value)
    assert torch.equal(got, torch.ops.tensorops.augment_erase(b, boxes, value))
    assert got.stride() == b.stride()
    assert [l["name"] for l in launches(emu)] == ["augment_erase_kernel"]


def test_empty_batch_launches_nothing(emu):
    b = torch.empty(0, 3, 8, 8, dtype=torch.uint8)
    emu.clear_events()
    got = ops().augment_apply(b, torch.empty(0, dtype=torch.int64), torch.empty(0, 9, dtype=torch.float64), 0, None)
    assert got.shape == b.shape and launches(emu) == []


@pytest.mark.parametrize("k", corners([1, 3, 8], [3]))
@pytest.mark.parametrize("channels_last", corners([False, True], [True]))
def test_mix(emu, k, channels_last):
    shape = (3, 3, 5, 7)
    b = batch(shape, channels_last)
    augs = [batch(shape, channels_last, seed=10 + i) for i in range(k)]
    w = torch.rand(3, 1 + k, generator=torch.Generator().manual_seed(k))
    w = w / w.sum(1, keepdim=True)
    emu.clear_events()
    got = ops().augment_mix(b, augs, w)
    assert torch.equal(got, torch.ops.tensorops.augment_mix(b, augs, w))
    assert got.stride() == b.stride()
    assert [l["name"] for l in launches(emu)] == ["augment_mix_kernel"]


@pytest.mark.parametrize("channels_last", corners([False, True], [True]))
def test_several_ops_per_sample(emu, channels_last):
    """ops (N, K): K rounds on the device (temporaries between), skipping rounds where every sample drew identity;
    the CPU runs each sample's K ops through scratch images. Equal results."""
    n, k = 6, 3
    b = batch((n, 3, 8, 8), channels_last, seed=3)
    codes = (torch.arange(n * k, dtype=torch.int64).reshape(n, k) * 5) % 16
    codes[:, 1] = 0  # an all-identity round: skipped on the device
    p = torch.stack([torch.cat([params(1, int(c)) for c in row]) for row in codes])
    emu.clear_events()
    cpu, got = both(b, codes, p, 1)
    assert torch.equal(got, cpu)
    assert got.stride() == cpu.stride()
    names = [l["name"] for l in launches(emu)]
    assert names.count("augment_pixel_kernel") == 2, names

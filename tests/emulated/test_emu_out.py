"""The _out ops of normalize, normalize_tensor, crop_mirror_normalize(_list) and
resized_crop_mirror_normalize(_list) on the emulated device: the CUDA launch code writes the caller's `out`
itself (its storage, no temporary and no copy) in every layout it writes, and a strided view with gaps through one
temporary (csrc/include/tensorops/out_host.h)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import launches, ops
from tensorops import reference

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
TOL = dict(rtol=3e-7, atol=3e-7)


def _u8(shape, seed=0):
    return torch.randint(0, 256, shape, generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)


def _outs(shape, fmt_names):
    """out tensors: NCHW, NHWC storage, and a view with gaps (every other column of a wider tensor)."""
    n, c, h, w = shape
    made = {"nchw": lambda: torch.full(shape, -7.0),
            "nhwc": lambda: torch.full(shape, -7.0).contiguous(memory_format=torch.channels_last),
            "gaps": lambda: torch.full((n, c, h, 2 * w), -7.0)[..., ::2]}
    return [(name, made[name]()) for name in fmt_names]


@pytest.mark.parametrize("layout", ["nchw", "nhwc", "gaps"])
def test_normalize_out(emu, layout):
    x = _u8((2, 3, 8, 12))
    ((_, out),) = _outs(tuple(x.shape), [layout])
    ptr = out.data_ptr()
    r = ops().normalize_out(x, MEAN, STD, -3, 1 / 255, torch.float32, torch.preserve_format, out=out)
    assert r is out and out.data_ptr() == ptr
    want = reference.normalize(x, MEAN, STD, dim=1, scale=1 / 255, dtype=torch.float32)
    torch.testing.assert_close(out, want, **TOL)
    assert [l["name"] for l in launches(emu)] == ["normalize_kernel"]


def test_normalize_tensor_out_and_many_channels(emu):
    x = _u8((2, 3, 5, 7), seed=1)
    m, s = torch.rand(2, 3, 1, 1), torch.rand(2, 3, 1, 1) + 0.5
    out = torch.empty(2, 3, 5, 7).contiguous(memory_format=torch.channels_last)
    r = ops().normalize_tensor_out(x, m, s, 1 / 255, torch.float32, torch.preserve_format, out=out)
    assert r is out
    torch.testing.assert_close(out, reference.normalize(x, m, s, dim=1, scale=1 / 255, dtype=torch.float32), **TOL)
    # more channels than travel by value: the uploaded-table path writes out too
    c = 70
    x = _u8((1, c, 3, 4), seed=2)
    mean, std = [i / 100 for i in range(c)], [0.5 + i / 200 for i in range(c)]
    out = torch.empty(1, c, 3, 4)
    ops().normalize_out(x, mean, std, 1, 1 / 255, torch.float32, torch.preserve_format, out=out)
    torch.testing.assert_close(out, reference.normalize(x, mean, std, dim=1, scale=1 / 255, dtype=torch.float32), **TOL)


def test_normalize_out_bad_out_raises_before_launch(emu):
    x = _u8((2, 3, 4, 4))
    for out, err, pattern in [(torch.empty(2, 3, 4, 5), ValueError, "out: has shape"),
                              (torch.empty(2, 3, 4, 4, dtype=torch.float64), TypeError, "out: is"),
                              (torch.empty(1).expand(2, 3, 4, 4), RuntimeError, "out: more than one element")]:
        with pytest.raises(err, match=pattern):
            ops().normalize_out(x, MEAN, STD, -3, 1 / 255, torch.float32, torch.preserve_format, out=out)
    y = torch.rand(2, 3, 4, 4)
    with pytest.raises(RuntimeError, match="out: shares memory"):
        ops().normalize_out(y, MEAN, STD, -3, 1.0, torch.float32, torch.preserve_format, out=y)
    assert launches(emu) == []


@pytest.mark.parametrize("layout", ["nchw", "nhwc", "gaps"])
def test_crop_mirror_normalize_out(emu, layout):
    images = [_u8((3, 20 + i, 22), seed=i) for i in range(3)]
    top_left = torch.tensor([[0, 0], [2, 3], [4, 6]])
    mirror = torch.tensor([False, True, False])
    mean, std = torch.rand(1, 3), torch.rand(1, 3) + 0.5
    ((_, out),) = _outs((3, 4, 16, 16), [layout])
    ptr = out.data_ptr()
    args = (mean, std, top_left, mirror, [16, 16])
    r = ops().crop_mirror_normalize_list_out(images, *args, -3, 1 / 255, torch.float32, torch.contiguous_format, 4,
                                             0.5, True, out=out)
    assert r is out and out.data_ptr() == ptr
    want = reference.crop_mirror_normalize(images, *args, dim=-3, scale=1 / 255, dtype=torch.float32,
                                           memory_format=torch.contiguous_format, channels=4, fill=0.5, pad=True)
    torch.testing.assert_close(out, want, **TOL)
    assert [l["name"] for l in launches(emu)] == ["crop_mirror_normalize_kernel"]


@pytest.mark.parametrize("layout", ["nchw", "nhwc", "gaps"])
def test_resized_crop_mirror_normalize_out(emu, layout):
    x = _u8((3, 3, 40, 37), seed=4)
    boxes = torch.tensor([[0.0, 0.0, 40.0, 37.0], [3.5, 2.0, 30.0, 20.25], [10.0, 10.0, 29.0, 26.0]],
                         dtype=torch.float64)
    mirror = torch.tensor([True, False, True])
    mean, std = torch.rand(1, 3), torch.rand(1, 3) + 0.5
    ((_, out),) = _outs((3, 3, 6, 5), [layout])
    ptr = out.data_ptr()
    r = ops().resized_crop_mirror_normalize_out(x, mean, std, boxes, mirror, [6, 5], -3, 1 / 255, 1, True, True,
                                                torch.float32, torch.contiguous_format, 3, 0.0, False, out=out)
    assert r is out and out.data_ptr() == ptr
    want = reference.resized_crop_mirror_normalize(
        x, mean, std, boxes, mirror, [6, 5], dim=-3, scale=1 / 255, interpolation=1, antialias=True, crop_first=True,
        dtype=torch.float32, memory_format=torch.contiguous_format, channels=3, fill=0.0, pad=False)
    torch.testing.assert_close(out, want, rtol=2e-5, atol=2e-5)
    assert [l["name"] for l in launches(emu)] == ["resized_crop_mirror_normalize_kernel"]

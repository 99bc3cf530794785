"""crop_mirror_normalize's and the many-tensor clamp's CUDA kernels on the emulated device, against
tensorops.reference and torch.clamp (csrc/cuda/cmn_cuda.cu, foreach_clamp_cuda.cu, kernels/*.cuh)."""
from __future__ import annotations

import pytest
import torch

from emulated._helpers import launches, ops
from tensorops import reference

TOL = dict(rtol=3e-7, atol=3e-7)  # FMA on the GPU, two roundings here


def batch_args(n, hwc=False, seed=0, sizes=None):
    g = torch.Generator().manual_seed(seed)
    sizes = sizes or [(20 + (i % 3), 24 + (i % 5)) for i in range(n)]
    images = [torch.randint(0, 256, ((h, w, 3) if hwc else (3, h, w)), generator=g, dtype=torch.uint8)
              for h, w in sizes]
    top_left = torch.tensor([[(i * 3) % 7 - 2, (i * 5) % 9 - 3] for i in range(n)], dtype=torch.long)
    mirror = torch.tensor([i % 2 == 1 for i in range(n)])
    mean = torch.rand(n, 3) * 0.5
    std = torch.rand(1, 3) + 0.5
    return images, mean, std, top_left, mirror


@pytest.mark.parametrize("n", [5, 48, 49, 256], ids=["5", "48_in_parameters", "49_uploaded", "256_uploaded"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16])
def test_crop_mirror_normalize_list(emu, n, out_dtype):
    images, mean, std, top_left, mirror = batch_args(n)
    args = (mean, std, top_left, mirror, [16, 18])
    kw = dict(dim=-3, scale=1 / 255, dtype=out_dtype, memory_format=torch.contiguous_format, channels=4,
              fill=0.5, pad=True)
    got = ops().crop_mirror_normalize_list(images, *args, -3, 1 / 255, out_dtype, torch.contiguous_format, 4, 0.5, True)
    want = reference.crop_mirror_normalize(images, *args, **kw)
    torch.testing.assert_close(got, want, **(TOL if out_dtype == torch.float32 else dict(rtol=1e-3, atol=1e-3)))
    ev = emu.events()
    assert "copy_to_device blocking" not in ev, ev  # no stream synchronization at any batch size
    assert ("copy_to_device async" in ev) == (n > 48), ev
    (l,) = launches(emu)
    assert l["name"] == "crop_mirror_normalize_kernel"
    assert ("SampleDeviceTable<" in l["full"]) == (n > 48), l["full"]


def test_crop_mirror_normalize_batch_hwc_channels_last(emu):
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 256, (4, 20, 22, 3), generator=g, dtype=torch.uint8)
    top_left = torch.tensor([[0, 0], [2, 3], [4, 6], [1, 1]])
    mirror = torch.tensor([False, True, False, True])
    mean, std = torch.rand(1, 3), torch.rand(1, 3) + 0.5
    got = ops().crop_mirror_normalize(x, mean, std, top_left, mirror, [16, 16], -1, 1 / 255, torch.float32,
                                      torch.channels_last, 3, 0.0, False)
    want = reference.crop_mirror_normalize(x, mean, std, top_left, mirror, [16, 16], dim=-1, scale=1 / 255,
                                           dtype=torch.float32, memory_format=torch.channels_last, channels=3,
                                           fill=0.0, pad=False)
    torch.testing.assert_close(got, want, **TOL)
    assert got.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("capturing", [False, True], ids=["eager", "capturing"])
def test_foreach_clamp(emu, capturing):
    g = torch.Generator().manual_seed(4)
    ts = [torch.randn(n, generator=g) * 3 for n in (1, 1023, 1024, 1025, 3000, 5)]
    ts += [torch.randint(-50, 50, (n,), generator=g) for n in (7, 2000)]
    ts += [torch.randn(33, generator=g).to(torch.float16), torch.randint(0, 255, (40,), dtype=torch.uint8)]
    emu.set_capturing(capturing)
    got = ops().foreach_clamp_scalar(ts, -1, 2)
    for a, t in zip(got, ts):
        torch.testing.assert_close(a, torch.clamp(t, -1, 2), rtol=0, atol=0)
    ys = [t.clone() for t in ts]
    ops().foreach_clamp_scalar_(ys, None, 2)
    for a, t in zip(ys, ts):
        torch.testing.assert_close(a, torch.clamp(t, None, 2), rtol=0, atol=0)
    ev = emu.events()
    assert any(e.startswith("pinned_alloc") for e in ev) != capturing, ev
    names = {l["name"] for l in launches(emu)}
    assert "foreach_clamp_kernel" in names and (("fill_words_kernel" in names) == capturing), names
    # one launch per dtype present (float32, int64, float16, uint8), per call
    assert sum(l["name"] == "foreach_clamp_kernel" for l in launches(emu)) == 8

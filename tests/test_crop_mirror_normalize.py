"""crop_mirror_normalize and its DataLoader collate, against plain torch (slices, flips, torch.stack, the
normalize formula) and tensorops.reference."""
from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import tensorops
from tensorops import reference
from tensorops.data import CropMirrorNormalizeCollate

from conftest import kernel_ran, requires_compiled

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def _images(n, dtype, device, layout="CHW", sizes=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    sizes = sizes or [(20 + 3 * i, 17 + 2 * i) for i in range(n)]
    out = []
    for H, W in sizes:
        shape = (3, H, W) if layout == "CHW" else (H, W, 3)
        if dtype == torch.uint8:
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
        else:
            x = torch.randn(shape, generator=g).to(dtype)
        out.append(x.to(device))
    return out


def _origins(sizes, h, w, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.tensor([[int(torch.randint(0, H - h + 1, (), generator=g)), int(torch.randint(0, W - w + 1, (), generator=g))]
                         for H, W in sizes], dtype=torch.int64)


def _plain(images, mean, std, top_left, mirror, h, w, layout="CHW", dtype=torch.float32):
    """What people write: a Python loop of slices and flips, torch.stack, then the normalize formula."""
    crops = []
    for im, (y, x), m in zip(images, top_left.tolist(), mirror.tolist()):
        chw = im if layout == "CHW" else im.permute(2, 0, 1)
        c = chw[:, y : y + h, x : x + w]
        crops.append(c.flip(-1) if m else c)
    batch = torch.stack(crops)
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    scale = 1 / 255 if batch.dtype == torch.uint8 else 1.0
    mean_t = torch.as_tensor(mean, dtype=acc, device=batch.device).view(-1, 3, 1, 1)
    std_t = torch.as_tensor(std, dtype=acc, device=batch.device).view(-1, 3, 1, 1)
    return ((batch.to(acc) * scale - mean_t) / std_t).to(dtype)


@pytest.mark.parametrize("in_dtype", [torch.uint8, torch.float32, torch.float16])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_list_matches_plain_torch(device, in_dtype, layout):
    images = _images(5, in_dtype, device, layout)
    sizes = [(im.shape[1], im.shape[2]) if layout == "CHW" else (im.shape[0], im.shape[1]) for im in images]
    h, w = 12, 9
    tl = _origins(sizes, h, w)
    mirror = torch.tensor([True, False, True, True, False])
    out, ran = kernel_ran(tensorops.crop_mirror_normalize, images, MEAN, STD, dim=-3 if layout == "CHW" else -1,
                          size=(h, w), top_left=tl, mirror=mirror)
    dtype = torch.float32 if in_dtype == torch.uint8 else in_dtype
    expected = _plain(images, MEAN, STD, tl, mirror, h, w, layout, dtype)
    assert out.shape == (5, 3, h, w) and out.dtype == dtype and out.is_contiguous()
    torch.testing.assert_close(out, expected)
    if tensorops.is_compiled():
        assert "tensorops::crop_mirror_normalize_list" in ran


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_batch_tensor_per_sample_stats(device, layout):
    g = torch.Generator().manual_seed(3)
    N, H, W = 4, 21, 30
    shape = (N, 3, H, W) if layout == "CHW" else (N, H, W, 3)
    x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g).to(device)
    mean = torch.rand(N, 3, generator=g).to(device)
    std = (torch.rand(N, 3, generator=g) + 0.1).to(device)
    tl = _origins([(H, W)] * N, 16, 16)
    mirror = torch.tensor([False, True, True, False])
    dim = -3 if layout == "CHW" else -1
    out, ran = kernel_ran(tensorops.crop_mirror_normalize, x, mean, std, dim=dim, size=(16, 16), top_left=tl,
                          mirror=mirror)
    expected = _plain(list(x), mean, std, tl, mirror, 16, 16, layout)
    torch.testing.assert_close(out, expected)
    if tensorops.is_compiled():
        assert "tensorops::crop_mirror_normalize" in ran


def test_centred_crop_and_whole_image(device):
    x = torch.randint(0, 256, (3, 3, 10, 12), dtype=torch.uint8, device=device)
    out = tensorops.crop_mirror_normalize(x, 0.5, 0.25, size=(4, 6))
    expected = _plain(list(x), [0.5] * 3, [0.25] * 3, torch.tensor([[3, 3]] * 3), torch.zeros(3, dtype=torch.bool), 4, 6)
    torch.testing.assert_close(out, expected)
    whole = tensorops.crop_mirror_normalize(x, MEAN, STD)
    torch.testing.assert_close(whole, tensorops.normalize(x, MEAN, STD))


@pytest.mark.parametrize("dtype", FLOATS)
def test_output_dtypes_and_channels_last(device, dtype):
    images = _images(3, torch.uint8, device)
    sizes = [(im.shape[1], im.shape[2]) for im in images]
    tl = _origins(sizes, 8, 8)
    mirror = torch.tensor([True, False, True])
    for fmt in (torch.contiguous_format, torch.channels_last):
        out = tensorops.crop_mirror_normalize(images, MEAN, STD, size=8, top_left=tl, mirror=mirror, dtype=dtype,
                                              memory_format=fmt)
        assert out.dtype == dtype and out.is_contiguous(memory_format=fmt)
        torch.testing.assert_close(out, _plain(images, MEAN, STD, tl, mirror, 8, 8, dtype=dtype))


def test_pad_channels_fill_and_out_of_bounds(device):
    images = _images(3, torch.uint8, device)
    tl = torch.tensor([[-3, -2], [5, 10], [100, 100]])
    mirror = torch.tensor([True, False, True])
    with pytest.raises(ValueError, match=r"sample 0.*top_left \(-3, -2\).*size \(10, 12\)"):
        tensorops.crop_mirror_normalize(images, MEAN, STD, size=(10, 12), top_left=tl, mirror=mirror)
    out = tensorops.crop_mirror_normalize(images, MEAN, STD, size=(10, 12), top_left=tl, mirror=mirror,
                                          pad_channels=4, fill=-7.5, out_of_bounds="pad")
    assert out.shape == (3, 4, 10, 12)
    m, s = torch.tensor(MEAN).view(1, 3), torch.tensor(STD).view(1, 3)
    expected = reference.crop_mirror_normalize(images, m, s, tl, mirror, (10, 12), dim=-3, scale=1 / 255,
                                               dtype=torch.float32, memory_format=torch.contiguous_format,
                                               channels=4, fill=-7.5, pad=True)
    torch.testing.assert_close(out, expected)
    # the padding itself, by hand: channel 3 all fill; sample 0 mirrored: its crop's top 3 rows and (after the
    # flip) right 2 columns are outside the image; sample 2 is entirely outside
    assert (out[:, 3] == -7.5).all() and (out[0, :, :3] == -7.5).all() and (out[0, :, :, -2:] == -7.5).all()
    assert (out[2] == -7.5).all()
    torch.testing.assert_close(out[0, :3, 3:, :-2], _plain([images[0]], MEAN, STD, torch.tensor([[0, 0]]),
                                                          torch.tensor([True]), 7, 10)[0])


def test_empty_batch(device):
    x = torch.empty((0, 3, 10, 10), dtype=torch.uint8, device=device)
    out = tensorops.crop_mirror_normalize(x, MEAN, STD, size=(4, 4), pad_channels=4)
    assert out.shape == (0, 4, 4, 4) and out.dtype == torch.float32 and out.device.type == device


def test_bad_input_names_the_argument():
    x = torch.randint(0, 256, (2, 3, 10, 10), dtype=torch.uint8)
    f = tensorops.crop_mirror_normalize
    with pytest.raises(ValueError, match="std has 2 values"):
        f(x, MEAN, [1.0, 2.0])
    with pytest.raises(ValueError, match="top_left must have shape"):
        f(x, MEAN, STD, size=4, top_left=torch.zeros(3, 2, dtype=torch.int64))
    with pytest.raises(TypeError, match="mirror must be a bool tensor"):
        f(x, MEAN, STD, mirror=torch.zeros(2))
    with pytest.raises(ValueError, match="pad_channels"):
        f(x, MEAN, STD, pad_channels=2)
    with pytest.raises(ValueError, match="out_of_bounds"):
        f(x, MEAN, STD, out_of_bounds="wrap")
    with pytest.raises(ValueError, match="dim must be -3"):
        f(x, MEAN, STD, dim=1)
    with pytest.raises(ValueError, match="size=None"):
        f([x[0], x[0, :, :5]], MEAN, STD)
    with pytest.raises(ValueError, match=r"images\[1\] has 1 channels"):
        f([x[0], x[0, :1]], MEAN, STD, size=2)
    with pytest.raises(ValueError, match=r"mean of shape \(3, 3\)"):
        f(x, torch.zeros(3, 3), STD)
    with pytest.raises(TypeError, match="dtype"):
        f(x, MEAN, STD, dtype=torch.int32)


@requires_compiled
def test_direct_op_call_checks():
    x = torch.randint(0, 256, (2, 3, 10, 10), dtype=torch.uint8)
    m = torch.zeros(1, 3)
    tl = torch.zeros(2, 2, dtype=torch.int64)
    mi = torch.zeros(2, dtype=torch.bool)
    op = torch.ops.tensorops.crop_mirror_normalize.default
    with pytest.raises(ValueError, match="top_left.*sample 1"):
        op(x, m, m + 1, torch.tensor([[0, 0], [8, 0]]), mi, [4, 4], -3, 1.0, torch.float32,
           torch.contiguous_format, 3, 0.0, False)
    with pytest.raises(ValueError, match="pad_channels"):
        op(x, m, m + 1, tl, mi, [4, 4], -3, 1.0, torch.float32, torch.contiguous_format, 2, 0.0, False)


@requires_compiled
def test_opcheck():
    x = torch.randint(0, 256, (3, 3, 12, 11), dtype=torch.uint8)
    xf = torch.randn(3, 12, 11, 3, dtype=torch.float64, requires_grad=True)
    m, s = torch.rand(3, 3, dtype=torch.float64), torch.rand(1, 3, dtype=torch.float64) + 0.5
    tl = torch.tensor([[0, 1], [2, -1], [4, 3]])
    mi = torch.tensor([True, False, True])
    op = torch.ops.tensorops.crop_mirror_normalize.default
    torch.library.opcheck(op, (x, m, s, tl, mi, [6, 5], -3, 1 / 255, torch.float32, torch.channels_last, 4, 0.5, True))
    torch.library.opcheck(op, (xf, m, s, tl, mi, [6, 5], -1, 1.0, torch.float64, torch.contiguous_format, 3, 0.0, True))
    op_list = torch.ops.tensorops.crop_mirror_normalize_list.default
    ims = [torch.randn(3, 8 + i, 9, dtype=torch.float64, requires_grad=True) for i in range(3)]
    torch.library.opcheck(op_list, (ims, m, s, tl, mi, [6, 5], -3, 1.0, torch.float64, torch.contiguous_format, 3,
                                    0.0, True))


@pytest.mark.parametrize("form", ["batch", "list"])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_gradcheck(device, form, layout):
    g = torch.Generator().manual_seed(5)
    dim = -3 if layout == "CHW" else -1
    if form == "batch":
        shape = (3, 3, 7, 6) if layout == "CHW" else (3, 7, 6, 3)
        images = torch.randn(shape, dtype=torch.float64, generator=g).to(device).requires_grad_()
        inputs = (images,)
    else:
        inputs = tuple(
            torch.randn((3, 7 + i, 6) if layout == "CHW" else (7 + i, 6, 3), dtype=torch.float64, generator=g)
            .to(device).requires_grad_() for i in range(3))
    mean = torch.rand(3, 3, dtype=torch.float64, generator=g).to(device)
    std = (torch.rand(3, 3, dtype=torch.float64, generator=g) + 0.5).to(device)
    tl = torch.tensor([[1, 0], [-1, 2], [2, 1]])
    mirror = torch.tensor([True, False, True])

    def f(*ims):
        x = ims[0] if form == "batch" else list(ims)
        return tensorops.crop_mirror_normalize(x, mean, std, dim=dim, size=(5, 4), top_left=tl, mirror=mirror,
                                               pad_channels=4, fill=0.25, out_of_bounds="pad")

    assert torch.autograd.gradcheck(f, inputs)


def test_gradients_to_statistics_through_the_fallback():
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    mean = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    std = (torch.rand(2, 3, dtype=torch.float64) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda m, s: tensorops.crop_mirror_normalize(x, m, s, size=4, mirror=torch.tensor([True, False])), (mean, std))


@requires_compiled
def test_compile_fullgraph_batch(device):
    torch._dynamo.reset()
    x = torch.randint(0, 256, (4, 3, 20, 18), dtype=torch.uint8, device=device)
    tl = torch.tensor([[0, 1], [2, 3], [4, 0], [1, 1]])
    mirror = torch.tensor([True, False, False, True])

    def f(x, tl, mirror):
        return tensorops.crop_mirror_normalize(x, MEAN, STD, size=(12, 10), top_left=tl, mirror=mirror,
                                               dtype=torch.float16, memory_format=torch.channels_last)

    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x, tl, mirror), f(x, tl, mirror))
    torch.testing.assert_close(compiled(x, tl + 1, ~mirror), f(x, tl + 1, ~mirror))


@requires_compiled
def test_compile_fullgraph_backward():
    torch._dynamo.reset()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64, requires_grad=True)
    tl = torch.tensor([[0, 1], [2, 3]])
    mirror = torch.tensor([True, False])

    def f(x):
        return tensorops.crop_mirror_normalize(x, MEAN, STD, size=(5, 4), top_left=tl, mirror=mirror).square().sum()

    (g_eager,) = torch.autograd.grad(f(x), x)
    (g_comp,) = torch.autograd.grad(torch.compile(f, fullgraph=True)(x), x)
    torch.testing.assert_close(g_comp, g_eager)


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_fallback_matches_kernels(device, layout):
    images = _images(4, torch.uint8, device, layout, sizes=[(30, 40), (25, 33), (40, 30), (20, 20)])
    dim = -3 if layout == "CHW" else -1
    tl = torch.tensor([[1, 2], [-3, 4], [10, 9], [0, 5]])
    mirror = torch.tensor([False, True, True, False])
    m = torch.tensor(MEAN, device=device).view(1, 3)
    s = torch.tensor(STD, device=device).view(1, 3)
    for fmt in (torch.contiguous_format, torch.channels_last):
        out = tensorops.crop_mirror_normalize(images, MEAN, STD, dim=dim, size=(16, 18), top_left=tl, mirror=mirror,
                                              out_of_bounds="pad", fill=1.5, pad_channels=5, memory_format=fmt,
                                              dtype=torch.bfloat16)
        ref = reference.crop_mirror_normalize(images, m, s, tl, mirror, (16, 18), dim=dim, scale=1 / 255,
                                              dtype=torch.bfloat16, memory_format=fmt, channels=5, fill=1.5, pad=True)
        torch.testing.assert_close(out, ref)
        assert out.stride() == ref.stride()


# ---- the collate ---------------------------------------------------------------------------------------------
class _Decoded(Dataset):
    def __init__(self, n=12):
        g = torch.Generator().manual_seed(11)
        self.items = [(torch.randint(0, 256, (3, 30 + 5 * (i % 4), 26 + 3 * (i % 3)), dtype=torch.uint8, generator=g), i)
                      for i in range(n)]
        self.items[5] = (self.items[5][0][:, :20, :18], 5)  # smaller than the crop: padded

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def test_collate_matches_reference_and_is_reproducible():
    ds = _Decoded()
    collate = CropMirrorNormalizeCollate((24, 22), MEAN, STD, generator=torch.Generator().manual_seed(7))
    samples = [ds[i] for i in range(6)]
    batch, labels = collate(samples)
    assert batch.shape == (6, 3, 24, 22) and labels.tolist() == list(range(6))
    again = CropMirrorNormalizeCollate((24, 22), MEAN, STD, generator=torch.Generator().manual_seed(7))
    tl, mirror = again.draw([(im.shape[1], im.shape[2]) for im, _ in samples])
    assert mirror.dtype == torch.bool and tl.shape == (6, 2)
    expected = reference.crop_mirror_normalize([im for im, _ in samples], torch.tensor([MEAN]), torch.tensor([STD]),
                                               tl, mirror, (24, 22), dim=-3, scale=1 / 255, dtype=torch.float32,
                                               memory_format=torch.contiguous_format, channels=3, fill=0.0, pad=True)
    torch.testing.assert_close(batch, expected)
    # origins keep the crop inside images that are large enough, and are not all the same
    for (im, _), (y, x) in zip(samples, tl.tolist()):
        if im.shape[1] >= 24 and im.shape[2] >= 22:
            assert 0 <= y <= im.shape[1] - 24 and 0 <= x <= im.shape[2] - 22
    assert len(set(map(tuple, tl.tolist()))) > 1


def test_collate_eval_is_centred():
    ds = _Decoded()
    collate = CropMirrorNormalizeCollate(16, MEAN, STD, train=False)
    samples = [ds[i] for i in range(4)]
    batch, _ = collate(samples)
    expected = torch.stack([tensorops.crop_mirror_normalize([im], MEAN, STD, size=16)[0] for im, _ in samples])
    torch.testing.assert_close(batch, expected)
    tl, mirror = collate.draw([(im.shape[1], im.shape[2]) for im, _ in samples])
    assert not mirror.any()
    assert tl.tolist() == [[(im.shape[1] - 16) // 2, (im.shape[2] - 16) // 2] for im, _ in samples]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_collate_in_a_dataloader(num_workers):
    ds = _Decoded()

    def run():  # a repeatable run seeds torch too: DataLoader draws its workers' seeds from torch's RNG
        torch.manual_seed(0)
        collate = CropMirrorNormalizeCollate((24, 22), MEAN, STD, generator=torch.Generator().manual_seed(3))
        loader = DataLoader(ds, batch_size=4, collate_fn=collate, num_workers=num_workers)
        return list(loader)

    first, second = run(), run()
    assert len(first) == 3
    for (b1, l1), (b2, l2) in zip(first, second):
        assert b1.shape == (4, 3, 24, 22) and b1.dtype == torch.float32
        torch.testing.assert_close(b1, b2)
        assert torch.equal(l1, l2)
    assert [l.tolist() for _, l in first] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    # every batch is a crop of its samples: eval-mode statistics bound the values
    lo = (0 - max(MEAN)) / min(STD)
    hi = (1 - min(MEAN)) / min(STD)
    assert all(((b >= lo) & (b <= hi)).all() for b, _ in first)


@requires_compiled
def test_vmap_batch_form():
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 256, (2, 3, 3, 12, 10), dtype=torch.uint8, generator=g)  # vmapped dim 0, N = 3
    tl = torch.tensor([[0, 1], [2, 3], [4, 0]])
    mirror = torch.tensor([True, False, True])
    mean = torch.rand(3, 3, generator=g)

    def f(x):
        return tensorops.crop_mirror_normalize(x, mean, STD, size=(6, 5), top_left=tl, mirror=mirror,
                                               memory_format=torch.channels_last)

    out, ran = kernel_ran(torch.vmap(f), x)
    torch.testing.assert_close(out, torch.stack([f(x[0]), f(x[1])]))
    assert "tensorops::crop_mirror_normalize" in ran
    # vmapped over a different dim, and with per-slice statistics (one call per slice)
    torch.testing.assert_close(torch.vmap(f, in_dims=1)(x.movedim(0, 1)), torch.stack([f(x[0]), f(x[1])]))
    means = torch.rand(2, 3, 3, generator=g)
    h = lambda x, m: tensorops.crop_mirror_normalize(x, m, STD, size=(6, 5), top_left=tl, mirror=mirror)
    torch.testing.assert_close(torch.vmap(h)(x, means), torch.stack([h(x[0], means[0]), h(x[1], means[1])]))


@pytest.mark.parametrize("channels", [1, 2, 4, 5])
def test_hwc_channel_counts(device, channels):
    g = torch.Generator().manual_seed(channels)
    images = [torch.randn(14 + i, 11 + 2 * i, channels, generator=g).to(device) for i in range(3)]
    tl = torch.tensor([[1, 0], [-2, 3], [4, 2]])
    mirror = torch.tensor([True, False, True])
    mean = torch.rand(3, channels, generator=g).to(device)
    std = (torch.rand(1, channels, generator=g) + 0.5).to(device)
    out = tensorops.crop_mirror_normalize(images, mean, std, dim=-1, size=(9, 8), top_left=tl, mirror=mirror,
                                          out_of_bounds="pad", pad_channels=channels + 1, fill=-1.0)
    ref = reference.crop_mirror_normalize(images, mean, std, tl, mirror, (9, 8), dim=-1, scale=1.0,
                                          dtype=torch.float32, memory_format=torch.contiguous_format,
                                          channels=channels + 1, fill=-1.0, pad=True)
    torch.testing.assert_close(out, ref)

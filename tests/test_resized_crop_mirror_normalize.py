"""resized_crop_mirror_normalize and its collates, against torchvision v2 (resized_crop, horizontal_flip, to_dtype,
normalize, stack), torch.nn.functional.interpolate in float64, and tensorops.reference (the kernels' oracle)."""
from __future__ import annotations

import math

import pytest
import torch

import tensorops
from tensorops import reference
from tensorops.data import ResizedCropMirrorNormalizeCollate

from conftest import kernel_ran, requires_compiled

try:  # torchvision is an optional extra: only the tests that compare with it need it
    from torchvision.transforms.v2 import functional as F
except ImportError:
    F = None
needs_torchvision = pytest.mark.skipif(F is None, reason="compares with torchvision v2, which is not installed "
                                                          "(pip install --no-build-isolation -e '.[torchvision]')")

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
OP = "tensorops::resized_crop_mirror_normalize"


def photos(sizes, seed=0, layout="CHW"):
    """Photo-like uint8 images: smooth fields (upsampled noise) with some texture, as decoded photos are; white
    noise would turn every rounding difference of a resampler into a full-range difference."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for H, W in sizes:
        coarse = torch.rand(1, 3, max(2, H // 16), max(2, W // 16), generator=g) * 255
        smooth = torch.nn.functional.interpolate(coarse, size=(H, W), mode="bicubic", align_corners=False)[0]
        x = (smooth + torch.randn(3, H, W, generator=g) * 6).round().clamp(0, 255).to(torch.uint8)
        out.append(x if layout == "CHW" else x.permute(1, 2, 0).contiguous())
    return out


def steps(a, b):
    """|a - b| in uint8 steps of the normalized output (a step is 1 / (255 std))."""
    s = torch.tensor(STD, dtype=torch.float64).view(1, 3, 1, 1)
    return ((a.double() - b.double()).cpu() * s * 255).abs()


def tv_batch(images, boxes, mirror, size, interpolation="bilinear", antialias=True):
    mode = {"bilinear": F.InterpolationMode.BILINEAR, "bicubic": F.InterpolationMode.BICUBIC,
            "nearest": F.InterpolationMode.NEAREST}[interpolation]
    outs = []
    for im, (t, l, h, w), m in zip(images, boxes.tolist(), mirror.tolist()):
        r = F.resized_crop(im, int(t), int(l), int(h), int(w), list(size), interpolation=mode, antialias=antialias)
        r = F.horizontal_flip(r) if m else r
        outs.append(F.normalize(F.to_dtype(r, torch.float32, scale=True), MEAN, STD))
    return torch.stack(outs)


SIZES = [(61, 83), (120, 97), (40, 40), (97, 130), (33, 71)]
BOXES = torch.tensor([[3, 5, 50, 60], [0, 0, 120, 97], [10, 12, 7, 9], [20, 1, 77, 129], [0, 70, 33, 1]])
MIRROR = torch.tensor([False, True, True, False, True])


@needs_torchvision
@pytest.mark.parametrize("size", [(24, 24), (37, 21), (150, 90)], ids=["down", "nonsquare", "up"])
@pytest.mark.parametrize("antialias", [True, False])
def test_matches_torchvision_bilinear(device, size, antialias):
    images = photos(SIZES)
    got, ran = kernel_ran(tensorops.resized_crop_mirror_normalize, [im.to(device) for im in images], MEAN, STD,
                          size=size, boxes=BOXES, mirror=MIRROR, antialias=antialias)
    if tensorops.is_compiled():
        assert OP + "_list" in ran
    want = tv_batch(images, BOXES, MIRROR, size, antialias=antialias)
    # torchvision rounds to uint8 after each of its two separable passes; tensorops keeps float
    assert steps(got, want).max() <= 1.05
    # and within 0.05 steps of a float64 interpolate of the crop
    exact = []
    for im, (t, l, h, w), m in zip(images, BOXES.tolist(), MIRROR.tolist()):
        r = torch.nn.functional.interpolate(im[None, :, t:t + h, l:l + w].double(), size=size, mode="bilinear",
                                            align_corners=False, antialias=antialias)[0]
        r = r.flip(-1) if m else r
        exact.append((r / 255 - torch.tensor(MEAN, dtype=torch.float64).view(3, 1, 1))
                     / torch.tensor(STD, dtype=torch.float64).view(3, 1, 1))
    assert steps(got, torch.stack(exact)).max() <= 0.05


@needs_torchvision
@pytest.mark.parametrize("size", [(24, 24), (37, 21), (150, 90)], ids=["down", "nonsquare", "up"])
@pytest.mark.parametrize("antialias", [True, False])
def test_matches_torchvision_bicubic(device, size, antialias):
    images = photos(SIZES, seed=6)
    got, ran = kernel_ran(tensorops.resized_crop_mirror_normalize, [im.to(device) for im in images], MEAN, STD,
                          size=size, boxes=BOXES, mirror=MIRROR, interpolation="bicubic", antialias=antialias)
    if tensorops.is_compiled():
        assert OP + "_list" in ran
    want = tv_batch(images, BOXES, MIRROR, size, interpolation="bicubic", antialias=antialias)
    # within 0.05 steps of a float64 interpolate of the crop, clamped to uint8's range; torchvision's uint8 path
    # (separable passes with rounding) is up to 1.6 steps from that one: tensorops is no further from it
    exact = []
    for im, (t, l, h, w), m in zip(images, BOXES.tolist(), MIRROR.tolist()):
        r = torch.nn.functional.interpolate(im[None, :, t:t + h, l:l + w].double(), size=size, mode="bicubic",
                                            align_corners=False, antialias=antialias)[0].clamp(0, 255)
        r = r.flip(-1) if m else r
        exact.append((r / 255 - torch.tensor(MEAN, dtype=torch.float64).view(3, 1, 1))
                     / torch.tensor(STD, dtype=torch.float64).view(3, 1, 1))
    exact = torch.stack(exact)
    assert steps(got, exact).max() <= 0.05
    assert steps(got, want).max() <= steps(want, exact).max() + 0.05


@needs_torchvision
def test_bicubic_float_images_are_not_clamped_and_uint8_output(device):
    # float images keep the cubic's overshoot (torch does not clamp floats); uint8 output rounds as torchvision's
    images = photos(SIZES[:3], seed=7)
    boxes, mirror = BOXES[:3], MIRROR[:3]
    floats = [(im.double() / 255).to(device) for im in images]
    got = tensorops.resized_crop_mirror_normalize(floats, 0.0, 1.0, size=(30, 50), boxes=boxes, mirror=mirror,
                                                  interpolation="bicubic", antialias=False, dtype=torch.float64)
    want = reference.resized_crop_mirror_normalize(
        floats, torch.zeros(1, 1, device=device, dtype=torch.float64), torch.ones(1, 1, device=device,
                                                                                   dtype=torch.float64),
        boxes.double(), mirror, (30, 50), dim=-3, scale=1.0, interpolation=2, antialias=False, crop_first=True,
        dtype=torch.float64, memory_format=torch.contiguous_format, channels=3, fill=0.0, pad=False)
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-9)
    tv = torch.stack([F.resized_crop(im.cpu(), *map(int, b), [30, 50], interpolation=F.InterpolationMode.BICUBIC,
                                     antialias=False) for im, b in zip(floats, boxes.tolist())])
    tv = torch.stack([r.flip(-1) if m else r for r, m in zip(tv, mirror.tolist())])
    torch.testing.assert_close(got.cpu(), tv, rtol=0, atol=1e-6)
    u8 = tensorops.resized_crop_mirror_normalize([im.to(device) for im in images], None, None, size=(30, 50),
                                                 boxes=boxes, mirror=mirror, interpolation="bicubic",
                                                 dtype=torch.uint8)
    tvu8 = torch.stack([F.resized_crop(im, *map(int, b), [30, 50], interpolation=F.InterpolationMode.BICUBIC,
                                       antialias=True) for im, b in zip(images, boxes.tolist())])
    tvu8 = torch.stack([r.flip(-1) if m else r for r, m in zip(tvu8, mirror.tolist())])
    assert (u8.cpu().int() - tvu8.int()).abs().max() <= 1


@needs_torchvision
def test_matches_torchvision_nearest_exactly(device):
    images = photos(SIZES, seed=2)
    got = tensorops.resized_crop_mirror_normalize([im.to(device) for im in images], MEAN, STD, size=(31, 45),
                                                  boxes=BOXES, mirror=MIRROR, interpolation="nearest")
    want = tv_batch(images, BOXES, MIRROR, (31, 45), interpolation="nearest")
    assert steps(got, want).max() <= 1e-3


@pytest.mark.parametrize("form", ["list", "batch"])
@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_forms_layouts_dtypes_against_reference(device, form, layout, dtype):
    sizes = [(45, 52)] * 4 if form == "batch" else SIZES[:4]
    images = [im.to(device) for im in photos(sizes, seed=3, layout=layout)]
    boxes = torch.tensor([[1.5, 2.25, 40.0, 31.5], [0, 0, 45, 52], [10.7, 3.1, 4.2, 6.6], [0.0, 0.0, 1.0, 1.0]])
    mirror = torch.tensor([True, False, True, False])
    imgs = torch.stack(images) if form == "batch" else images
    dim = -3 if layout == "CHW" else -1
    got = tensorops.resized_crop_mirror_normalize(imgs, MEAN, STD, size=(19, 23), boxes=boxes, mirror=mirror, dim=dim,
                                                  dtype=dtype)
    m = torch.tensor(MEAN).view(1, 3)
    s = torch.tensor(STD).view(1, 3)
    want = reference.resized_crop_mirror_normalize(
        imgs, m.to(device), s.to(device), boxes.double(), mirror, (19, 23), dim=dim, scale=1 / 255, interpolation=1,
        antialias=True, crop_first=True, dtype=dtype, memory_format=torch.contiguous_format, channels=3, fill=0.0,
        pad=False)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype in (torch.float32, torch.float64) else dict(rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(got, want, **tol)
    assert got.dtype == dtype


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_cpu_vector_paths_against_reference(layout):
    """The CPU pass' vector paths on rows long enough to take them: 3 interleaved channels summed into planes
    (HWC), the horizontal blocks whose windows fit two registers (upscaling, ~1.2x), start within 32 pixels
    (~1.8x) or neither (3x), mirrored rows reversed by permutes, float and uint8 outputs."""
    images = photos([(120, 400)] * 4, seed=5, layout=layout)
    boxes = torch.tensor([[5, 10, 100, 45], [0, 3, 90, 77.5], [2, 50, 110, 115], [0, 0, 120, 192.5]])
    kw = dict(size=(20, 64), boxes=boxes, mirror=torch.tensor([True, False, True, True]), dim=-3 if layout == "CHW"
              else -1)
    ref = dict(boxes=boxes.double(), mirror=kw["mirror"], size=(20, 64), dim=kw["dim"], scale=1 / 255,
               interpolation=1, antialias=True, crop_first=True, memory_format=torch.contiguous_format,
               channels=3, fill=0.0, pad=False)
    got, names = kernel_ran(tensorops.resized_crop_mirror_normalize, images, MEAN, STD, **kw)
    assert OP + "_list" in names
    want = reference.resized_crop_mirror_normalize(images, torch.tensor(MEAN).view(1, 3), torch.tensor(STD).view(1, 3),
                                                   dtype=torch.float32, **ref)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    u8 = tensorops.resized_crop_mirror_normalize(images, None, None, dtype=torch.uint8, **kw)
    want8 = reference.resized_crop_mirror_normalize(images, torch.zeros(1, 3), torch.ones(1, 3) / 255,
                                                    dtype=torch.float64, **ref)
    assert (u8.double() - want8).abs().max() <= 0.5 + 1e-3  # rounded to the nearest uint8 (float32 ties)


def test_a_batch_of_8_mb_or_more_equals_the_same_samples_one_by_one():
    """Outputs of 8 MB or more are written with non-temporal stores (AVX-512 CPUs): bit for bit the values of the
    samples computed one at a time (small outputs, ordinary stores), mirrored or not."""
    images = photos([(150, 170)] * 8, seed=7, layout="HWC")
    boxes = torch.tensor([[3.5, 1, 140, 160]] * 8)
    mirror = torch.arange(8) % 3 == 0
    kw = dict(size=(321, 317), dim=-1)
    batch = tensorops.resized_crop_mirror_normalize(images, MEAN, STD, boxes=boxes, mirror=mirror, **kw)
    assert batch.nbytes >= 8 << 20
    one = [tensorops.resized_crop_mirror_normalize(images[n:n + 1], MEAN, STD, boxes=boxes[n:n + 1],
                                                   mirror=mirror[n:n + 1], **kw) for n in range(8)]
    assert torch.equal(batch, torch.cat(one))


def test_samples_sharing_weight_tables_and_not(device):
    # The CPU kernel builds one weight table per distinct axis: samples 0, 1 and 4 share both axes, 2 shares only
    # their rows, 5 only their columns, 3 neither; with size (20, 20) and the square box of sample 6, its rows and
    # columns are one axis too. Each sample must still read its own box.
    images = torch.stack([im.to(device) for im in photos([(45, 52)] * 7, seed=8)])
    boxes = torch.tensor([[2, 3, 30, 20], [2, 3, 30, 20], [2, 5, 30, 20], [0, 0, 45, 52], [2, 3, 30, 20],
                          [7, 3, 30, 20], [4, 4, 36, 36]], dtype=torch.float64)
    mirror = torch.tensor([False, True, False, False, False, True, False])
    got, ran = kernel_ran(tensorops.resized_crop_mirror_normalize, images, MEAN, STD, size=(20, 20), boxes=boxes,
                          mirror=mirror)
    if tensorops.is_compiled():
        assert OP in ran
    want = reference.resized_crop_mirror_normalize(
        images, torch.tensor(MEAN, device=device).view(1, 3), torch.tensor(STD, device=device).view(1, 3), boxes,
        mirror, (20, 20), dim=-3, scale=1 / 255, interpolation=1, antialias=True, crop_first=True,
        dtype=torch.float32, memory_format=torch.contiguous_format, channels=3, fill=0.0, pad=False)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_channels_last_pad_channels_per_sample_stats_and_pad(device):
    images = [im.to(device) for im in photos(SIZES[:3], seed=4)]
    boxes = torch.tensor([[-5.0, -3.0, 30.0, 40.0], [100.0, 90.0, 40.0, 20.0], [0.0, 0.0, 40.0, 40.0]])
    mirror = torch.tensor([True, False, True])
    mean = torch.rand(3, 3, device=device)
    std = torch.rand(3, 3, device=device) + 0.5
    got = tensorops.resized_crop_mirror_normalize(images, mean, std, size=(17, 13), boxes=boxes, mirror=mirror,
                                                  memory_format=torch.channels_last, pad_channels=4, fill=-2.0,
                                                  out_of_bounds="pad")
    want = reference.resized_crop_mirror_normalize(
        images, mean, std, boxes.double(), mirror, (17, 13), dim=-3, scale=1 / 255, interpolation=1, antialias=True,
        crop_first=True, dtype=torch.float32, memory_format=torch.channels_last, channels=4, fill=-2.0, pad=True)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert got.is_contiguous(memory_format=torch.channels_last) and got.shape == (3, 4, 17, 13)
    assert (got[:, 3] == -2.0).all() and (got[1] == -2.0).sum() > 0 and (got[0, :, 0, -1] == -2.0).all()


@needs_torchvision
def test_eval_form_equals_resize_then_center_crop(device):
    images = photos([(300, 400), (375, 500), (500, 333), (256, 256)], seed=5)
    collate = ResizedCropMirrorNormalizeCollate(224, MEAN, STD, train=False)
    batch, labels = collate([(im.to(device), k) for k, im in enumerate(images)])
    want = torch.stack([F.normalize(F.to_dtype(F.center_crop(F.resize(im, 256, antialias=True), 224), torch.float32,
                                                scale=True), MEAN, STD) for im in images])
    assert steps(batch, want).max() <= 1.05
    assert labels.tolist() == [0, 1, 2, 3]
    # crop_first=True on the same window reads only the window: the borders differ
    boxes, _ = collate.boxes([(im.shape[1], im.shape[2]) for im in images])
    inner = tensorops.resized_crop_mirror_normalize([im.to(device) for im in images], MEAN, STD, size=224, boxes=boxes,
                                                    crop_first=True)
    assert steps(inner, batch).max() > 1.05


@needs_torchvision
def test_uint8_output_rounds_like_torchvision_and_normalizes_in_the_consumer(device):
    images = [im.to(device) for im in photos(SIZES, seed=6)]
    got = tensorops.resized_crop_mirror_normalize(images, None, None, size=(24, 30), boxes=BOXES, mirror=MIRROR,
                                                  dtype=torch.uint8)
    assert got.dtype == torch.uint8
    want = []
    for im, (t, l, h, w), m in zip(images, BOXES.tolist(), MIRROR.tolist()):
        r = F.resized_crop(im.cpu(), t, l, h, w, [24, 30], antialias=True)
        want.append(F.horizontal_flip(r) if m else r)
    assert (got.cpu().int() - torch.stack(want).int()).abs().max() <= 1
    full = tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=(24, 30), boxes=BOXES, mirror=MIRROR)
    assert steps(tensorops.normalize(got, MEAN, STD), full).max() <= 0.5 + 1e-4  # one rounding


def test_out(device):
    images = [im.to(device) for im in photos(SIZES, seed=7)]
    out = torch.empty(5, 3, 16, 16, device=device)
    r = tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=16, boxes=BOXES, out=out)
    assert r is out
    torch.testing.assert_close(out, tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=16, boxes=BOXES))
    with pytest.raises(ValueError, match="out has shape"):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=17, boxes=BOXES, out=out)


@needs_torchvision
def test_edges_one_pixel_boxes_and_images(device):
    one = [torch.full((3, 1, 1), 200, dtype=torch.uint8, device=device), photos([(5, 7)])[0].to(device)]
    got = tensorops.resized_crop_mirror_normalize(one, MEAN, STD, size=(3, 4), boxes=torch.tensor([[0, 0, 1, 1],
                                                                                                   [4, 6, 1, 1]]))
    want = tv_batch([im.cpu() for im in one], torch.tensor([[0, 0, 1, 1], [4, 6, 1, 1]]), torch.tensor([False, False]),
                    (3, 4))
    assert steps(got, want).max() <= 1e-3


@pytest.mark.parametrize("box, match", [
    ([0, 0, 70, 10], "sample 1: the box .* leaves its 120x97 image"),
    ([-1, 0, 10, 10], "sample 1: the box"),
    ([0, 0, 0, 10], "positive height and width"),
    ([0, 0, float("nan"), 10], "finite"),
])
def test_bad_boxes_name_the_sample(device, box, match):
    images = [im.to(device) for im in photos(SIZES[:2])]
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [*map(float, box)]])
    boxes[1, 0] += 60 if box == [0, 0, 70, 10] else 0
    with pytest.raises(ValueError, match=match):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=8, boxes=boxes)


def test_bad_arguments():
    images = photos(SIZES[:2])
    with pytest.raises(ValueError, match="boxes must have shape"):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=8, boxes=torch.zeros(3, 4))
    with pytest.raises(ValueError, match="interpolation"):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=8, interpolation="lanczos")
    with pytest.raises(ValueError, match="mean=None"):
        tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=8, dtype=torch.uint8)
    with pytest.raises(ValueError, match="only for dtype=torch.uint8"):
        tensorops.resized_crop_mirror_normalize(images, None, None, size=8)
    with pytest.raises(ValueError, match="mean has 3 values but the images have 1 channels"):
        tensorops.resized_crop_mirror_normalize([torch.zeros(1, 5, 5, dtype=torch.uint8)], MEAN, STD, size=8)


@requires_compiled
def test_opcheck_and_compile():
    images = photos(SIZES[:3], seed=8)
    m, s = torch.tensor([MEAN]), torch.tensor([STD])
    boxes = BOXES[:3].double()
    mi = MIRROR[:3]
    op = torch.ops.tensorops.resized_crop_mirror_normalize_list.default
    torch.library.opcheck(op, (images, m, s, boxes, mi, [9, 7], -3, 1 / 255, 1, True, True, torch.float32,
                               torch.contiguous_format, 4, 0.5, True))
    floats = torch.rand(3, 3, 20, 21, dtype=torch.float64)
    op_b = torch.ops.tensorops.resized_crop_mirror_normalize.default
    torch.library.opcheck(op_b, (floats, m.double(), s.double(), torch.tensor([[0, 0, 20, 21.0]] * 3, dtype=torch.float64), mi, [6, 5], -3,
                                 1.0, 0, False, False, torch.float64, torch.channels_last, 3, 0.0, False))

    def f(x):
        return tensorops.resized_crop_mirror_normalize(x, MEAN, STD, size=(8, 9), boxes=torch.tensor([[1.5, 2, 30, 35]] * 3),
                                                       mirror=mi)

    x = torch.rand(3, 3, 40, 41)
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x), f(x))


@pytest.mark.parametrize("form", ["list", "batch"])
def test_gradcheck_jvp_vmap(form):
    g = torch.Generator().manual_seed(9)
    x = torch.rand(2, 3, 7, 8, dtype=torch.float64, generator=g, requires_grad=True)
    boxes = torch.tensor([[0.5, 1.0, 5.0, 6.5], [0.0, 0.0, 7.0, 8.0]])
    mi = torch.tensor([True, False])

    def f(x):
        imgs = x if form == "batch" else list(x.unbind(0))
        return tensorops.resized_crop_mirror_normalize(imgs, MEAN, STD, size=(4, 5), boxes=boxes, mirror=mi,
                                                       out_of_bounds="pad")

    assert torch.autograd.gradcheck(f, (x,))
    t = torch.rand_like(x)
    _, jvp = torch.func.jvp(f, (x.detach(),), (t,))
    _, jvp_ref = torch.func.jvp(lambda x: reference.resized_crop_mirror_normalize(
        x if form == "batch" else list(x.unbind(0)), torch.tensor([MEAN], dtype=torch.float64),
        torch.tensor([STD], dtype=torch.float64), boxes.double(), mi, (4, 5), dim=-3, scale=1.0, interpolation=1,
        antialias=True, crop_first=True, dtype=torch.float64, memory_format=torch.contiguous_format, channels=3,
        fill=0.0, pad=True), (x.detach(),), (t,))
    torch.testing.assert_close(jvp, jvp_ref)
    xs = torch.rand(3, 2, 3, 7, 8, dtype=torch.float64)
    torch.testing.assert_close(torch.vmap(f)(xs), torch.stack([f(v) for v in xs]))


def test_collate_train_reproducible_pil_numpy_and_tensor_samples():
    PIL = pytest.importorskip("PIL.Image", reason="PIL samples")
    images = photos([(300, 400), (200, 260), (333, 500)], seed=10)
    tensors = [(im, k) for k, im in enumerate(images)]
    arrays = [(im.permute(1, 2, 0).numpy(), k) for k, im in enumerate(images)]
    pils = [(PIL.fromarray(a), k) for a, k in arrays]
    outs = []
    for samples in (tensors, arrays, pils):
        c = ResizedCropMirrorNormalizeCollate(64, MEAN, STD, generator=torch.Generator().manual_seed(1))
        outs.append(c(samples)[0])
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[1], outs[2], rtol=0, atol=0)
    c = ResizedCropMirrorNormalizeCollate(64, MEAN, STD, generator=torch.Generator().manual_seed(2))
    assert not torch.equal(c(tensors)[0], outs[0])


def test_boxes_from_given_uniforms_equal_per_sample_generators():
    # what tensorops.ray's per-row streams rely on: row k of uniforms draws as sample k alone from its generator
    collate = ResizedCropMirrorNormalizeCollate(224, MEAN, STD)
    g = torch.Generator().manual_seed(5)
    sizes = [tuple(int(v) for v in torch.randint(60, 600, (2,), generator=g)) for _ in range(24)] + [(10, 900)]
    want_b, want_m = [], []
    for k, s in enumerate(sizes):
        collate.generator = torch.Generator().manual_seed(100 + k)
        b, m = collate.boxes([s])
        want_b.append(b)
        want_m.append(m)
    collate.generator = None
    draws = torch.stack([torch.rand(collate.DRAWS, dtype=torch.float64, generator=torch.Generator().manual_seed(100 + k))
                         for k in range(len(sizes))])
    got_b, got_m = collate.boxes(sizes, uniforms=draws.numpy())
    assert torch.equal(got_b, torch.cat(want_b)) and torch.equal(got_m, torch.cat(want_m))
    assert len(set(map(tuple, got_b.tolist()))) == len(sizes)  # the rows really differ
    with pytest.raises(ValueError, match=r"uniforms must have shape \(25, 41\)"):
        collate.boxes(sizes, uniforms=draws[:, :40].numpy())


@needs_torchvision
def test_random_resized_crop_boxes_follow_torchvision_distribution():
    c = ResizedCropMirrorNormalizeCollate(224, MEAN, STD, generator=torch.Generator().manual_seed(3))
    sizes = [(375, 500)] * 4000
    boxes, mirror = c.boxes(sizes)
    t, l, h, w = boxes.unbind(1)
    assert (t >= 0).all() and (l >= 0).all() and (t + h <= 375).all() and (l + w <= 500).all()
    frac = h * w / (375 * 500)
    assert frac.min() >= 0.08 - 0.01 and frac.max() <= 1.0
    ratio = w / h
    assert ((ratio > 0.7) & (ratio < 1.4)).all()
    assert (t == t.round()).all() and (h == h.round()).all()
    assert 0.45 < mirror.double().mean() < 0.55
    torch.manual_seed(0)
    from torchvision.transforms import v2

    tv = torch.tensor([v2.RandomResizedCrop.get_params(torch.empty(3, 375, 500), [0.08, 1.0], [3 / 4, 4 / 3])
                       for _ in range(4000)], dtype=torch.float64)
    tv_frac = tv[:, 2] * tv[:, 3] / (375 * 500)
    assert abs(tv_frac.mean() - frac.mean()) < 0.02 and abs(tv_frac.std() - frac.std()) < 0.02

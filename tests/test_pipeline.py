"""``tensorops.data.from_pipeline`` with real clients: torchvision's classification reference presets (built by
``tests/_presets.py``, a faithful copy of the references' composition: every transform object in them is
torchvision's own, constructed with the reference's arguments) and timm's ``create_transform`` (timm builds it).

* Deterministic paths (evaluation): bit-identical to default_collate of the user's pipeline, on either backend
  (``exact=True``, the default: the user's Resize and CenterCrop per image, their conversion and Normalize on the
  batch). With ``exact=False`` the fused resampling pass rounds once where torchvision's uint8 resize rounds
  after each of its two separable passes: within 1 uint8 step (docs/guides/fidelity.rst).
  The steps after the resize (the twins, the erasing, the mixing) are bit-identical when replayed.
* Random paths: every draw has the user's distribution (two-sample Kolmogorov-Smirnov and binomial tests at a
  fixed seed, level 0.001; with 4000 draws a side the KS test detects a CDF gap of 0.06 with power > 0.99, and the
  binomial tests detect a probability off by 0.04 with power > 0.99), and each sample is bit-identical to the
  user's per-image transforms when its draws are replayed through them, from the fused resize's output on.
"""
from __future__ import annotations

import math
import random
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

v2 = pytest.importorskip("torchvision.transforms.v2", reason="the pipelines are torchvision's (tensorops[torchvision])")
F = pytest.importorskip("torchvision.transforms.v2.functional")

import tensorops  # noqa: E402
from tensorops.data import from_pipeline  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _presets import ClassificationPresetEval, ClassificationPresetTrain, mixup_cutmix  # noqa: E402
from jpeg_cases import photo  # noqa: E402

POLICIES = [None, "ra", "ta_wide", "augmix", "imagenet", "cifar10", "svhn"]


def _pil_images(n, seed=0):
    from PIL import Image

    sizes = [(180 + 13 * k, 230 - 7 * k) for k in range(n)]
    return [Image.fromarray(photo(h, w, seed=seed + k)) for k, (h, w) in enumerate(sizes)]


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the presets map entirely: no transform runs as given
        return fn(*a, **kw)


def _ks(a, b, alpha=1e-3):
    """Two-sample KS: D and its critical value at level alpha."""
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.concatenate([a, b])
    d = np.max(np.abs(np.searchsorted(a, grid, "right") / len(a) - np.searchsorted(b, grid, "right") / len(b)))
    return d, math.sqrt(-math.log(alpha / 2) / 2) * math.sqrt((len(a) + len(b)) / (len(a) * len(b)))


def _steps(a, b, std=(0.229, 0.224, 0.225)):
    """|a - b| of two normalized images in uint8 steps."""
    return ((a - b) * torch.tensor(std).view(-1, 1, 1) * 255).abs()


def _binomial_ok(k, n, p, alpha=1e-3):
    z = 3.29  # two-sided normal quantile at 0.001
    return abs(k - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


# ---- evaluation: bit-identical ---------------------------------------------------------------------------------

EVAL_CASES = [(backend, use_v2, interp) for backend in ("tensor", "pil") for use_v2 in (True, False)
              for interp in ("bilinear", "bicubic")]


@pytest.mark.parametrize("backend,use_v2,interp", EVAL_CASES)
def test_eval_preset_is_bit_identical_to_the_users_batch(backend, use_v2, interp):
    """exact=True (the default): every batch equals default_collate of the preset's images, bit for bit, on
    either backend (torch's integer resize on tensors, Pillow's on PIL images) and for PIL images, HWC arrays and
    CHW tensors (decode_jpeg's layout) as samples."""
    preset = ClassificationPresetEval(crop_size=224, resize_size=256, backend=backend, use_v2=use_v2,
                                      interpolation=v2.InterpolationMode(interp))
    collate = _quiet(from_pipeline, preset)
    assert "exact evaluation" in str(collate.plan)
    assert collate.fused.direct is not None  # each crop converted in its slot (checked against the transforms)
    images = _pil_images(4)
    expected = torch.stack([preset(im) for im in images])
    forms = [images, [np.asarray(im) for im in images]]
    if backend == "tensor":  # the preset's PILToTensor takes PIL images only: tensors are its output's form
        forms.append([torch.from_numpy(np.array(im)).permute(2, 0, 1) for im in images])
    for samples in forms:
        if backend == "pil" and not hasattr(samples[0], "mode"):
            continue  # the PIL preset's Resize on an array: not an input the user's pipeline takes
        out, labels = collate([(im, k) for k, im in enumerate(samples)])
        assert out.dtype == expected.dtype and torch.equal(out, expected)
        assert labels.tolist() == [0, 1, 2, 3]


def test_eval_in_place_conversion_is_checked_against_the_users_transforms():
    """The in-place ops are used only where they give the user's conversion and Normalize for every uint8 value:
    told the wrong ones (v1's div for v2's mul: 126 of 256 values differ), the collate runs the transforms as
    given, and the batch is still the user's."""
    from tensorops.data.pipeline_collate import ExactEvalCollate

    preset = ClassificationPresetEval(crop_size=64, resize_size=72, backend="tensor", use_v2=True)
    right = _quiet(from_pipeline, preset).fused
    assert right.direct[0] == "mul"
    wrong = ExactEvalCollate(right.head, right.geometry, right.convert, right.normalize,
                             ("div",) + tuple(right.direct[1:]))
    assert wrong.direct is None
    images = _pil_images(3)
    expected = torch.stack([preset(im) for im in images])
    for collate in (right, wrong):
        assert torch.equal(collate([(im, 0) for im in images])[0], expected)
    cl = _quiet(from_pipeline, preset, memory_format=torch.channels_last)([(im, 0) for im in images])[0]
    assert cl.is_contiguous(memory_format=torch.channels_last) and torch.equal(cl, expected)


def test_eval_exact_false_is_the_fused_resize_within_one_step():
    """exact=False: the fused resampling pass rounds once where torchvision's uint8 resize rounds after each of
    its two passes: within 1 step, most pixels equal."""
    preset = ClassificationPresetEval(crop_size=224, resize_size=256, backend="tensor", use_v2=True)
    collate = _quiet(from_pipeline, preset, exact=False)
    assert "Resize + CenterCrop as one box" in str(collate.plan)
    images = _pil_images(4)
    out, _ = collate([(im, k) for k, im in enumerate(images)])
    for k, im in enumerate(images):
        steps = _steps(out[k], preset(im))
        assert steps.max() <= 1.001 and (steps > 0.5).double().mean() < 0.25
    pil = ClassificationPresetEval(crop_size=224, backend="pil", use_v2=True)  # Pillow resizes the user's images
    out, _ = _quiet(from_pipeline, pil, exact=False)([(im, 0) for im in images])
    for k, im in enumerate(images):
        steps = _steps(out[k], pil(im))
        assert steps.max() <= 2.01 and steps.mean() < 0.3


@pytest.mark.parametrize("interp", ["bilinear", "bicubic"])
def test_timm_eval_is_bit_identical(interp):
    td = pytest.importorskip("timm.data", reason="timm is an optional test extra (pip install timm)")
    t = td.create_transform(224, is_training=False, interpolation=interp, crop_pct=0.875)
    collate = _quiet(from_pipeline, t)
    images = _pil_images(3)
    out, _ = collate([(im, 0) for im in images])
    assert torch.equal(out, torch.stack([t(im) for im in images]))
    fused = _quiet(from_pipeline, t, exact=False).fused
    assert fused.resize_size == 256 and fused.interpolation == interp


def test_eval_with_other_transforms_after_the_crop_is_fused_and_says_so():
    pipeline = v2.Compose([v2.Resize(80), v2.CenterCrop(64), v2.PILToTensor(), v2.RandomGrayscale(0.5),
                           v2.ToDtype(torch.float32, scale=True)])
    collate = _quiet(from_pipeline, pipeline)
    assert "the fused resize, within 1 uint8 step" in str(collate.plan)
    out, _ = collate([(im, 0) for im in _pil_images(2)])
    assert out.shape == (2, 3, 64, 64)


# ---- training: the plan, replays, distributions ----------------------------------------------------------------

@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("use_v2", [True, False])
def test_train_preset_maps_every_transform(policy, use_v2):
    preset = ClassificationPresetTrain(crop_size=176, auto_augment_policy=policy, random_erase_prob=0.1,
                                       backend="tensor", use_v2=use_v2)
    collate = _quiet(from_pipeline, preset, mixup_cutmix(mixup_alpha=0.2, cutmix_alpha=1.0, num_classes=10),
                     generator=torch.Generator().manual_seed(0))
    kinds = [s.how for s in collate.plan.steps]
    assert "per sample" not in kinds and "batch" not in kinds
    f = collate.fused
    assert f.size == (176, 176) and f.mirror_prob == 0.5 and f.interpolation == "bilinear" and f.antialias
    assert len(f.augment) == (policy is not None) and len(f.after_normalize) == 2
    out, soft = collate([(im, k) for k, im in enumerate(_pil_images(4))])
    assert out.shape == (4, 3, 176, 176) and soft.shape == (4, 10)


def _recording(collate):
    """Wrap the fused collate's box draw and each twin's make_params to record what they drew."""
    rec = {"params": [], "calls": []}
    f = collate.fused
    boxes = f.boxes

    def record_boxes(sizes, uniforms=None):
        rec["calls"].append(boxes(sizes, uniforms))
        rec["boxes"] = rec["calls"][-1]
        return rec["boxes"]

    f.boxes = record_boxes
    for t in list(f.augment) + list(f.after_normalize):
        make = t.make_params

        def recorded(batch, generator=None, _make=make):
            p = _make(batch, generator=generator)
            rec["params"].append(p)
            return p

        t.make_params = recorded
    return rec


@pytest.mark.parametrize("use_v2", [True, False])
def test_train_preset_replays_bit_for_bit(use_v2):
    """ta_wide + RandomErasing: each sample equals torchvision's per-image code fed the sample's draws
    (resized_crop with the box, hflip, the TrivialAugment op, ToDtype + Normalize, erase)."""
    preset = ClassificationPresetTrain(crop_size=64, auto_augment_policy="ta_wide", random_erase_prob=0.5,
                                       backend="tensor", use_v2=use_v2)
    collate = _quiet(from_pipeline, preset, generator=torch.Generator().manual_seed(3))
    rec = _recording(collate)
    images = _pil_images(6)
    out, _ = collate([(im, 0) for im in images])
    boxes, mirror = rec["boxes"]
    ta, erase = rec["params"]
    twin = collate.fused.augment[0]
    ref_ta = v2.TrivialAugmentWide(interpolation=v2.InterpolationMode.BILINEAR)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    crops = tensorops.resized_crop_mirror_normalize([F.pil_to_tensor(im) for im in images], None, None, size=64,
                                                    boxes=boxes, mirror=mirror, dtype=torch.uint8)
    for k, im in enumerate(images):
        top, left, h, w = (int(v) for v in boxes[k].tolist())
        resized = F.resized_crop(F.pil_to_tensor(im), top, left, h, w, [64, 64], antialias=True)
        resized = F.horizontal_flip(resized) if mirror[k] else resized
        assert (crops[k].int() - resized.int()).abs().max() <= 1  # the fused resize (module docstring)
        x = crops[k]
        x = ref_ta._apply_image_or_video_transform(x, twin.op_names[int(ta["ops"][k, 0])],
                                                   float(ta["magnitudes"][k, 0]), v2.InterpolationMode.BILINEAR, {})
        x = F.normalize(F.to_dtype(x, torch.float32, scale=True), mean, std)
        i, j, eh, ew = (int(v) for v in erase["boxes"][k].tolist())
        if eh and ew:
            x = F.erase(x, i, j, eh, ew, torch.zeros(3, 1, 1))
        op = twin.op_names[int(ta["ops"][k, 0])]
        if op in ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"):
            # the affine kernel's documented boundary pixels (tests/test_augment_policies.py): 1 step, <= 5%
            diff = ((out[k] - x).abs() * torch.tensor(std).view(3, 1, 1) * 255).round()
            assert diff.max() <= 1 and (diff > 0).double().mean() <= 0.05
        else:
            torch.testing.assert_close(out[k], x, rtol=0, atol=2e-6)  # normalize: within 1e-6 (fidelity guide)


def test_train_draws_have_torchvisions_distributions():
    """Boxes (area fraction, log aspect ratio), flips and RandomErasing's rate against torchvision's own draws
    on the same image size (KS and binomial at level 0.001; power stated in the module docstring)."""
    torch.manual_seed(0)
    preset = ClassificationPresetTrain(crop_size=32, random_erase_prob=0.3, backend="tensor", use_v2=True)
    collate = _quiet(from_pipeline, preset, generator=torch.Generator().manual_seed(5))
    rec = _recording(collate)
    n, H, W = 4000, 120, 90
    img = torch.zeros(3, H, W, dtype=torch.uint8)
    collate([(img, 0)] * n)
    boxes, mirror = rec["boxes"]
    rrc = v2.RandomResizedCrop(32)
    ref_boxes = []
    for _ in range(n):
        p = rrc.make_params([img])
        ref_boxes.append((p["height"], p["width"]))
    rb = np.asarray(ref_boxes, float)
    ob = boxes[:, 2:].numpy()
    for ours, theirs in ((ob[:, 0] * ob[:, 1] / (H * W), rb[:, 0] * rb[:, 1] / (H * W)),
                         (np.log(ob[:, 1] / ob[:, 0]), np.log(rb[:, 1] / rb[:, 0]))):
        d, crit = _ks(ours, theirs)
        assert d < crit, (d, crit)
    assert _binomial_ok(int(mirror.sum()), n, 0.5)
    erased = int((rec["params"][0]["boxes"][:, 2] > 0).sum())
    assert _binomial_ok(erased, n, 0.3 * 0.99, alpha=1e-3) or _binomial_ok(erased, n, 0.3)


# ---- what has no fused form -------------------------------------------------------------------------------------

def test_unmapped_transforms_run_in_place_with_one_warning_each():
    t = v2.Compose([v2.PILToTensor(), v2.RandomResizedCrop(32), v2.RandomRotation(10), v2.RandomHorizontalFlip(),
                    v2.ToDtype(torch.float32, scale=True), v2.GaussianNoise(), v2.Normalize([0.5] * 3, [0.5] * 3)])
    with pytest.warns(UserWarning) as caught:
        collate = from_pipeline(t, generator=torch.Generator().manual_seed(0))
    named = [str(w.message) for w in caught if "from_pipeline" in str(w.message)]
    assert len(named) == 4 and "RandomRotation" in named[0] and "RandomHorizontalFlip" in named[1]
    hows = [(s.how, s.source.split("(")[0]) for s in collate.plan.steps]
    assert hows == [("fused", "PILToTensor"), ("fused", "RandomResizedCrop"), ("per sample", "RandomRotation"),
                    ("per sample", "RandomHorizontalFlip"), ("fused", "ToDtype"), ("per sample", "GaussianNoise"),
                    ("per sample", "Normalize")]
    assert collate.fused.mirror_prob == 0.0 and collate.fused.mean == 0.0  # the flip and Normalize stay in place
    out, _ = collate([(im, 0) for im in _pil_images(2)])
    assert out.shape == (2, 3, 32, 32) and out.dtype == torch.float32


def test_a_pipeline_without_fusable_geometry_runs_as_given():
    t = v2.Compose([v2.PILToTensor(), v2.RandomRotation(5), v2.RandomResizedCrop(32),
                    v2.ToDtype(torch.float32, scale=True)])
    with pytest.warns(UserWarning, match="RandomRotation"):
        collate = from_pipeline(t)
    assert collate.fused is None and not collate.plan.fused
    torch.manual_seed(1)
    out, _ = collate([(im, 0) for im in _pil_images(2)])
    torch.manual_seed(1)
    ref = torch.stack([t(im) for im in _pil_images(2)])
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_random_apply_and_choice_become_per_sample_twins():
    t = v2.Compose([v2.RandomResizedCrop(24), v2.RandomApply([v2.ColorJitter(0.4, 0.4)], p=0.8),
                    v2.RandomChoice([v2.RandomGrayscale(1.0), v2.TrivialAugmentWide()]), v2.PILToTensor()])
    collate = _quiet(from_pipeline, t, generator=torch.Generator().manual_seed(0))
    assert [s.how for s in collate.plan.steps] == ["fused", "twin", "twin", "no-op"]
    rec = _recording(collate)
    out, _ = collate([(torch.zeros(3, 40, 40, dtype=torch.uint8), 0)] * 2000)
    assert out.dtype == torch.uint8
    applied, chosen = rec["params"][0]["apply"], rec["params"][1]["choice"]
    assert _binomial_ok(int(applied.sum()), 2000, 0.8) and _binomial_ok(int((chosen == 0).sum()), 2000, 0.5)


def test_encoded_samples_take_the_fused_decode():
    io = pytest.importorskip("io")
    images = _pil_images(2)
    data = []
    for im in images:
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        data.append(buf.getvalue())
    preset = ClassificationPresetEval(crop_size=64, resize_size=72, backend="tensor", use_v2=True)
    collate = _quiet(from_pipeline, preset, exact=False)
    out, _ = collate([(d, 0) for d in data])
    for k, im in enumerate(images):
        assert _steps(out[k], preset(im)).max() <= 1.001
    # exact: decoded as ImageFolder's loader decodes them (Pillow, RGB), then the user's transforms
    out, _ = _quiet(from_pipeline, preset)([(d, 0) for d in data])
    assert torch.equal(out, torch.stack([preset(im) for im in images]))


# ---- timm's create_transform --------------------------------------------------------------------------------------

TIMM_CASES = [
    dict(auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25, re_mode="pixel", re_count=1, interpolation="random"),
    dict(auto_augment="rand-m7-n3-mstd0.5-p0.7", re_prob=0.25, re_mode="const", re_count=3),
    dict(auto_augment="augmix-m5-w3", interpolation="bicubic"),
    dict(auto_augment="original", re_prob=0.4, re_mode="rand"),
    dict(auto_augment="v0"),
    dict(color_jitter=0.4),
]


@pytest.mark.parametrize("kwargs", TIMM_CASES, ids=lambda kw: "-".join(f"{v}" for v in kw.values()))
def test_timm_create_transform_maps_every_transform(kwargs):
    td = pytest.importorskip("timm.data", reason="timm is an optional test extra (pip install timm)")
    t = td.create_transform(64, is_training=True, **kwargs)
    mix = td.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
    collate = _quiet(from_pipeline, t, mix, generator=torch.Generator().manual_seed(0))
    assert not collate.plan.unmapped()
    out, soft = collate([(im, k) for k, im in enumerate(_pil_images(4))])
    assert out.shape == (4, 3, 64, 64) and soft.shape == (4, 10)
    torch.testing.assert_close(soft.sum(1), torch.ones(4))
    if kwargs.get("interpolation") == "random":
        assert collate.fused.modes == ("bilinear", "bicubic")


def test_timm_random_interpolation_and_boxes_have_timms_distributions():
    td = pytest.importorskip("timm.data", reason="timm is an optional test extra (pip install timm)")
    from PIL import Image

    t = td.create_transform(16, is_training=True, interpolation="random")
    collate = _quiet(from_pipeline, t, generator=torch.Generator().manual_seed(1))
    rec = _recording(collate)
    n, H, W = 4000, 60, 80
    torch.manual_seed(0)
    collate([(torch.zeros(3, H, W, dtype=torch.uint8), 0)] * n)
    ours = torch.cat([b for b, _ in rec["calls"]])[:, 2:].numpy()
    assert _binomial_ok(int((collate.fused.last_modes == 1).sum()), n, 0.5)  # bicubic half the time
    rrc = t.transforms[0]
    random.seed(0)
    img = Image.new("RGB", (W, H))
    theirs = np.asarray([rrc.get_params(img, rrc.scale, rrc.ratio)[2:] for _ in range(n)], float)
    for a, b in ((ours[:, 0] * ours[:, 1], theirs[:, 0] * theirs[:, 1]), (ours[:, 1] / ours[:, 0],
                                                                          theirs[:, 1] / theirs[:, 0])):
        d, crit = _ks(a, b)
        assert d < crit, (d, crit)

"""timm's geometric ops with Pillow's own arithmetic (``tensorops.augment.timm`` with interpolation "bicubic" or
"random"; the kernel's Pillow affine, math/augment.h ``pil_affine_pixel``): bit for bit Pillow's
``Image.rotate`` / ``Image.transform(AFFINE)`` with its bilinear and bicubic filters, and timm's own op functions
replayed with the twins' draws. The references are Pillow called here; timm is an optional test extra."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import CUDA_PARAM, requires_compiled

import tensorops.augment as A  # noqa: E402
from tensorops.augment import functional as AF  # noqa: E402
from tensorops.augment import timm as T  # noqa: E402

Image = pytest.importorskip("PIL.Image", reason="Pillow is the reference")
sys.path.insert(0, str(Path(__file__).parent))
from jpeg_cases import photo  # noqa: E402

FILTERS = {1: Image.Resampling.BILINEAR, 2: Image.Resampling.BICUBIC}
FILL = (124, 116, 104)


def _pillow(img: torch.Tensor, op: str, value: float, pil_filter: int, fill=FILL) -> torch.Tensor:
    """Pillow's op on a CHW uint8 image, as timm's rotate / shear / translate functions call it."""
    c, h, w = img.shape
    arr = img.permute(1, 2, 0).contiguous().numpy()
    im = Image.fromarray(arr[:, :, 0] if c == 1 else arr)
    fillcolor = fill[0] if c == 1 else tuple(fill)
    kw = dict(resample=FILTERS[pil_filter], fillcolor=fillcolor)
    if op == "pil_rotate":
        out = im.rotate(value, **kw)
    else:
        data = {"pil_shear_x": (1, value, 0, 0, 1, 0), "pil_shear_y": (1, 0, 0, value, 1, 0),
                "pil_translate_x": (1, 0, value, 0, 1, 0), "pil_translate_y": (1, 0, 0, 0, 1, value)}[op]
        out = im.transform(im.size, Image.Transform.AFFINE, data, **kw)
    return torch.from_numpy(np.asarray(out).reshape(h, w, c).copy()).permute(2, 0, 1)


def _image(h, w, c, seed):
    img = torch.from_numpy(photo(h, w, seed=seed)).permute(2, 0, 1)[:c].contiguous()
    img[:, : h // 4, : w // 3] = 255  # a saturated block: the bicubic overshoot Pillow clips
    img[:, h // 4: h // 3, : w // 3] = 0
    return img


@requires_compiled
@pytest.mark.parametrize("shape", [(3, 37, 53), (3, 32, 32), (1, 29, 41)], ids=["rgb37x53", "square32", "gray"])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_pillow_ops_equal_pillow(shape, layout):
    c, h, w = shape
    g = torch.Generator().manual_seed(h * w)
    n = 60
    img = _image(h, w, c, seed=h)
    ops = torch.tensor([AF.PIL_OPS.index(AF.PIL_OPS[i % 5]) + len(AF.OPS) for i in range(n)])
    kinds = [AF.PIL_OPS[i % 5] for i in range(n)]
    span = {"pil_rotate": 30.0, "pil_shear_x": 0.3, "pil_shear_y": 0.3, "pil_translate_x": 0.45 * w,
            "pil_translate_y": 0.45 * h}
    u = torch.rand(n, generator=g, dtype=torch.float64)
    mags = torch.tensor([span[k] for k in kinds], dtype=torch.float64) * (u * 2 - 1)
    mags[0], mags[5], mags[10], mags[15] = 90.0, 180.0, -270.0, 0.0  # Pillow's transposes (90s on squares only)
    resample = torch.randint(1, 3, (n,), generator=g)
    batch = img.expand(n, -1, -1, -1).contiguous()
    if layout == "channels_last":
        batch = batch.contiguous(memory_format=torch.channels_last)
    fill = list(FILL[:c]) if c == 3 else [FILL[0]]
    out = AF._apply(batch, ops, mags, "bicubic", fill, resample, AF._ALL_OPS)
    for i in range(n):
        want = _pillow(img, kinds[i], float(mags[i]), int(resample[i]), fill)
        assert torch.equal(out[i], want), (kinds[i], float(mags[i]), int(resample[i]),
                                           int((out[i].int() - want.int()).abs().max()))


@requires_compiled
def test_pillow_ops_in_sequence_and_checks():
    img = _image(24, 31, 3, seed=5)
    batch = img.expand(3, -1, -1, -1).contiguous()
    rot, shx = len(AF.OPS) + 0, len(AF.OPS) + 1
    ops = torch.tensor([[shx, rot]] * 3)
    mags = torch.tensor([[0.2, 15.0], [-0.1, 180.0], [0.0, -25.0]], dtype=torch.float64)
    resample = torch.tensor([[1, 2], [2, 1], [2, 2]])
    out = AF._apply(batch, ops, mags, "bicubic", list(FILL), resample, AF._ALL_OPS)
    for i in range(3):
        want = _pillow(_pillow(img, "pil_shear_x", float(mags[i, 0]), int(resample[i, 0])), "pil_rotate",
                       float(mags[i, 1]), int(resample[i, 1]))
        assert torch.equal(out[i], want)
    with pytest.raises(ValueError, match="resample"):
        AF._apply(batch, ops, mags, "bicubic", None, torch.full((3, 2), 3), AF._ALL_OPS)
    with pytest.raises(ValueError, match="bicubic"):
        A.apply_ops(batch, torch.full((3,), AF.OPS.index("rotate")), 10.0, interpolation="bicubic")
    with pytest.raises(ValueError, match="not an index into OPS"):  # the public apply_ops takes OPS only
        A.apply_ops(batch, torch.full((3,), rot), 10.0, interpolation="bilinear")


GEOMETRY = ["Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel", "TranslateX", "TranslateY"]


@pytest.mark.parametrize("interpolation", ["bicubic", "random"])
def test_timm_rand_augment_geometry_replays_timms_own_functions(interpolation):
    """Each sample's two ops through timm's own op functions (its Pillow calls) with the twin's draws: equal."""
    taa = pytest.importorskip("timm.data.auto_augment", reason="timm is an optional test extra (pip install timm)")
    hparams = {"img_mean": FILL, "translate_const": 10}
    t = T.TimmRandAugment(GEOMETRY, num_layers=2, magnitude=9, magnitude_std=0.5, hparams=hparams,
                          interpolation=interpolation, generator=torch.Generator().manual_seed(3))
    img = _image(33, 47, 3, seed=7)
    batch = img.expand(200, -1, -1, -1).contiguous()
    params = t.make_params(batch)
    out = t.transform(batch, params)
    resample = params.get("resample", torch.full(params["ops"].shape, 2))
    assert ("resample" in params) == (interpolation == "random")
    for i in range(batch.shape[0]):
        arr = img.permute(1, 2, 0).numpy()
        im = Image.fromarray(arr)
        for k in range(2):
            name = t.op_names[int(params["ops"][i, k])]
            if name == "Identity":
                continue
            fn = taa.NAME_TO_OP[name]
            im = fn(im, float(params["magnitudes"][i, k]), fillcolor=FILL, resample=FILTERS[int(resample[i, k])])
        want = torch.from_numpy(np.asarray(im).copy()).permute(2, 0, 1)
        assert torch.equal(out[i], want), (i, params["ops"][i].tolist(), params["magnitudes"][i].tolist())


def test_timm_random_interpolation_draws_half_bicubic():
    t = T.TimmRandAugment(GEOMETRY, num_layers=2, interpolation="random", generator=torch.Generator().manual_seed(4))
    params = t.make_params(torch.zeros(2000, 3, 8, 8, dtype=torch.uint8))
    bicubic = int((params["resample"] == 2).sum())
    assert abs(bicubic - 2000) <= 3.29 * (4000 * 0.25) ** 0.5 + 1  # binomial(4000, 0.5), two-sided 0.001
    # the other draws are the fixed modes' draws: the same ops and magnitudes as with "bicubic"
    fixed = T.TimmRandAugment(GEOMETRY, num_layers=2, interpolation="bicubic",
                              generator=torch.Generator().manual_seed(4)).make_params(torch.zeros(2000, 3, 8, 8,
                                                                                                   dtype=torch.uint8))
    assert torch.equal(fixed["ops"], params["ops"]) and torch.equal(fixed["magnitudes"], params["magnitudes"])


def test_timm_augmix_and_autoaugment_take_random_interpolation():
    g = torch.Generator().manual_seed(5)
    batch = _image(20, 26, 3, seed=9).expand(8, -1, -1, -1).contiguous()
    for t in (A.from_timm_string("augmix-m5-w3", interpolation="random", generator=g),
              A.from_timm_string("original", interpolation="random", generator=g)):
        params = t.make_params(batch)
        assert params["resample"].shape == params["ops"].shape
        out = t.transform(batch, params)
        assert out.shape == batch.shape and out.dtype == torch.uint8
        with pytest.raises(ValueError, match="resample"):
            t.transform(batch, {k: v for k, v in params.items() if k != "resample"})


def test_from_pipeline_maps_timms_resampling_onto_pillows_geometry():
    td = pytest.importorskip("timm.data", reason="timm is an optional test extra (pip install timm)")
    import warnings

    from tensorops.data import from_pipeline

    for interp, want in (("bicubic", "bicubic"), ("random", "random"), ("bilinear", "bilinear")):
        t = td.create_transform(64, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", interpolation=interp)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            policy = from_pipeline(t).fused.augment[0]
            fast = from_pipeline(t, exact=False).fused.augment[0]
        assert isinstance(policy, T.TimmRandAugment) and policy.interpolation == want, (interp, policy.interpolation)
        assert fast.interpolation == "bilinear"


@requires_compiled
def test_pillow_ops_under_torch_compile_run_pillows_data_eagerly():
    """Pillow's data are Python math per distinct magnitude: under torch.compile that step runs eagerly (a graph
    break), and the batch equals the eager call's."""
    img = _image(16, 20, 3, seed=11)
    batch = img.expand(4, -1, -1, -1).contiguous()
    ops = torch.tensor([len(AF.OPS) + k for k in (0, 1, 3, 0)])
    mags = torch.tensor([12.5, 0.2, -3.5, 2.0], dtype=torch.float64)  # 2.0: a magnitude that looks like a filter
    resample = torch.tensor([2, 1, 2, 1])

    def run(b):
        return AF._apply(b, ops, mags, "bicubic", list(FILL), resample, AF._ALL_OPS)

    torch._dynamo.reset()
    assert torch.equal(torch.compile(run)(batch), run(batch))


@pytest.mark.parametrize("device", [CUDA_PARAM])
def test_pillow_ops_on_cuda_equal_the_cpu_kernel(device):
    """More samples than the kernel's parameters hold (the uploaded table), both filters, a fill, 1 and 3
    channels: the CUDA kernel's Pillow geometry equals the CPU kernel's (held to Pillow above)."""
    g = torch.Generator().manual_seed(12)
    for c in (3, 1):
        img = _image(45, 61, c, seed=c)
        n = 50
        ops = torch.tensor([len(AF.OPS) + (i % 5) for i in range(n)])
        mags = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) * torch.tensor(
            [30.0, 0.3, 0.3, 20.0, 20.0] * 10, dtype=torch.float64)
        resample = torch.randint(1, 3, (n,), generator=g)
        batch = img.expand(n, -1, -1, -1).contiguous()
        fill = list(FILL[:c]) if c == 3 else [FILL[0]]
        want = AF._apply(batch, ops, mags, "bicubic", fill, resample, AF._ALL_OPS)
        got = AF._apply(batch.to(device), ops, mags, "bicubic", fill, resample, AF._ALL_OPS)
        assert torch.equal(got.cpu(), want)

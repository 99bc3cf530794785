"""The batched policies of tensorops.augment (per-sample draws on uint8 batches) against torchvision v2, sample
by sample.

Every sample's draws are replayed through torchvision's own per-image code: the auto-augment policies through
``_apply_image_or_video_transform`` round by round (each round from our previous round's output, so a rounding
pixel of a geometric op cannot spread into the next op), and through v2's own ``forward`` with its random calls
scripted to give our draws (so the magnitudes, signs and probabilities are v2's, from v2's code). Colour ops must
be bit-identical; geometric ops (ShearX/Y, TranslateX/Y, Rotate) may differ where torchvision's float32
coordinates land within rounding distance of a pixel boundary: with nearest, at most 0.5% of the pixels (2 on
tiny images); with bilinear, by 1 step on at most 5% of them (2.5% measured on shears).
"""
from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path

import pytest
import torch

from conftest import CUDA_PARAM

v2 = pytest.importorskip("torchvision.transforms.v2", reason="the policies are checked against torchvision v2")
F = pytest.importorskip("torchvision.transforms.v2.functional")

import tensorops.augment as A  # noqa: E402
from tensorops.augment import _timm_tables as timm_tables  # noqa: E402
from tensorops.augment import timm as T  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from jpeg_cases import photo  # noqa: E402

GEOMETRIC = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "TranslateXRel", "TranslateYRel"}


def _rand_u8(shape, seed):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def _photos(n, size=224):
    return torch.stack([torch.from_numpy(photo(size, size, seed=s)).permute(2, 0, 1).contiguous() for s in range(n)])


# the batches of the replay tests: 3 and 1 channels at an odd size, and photo-like 224x224 images
BATCHES = {
    "rgb17x23": lambda: _rand_u8((6, 3, 17, 23), 1),
    "gray17x23": lambda: _rand_u8((6, 1, 17, 23), 2),
    "photo224": lambda: _photos(2),
}


@pytest.fixture(params=list(BATCHES), scope="module")
def batch(request):
    return BATCHES[request.param]()


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def assert_replays(ours, ref, *, geometric, interpolation="nearest", what=""):
    """Bit-identical, or for a geometric op: few differing pixels (by 1 step when bilinear)."""
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, what
    if not geometric:
        assert torch.equal(ours, ref), f"{what}: {(ours != ref).sum().item()} values differ"
        return
    differ = (ours != ref).any(dim=0)
    # nearest: a pixel whose source coordinate sits on a rounding boundary takes its neighbour; bilinear: the
    # interpolated value rounds one step the other way. Measured with the CPU kernels of 5cf426a: bilinear
    # ShearX/ShearY 1 step on up to 2.5% of a 224x224 photo's pixels (ShearY 0.1667), 4 of 391 on 17x23
    share = 0.005 if interpolation == "nearest" else 0.05
    allowed = max(2, int(share * differ.numel()))
    assert int(differ.sum()) <= allowed, f"{what}: {int(differ.sum())} of {differ.numel()} pixels differ"
    if interpolation == "bilinear" and differ.any():
        assert (ours.int() - ref.int()).abs().max() <= 1, what


@contextlib.contextmanager
def scripted_rng(monkeypatch, randints, rands):
    """torch.randint / torch.rand return the given values, in order (each filled to the requested size)."""
    ri, rr = iter(list(randints)), iter(list(rands))

    def size_of(args, kwargs):
        if "size" in kwargs:
            return tuple(kwargs["size"])
        if args and isinstance(args[-1], (tuple, list, torch.Size)):
            return tuple(args[-1])
        return ()

    def fake_randint(*args, **kwargs):
        return torch.full(size_of(args, kwargs), next(ri), dtype=torch.int64)

    def fake_rand(*args, **kwargs):
        return torch.full(size_of(args, kwargs), next(rr))

    with monkeypatch.context() as m:
        m.setattr(torch, "randint", fake_randint)
        m.setattr(torch, "rand", fake_rand)
        yield
    assert next(ri, None) is None and next(rr, None) is None, "v2 drew fewer values than were scripted"


def bin_of(space, name, magnitude, num_bins, h, w):
    """The bin v2's magnitudes table gives |magnitude| at (first one)."""
    table = space[name][0](num_bins, h, w)
    hits = [k for k in range(num_bins) if float(table[k]) == abs(magnitude)]
    assert hits, (name, magnitude)
    return hits[0]


def sign_draw(magnitude):
    return 0.25 if math.copysign(1.0, magnitude) < 0 else 0.75  # v2 negates when torch.rand(()) <= 0.5


def record_calls(monkeypatch, ref):
    calls = []

    def fake(image, transform_id, magnitude, interpolation, fill):
        calls.append((transform_id, magnitude))
        return image

    monkeypatch.setattr(ref, "_apply_image_or_video_transform", fake)
    return calls


# ------------------------------------------------------------------------------------------------------------
# the auto-augment policies, round by round through v2's _apply_image_or_video_transform
# ------------------------------------------------------------------------------------------------------------

POLICIES = {
    "TrivialAugmentWide": (lambda **kw: A.TrivialAugmentWide(**kw), v2.TrivialAugmentWide),
    "RandAugment": (lambda **kw: A.RandAugment(2, 9, **kw), lambda: v2.RandAugment(2, 9)),
    "RandAugment-3-5-11": (lambda **kw: A.RandAugment(3, 5, 11, **kw), lambda: v2.RandAugment(3, 5, 11)),
    "AutoAugment-imagenet": (lambda **kw: A.AutoAugment(**kw), v2.AutoAugment),
    "AutoAugment-cifar10": (lambda **kw: A.AutoAugment(A.AutoAugmentPolicy.CIFAR10, **kw),
                            lambda: v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10)),
    "AutoAugment-svhn": (lambda **kw: A.AutoAugment("svhn", **kw), lambda: v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)),
}


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("name", list(POLICIES))
def test_policy_replays_round_by_round_through_torchvision(name, interpolation, batch):
    ours, make_ref = POLICIES[name]
    t = ours(interpolation=interpolation, fill=None if batch.shape[1] == 1 else [10, 20, 30], generator=gen(3))
    ref = make_ref()
    params = t.make_params(batch)
    ops, mags = params["ops"], params["magnitudes"]
    assert ops.dtype == torch.int64 and mags.dtype == torch.float64 and ops.shape == mags.shape
    assert ops.shape[0] == batch.shape[0]
    fill = {"others": None} if batch.shape[1] == 1 else {"others": [10.0, 20.0, 30.0]}
    prev = batch
    for k in range(ops.shape[1]):
        out = t.transform(batch, {"ops": ops[:, : k + 1], "magnitudes": mags[:, : k + 1]})
        for i in range(batch.shape[0]):
            op, m = t.op_names[int(ops[i, k])], float(mags[i, k])
            expected = ref._apply_image_or_video_transform(prev[i], op, m, interpolation, fill)
            assert_replays(out[i], expected, geometric=op in GEOMETRIC, interpolation=interpolation,
                           what=f"{name} sample {i} round {k}: {op}({m})")
        prev = out
    assert torch.equal(t.transform(batch, params), prev)


@pytest.mark.parametrize("name", ["TrivialAugmentWide", "RandAugment", "RandAugment-3-5-11"])
def test_draws_are_what_v2s_forward_makes_of_the_same_random_numbers(name, monkeypatch):
    """v2's own forward, its torch.randint / torch.rand scripted with our draws, asks for the same ops and
    magnitudes (bins turned into magnitudes, signs, float32 linspace values: v2's code, not a copy)."""
    ours, make_ref = POLICIES[name]
    t = ours(generator=gen(5))
    batch = _rand_u8((40, 3, 9, 13), 4)
    params = t.make_params(batch)
    ref = make_ref()
    space = type(ref)._AUGMENTATION_SPACE
    assert t.op_names == tuple(space)
    calls = record_calls(monkeypatch, ref)
    for i in range(batch.shape[0]):
        randints, rands, expected = [], [], []
        for k in range(params["ops"].shape[1]):
            op, m = t.op_names[int(params["ops"][i, k])], float(params["magnitudes"][i, k])
            fn, signed = space[op]
            randints.append(t.op_names.index(op))
            if fn(2, 9, 13) is not None:
                if name == "TrivialAugmentWide":
                    randints.append(bin_of(space, op, m, t.num_magnitude_bins, 9, 13))
                if signed:
                    rands.append(sign_draw(m))
            expected.append((op, m))
        calls.clear()
        with scripted_rng(monkeypatch, randints, rands):
            ref(batch[i])
        assert calls == expected
        assert [math.copysign(1, m) for _, m in calls] == [math.copysign(1, m) for _, m in expected]


def test_autoaugment_draws_are_v2s_sub_policies_probabilities_and_signs(monkeypatch):
    batch = _rand_u8((60, 3, 9, 13), 6)
    for policy in ("imagenet", "cifar10", "svhn"):
        t = A.AutoAugment(policy, generator=gen(7))
        ref = v2.AutoAugment(v2.AutoAugmentPolicy(policy))
        assert t.op_names == ("Identity",) + tuple(ref._AUGMENTATION_SPACE)
        params = t.make_params(batch)
        calls = record_calls(monkeypatch, ref)
        for i in range(batch.shape[0]):
            p = int(params["policy"][i])
            randints, rands, expected = [p], [], []
            for k, (op, prob, _) in enumerate(ref._policies[p]):
                applied = bool(params["applied"][i, k])
                rands.append(0.0 if applied else 1.0)
                if not applied:
                    assert params["ops"][i, k] == 0 and params["magnitudes"][i, k] == 0.0  # replays as Identity
                    assert prob < 1.0
                    continue
                m = float(params["magnitudes"][i, k])
                assert t.op_names[int(params["ops"][i, k])] == op
                fn, signed = ref._AUGMENTATION_SPACE[op]
                if fn(10, 9, 13) is not None and signed:
                    rands.append(sign_draw(m))
                expected.append((op, m))
            calls.clear()
            with scripted_rng(monkeypatch, randints, rands):
                ref(batch[i])
            assert calls == expected, (policy, i)


# ------------------------------------------------------------------------------------------------------------
# AugMix: chains and mixing through v2.AugMix.forward itself
# ------------------------------------------------------------------------------------------------------------

class _ScriptedAugMix(v2.AugMix):
    def __init__(self, weights, **kw):
        super().__init__(**kw)
        self.weights = list(weights)

    def _sample_dirichlet(self, params):
        return self.weights.pop(0)


def _augmix_script(t, params, i, h, w):
    space = t._SPACE
    randints, rands = [], []
    for c in range(params["ops"].shape[1]):
        depth = int(params["depths"][i, c])
        if t.chain_depth <= 0:
            randints.append(depth)
        for s in range(params["ops"].shape[2]):
            op, m = t.op_names[int(params["ops"][i, c, s])], float(params["magnitudes"][i, c, s])
            if s >= depth:
                assert op == "Identity" and m == 0.0  # padding
                continue
            randints.append(t.op_names.index(op) - 1)  # v2's space has no Identity
            fn, signed = space[op]
            if fn(10, h, w) is not None:
                randints.append(bin_of(space, op, m, 10, h, w))
                if signed:
                    rands.append(sign_draw(m))
    return randints, rands


def _v2_augmix(t, params, i, image, monkeypatch):
    ref = _ScriptedAugMix([params["beta"][i: i + 1], params["dirichlet"][i: i + 1]], severity=t.severity,
                          mixture_width=t.mixture_width, chain_depth=t.chain_depth, alpha=t.alpha,
                          all_ops=t.all_ops, interpolation=t.interpolation)
    randints, rands = _augmix_script(t, params, i, image.shape[-2], image.shape[-1])
    with scripted_rng(monkeypatch, randints, rands):
        return ref(image)


@pytest.mark.parametrize("kwargs", [{}, {"severity": 7, "mixture_width": 2, "chain_depth": 2, "alpha": 0.5,
                                         "all_ops": False, "interpolation": "nearest"}])
def test_augmix_is_v2s_forward_bit_for_bit_with_colour_chains(kwargs, batch, monkeypatch):
    t = A.AugMix(generator=gen(11), **kwargs)
    params = t.make_params(batch)
    assert params["beta"].dtype == torch.float32 and params["dirichlet"].dtype == torch.float32
    assert params["ops"].shape == (batch.shape[0], t.mixture_width, t.chain_depth if t.chain_depth > 0 else 3)
    # geometric links replaced by Equalize, so every pixel must be v2's exactly (mixing order included)
    geo = torch.tensor([t.op_names.index(n) for n in t.op_names if n in GEOMETRIC])
    is_geo = torch.isin(params["ops"], geo)
    colour = dict(params, ops=torch.where(is_geo, t.op_names.index("Equalize"), params["ops"]),
                  magnitudes=torch.where(is_geo, 0.0, params["magnitudes"]))
    out = t.transform(batch, colour)
    for i in range(batch.shape[0]):
        assert torch.equal(out[i], _v2_augmix(t, colour, i, batch[i], monkeypatch)), i


def test_augmix_with_geometric_chains_differs_only_at_rounding_pixels(monkeypatch):
    batch = _rand_u8((6, 3, 17, 23), 12)
    t = A.AugMix(generator=gen(13))
    params = t.make_params(batch)
    out = t.transform(batch, params)
    for i in range(batch.shape[0]):
        names = {t.op_names[int(o)] for o in params["ops"][i].flatten()}
        ref = _v2_augmix(t, params, i, batch[i], monkeypatch)
        if not names & GEOMETRIC:
            assert torch.equal(out[i], ref)
        else:  # a chain's rounding pixel reaches the mix weighted: at most a few pixels
            assert int((out[i] != ref).any(0).sum()) <= 0.02 * ref[0].numel() + 2


# ------------------------------------------------------------------------------------------------------------
# ColorJitter, RandomGrayscale
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0.4, 0.4, 0.4, 0.1), (None, (0.5, 1.5), None, (-0.5, 0.5)), (0.8, None, 0.0, None)])
def test_color_jitter_replays_per_sample_in_its_order(args, batch):
    t = A.ColorJitter(*args, generator=gen(17))
    params = t.make_params(batch)
    order, factors = params["order"], params["factors"]
    assert order.dtype == torch.int64 and factors.dtype == torch.float64
    assert torch.equal(order.sort(1).values, torch.arange(4).expand_as(order))
    ref = v2.ColorJitter(*args)
    for k, rng in enumerate((ref.brightness, ref.contrast, ref.saturation, ref.hue)):
        if rng is None:
            assert torch.isnan(factors[:, k]).all()
        else:
            assert ((factors[:, k] >= rng[0]) & (factors[:, k] <= rng[1])).all()
            assert torch.equal(factors[:, k].float().double(), factors[:, k])  # float32 draws, as v2's
    out = t.transform(batch, params)
    for i in range(batch.shape[0]):
        b, c, s, h = (None if math.isnan(v) else v for v in factors[i].tolist())
        expected = ref.transform(batch[i], dict(fn_idx=order[i], brightness_factor=b, contrast_factor=c,
                                                saturation_factor=s, hue_factor=h))
        assert torch.equal(out[i], expected), i


def test_color_jitter_orders_are_uniform_permutations():
    t = A.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=gen(19))
    order = t.make_params(torch.zeros(2400, 3, 1, 1, dtype=torch.uint8))["order"]
    counts = torch.unique(order, dim=0, return_counts=True)[1]
    assert len(counts) == 24 and counts.min() > 60 and counts.max() < 145  # expected 100 each


def test_random_grayscale_replays_and_keeps_channels(batch):
    t = A.RandomGrayscale(0.5, generator=gen(23))
    params = t.make_params(batch)
    out = t.transform(batch, params)
    assert out.shape == batch.shape
    for i in range(batch.shape[0]):
        expected = F.rgb_to_grayscale(batch[i], num_output_channels=batch.shape[1]) if params["apply"][i] else batch[i]
        assert torch.equal(out[i], expected)
    draws = t.make_params(torch.zeros(4000, 3, 1, 1, dtype=torch.uint8))["apply"]
    assert 0.45 < draws.double().mean() < 0.55


# ------------------------------------------------------------------------------------------------------------
# RandomErasing
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("kwargs", [{}, {"value": (10, 200, 30)}, {"value": "random"}, {"mode": "pixel"},
                                    {"mode": "rand"}, {"value": 7, "scale": (0.1, 0.5), "ratio": (0.5, 2.0)}])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_random_erasing_replays_v2s_erase(kwargs, dtype, inplace):
    for b in (_rand_u8((8, 3, 17, 23), 29), _rand_u8((8, 1, 17, 23), 30)):
        if "value" in kwargs and isinstance(kwargs["value"], tuple) and b.shape[1] == 1:
            continue
        batch = b if dtype == torch.uint8 else b.float() / 255
        t = A.RandomErasing(p=0.7, generator=gen(31), inplace=inplace, **kwargs)
        params = t.make_params(batch)
        boxes, value = params["boxes"], params["value"]
        given = batch.clone()
        out = t.transform(given, params)
        # inplace: the given batch is the output; otherwise it is left as it was
        assert (out is given) if inplace else torch.equal(given, batch)
        c, start = batch.shape[1], 0
        for n in range(batch.shape[0]):
            i, j, h, w = boxes[n].tolist()
            if h == 0:
                assert torch.equal(out[n], batch[n])
                continue
            if value.ndim == 1:  # pixel noise: the erased boxes' (C, h, w) one after another
                v = value[start:start + c * h * w].view(c, h, w)
                start += c * h * w
                if dtype == torch.float32:
                    assert v.std() > 0.5  # standard normal noise, as v2's "random" and timm's "pixel"
            else:
                v = value[n].to(batch.dtype)[:, None, None]
            assert torch.equal(out[n], F.erase(batch[n], i, j, h, w, v))
        assert start == (value.numel() if value.ndim == 1 else 0)


def test_random_erasing_takes_a_batch_shaped_value_and_names_a_short_one():
    batch = _rand_u8((4, 3, 9, 9), 35).float()
    t = A.RandomErasing(p=1.0, value="random", generator=gen(36))
    params = t.make_params(batch)
    full = torch.randn(batch.shape, generator=gen(37))
    out = t.transform(batch, {"boxes": params["boxes"], "value": full})
    for n, (i, j, h, w) in enumerate(params["boxes"].tolist()):
        assert torch.equal(out[n], F.erase(batch[n], i, j, h, w, full[n, :, i:i + h, j:j + w]))
    with pytest.raises(ValueError, match=r"params\['value'\] holds"):
        t.transform(batch, {"boxes": params["boxes"], "value": params["value"][1:]})


def test_random_erasing_noise_on_uint8_is_uniform_bytes():
    batch = torch.zeros(400, 3, 16, 16, dtype=torch.uint8)
    rand = A.RandomErasing(1.0, mode="rand", generator=gen(33)).make_params(batch)["value"]
    assert rand.shape == (400, 3) and rand.min() == 0 and rand.max() == 255 and abs(rand.mean() - 127.5) < 5
    p = A.RandomErasing(1.0, value="random", generator=gen(34)).make_params(batch)
    noise = p["value"]
    b = p["boxes"]
    # noise is drawn for the boxes' pixels only: C * sum(h * w) bytes, uniform
    assert noise.dtype == torch.uint8 and noise.numel() == 3 * int((b[:, 2] * b[:, 3]).sum()) > 0
    assert abs(noise.double().mean() - 127.5) < 1 and len(torch.unique(noise)) == 256


def test_random_erasing_boxes_follow_v2s_get_params():
    H, W = 40, 50
    t = A.RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), generator=gen(37))
    boxes = t.make_params(torch.zeros(4000, 1, H, W, dtype=torch.uint8))["boxes"]
    erased = boxes[:, 2] > 0
    assert 0.45 < erased.double().mean() < 0.55
    i, j, h, w = boxes[erased].unbind(1)
    assert ((h < H) & (w < W) & (i >= 0) & (j >= 0) & (i + h <= H) & (j + w <= W)).all()
    area = (h * w).double() / (H * W)
    # rounding h and w moves the area a little outside [0.02, 0.33]
    assert area.min() > 0.01 and area.max() < 0.40 and 0.14 < area.mean() < 0.22
    # the corner is uniform: both halves of the free range are hit about equally
    assert 0.4 < (i <= (H - h) / 2).double().mean() < 0.6


# ------------------------------------------------------------------------------------------------------------
# MixUp, CutMix
# ------------------------------------------------------------------------------------------------------------

def test_mixup_per_batch_is_v2s_mixup_exactly():
    batch = torch.rand(8, 3, 17, 23, generator=gen(41))
    labels = torch.randint(0, 10, (8,), generator=gen(42))
    t = A.MixUp(alpha=0.4, num_classes=10, generator=gen(43))
    params = t.make_params(batch)
    lam = float(params["lam"][0])
    assert (params["lam"] == lam).all() and torch.equal(params["partner"], torch.arange(8).roll(1))
    ref = v2.MixUp(alpha=0.4, num_classes=10)
    p = {"lam": lam, "labels": labels, "batch_size": 8}
    assert torch.equal(t.transform(batch, params), ref.transform(batch, p))
    soft = t.transform_labels(labels, params)
    assert soft.dtype == torch.float32 and torch.equal(soft, ref.transform(labels, p))
    # uint8: the same float32 mix, rounded
    u8 = (batch * 255).to(torch.uint8)
    expected = ref.transform(u8.float(), p).round().clamp(0, 255).to(torch.uint8)
    assert torch.equal(t.transform(u8, params), expected)


def test_mixup_per_sample_is_timms_elem_mode():
    batch = torch.rand(7, 3, 9, 11, generator=gen(47))
    labels = torch.randint(0, 5, (7,), generator=gen(48))
    t = A.MixUp(alpha=1.0, num_classes=5, per_sample=True, generator=gen(49))
    params = t.make_params(batch)
    assert len(set(params["lam"].tolist())) == 7
    out, soft = t.transform(batch, params), t.transform_labels(labels, params)
    onehot = torch.nn.functional.one_hot(labels, 5).float()
    for i in range(7):
        j, lam = 6 - i, float(params["lam"][i])
        assert torch.equal(out[i], batch[i] * lam + batch[j] * (1 - lam))  # timm's x[i] * lam + x_orig[j] * (1 - lam)
        assert torch.allclose(soft[i], onehot[i] * lam + onehot[j] * (1 - lam))
    assert torch.allclose(soft.sum(1), torch.ones(7))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_cutmix_per_batch_is_v2s_cutmix(dtype):
    b = _rand_u8((8, 3, 17, 23), 53)
    batch = b if dtype == torch.uint8 else b.float()
    labels = torch.randint(0, 10, (8,), generator=gen(54))
    t = A.CutMix(alpha=1.0, num_classes=10, generator=gen(55))
    ref = v2.CutMix(alpha=1.0, num_classes=10)
    for _ in range(5):
        params = t.make_params(batch)
        boxes = params["boxes"]
        assert (boxes == boxes[0]).all()
        y1, x1, h, w = boxes[0].tolist()
        lam = float(params["lam"][0])
        assert lam == float(1.0 - (w * h) / (23 * 17))  # v2's lambda correction
        p = {"box": (x1, y1, x1 + w, y1 + h), "lam_adjusted": lam, "labels": labels, "batch_size": 8}
        assert torch.equal(t.transform(batch, params), ref.transform(batch, p))
        assert torch.equal(t.transform_labels(labels, params), ref.transform(labels, p))


@pytest.mark.parametrize("per_sample", [False, True])
@pytest.mark.parametrize("n", [1, 2, 7, 8])
@pytest.mark.parametrize("cls", ["MixUp", "CutMix"])
def test_mix_inplace_writes_the_same_values_into_the_given_batch(cls, n, per_sample):
    """inplace=True walks the pairing's cycles (one sample saved per cycle): the values of the copying path, which
    the tests above hold to v2 and timm; a partner that is not a permutation goes the copying way."""
    batch = torch.rand(n, 3, 13, 17, generator=gen(60 + n))
    t = getattr(A, cls)(alpha=0.7, num_classes=4, per_sample=per_sample, generator=gen(61))
    params = t.make_params(batch)
    want = t.transform(batch, params)
    inplace = getattr(A, cls)(alpha=0.7, num_classes=4, per_sample=per_sample, inplace=True)
    given = batch.clone()
    out = inplace.transform(given, params)
    assert out is given and torch.equal(out, want)
    if cls == "MixUp" and not per_sample:
        rolled = {"lam": params["lam"], "partner": torch.arange(n).roll(1)}
        ref = v2.MixUp(alpha=0.7, num_classes=4)
        assert torch.equal(inplace.transform(batch.clone(), rolled),
                           ref.transform(batch, {"lam": float(params["lam"][0]), "labels": None, "batch_size": n}))
        odd = {"lam": params["lam"], "partner": torch.zeros(n, dtype=torch.int64)}  # not a permutation
        assert torch.equal(inplace.transform(batch.clone(), odd), t.transform(batch, odd))


def test_cutmix_boxes_are_v2s_make_params_of_the_same_draws(monkeypatch):
    batch = _rand_u8((1, 3, 17, 23), 56)
    t = A.CutMix(alpha=0.6, num_classes=10, per_sample=True, generator=gen(57))
    params = t.make_params(_rand_u8((300, 3, 17, 23), 58))
    assert params["lam_drawn"].min() < 0.05 and params["lam_drawn"].max() > 0.95
    ref = v2.CutMix(alpha=0.6, num_classes=10)
    for i in range(300):
        monkeypatch.setattr(ref._dist, "sample", lambda shape=(), i=i: params["lam_drawn"][i].float())
        r_y, r_x = params["center"][i].tolist()
        with scripted_rng(monkeypatch, [r_x, r_y], []):
            p = ref.make_params([batch])
        y, x, h, w = params["boxes"][i].tolist()
        assert p["box"] == (x, y, x + w, y + h) and p["lam_adjusted"] == float(params["lam"][i]), i


def test_cutmix_per_sample_boxes_and_lambdas():
    batch = _rand_u8((64, 3, 17, 23), 59)
    t = A.CutMix(alpha=1.0, num_classes=4, per_sample=True, generator=gen(60))
    params = t.make_params(batch)
    out = t.transform(batch, params)
    assert len({tuple(b) for b in params["boxes"].tolist()}) > 32
    for i in range(64):
        y, x, h, w = params["boxes"][i].tolist()
        expected = batch[i].clone()
        expected[:, y:y + h, x:x + w] = batch[63 - i, :, y:y + h, x:x + w]
        assert torch.equal(out[i], expected)
        assert float(params["lam"][i]) == 1.0 - (h * w) / (17 * 23)
    soft = t.transform_labels(torch.arange(64) % 4, params)
    assert torch.allclose(soft.sum(1), torch.ones(64))


# ------------------------------------------------------------------------------------------------------------
# every transform: independence, repeatability, distributions, N = 0 / 1, channels_last, devices
# ------------------------------------------------------------------------------------------------------------

ALL = {
    "TrivialAugmentWide": lambda g: A.TrivialAugmentWide(generator=g),
    "RandAugment": lambda g: A.RandAugment(generator=g),
    "AutoAugment": lambda g: A.AutoAugment(generator=g),
    "AugMix": lambda g: A.AugMix(generator=g),
    "ColorJitter": lambda g: A.ColorJitter(0.4, 0.4, 0.4, 0.1, generator=g),
    "RandomGrayscale": lambda g: A.RandomGrayscale(0.5, generator=g),
    "RandomErasing": lambda g: A.RandomErasing(0.5, value="random", generator=g),
    "timm-rand": lambda g: A.from_timm_string("rand-m9-mstd0.5-inc1", generator=g),
    "timm-augmix": lambda g: A.from_timm_string("augmix-m5-w3", generator=g),
    "timm-original": lambda g: A.from_timm_string("original", generator=g),
}


def _params_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("name", list(ALL))
def test_samples_draw_independently_and_seeds_repeat(name):
    batch = _rand_u8((32, 3, 12, 14), 61)
    t = ALL[name](gen(62))
    p1 = t.make_params(batch)
    out1 = t.transform(batch, p1)
    # per-sample independence: 32 samples do not all draw the same, nor come out alike
    first = next(iter(p1.values()))
    assert len({tuple(r.flatten().tolist()) for r in first}) > 1
    assert len({out1[i].sum().item() for i in range(32)}) > 8
    # same seed, same params and output; a generator= at make_params overrides the constructor's
    t2 = ALL[name](gen(62))
    p2 = t2.make_params(batch)
    assert _params_equal(p1, p2) and torch.equal(t2.transform(batch, p2), out1)
    assert _params_equal(t2.make_params(batch, generator=gen(62)), p1)
    assert not _params_equal(t.make_params(batch), p1)  # the generator moves on
    # forward is make_params + transform, from the global generator when none is given
    torch.manual_seed(5)
    a = ALL[name](None)(batch)
    torch.manual_seed(5)
    assert torch.equal(ALL[name](None)(batch), a)


@pytest.mark.parametrize("name", list(ALL))
def test_empty_single_and_channels_last_batches(name):
    t = ALL[name](gen(67))
    empty = torch.zeros(0, 3, 9, 11, dtype=torch.uint8)
    assert t(empty).shape == empty.shape
    one = _rand_u8((1, 3, 9, 11), 68)
    assert t(one).shape == one.shape
    batch = _rand_u8((5, 3, 13, 10), 69)
    params = t.make_params(batch)
    cl = batch.contiguous(memory_format=torch.channels_last)
    out = t.transform(cl, params)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(out, t.transform(batch, params))
    assert torch.equal(cl, batch)  # input untouched


@pytest.mark.parametrize("make", [lambda g: A.RandomErasing(1.0, value="random", generator=g),
                                  lambda g: A.RandomErasing(1.0, mode="rand", generator=g),
                                  lambda g: A.MixUp(num_classes=3, generator=g),
                                  lambda g: A.CutMix(num_classes=3, per_sample=True, generator=g)])
def test_float_batches_keep_channels_last(make):
    t = make(gen(70))
    batch = torch.rand(5, 3, 13, 10, generator=gen(71))
    params = t.make_params(batch)
    cl = batch.contiguous(memory_format=torch.channels_last)
    out = t.transform(cl, params)
    assert out.is_contiguous(memory_format=torch.channels_last) and torch.equal(out, t.transform(batch, params))


def test_auto_augment_op_frequencies_are_uniform():
    """2,000 draws, fixed seed: chi-square against uniform op choice well below a bound it cannot reach by chance
    (and the seed is fixed, so it cannot flake)."""
    batch = torch.zeros(2000, 3, 8, 8, dtype=torch.uint8)
    for t in (A.TrivialAugmentWide(generator=gen(71)), A.RandAugment(1, generator=gen(72))):
        params = t.make_params(batch)
        counts = torch.bincount(params["ops"][:, 0], minlength=len(t.op_names)).double()
        expected = 2000 / len(t.op_names)
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 45, (type(t).__name__, counts)  # 13 degrees of freedom: p < 1e-4
        signed_ops = torch.tensor([k for k, (_, sgn) in enumerate(t._SPACE.values()) if sgn])
        signed = torch.isin(params["ops"][:, 0], signed_ops)
        assert signed.sum() > 1000
        neg = torch.signbit(params["magnitudes"][:, 0][signed]).double().mean()
        assert 0.45 < neg < 0.55  # v2: negated when torch.rand(()) <= 0.5
    t = A.TrivialAugmentWide(generator=gen(73))
    m = t.make_params(batch)
    rot = m["ops"][:, 0] == t.op_names.index("Rotate")
    assert len(set(m["magnitudes"][rot, 0].abs().tolist())) > 20  # many of the 31 bins
    aa = A.AutoAugment(generator=gen(74)).make_params(batch)
    counts = torch.bincount(aa["policy"], minlength=25).double()
    assert float(((counts - 80) ** 2 / 80).sum()) < 70  # 24 degrees of freedom
    sub = A.AutoAugment()._sub_probs[aa["policy"]]
    assert abs(aa["applied"].double().mean() - sub.mean()) < 0.03


@pytest.mark.parametrize("name", ["TrivialAugmentWide", "RandAugment", "AutoAugment-imagenet"])
def test_magnitude_tables_are_torchvisions(name):
    from tensorops.augment._op_tables import _magnitude_table

    t, ref = POLICIES[name][0](), POLICIES[name][1]()
    space = type(ref)._AUGMENTATION_SPACE
    for bins, h, w in ((31, 224, 224), (11, 17, 23), (10, 5, 300)):
        table, signed = _magnitude_table(t._SPACE, bins, h, w)
        for k, op in enumerate(t.op_names):
            if op not in space:
                assert op == "Identity" and not table[k].any()
                continue
            fn, sgn = space[op]
            mags = fn(bins, h, w)
            assert bool(signed[k]) == (sgn and mags is not None), op
            assert torch.equal(table[k], torch.zeros(bins, dtype=torch.float64) if mags is None else mags.double()), op


def test_trivial_augment_draws_every_bin_of_every_op():
    t = A.TrivialAugmentWide(generator=gen(75))
    p = t.make_params(torch.zeros(10000, 3, 20, 30, dtype=torch.uint8))
    space = v2.TrivialAugmentWide._AUGMENTATION_SPACE
    for k, op in enumerate(t.op_names):
        m = p["magnitudes"][p["ops"][:, 0] == k, 0]
        mags = space[op][0](31, 20, 30)
        values = {0.0} if mags is None else {float(v) for v in mags}
        if space[op][1] and mags is not None:
            values |= {-v for v in values}
        assert set(m.tolist()) == values, op


def test_augmix_depths_weights_and_magnitudes():
    t = A.AugMix(severity=3, generator=gen(79))
    p = t.make_params(torch.zeros(3000, 3, 30, 30, dtype=torch.uint8))
    assert set(p["depths"].flatten().tolist()) == {1, 2, 3}
    assert 1.9 < p["depths"].double().mean() < 2.1
    assert torch.allclose(p["dirichlet"].sum(1), torch.ones(3000))
    assert torch.allclose(p["beta"].sum(1), torch.ones(3000))
    assert 0.48 < p["beta"][:, 0].double().mean() < 0.52
    # severity 3: bins 0..2 of 10 -> Rotate's magnitudes are 0, 3.33 or 6.67 degrees
    rot = p["ops"] == t.op_names.index("Rotate")
    assert set(round(abs(v), 2) for v in p["magnitudes"][rot].tolist()) == {0.0, 3.33, 6.67}


@pytest.mark.parametrize("device", [CUDA_PARAM])
def test_params_replay_the_same_on_cuda(device):
    batch = _photos(2, 64)
    for name, make in ALL.items():
        t = make(gen(83))
        params = t.make_params(batch)
        assert torch.equal(t.transform(batch.to(device), params).cpu(), t.transform(batch, params)), name


# ------------------------------------------------------------------------------------------------------------
# bad arguments: errors name what is wrong
# ------------------------------------------------------------------------------------------------------------

def test_bad_batches_are_named():
    u8 = _rand_u8((2, 3, 8, 8), 89)
    for t in (A.TrivialAugmentWide(), A.RandAugment(), A.AutoAugment(), A.AugMix(), A.ColorJitter(0.1),
              A.RandomGrayscale(), A.from_timm_string("rand-m9")):
        with pytest.raises(TypeError, match="uint8"):
            t(u8.float())
        with pytest.raises(ValueError, match="2 channels"):
            t(_rand_u8((2, 2, 8, 8), 90))
        with pytest.raises(ValueError, match="4 dims"):
            t(u8[0])
        with pytest.raises(TypeError, match="torch.Tensor"):
            t(u8.numpy())
    with pytest.raises(ValueError, match="2 channels"):
        A.RandomErasing()(_rand_u8((2, 2, 8, 8), 90))


def test_bad_params_are_named():
    u8 = _rand_u8((4, 3, 8, 8), 91)
    t = A.RandAugment(generator=gen(92))
    p = t.make_params(u8)
    with pytest.raises(ValueError, match=r"params\['ops'\].*4 rows"):
        t.transform(u8, {"ops": p["ops"][:3], "magnitudes": p["magnitudes"]})
    with pytest.raises(ValueError, match=r"params\['magnitudes'\]"):
        t.transform(u8, {"ops": p["ops"], "magnitudes": p["magnitudes"].float()})
    with pytest.raises(ValueError, match="op_names"):
        t.transform(u8, {"ops": p["ops"] + 100, "magnitudes": p["magnitudes"]})
    with pytest.raises(KeyError, match="magnitudes"):
        t.transform(u8, {"ops": p["ops"]})
    c = A.ColorJitter(0.2)
    with pytest.raises(ValueError, match=r"params\['factors'\]"):
        c.transform(u8, {"order": c.make_params(u8)["order"], "factors": torch.zeros(3, 4, dtype=torch.float64)})


@pytest.mark.parametrize("make, match", [
    (lambda: A.RandAugment(num_ops=-1), "num_ops"),
    (lambda: A.RandAugment(magnitude=31), "magnitude"),
    (lambda: A.TrivialAugmentWide(num_magnitude_bins=1), "num_magnitude_bins"),
    (lambda: A.TrivialAugmentWide(interpolation="bicubic"), "interpolation"),
    (lambda: A.AutoAugment("imagenet21k"), "policy"),
    (lambda: A.AugMix(severity=11), "severity"),
    (lambda: A.AugMix(mixture_width=0), "mixture_width"),
    (lambda: A.AugMix(chain_depth=0), "chain_depth"),
    (lambda: A.AugMix(alpha=0), "alpha"),
    (lambda: A.ColorJitter(brightness=-0.1), "brightness"),
    (lambda: A.ColorJitter(hue=0.6), "hue"),
    (lambda: A.RandomGrayscale(p=1.5), "p must"),
    (lambda: A.RandomErasing(scale=(0.5, 1.5)), "scale"),
    (lambda: A.RandomErasing(value="noise"), "random"),
    (lambda: A.RandomErasing(mode="gauss"), "mode"),
    (lambda: A.MixUp(alpha=0.0), "alpha"),
    (lambda: A.CutMix(num_classes=0), "num_classes"),
    (lambda: A.TrivialAugmentWide(generator=3), "generator"),
    (lambda: A.from_timm_string("rand-m9-q3"), "section 'q'"),
    (lambda: A.from_timm_string("augmix-m3-b1"), "blended"),
    (lambda: A.from_timm_string("trivial"), "config_str"),
])
def test_bad_constructor_arguments_are_named(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_bad_labels_and_erasing_values_are_named():
    u8 = _rand_u8((4, 3, 8, 8), 93)
    with pytest.raises(ValueError, match="num_classes must be given"):
        A.MixUp()(u8, torch.arange(4))
    with pytest.raises(ValueError, match="N = 4"):
        A.CutMix(num_classes=5)(u8, torch.arange(3))
    with pytest.raises(ValueError, match="num_classes is 5"):
        A.MixUp(num_classes=5)(u8, torch.zeros(4, 6))
    with pytest.raises(ValueError, match="2 numbers but batch has 3 channels"):
        A.RandomErasing(value=(1, 2))(u8)


# ------------------------------------------------------------------------------------------------------------
# timm's policy strings
# ------------------------------------------------------------------------------------------------------------

def test_timm_strings_build_timms_policies():
    r = A.from_timm_string("rand-m9-mstd0.5-inc1")
    assert isinstance(r, T.TimmRandAugment) and r.num_layers == 2 and r.magnitude == 9 and r.magnitude_std == 0.5
    assert r.op_names[1:] == tuple(timm_tables._RAND_INCREASING_TRANSFORMS) and r.prob == 0.5
    assert A.from_timm_string("rand-m9-mstd0.5").op_names[1:] == tuple(timm_tables._RAND_TRANSFORMS)
    assert A.from_timm_string("rand-m7-mstd101").magnitude_std == float("inf")
    w = A.from_timm_string("rand-n3-w0")
    assert w.num_layers == 3 and w.magnitude == 10 and w.choice_weights is not None
    m = A.from_timm_string("augmix-m5-w3")
    assert isinstance(m, T.TimmAugMix) and (m.severity, m.width, m.depth, m.magnitude_std) == (5, 3, -1, float("inf"))
    assert m.op_names[1:] == tuple(timm_tables._AUGMIX_TRANSFORMS)
    for name in ("original", "originalr", "v0", "v0r"):
        a = A.from_timm_string(name + "-mstd0.5")
        assert isinstance(a, T.TimmAutoAugment) and a.policy == name and a.magnitude_std == 0.5
    assert "PosterizeIncreasing" in A.from_timm_string("v0r").op_names


def test_timm_rand_draws_follow_timms_schedule():
    t = A.from_timm_string("rand-m9-mstd0.5-inc1", generator=gen(97))
    p = t.make_params(torch.zeros(4000, 3, 20, 20, dtype=torch.uint8))
    applied = p["ops"] > 0
    assert 0.47 < applied.double().mean() < 0.53  # each op with probability 0.5
    lv = p["levels"][applied]
    assert lv.min() >= 0 and lv.max() <= 10 and abs(lv.mean() - 9) < 0.05 and 0.4 < lv.std() < 0.55
    names = [t.op_names[int(o)] for o in p["ops"][applied]]
    mags = p["magnitudes"][applied]
    for name, lo, hi in (("Rotate", -30, 30), ("ShearX", -0.3, 0.3), ("TranslateXRel", -0.45, 0.45),
                         ("ColorIncreasing", 0.1, 1.9), ("PosterizeIncreasing", 0, 4), ("SolarizeIncreasing", 0, 256),
                         ("SolarizeAdd", 0, 110)):
        v = torch.tensor([m for n, m in zip(names, mags.tolist()) if n == name], dtype=torch.float64)
        assert len(v) > 50 and v.min() >= lo and v.max() <= hi, name
    inc = torch.tensor([m for n, m in zip(names, mags.tolist()) if n == "ContrastIncreasing"])
    assert 0.4 < (inc < 1).double().mean() < 0.6  # timm negates the increasing enhance level half the time
    counts = torch.bincount(p["ops"][applied], minlength=len(t.op_names))[1:].double()
    assert counts.min() > 0.75 * counts.mean() and counts.max() < 1.25 * counts.mean()
    # w0: weighted choice without replacement; Posterize and Invert weigh 0
    w = A.from_timm_string("rand-m9-w0", generator=gen(98)).make_params(torch.zeros(500, 3, 4, 4, dtype=torch.uint8))
    t0 = A.from_timm_string("rand-m9-w0")
    assert not torch.isin(w["ops"], torch.tensor([t0.op_names.index("Posterize"), t0.op_names.index("Invert")])).any()


def test_timm_autoaugment_applies_each_op_with_its_probability():
    t = A.from_timm_string("v0", generator=gen(99))
    p = t.make_params(torch.zeros(20000, 3, 4, 4, dtype=torch.uint8))
    probs = t._sub_probs[p["policy"]]
    applied = p["ops"] > 0
    for prob in (0.2, 0.4, 0.6, 0.8):
        sel = probs == prob
        assert abs(applied[sel].double().mean() - prob) < 0.03, prob
    assert applied[probs == 1.0].all() and not applied[probs == 0.0].any()
    assert (p["levels"][applied] == t._sub_levels[p["policy"]][applied]).all()  # no mstd: the policy's levels


def test_timm_ops_run_torchvisions_ops_with_timms_arguments():
    batch = _rand_u8((64, 3, 15, 19), 101)
    t = A.from_timm_string("rand-m9-mstd0.5-inc1-n1", generator=gen(102))
    params = t.make_params(batch)
    out = t.transform(batch, params)
    fill = [124.0, 116.0, 104.0]
    seen = set()
    for i in range(64):
        name, a = t.op_names[int(params["ops"][i, 0])], float(params["magnitudes"][i, 0])
        img = batch[i]
        seen.add(name)
        if name == "Identity" or name == "SolarizeIncreasing" and a > 255:
            expected = img
        elif name == "Rotate":
            expected = F.rotate(img, a, interpolation=v2.InterpolationMode.BILINEAR, fill=fill)
        elif name in ("ShearX", "ShearY"):
            sh = [math.degrees(math.atan(a)), 0.0] if name == "ShearX" else [0.0, math.degrees(math.atan(a))]
            expected = F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=sh, center=[0, 0],
                                interpolation=v2.InterpolationMode.BILINEAR, fill=fill)
        elif name in ("TranslateXRel", "TranslateYRel"):
            px = -(a * (19 if name == "TranslateXRel" else 15))  # fractional; Pillow's offset p is torchvision's -p
            tr = [px, 0] if name == "TranslateXRel" else [0, px]
            expected = F.affine(img, angle=0.0, translate=tr, scale=1.0, shear=[0.0, 0.0],
                                interpolation=v2.InterpolationMode.BILINEAR, fill=fill)
        elif name == "SolarizeAdd":
            expected = torch.where(img < 128, (img.int() + int(a)).clamp(max=255), img.int()).to(torch.uint8)
        else:
            fn = {"AutoContrast": lambda x, a: F.autocontrast(x), "Equalize": lambda x, a: F.equalize(x),
                  "Invert": lambda x, a: F.invert(x), "PosterizeIncreasing": lambda x, a: F.posterize(x, int(a)),
                  "SolarizeIncreasing": lambda x, a: F.solarize(x, a),
                  "ColorIncreasing": F.adjust_saturation, "ContrastIncreasing": F.adjust_contrast,
                  "BrightnessIncreasing": F.adjust_brightness, "SharpnessIncreasing": F.adjust_sharpness}[name]
            expected = fn(img, a)
        assert_replays(out[i], expected, geometric=name in GEOMETRIC, interpolation="bilinear", what=f"{name}({a})")
    assert len(seen) > 10


def test_timm_augmix_mixes_as_timm_and_pillow_blend():
    """Chains of one Equalize or Identity each: timm's mix is Image.blend(img, uint8(clip(sum w_i * chain_i)), m)."""
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    batch = _photos(4, 32)
    t = A.from_timm_string("augmix-m5-w3", generator=gen(103))
    p = t.make_params(batch)
    ops = torch.zeros_like(p["ops"])
    ops[:, :2, 0] = t.op_names.index("Equalize")  # chains 0 and 1 equalize, chain 2 is the image
    p = dict(p, ops=ops, magnitudes=torch.zeros_like(p["magnitudes"]))
    out = t.transform(batch, p)
    for i in range(4):
        img = batch[i].permute(1, 2, 0).numpy()
        eq = F.equalize(batch[i]).permute(1, 2, 0).numpy()
        mixed = np.zeros(img.shape, dtype=np.float32)
        for c, mw in enumerate(p["weights"][i].numpy()):
            mixed += mw * np.asarray(eq if c < 2 else img, dtype=np.float32)
        np.clip(mixed, 0, 255.0, out=mixed)
        expected = Image.blend(Image.fromarray(img), Image.fromarray(mixed.astype(np.uint8)), float(p["m"][i]))
        diff = np.abs(np.asarray(expected).astype(int) - out[i].permute(1, 2, 0).numpy().astype(int))
        assert diff.max() <= 1 and (diff > 0).mean() < 0.01  # Pillow's float rounding of its alpha


# ------------------------------------------------------------------------------------------------------------
# RandomChoice (v2.RandomChoice with the draw in make_params)
# ------------------------------------------------------------------------------------------------------------

def test_random_choice_draws_with_p_from_the_generator_and_passes_labels():
    batch = torch.rand(6, 3, 9, 11, generator=gen(70))
    labels = torch.randint(0, 4, (6,), generator=gen(71))
    mix, cut = A.MixUp(0.5, num_classes=4), A.CutMix(1.0, num_classes=4)
    t = A.RandomChoice([mix, cut], p=[3, 1])
    assert t.needs_labels
    choices = [int(t.make_params(batch, generator=g)["choice"]) for g in [gen(72)] for _ in range(400)]
    assert 0.68 < choices.count(0) / 400 < 0.82  # p normalized: 0.75
    for seed in range(6):
        params = t.make_params(batch, generator=gen(seed))
        chosen = (mix, cut)[int(params["choice"])]
        assert torch.equal(t.transform(batch, params), chosen.transform(batch, params["params"]))
        assert torch.equal(t.transform_labels(labels, params), chosen.transform_labels(labels, params["params"]))
    # the same draws from the same seed; a non-mixing choice leaves the labels as they are
    a = A.RandomChoice([A.RandomErasing(1.0)], generator=gen(73))
    b = A.RandomChoice([A.RandomErasing(1.0)], generator=gen(73))
    out_a, lab = a(batch, labels)
    assert torch.equal(out_a, b(batch)) and lab is labels and not a.needs_labels


def test_random_choice_bad_arguments_are_named():
    with pytest.raises(TypeError, match=r"transforms\[1\] must have make_params"):
        A.RandomChoice([A.MixUp(num_classes=3), lambda x: x])
    with pytest.raises(ValueError, match=r"\bp must hold 2\b"):
        A.RandomChoice([A.MixUp(num_classes=3), A.CutMix(num_classes=3)], p=[1.0])
    with pytest.raises(TypeError, match="non-empty sequence"):
        A.RandomChoice([])
    t = A.RandomChoice([A.MixUp(num_classes=3)])
    with pytest.raises(ValueError, match=r"params\['choice'\]"):
        t.transform(torch.rand(2, 3, 4, 4), {"choice": 5, "params": {}})

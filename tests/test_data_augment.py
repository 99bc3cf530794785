"""``augment=`` in the batch path: the collates (in the worker, on the uint8 batch after the resize, before the
normalize, drawing from the collate's own seeded stream) and NormalizingLoader (on the device that normalizes).

The transforms here are small stand-ins with tensorops.augment's shape (``make_params(batch, generator=None)``,
``transform(batch, params)``; MixUp-like ones ``needs_labels`` and ``transform_labels``), so these tests do not
depend on the policies; one test runs the real policies where ``tensorops.augment.transforms`` is importable."""
from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

import tensorops
from tensorops.data import CropMirrorNormalizeCollate, NormalizingLoader, ResizedCropMirrorNormalizeCollate
from tensorops.data import augmenting

from conftest import CUDA_PARAM, requires_compiled

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
CLASSES = 5

pytestmark = requires_compiled


class Shift(nn.Module):
    """Adds a per-sample random offset (mod 256) to every pixel: one draw per sample."""

    def make_params(self, batch, generator=None):
        return {"delta": torch.randint(1, 256, (batch.shape[0],), generator=generator)}

    def transform(self, batch, params):
        d = params["delta"].to(batch.device).view(-1, 1, 1, 1)
        return ((batch.to(torch.int16) + d) % 256).to(torch.uint8)  # elementwise: keeps channels_last

    def forward(self, batch):
        return self.transform(batch, self.make_params(batch))


class Mix(nn.Module):
    """MixUp's shape: each sample mixed with the next (roll by one) with a per-sample weight; soft labels."""

    needs_labels = True

    def make_params(self, batch, generator=None):
        return {"lam": torch.rand(batch.shape[0], generator=generator, dtype=torch.float64)}

    def transform(self, batch, params):
        lam = params["lam"].to(batch.device, torch.float32).view(-1, 1, 1, 1)
        return (lam * batch + (1 - lam) * batch.roll(1, 0)).round().to(torch.uint8)

    def transform_labels(self, labels, params):
        one_hot = nn.functional.one_hot(labels, CLASSES).to(torch.float32)
        lam = params["lam"].to(torch.float32).view(-1, 1)
        return lam * one_hot + (1 - lam) * one_hot.roll(1, 0)

    def forward(self, batch, labels):
        params = self.make_params(batch)
        return self.transform(batch, params), self.transform_labels(labels, params)


def images(n, seed=0, lo=40, hi=90):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (3, int(h), int(w)), dtype=torch.uint8, generator=g)
            for h, w in torch.randint(lo, hi, (n, 2), generator=g)]


def samples(n=6, seed=0):
    return [(im, k % CLASSES) for k, im in enumerate(images(n, seed))]


def jpegs(n=4, seed=0):
    from PIL import Image

    out = []
    for k, im in enumerate(images(n, seed)):
        buf = io.BytesIO()
        Image.fromarray(im.permute(1, 2, 0).numpy()).save(buf, "JPEG", quality=90)
        out.append((buf.getvalue(), k % CLASSES))
    return out


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- the augmentation is applied, with the collate's draws -----------------------------------------------------
@pytest.mark.parametrize("source", ["tensors", "jpeg"])
@pytest.mark.parametrize("floats", [False, True], ids=["uint8", "float"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_resized_collate_applies_augment_after_the_resize(source, floats, train):
    data = samples() if source == "tensors" else jpegs()
    t = Shift()
    plain = ResizedCropMirrorNormalizeCollate(24, None, None, dtype=torch.uint8, train=train, generator=gen(3))
    base, labels = plain(data)  # the un-augmented uint8 batch; plain's generator now stands where augment draws
    want = t.transform(base, t.make_params(base, generator=plain.generator))
    if floats:
        want = tensorops.normalize(want, MEAN, STD)
    got_collate = ResizedCropMirrorNormalizeCollate(24, MEAN if floats else None, STD if floats else None,
                                                    dtype=None if floats else torch.uint8, train=train,
                                                    generator=gen(3), augment=t)
    got, got_labels = got_collate(data)
    assert got.dtype == (torch.float32 if floats else torch.uint8)
    assert not torch.equal(want, tensorops.normalize(base, MEAN, STD) if floats else base)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch.equal(got_labels, labels)


def test_float_batch_with_augment_is_the_uint8_batch_normalized():
    # an augment that changes nothing: the uint8 path + normalize is the fused path within one uint8 step
    data = samples()
    fused, _ = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, generator=gen(1))(data)
    split, _ = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, generator=gen(1), augment=lambda b: b)(data)
    torch.testing.assert_close(split, fused, rtol=0, atol=0.5 / (255 * min(STD)) + 1e-4)


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_crop_collate_applies_augment_before_the_normalize(memory_format):
    data = samples(seed=2)
    seen = []

    def record(batch):  # a plain callable (no make_params): called as t(batch), sees the uint8 crops
        seen.append(batch)
        return batch

    t = Shift()
    plain = CropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(4), memory_format=memory_format)
    fused, labels = plain(data)
    collate = CropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(4), memory_format=memory_format,
                                         augment=[record, t])
    got, got_labels = collate(data)
    (crops,) = seen
    assert crops.dtype == torch.uint8
    # the uint8 crops are the fused op's crops (crop, mirror), and the augment's draws follow the crop's
    torch.testing.assert_close(tensorops.normalize(crops, MEAN, STD), fused, rtol=0, atol=1e-6)
    want = tensorops.normalize(t.transform(crops, t.make_params(crops, generator=plain.generator)), MEAN, STD)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert got.is_contiguous(memory_format=memory_format)
    assert torch.equal(got_labels, labels)


def test_transforms_run_in_order():
    data = samples()
    a, b = Shift(), Mix()
    plain = ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8, generator=gen(0))
    base, labels = plain(data)
    pa = a.make_params(base, generator=plain.generator)
    step = a.transform(base, pa)
    pb = b.make_params(step, generator=plain.generator)
    got, soft = ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8, generator=gen(0),
                                                  augment=[a, b])(data)
    assert torch.equal(got, b.transform(step, pb))
    torch.testing.assert_close(soft, b.transform_labels(labels, pb))


# ---- soft labels -----------------------------------------------------------------------------------------------
def test_label_mixing_augment_gives_soft_labels():
    data = samples(8)
    got, soft = ResizedCropMirrorNormalizeCollate(16, MEAN, STD, generator=gen(2), augment=[Shift(), Mix()])(data)
    assert got.dtype == torch.float32 and soft.shape == (8, CLASSES) and soft.dtype == torch.float32
    torch.testing.assert_close(soft.sum(1), torch.ones(8))
    assert (soft > 0).sum(1).max() == 2  # each sample mixed with one other


def test_label_mixing_is_found_by_signature_and_called_with_the_labels():
    class OwnDraws(nn.Module):  # no needs_labels, no transform_labels: forward(batch, labels) as v2's MixUp
        def forward(self, batch, labels):
            return batch, labels.float() + 0.5

    assert augmenting.needs_labels(OwnDraws()) and augmenting.needs_labels(Mix())
    assert not augmenting.needs_labels(Shift()) and not augmenting.needs_labels(lambda b: b)
    _, labels = ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8, augment=OwnDraws())(samples(4))
    assert labels.tolist() == [0.5, 1.5, 2.5, 3.5]


def test_bad_augment_arguments_are_named():
    with pytest.raises(TypeError, match=r"augment\[1\] must be a transform"):
        ResizedCropMirrorNormalizeCollate(16, MEAN, STD, augment=[Shift(), 3])
    with pytest.raises(TypeError, match="augment must be a transform"):
        NormalizingLoader([], MEAN, STD, augment="flip")
    with pytest.raises(ValueError, match="pad_channels cannot be combined with augment"):
        CropMirrorNormalizeCollate(16, MEAN, STD, pad_channels=4, augment=Shift())


# ---- seeded: the same run twice, new draws every epoch and in every worker -------------------------------------
def _epochs(workers, seed=5, n_epochs=2, persistent=False):
    torch.manual_seed(1234)
    same = torch.full((3, 50, 60), 100, dtype=torch.uint8)  # identical images: only the augment can differ
    collate = ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8, train=False, generator=gen(seed),
                                                augment=Shift())
    loader = DataLoader([(same, 0)] * 8, batch_size=4, collate_fn=collate, num_workers=workers,
                        persistent_workers=persistent)
    return [[b for b, _ in loader] for _ in range(n_epochs)]


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)],
                         ids=["main-process", "workers", "persistent-workers"])
def test_augment_draws_repeat_from_the_seed_and_vary_per_epoch_and_worker(workers, persistent):
    first = _epochs(workers, persistent=persistent)
    assert not torch.equal(torch.cat(first[0]), torch.cat(first[1])), "the next epoch repeated the augmentations"
    assert not torch.equal(first[0][0], first[0][1]), "two batches (workers) drew the same augmentations"
    again = _epochs(workers, persistent=persistent)
    assert all(torch.equal(torch.cat(a), torch.cat(b)) for a, b in zip(first, again)), "the seed did not repeat"
    other = _epochs(workers, seed=6, persistent=persistent)
    assert not torch.equal(torch.cat(first[0]), torch.cat(other[0])), "the collate's seed did not matter"


# ---- NormalizingLoader: on the device that normalizes ---------------------------------------------------------
def _uint8_batches(n=3, seed=11):
    collate = ResizedCropMirrorNormalizeCollate(24, None, None, dtype=torch.uint8, train=False)
    return list(DataLoader(samples(2 * n, seed), batch_size=2, collate_fn=collate))


@pytest.mark.parametrize("device", ["cpu", CUDA_PARAM])
def test_normalizing_loader_augments_before_normalizing(device):
    batches = _uint8_batches()
    t, m = Shift(), Mix()
    loader = NormalizingLoader(batches, MEAN, STD, device=device, augment=[t, m], generator=gen(9))
    replay = gen(9)
    for (got, soft), (base, labels) in zip(loader, batches):
        pt = t.make_params(base, generator=replay)
        step = t.transform(base, pt)
        pm = m.make_params(step, generator=replay)
        want = tensorops.normalize(m.transform(step, pm), MEAN, STD)
        assert got.device.type == device
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
        torch.testing.assert_close(soft, m.transform_labels(labels, pm))
    # a second epoch draws anew (the loader's generator goes on)
    first = torch.cat([b.cpu() for b, _ in loader])
    second = torch.cat([b.cpu() for b, _ in loader])
    assert not torch.equal(first, second)


def test_normalizing_loader_augments_on_the_side_stream(monkeypatch):
    """CUDA handover with augment, on tests/test_data.py's recording twin of the stream operations: the
    augmentation is queued on the side stream between the copy and the normalize."""
    from test_data import _recording_loader, _Stream

    consumer = _Stream("consumer")
    batches = [(torch.full((2, 3, 4, 4), k, dtype=torch.uint8), torch.tensor([k, k])) for k in range(3)]
    loader, streams = _recording_loader(monkeypatch, batches, consumer)

    def logged(batch):
        streams.current.queue.append(("augment", int(batch.flatten()[0])))
        return batch

    loader.augment = (logged,)
    out = list(loader)
    assert len(out) == 3
    side = [q for q in streams.side.queue if q[0] != "wait"]
    assert side == [(op, k) for k in range(3) for op in ("copy", "augment", "normalize")]


# ---- the real policies, where they exist ------------------------------------------------------------------------
def _policies():
    import os

    try:
        from tensorops.augment import transforms
    except Exception as e:  # absent (ImportError), or present and not built into this library (RuntimeError)
        pytest.skip(f"tensorops.augment.transforms is not importable here ({type(e).__name__}: {e})")
    here = os.path.dirname(os.path.abspath(tensorops.__file__))
    if not os.path.abspath(transforms.__file__).startswith(here + os.sep):
        pytest.skip(f"tensorops.augment came from another checkout ({transforms.__file__}), not this tensorops")
    return transforms


def test_real_policies_in_the_collate():
    transforms = _policies()
    if not hasattr(transforms, "TrivialAugmentWide"):
        pytest.skip("tensorops.augment.transforms has no TrivialAugmentWide yet")
    t = transforms.TrivialAugmentWide()
    data = samples(8)
    plain = ResizedCropMirrorNormalizeCollate(32, None, None, dtype=torch.uint8, generator=gen(0))
    base, _ = plain(data)
    want = tensorops.normalize(t.transform(base, t.make_params(base, generator=plain.generator)), MEAN, STD)
    got, _ = ResizedCropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(0), augment=t)(data)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    mixers = [getattr(transforms, name) for name in ("MixUp", "CutMix") if hasattr(transforms, name)]
    for cls in mixers:
        mix = cls(num_classes=CLASSES)
        assert augmenting.needs_labels(mix)
        batch, soft = ResizedCropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(0), augment=[t, mix])(data)
        assert batch.shape == (8, 3, 32, 32) and soft.shape == (8, CLASSES)


# ---- after_normalize: the float-scale steps last (RandomErasing, MixUp / CutMix) ---------------------------------
class Scale(nn.Module):
    """A float-batch step with a per-sample draw: multiplies each sample by a drawn factor."""

    def make_params(self, batch, generator=None):
        return {"k": torch.rand(batch.shape[0], generator=generator, dtype=torch.float64) + 0.5}

    def transform(self, batch, params):
        assert batch.is_floating_point(), "after_normalize got a uint8 batch"
        return batch * params["k"].to(batch.device, batch.dtype).view(-1, 1, 1, 1)


@pytest.mark.parametrize("collate_cls", ["resized", "crop"])
@pytest.mark.parametrize("with_augment", [False, True], ids=["fused", "augment"])
def test_collate_after_normalize_runs_on_the_normalized_batch_last(collate_cls, with_augment):
    data = samples()
    shift, scale, mix = Shift(), Scale(), Mix()
    if collate_cls == "resized":
        make = lambda **kw: ResizedCropMirrorNormalizeCollate(24, MEAN, STD, generator=gen(4), **kw)  # noqa: E731
    else:
        make = lambda **kw: CropMirrorNormalizeCollate(24, MEAN, STD, generator=gen(4), **kw)  # noqa: E731
    first = make(augment=shift) if with_augment else make()
    base, labels = first(data)  # the batch after the normalize; first's generator stands where after draws
    ps = scale.make_params(base, generator=first.generator)
    want = scale.transform(base, ps)
    got, soft = make(augment=[shift] if with_augment else None, after_normalize=scale)(data)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert torch.equal(soft, labels)
    # a label-mixing step after the normalize gives soft labels (the stand-in Mix rounds to uint8 itself)
    got, soft = make(augment=[shift] if with_augment else None, after_normalize=[scale, mix])(data)
    assert soft.shape == (len(data), CLASSES) and soft.dtype == torch.float32


def test_after_normalize_is_checked_and_named():
    with pytest.raises(TypeError, match=r"after_normalize\[1\] must be a transform"):
        ResizedCropMirrorNormalizeCollate(16, MEAN, STD, after_normalize=[Scale(), 3])
    with pytest.raises(ValueError, match="after_normalize needs the normalized"):
        ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8, after_normalize=Scale())
    with pytest.raises(TypeError, match="after_normalize must be a transform"):
        NormalizingLoader([], MEAN, STD, after_normalize="erase")


@pytest.mark.parametrize("device", ["cpu", CUDA_PARAM])
def test_normalizing_loader_after_normalize_runs_after_the_normalize(device):
    batches = _uint8_batches()
    t, s, m = Shift(), Scale(), Mix()
    loader = NormalizingLoader(batches, MEAN, STD, device=device, augment=t, after_normalize=[s, m],
                               generator=gen(10))
    replay = gen(10)
    for (got, soft), (base, labels) in zip(loader, batches):
        step = tensorops.normalize(t.transform(base, t.make_params(base, generator=replay)), MEAN, STD)
        step = s.transform(step, s.make_params(step, generator=replay))
        pm = m.make_params(step, generator=replay)
        assert got.device.type == device
        torch.testing.assert_close(got.cpu(), m.transform(step, pm), rtol=0, atol=0)
        torch.testing.assert_close(soft, m.transform_labels(labels, pm))


def test_real_recipe_after_normalize_equals_the_steps_one_by_one():
    """Recipe (a) of the pipelines guide in the collate: TrivialAugmentWide on uint8, normalize, then
    RandomErasing and RandomChoice([MixUp, CutMix]) in place on the collate's batch, against the same transforms
    run one by one (copying) with the same generator."""
    transforms = _policies()
    data = samples(8)
    policy = transforms.TrivialAugmentWide(interpolation="bilinear")

    def after(inplace):
        return [transforms.RandomErasing(0.5, inplace=inplace),
                transforms.RandomChoice([transforms.MixUp(0.2, num_classes=CLASSES, inplace=inplace),
                                         transforms.CutMix(1.0, num_classes=CLASSES, inplace=inplace)])]

    for seed in range(4):  # both choices of RandomChoice
        first = ResizedCropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(seed), augment=policy)
        x, labels = first(data)
        g = first.generator
        erase, choice = after(False)
        x = erase.transform(x, erase.make_params(x, generator=g))
        pc = choice.make_params(x, generator=g)
        want, want_soft = choice.transform(x, pc), choice.transform_labels(labels, pc)
        got, soft = ResizedCropMirrorNormalizeCollate(32, MEAN, STD, generator=gen(seed), augment=policy,
                                                      after_normalize=after(True))(data)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(soft, want_soft, rtol=0, atol=0)


class _SharedProbe:
    """Wraps a collate: in the worker, records whether the batch it made is in shared memory already (before the
    DataLoader pickles it, which would copy a private batch there)."""

    def __init__(self, collate):
        self.collate = collate

    def __call__(self, samples):
        batch, labels = self.collate(samples)
        from tensorops.data import shared_batches

        # shared memory: torch's (is_shared) or one of the worker's blocks (a storage over the block's mapping)
        return batch, labels, torch.tensor(batch.is_shared() or shared_batches.is_block(batch))


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_a_worker_normalizes_into_shared_memory(memory_format):
    """In a worker the collate's last op writes into shared memory (no copy when the batch crosses), with the
    values the main process makes (evaluation crops and an augment without draws: the same batch)."""
    collate = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, train=False, augment=lambda b: 255 - b,
                                                memory_format=memory_format)
    data = samples(8)
    want = [collate(data[:4])[0], collate(data[4:])[0]]
    assert not want[0].is_shared()  # the main process: private memory
    got = list(DataLoader(data, batch_size=4, collate_fn=_SharedProbe(collate), num_workers=1))
    assert len(got) == 2
    for (batch, labels, shared), expected in zip(got, want):
        assert bool(shared), "the worker's batch was not made in shared memory"
        assert batch.is_contiguous(memory_format=memory_format) and labels.shape == (4,)
        assert torch.equal(batch, expected)

"""tensorops.augment's make_params takes torchvision v2's call, ``make_params(flat_inputs)``: the list of inputs
v2's ``Transform.forward`` hands it (what v2 transforms: the first tv_tensors.Image or Video, else the first
plain tensor), as well as the batch itself with a generator, as before. Run from a v2 Transform's own forward."""
from __future__ import annotations

import pytest
import torch

import tensorops.augment as A
from tensorops.augment import timm as T

v2 = pytest.importorskip("torchvision.transforms.v2", reason="the call under test is torchvision v2's")
tv_tensors = pytest.importorskip("torchvision.tv_tensors")


def _transforms():
    return {
        "TrivialAugmentWide": lambda: A.TrivialAugmentWide(),
        "RandAugment": lambda: A.RandAugment(),
        "AutoAugment": lambda: A.AutoAugment(),
        "AugMix": lambda: A.AugMix(),
        "ColorJitter": lambda: A.ColorJitter(0.4, 0.4, 0.4, 0.1),
        "RandomGrayscale": lambda: A.RandomGrayscale(0.5),
        "RandomErasing": lambda: A.RandomErasing(0.9),
        "MixUp": lambda: A.MixUp(0.2, num_classes=10),
        "CutMix": lambda: A.CutMix(1.0, num_classes=10),
        "RandomChoice": lambda: A.RandomChoice([A.MixUp(0.2, num_classes=10), A.CutMix(1.0, num_classes=10)]),
        "TimmRandAugment": lambda: T.TimmRandAugment(),
        "TimmAutoAugment": lambda: T.TimmAutoAugment(),
        "TimmAugMix": lambda: T.TimmAugMix(),
    }


BATCH = torch.randint(0, 256, (5, 3, 20, 24), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    return a == b


def _params(t, inputs, seed):
    t.generator = torch.Generator().manual_seed(seed)  # the constructor's generator: v2 passes none
    return t.make_params(inputs)


@pytest.mark.parametrize("name", list(_transforms()))
def test_make_params_takes_v2s_flat_inputs_list(name):
    t = _transforms()[name]()
    want = t.make_params(BATCH, generator=torch.Generator().manual_seed(3))  # today's call, unchanged
    labels = torch.arange(5)
    image = tv_tensors.Image(BATCH)
    boxes = tv_tensors.BoundingBoxes(torch.tensor([[0, 0, 4, 4]] * 5), format="XYXY", canvas_size=(20, 24))
    for inputs in ([BATCH], (BATCH,), [BATCH, labels], [labels.float()[:, None, None, None].expand(5, 3, 2, 2), image],
                   [boxes, image]):
        assert _same(_params(t, inputs, 3), want), (name, [type(x).__name__ for x in inputs])
    with pytest.raises(TypeError, match=f"{name}: make_params got a list of inputs .* without an image batch"):
        t.make_params([boxes])


class _AsV2(v2.Transform):
    """A v2 Transform delegating to a tensorops transform: v2's forward calls make_params(flat_inputs)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def make_params(self, flat_inputs):
        return self.inner.make_params(flat_inputs)

    def transform(self, inpt, params):
        return self.inner.transform(inpt, params)


@pytest.mark.parametrize("name", ["TrivialAugmentWide", "ColorJitter", "RandomErasing", "TimmAugMix"])
def test_a_v2_transforms_forward_runs_them(name):
    t = _transforms()[name]()
    want = t.transform(BATCH, t.make_params(BATCH, generator=torch.Generator().manual_seed(5)))
    t.generator = torch.Generator().manual_seed(5)
    assert torch.equal(_AsV2(t)(BATCH), want)
    t.generator = torch.Generator().manual_seed(5)
    got, labels = _AsV2(t)(BATCH, torch.arange(5))  # v2 passes the labels through: the first plain tensor is the image
    assert torch.equal(got, want) and labels.tolist() == list(range(5))

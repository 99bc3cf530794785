"""tensorops.augment's CUDA kernels on a GPU (the `cuda` marker: benchmarks/gpu/gpu_check.sh runs them): each op's
CUDA result against the CPU kernel's and against torchvision v2 on the same CUDA images, sample by sample. The
kernels already ran on the emulated device (tests/emulated/test_emu_augment.py); here the real device's float32
arithmetic (nvcc's intrinsics, no contraction) and torch's CUDA kernels meet.

Known and expected: torchvision's sharpness on CUDA goes through cuDNN's conv2d, which may use TF32
(torch.backends.cudnn.allow_tf32, True by default) and then is not float32: compared with TF32 off. contrast's
mean on CUDA is torch's (sum times 1 / count), so CUDA and CPU may differ where the two round apart."""
from __future__ import annotations

import pytest
import torch

from conftest import CUDA_PARAM, kernel_ran
from tensorops import augment as A

pytestmark = pytest.mark.cuda
F = pytest.importorskip("torchvision.transforms.v2.functional")


def photos(device, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    b = torch.randint(0, 256, (n, 3, 67, 91), generator=g, dtype=torch.uint8)
    b[0, :, :30] = 120  # flat region: equalize / autocontrast edge cases
    return b.to(device)


COLOUR = {
    "adjust_brightness": (lambda n: torch.linspace(0.1, 2.0, n, dtype=torch.float64), F.adjust_brightness),
    "adjust_contrast": (lambda n: torch.linspace(0.1, 2.0, n, dtype=torch.float64), F.adjust_contrast),
    "adjust_saturation": (lambda n: torch.linspace(0.0, 2.0, n, dtype=torch.float64), F.adjust_saturation),
    "adjust_sharpness": (lambda n: torch.linspace(0.0, 3.0, n, dtype=torch.float64), F.adjust_sharpness),
    "adjust_hue": (lambda n: torch.linspace(-0.5, 0.5, n, dtype=torch.float64), F.adjust_hue),
    "posterize": (lambda n: torch.arange(n, dtype=torch.float64) % 9, lambda x, m: F.posterize(x, int(m))),
    "solarize": (lambda n: torch.linspace(0, 255, n, dtype=torch.float64), F.solarize),
    "autocontrast": (None, F.autocontrast),
    "equalize": (None, F.equalize),
    "invert": (None, F.invert),
    "rgb_to_grayscale": (None, F.rgb_to_grayscale),
}


@pytest.mark.parametrize("device", [CUDA_PARAM])
@pytest.mark.parametrize("name", sorted(COLOUR))
@pytest.mark.parametrize("channels_last", [False, True])
def test_colour_ops_on_cuda_equal_torchvision_on_cuda(device, name, channels_last, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    b = photos(device)
    if channels_last:
        b = b.contiguous(memory_format=torch.channels_last)
    draw, theirs = COLOUR[name]
    args = () if draw is None else (draw(b.shape[0]),)
    got, ran = kernel_ran(getattr(A, name), b, *args)
    assert "tensorops::augment_apply" in ran and got.is_cuda
    for i in range(b.shape[0]):
        want = theirs(b[i]) if draw is None else theirs(b[i], float(args[0][i]))
        if name == "adjust_contrast":  # the mean as torch's CUDA mean: may round apart from ours only there
            assert (got[i].int() - want.int()).abs().max() <= 1
        else:
            assert torch.equal(got[i], want), (name, i)
    cpu = getattr(A, name)(b.cpu(), *args)
    if name != "adjust_contrast":
        assert torch.equal(got.cpu(), cpu)


@pytest.mark.parametrize("device", [CUDA_PARAM])
@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_affine_on_cuda_equals_the_cpu_kernel(device, interpolation):
    b = photos(device)
    n = b.shape[0]
    angle = torch.linspace(-30, 30, n, dtype=torch.float64)
    out = A.affine(b, angle, torch.tensor([[3.0, -2.0]] * n), 1.1, [5.0, 0.0], interpolation=interpolation,
                   fill=[10, 20, 30])
    cpu = A.affine(b.cpu(), angle, torch.tensor([[3.0, -2.0]] * n), 1.1, [5.0, 0.0], interpolation=interpolation,
                   fill=[10, 20, 30])
    assert torch.equal(out.cpu(), cpu)
    rot = A.rotate(b, torch.tensor([90.0, 180.0, -90.0, 12.5, 0.0, 359.0], dtype=torch.float64))
    assert torch.equal(rot.cpu(), A.rotate(b.cpu(), torch.tensor([90.0, 180.0, -90.0, 12.5, 0.0, 359.0],
                                                                  dtype=torch.float64)))


@pytest.mark.parametrize("device", [CUDA_PARAM])
def test_mixed_batch_and_erase_on_cuda(device):
    b = photos(device, n=70)  # more than the 64 samples the kernel's parameters hold: the uploaded table
    ops = torch.arange(70) % len(A.OPS)
    mags = torch.tensor([[0, 1.3, 0.7, 1.5, 0.2, 2.0, 4, 128, 0, 0, 0, 0, 10, -10, 5, -5, 20, 70][int(o)] for o in ops],
                        dtype=torch.float64)
    got = A.apply_ops(b, ops, mags)
    want = A.apply_ops(b.cpu(), ops, mags)
    contrast = ops == A.OPS.index("contrast")
    assert torch.equal(got.cpu()[~contrast], want[~contrast])
    boxes = torch.tensor([[5, 6, 20, 30]] * 70)
    noise = torch.randint(0, 256, b.shape, dtype=torch.uint8)
    assert torch.equal(A.erase(b, boxes, noise.to(device)).cpu(), A.erase(b.cpu(), boxes, noise))

"""Shared test fixtures: device parametrization and the marks that skip CUDA cases without a GPU."""
from __future__ import annotations

import importlib
import os

import pytest
import torch

import tensorops

HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (none visible to torch)")
requires_compiled = pytest.mark.skipif(
    not tensorops.is_compiled(),
    reason=f"needs the compiled extension ({tensorops.build_info().get('error')})",
)
# tensorops' clamp gives torch 2.14's answers in three corners where older torch (2.11, the GPU check machine's)
# answers otherwise: a NaN number bound (2.14: NaN everywhere; 2.11: the input unchanged) and the gradients at
# ties and NaN. Tests that pin those corners against the running torch skip on older torch, saying so.
TORCH_MINOR = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
clamp_corners_of_torch_2_14 = pytest.mark.skipif(
    TORCH_MINOR < (2, 14),
    reason=f"pins torch 2.14's clamp corners (NaN number bound, gradients at ties/NaN), which tensorops follows; "
    f"torch {torch.__version__} differs there",
)
requires_cuda_kernels = pytest.mark.skipif(
    not (HAS_CUDA and tensorops.build_info()["cuda"]), reason="needs a GPU and tensorops built with CUDA kernels"
)

# Every GPU-only test carries the `cuda` marker (registered in pyproject.toml), so `pytest -m cuda` selects all of
# them; tests/test_gpu_marks.py checks that no test skipped here for want of a GPU lacks it.
cuda = pytest.mark.cuda
CUDA_PARAM = pytest.param("cuda", marks=[requires_cuda_kernels, cuda])
DEVICES = ["cpu", CUDA_PARAM]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


@pytest.fixture(autouse=True)
def clamp_kernels_through_autograd_at_every_size(request, monkeypatch):
    """Tests run clamp's kernels through autograd on tiny inputs too: the wrapper's measured crossover
    (crossover.h kClampGradNativeBelow, below which it runs torch.clamp) is set to 0 for every test, unless the test
    is marked ``native_crossovers`` (the tests of the crossover route themselves)."""
    if request.node.get_closest_marker("native_crossovers") is None:
        monkeypatch.setattr(importlib.import_module("tensorops.clamp"), "_GRAD_NATIVE_BELOW", 0)


def pytest_report_header(config):
    info = tensorops.build_info()
    return [
        f"tensorops {info['version']}: compiled={info['compiled']} cuda_kernels={info['cuda']} "
        f"archs={info['cuda_archs']!r} built_with_torch={info['torch']} running_torch={torch.__version__} "
        f"gpu={'yes' if HAS_CUDA else 'no'} disable_env={os.environ.get('TENSOROPS_DISABLE_EXTENSION', '0')}"
    ]


def make_tensor(shape, dtype=torch.float32, device="cpu", seed=0, low=0):
    """Random values from ``seed``: normal floats (complex too), random bools, integers in [low, 100) (uint8 from 0)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return (torch.randn(shape, generator=g) > 0).to(device)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype).to(device)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype).to(device)
    return torch.randint(low if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype).to(device)


def kernel_ran(fn, *args, **kwargs):
    """Run fn under the profiler and return (result, names of tensorops::* ops that ran)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*args, **kwargs)
    names = {e.name for e in prof.events() if e.name.startswith("tensorops::")}
    return out, names

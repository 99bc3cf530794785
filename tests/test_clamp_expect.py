"""tests/clamp_expect.py, the expected gradients of tests/test_gpu.py's large clamp tests, checked on the CPU: slice by
slice they add up to torch's autograd over the whole tensor (ties with both bounds included), from either source, and
the strided test's input really is a layout clamp cannot treat as one flat array."""
from __future__ import annotations

import pytest
import torch

from clamp_expect import DEFAULT_SOURCE, clamp_grads_by_slices, is_dense, stepped_rows_of_3
from conftest import TORCH_MINOR, clamp_corners_of_torch_2_14, requires_compiled
from tensorops import reference


def _tie_rich(rows: int, dtype=torch.float32) -> torch.Tensor:
    # the GPU tests' pattern in small: multiples of 1/8, so x == bound happens for every bound used below
    i = torch.arange(rows * 4, dtype=torch.int64)
    return (((i * 7 + (i >> 5)) % 251).to(dtype) - 125).div(8).view(rows, 4)


def _collect(x, lo, hi, rows, source):
    parts = []
    glo, ghi = clamp_grads_by_slices(x, lo, hi, lambda start, gi: parts.append((start, gi)), rows_per_slice=rows,
                                     source=source)
    assert [p[0] for p in parts] == list(range(0, x.shape[0], rows))
    return torch.cat([p[1] for p in parts]), glo, ghi


SOURCES = [
    pytest.param("torch", id="torch"),
    # tensorops' kernels have torch 2.14's answers at ties: equal to the running torch's only from 2.14 on
    pytest.param("tensorops_cpu", id="tensorops_cpu", marks=[requires_compiled, clamp_corners_of_torch_2_14]),
]


@pytest.mark.parametrize("source", SOURCES)
def test_sliced_expectation_is_torch_autograd_with_tensor_bounds(source):
    x = _tie_rich(1000)
    lo = torch.tensor([-5.0, -1.0, 0.0, -20.0])
    hi = torch.tensor([7.5, 1.0, 3.0, 20.0])
    assert bool((x == lo).any()) and bool((x == hi).any()), "the pattern must tie the bounds"
    gi, glo, ghi = _collect(x, lo, hi, 97, source)  # slices that do not divide the rows
    ref = reference.clamp_backward(torch.ones_like(x), x, lo, hi, [True, True, True])
    assert gi.dtype == x.dtype
    torch.testing.assert_close(gi, ref[0], rtol=0, atol=0)
    torch.testing.assert_close(glo, ref[1].double(), rtol=0, atol=0)
    torch.testing.assert_close(ghi, ref[2].double(), rtol=0, atol=0)
    if TORCH_MINOR >= (2, 14):  # 2.14's rule: a tie with tensor bounds gets half the gradient
        assert bool((gi[x == lo.expand_as(x)] == 0.5).all())


@pytest.mark.parametrize("source", SOURCES)
def test_sliced_expectation_is_torch_autograd_with_number_bounds(source):
    x = _tie_rich(500, torch.float16).flatten()
    gi, glo, ghi = _collect(x, -5.0, 7.5, 301, source)
    assert glo is None and ghi is None and gi.dtype == torch.float16
    ref = reference.clamp_backward(torch.ones_like(x), x, -5.0, 7.5, [True, False, False])[0]
    torch.testing.assert_close(gi, ref, rtol=0, atol=0)
    if TORCH_MINOR >= (2, 14):  # 2.14's rule: a tie with a number bound gets 0
        assert bool((gi[(x == -5.0) | (x == 7.5)] == 0).all())


@requires_compiled
def test_both_sources_agree_without_ties():
    # where no element ties a bound, torch 2.11 and 2.14 agree: the kernels' source equals every torch's autograd
    x = _tie_rich(300) + 1 / 16
    lo, hi = torch.tensor([-5.0, -1.0, 0.0, -20.0]), torch.tensor([7.5, 1.0, 3.0, 20.0])
    a = _collect(x, lo, hi, 64, "torch")
    b = _collect(x, lo, hi, 64, "tensorops_cpu")
    for u, v in zip(a, b):
        torch.testing.assert_close(u, v, rtol=0, atol=0)


def test_default_source_follows_the_running_torch():
    assert DEFAULT_SOURCE == ("torch" if TORCH_MINOR >= (2, 14) else "tensorops_cpu")


def test_the_strided_input_is_not_dense_and_takes_the_strided_path():
    flat = torch.arange(4 * 10 + 3, dtype=torch.float16)
    x = stepped_rows_of_3(flat)
    assert x.shape == (10, 3) and x.stride() == (4, 1)
    assert not is_dense(x)
    # a transposed view (what the test used before) is dense: clamp would see one flat array
    assert is_dense(flat[:42].view(3, -1).t()) and is_dense(flat)

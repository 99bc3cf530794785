"""tensorops.Normalize (the nn.Module) by nn.Module's habits: meta-device construction, dtype conversions that set
the output dtype without rounding the statistics, memory_format, repr, state_dict."""
from __future__ import annotations

import io
import pickle

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import tensorops
from conftest import kernel_ran, requires_compiled

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def img(shape=(2, 3, 6, 5), seed=0):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def oracle64(x, mean=MEAN, std=STD, scale=1 / 255):
    m = torch.tensor(mean, dtype=torch.float64).view(-1, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(-1, 1, 1)
    return (x.double() * scale - m) / s


# ---- meta device -------------------------------------------------------------------------------------------------
def test_constructible_on_meta_then_materialized():
    with torch.device("meta"):
        norm = tensorops.Normalize(MEAN, STD)
        model = nn.Sequential(norm, nn.Conv2d(3, 4, 3))
    assert norm.mean.is_meta and norm.std.is_meta
    assert "mean=[0.485, 0.456, 0.406]" in repr(norm)
    out = model(torch.empty(2, 3, 8, 8, dtype=torch.uint8, device="meta"))  # shape inference on meta
    assert out.is_meta and out.shape == (2, 4, 6, 6)
    norm.to_empty(device="cpu")
    norm.reset_parameters()
    x = img()
    assert torch.equal(norm(x), tensorops.normalize(x, MEAN, STD))


def test_meta_module_takes_a_state_dict_by_assignment():
    with torch.device("meta"):
        norm = tensorops.Normalize([0.0] * 3, [1.0] * 3)
    norm.load_state_dict(tensorops.Normalize(MEAN, STD).state_dict(), assign=True)
    x = img()
    assert torch.equal(norm(x), tensorops.normalize(x, MEAN, STD))


# ---- dtype conversions set the output dtype ---------------------------------------------------------------------
@requires_compiled
@pytest.mark.parametrize(
    "convert,dtype",
    [
        (lambda m: m.half(), torch.float16),
        (lambda m: m.to(torch.bfloat16), torch.bfloat16),
        (lambda m: m.bfloat16(), torch.bfloat16),
        (lambda m: m.double(), torch.float64),
        (lambda m: m.half().float(), torch.float32),
        (lambda m: m.to("cpu", torch.float16), torch.float16),
    ],
    ids=["half", "to-bf16", "bfloat16", "double", "half-float", "to-device-dtype"],
)
def test_dtype_conversion_sets_output_dtype_and_keeps_statistics(convert, dtype):
    norm = tensorops.Normalize(MEAN, STD)
    assert convert(norm) is norm
    assert norm.dtype == dtype
    assert norm.mean.dtype == torch.float64 and norm.mean.tolist() == MEAN and norm.std.tolist() == STD
    x = img()
    out, names = kernel_ran(norm, x)
    assert "tensorops::normalize" in names
    assert torch.equal(out, tensorops.normalize(x, MEAN, STD, dtype=dtype))


def test_device_moves_keep_the_dtype():
    norm = tensorops.Normalize(MEAN, STD).to("cpu")
    assert norm.dtype is None and norm.mean.dtype == torch.float64
    norm.share_memory()
    assert norm.dtype is None


@requires_compiled
def test_sequential_half_feeds_the_net_float16():
    net = nn.Sequential(tensorops.Normalize(MEAN, STD), nn.Flatten(), nn.Linear(3 * 6 * 5, 4)).half()
    out = net(img())
    assert out.dtype == torch.float16
    assert net[0].mean.dtype == torch.float64


@requires_compiled
def test_float64_output_is_exact_to_float64():
    x = img((2, 3, 16, 16))
    for norm in (tensorops.Normalize(MEAN, STD, dtype=torch.float64), tensorops.Normalize(MEAN, STD).double()):
        assert_close(norm(x), oracle64(x), rtol=1e-15, atol=1e-15)


# ---- memory_format, repr, state_dict -----------------------------------------------------------------------------
@requires_compiled
def test_memory_format_like_the_function():
    nhwc = img((2, 7, 5, 3)).permute(0, 3, 1, 2)
    norm = tensorops.Normalize(MEAN, STD, memory_format=torch.contiguous_format)
    out = norm(nhwc)
    assert out.is_contiguous()
    assert torch.equal(out, tensorops.normalize(nhwc, MEAN, STD, memory_format=torch.contiguous_format))
    assert tensorops.Normalize(MEAN, STD)(nhwc).is_contiguous(memory_format=torch.channels_last)
    assert "memory_format=torch.contiguous_format" in repr(norm)
    with pytest.raises(ValueError, match="memory_format"):
        tensorops.Normalize(MEAN, STD, memory_format="nchw")


def test_repr_shows_the_statistics_as_given():
    r = repr(tensorops.Normalize(MEAN, STD))
    assert "mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]" in r, r
    assert "0.4850000" not in r
    assert "mean=[0.5]" in repr(tensorops.Normalize(0.5, 0.25))


@requires_compiled
def test_state_dict_from_float32_buffers_loads():
    """State dicts saved when the buffers were float32 load into the float64 buffers."""
    norm = tensorops.Normalize([0.0] * 3, [1.0] * 3)
    old = {"mean": torch.tensor(MEAN), "std": torch.tensor(STD)}
    norm.load_state_dict(old)
    x = img()
    assert torch.equal(norm(x), tensorops.normalize(x, old["mean"].tolist(), old["std"].tolist()))
    buf = io.BytesIO()
    torch.save(norm.state_dict(), buf)
    buf.seek(0)
    again = tensorops.Normalize([0.0] * 3, [1.0] * 3)
    again.load_state_dict(torch.load(buf))
    assert torch.equal(again(x), norm(x))
    half = pickle.loads(pickle.dumps(tensorops.Normalize(MEAN, STD).half()))
    assert half.dtype == torch.float16 and half(x).dtype == torch.float16

"""normalize against a float64 pure-torch oracle (tensorops.reference computed in float64)."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import pytest
import torch
from torch.testing import assert_close

import tensorops
from tensorops import reference
from conftest import kernel_ran, requires_compiled

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
TOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 2e-6, torch.float64: 1e-12}


def make_input(shape, dtype, device, low=0, high=256):
    if dtype == torch.uint8:
        return torch.randint(low, high, shape, dtype=torch.uint8, device=device)
    return (torch.rand(shape, dtype=torch.float64, device=device) * 3 - 1).to(dtype)


def oracle(x, mean, std, *, dim=-3, scale=None, dtype=None):
    """float64 result of (x * scale - mean) / std, with statistics in float64."""
    if scale is None:
        scale = 1 / 255 if x.dtype == torch.uint8 else 1.0
    dim = dim % x.dim()

    def stat(s):
        if isinstance(s, torch.Tensor):
            s = s.double()
            if s.dim() == 1 and x.dim() > 1:
                shape = [1] * x.dim()
                shape[dim] = s.numel()
                return s.view(shape)
            return s
        s = [float(s)] if isinstance(s, (int, float)) else list(s)
        shape = [1] * x.dim()
        shape[dim] = len(s)
        return torch.tensor(s, dtype=torch.float64, device=x.device).view(shape)

    return (x.double() * scale - stat(mean)) / stat(std)


def check(out, x, mean, std, *, dtype=None, **kw):
    expect_dtype = dtype or (torch.float32 if x.dtype == torch.uint8 else x.dtype)
    assert out.dtype == expect_dtype
    assert out.shape == x.shape
    exp = oracle(x, mean, std, **kw)
    tol = TOL[expect_dtype]
    assert_close(out.double(), exp, rtol=tol, atol=tol * 4, equal_nan=True)


# ---- values ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_dtype", [torch.uint8] + FLOATS)
@pytest.mark.parametrize("out_dtype", [None] + FLOATS)
def test_dtypes(device, in_dtype, out_dtype):
    x = make_input((2, 3, 5, 7), in_dtype, device)
    check(tensorops.normalize(x, MEAN, STD, dtype=out_dtype), x, MEAN, STD, dtype=out_dtype)


@pytest.mark.parametrize(
    "shape,dim",
    [((2, 3, 8, 9), -3), ((3, 8, 9), -3), ((2, 8, 9, 3), -1), ((8, 9, 3), -1), ((3,), 0), ((4, 3), 1), ((2, 3, 4, 5, 6), 1)],
)
def test_channel_positions(device, shape, dim):
    x = make_input(shape, torch.uint8, device)
    check(tensorops.normalize(x, MEAN, STD, dim=dim), x, MEAN, STD, dim=dim)


def test_one_and_many_channels(device):
    x = make_input((2, 1, 6, 7), torch.uint8, device)
    check(tensorops.normalize(x, [0.5], [0.25]), x, [0.5], [0.25])
    for c in (5, 64, 65, 200):  # 65+ no longer fit the CUDA kernel arguments
        x = make_input((2, c, 3, 5), torch.uint8, device)
        m = torch.rand(c).tolist()
        s = (torch.rand(c) + 0.1).tolist()
        check(tensorops.normalize(x, m, s), x, m, s)


def test_scalar_stats_and_scale(device):
    x = make_input((2, 3, 4, 5), torch.uint8, device)
    check(tensorops.normalize(x, 0.5, 2.0), x, 0.5, 2.0)
    check(tensorops.normalize(x, 127.5, 127.5, scale=1.0), x, 127.5, 127.5, scale=1.0)
    xf = make_input((2, 3, 4, 5), torch.float32, device)
    check(tensorops.normalize(xf, MEAN, STD, scale=0.5), xf, MEAN, STD, scale=0.5)


@pytest.mark.parametrize("form", ["1d", "c11", "nc11", "full", "mixed", "scalar_tensor"])
def test_tensor_stats(device, form):
    x = make_input((4, 3, 5, 6), torch.uint8, device)
    g = torch.Generator().manual_seed(0)
    shapes = {"1d": (3,), "c11": (3, 1, 1), "nc11": (4, 3, 1, 1), "full": (4, 3, 5, 6), "scalar_tensor": ()}
    if form == "mixed":
        mean, std = MEAN, (torch.rand((4, 3, 1, 1), generator=g) + 0.1).to(device)
    else:
        mean = torch.rand(shapes[form], generator=g).to(device)
        std = (torch.rand(shapes[form], generator=g) + 0.1).to(device)
    check(tensorops.normalize(x, mean, std), x, mean, std)


def test_float64_stats_tensor_and_half_output(device):
    x = make_input((2, 3, 4, 4), torch.uint8, device)
    mean = torch.tensor(MEAN, dtype=torch.float64, device=device)
    std = torch.tensor(STD, dtype=torch.float64, device=device)
    check(tensorops.normalize(x, mean, std, dtype=torch.float16), x, mean, std, dtype=torch.float16)


# ---- layouts -----------------------------------------------------------------------------------------------
def _layouts(device):
    base = make_input((4, 3, 10, 12), torch.uint8, device)
    nhwc = make_input((4, 10, 12, 3), torch.uint8, device)
    return {
        "contiguous": base,
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "nhwc_permuted": nhwc.permute(0, 3, 1, 2),
        "sliced": base[:, :, ::2, 1:],
        "transposed_hw": base.transpose(2, 3),
        "expanded": base[:1].expand(4, 3, 10, 12),
        "offset_view": base.flatten()[1:].view(-1)[: 4 * 3 * 10 * 11].view(4, 3, 10, 11),
    }


@pytest.mark.parametrize(
    "layout", ["contiguous", "channels_last", "nhwc_permuted", "sliced", "transposed_hw", "expanded", "offset_view"]
)
@pytest.mark.parametrize("fmt", [torch.preserve_format, torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("stats", ["list", "tensor"])
def test_layouts_and_memory_format(device, layout, fmt, stats):
    x = _layouts(device)[layout]
    mean, std = (MEAN, STD) if stats == "list" else (
        torch.rand(x.shape[0], 3, 1, 1, device=device), torch.rand(x.shape[0], 3, 1, 1, device=device) + 0.1)
    out = tensorops.normalize(x, mean, std, memory_format=fmt)
    check(out, x, mean, std)
    if fmt == torch.preserve_format:
        # the layout torch's own elementwise ops give
        assert out.stride() == (x.float() * 1.0).stride()
    else:
        assert out.is_contiguous(memory_format=fmt)


def test_nhwc_dim_minus_one_to_contiguous(device):
    x = make_input((2, 7, 9, 3), torch.uint8, device)
    out = tensorops.normalize(x, MEAN, STD, dim=-1)
    check(out, x, MEAN, STD, dim=-1)


def test_more_dims_than_the_kernels_hold_fall_back(device):
    x = make_input((2,) * 18, torch.uint8, device)
    x = x.permute(*reversed(range(18)))  # 18 dims that cannot be merged
    check(tensorops.normalize(x, [0.5, 0.1], [0.2, 0.3], dim=0), x, [0.5, 0.1], [0.2, 0.3], dim=0)


def test_empty(device):
    for shape in [(0, 3, 4, 4), (2, 3, 0, 4), (0,)]:
        dim = -3 if len(shape) == 4 else 0
        x = make_input(shape, torch.uint8, device)
        mean, std = (MEAN, STD) if len(shape) == 4 else ([0.5], [0.5])
        out = tensorops.normalize(x, mean, std, dim=dim)
        assert out.shape == x.shape and out.dtype == torch.float32
        out = tensorops.normalize(x, torch.zeros(1, device=device), torch.ones(1, device=device), dim=dim)
        assert out.shape == x.shape


def test_nan_inf_pass_through(device):
    x = torch.tensor([[float("nan"), float("inf"), -float("inf"), 1.0]], device=device).expand(3, 4)
    out = tensorops.normalize(x, MEAN, STD, dim=0)
    check(out, x, MEAN, STD, dim=0)
    assert out[:, 0].isnan().all() and out[:, 1].isposinf().all() and out[:, 2].isneginf().all()


def test_half_and_bfloat16_rounding_is_exact(device):
    # mean 0, std 1: the output is the input rounded to the output dtype, exactly as torch rounds it
    x = torch.randn(1 << 16, device=device) * torch.logspace(-9, 6, 1 << 16, device=device)
    x = torch.cat([x, torch.tensor([65504.0, 65520.0, 6e-8, 2.9e-8, -0.0, float("nan"), float("inf")], device=device)])
    for dt in (torch.float16, torch.bfloat16):
        out = tensorops.normalize(x, [0.0], [1.0], dim=0, dtype=dt)
        ref = x.to(dt)
        same = (out.view(torch.int16) == ref.view(torch.int16)) | (out.isnan() & ref.isnan())
        assert bool(same.all()), f"{dt}: {(~same).sum().item()} values differ"


# ---- autograd ----------------------------------------------------------------------------------------------
def test_gradcheck_input_list_stats(device):
    x = torch.rand(2, 3, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: tensorops.normalize(t, MEAN, STD), (x,))
    assert torch.autograd.gradcheck(lambda t: tensorops.normalize(t, MEAN, STD, scale=0.5, dim=1), (x,))


@pytest.mark.parametrize("shape", [(3,), (3, 1, 1), (2, 3, 1, 1), (1,), (2, 3, 4, 5)])
def test_gradcheck_tensor_stats(device, shape):
    x = torch.rand(2, 3, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    m = torch.rand(shape, dtype=torch.float64, device=device, requires_grad=True)
    s = (torch.rand(shape, dtype=torch.float64, device=device) + 0.5).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b, c: tensorops.normalize(a, b, c, scale=0.7), (x, m, s))
    # broadcast shapes that differ between mean and std, statistics only
    s2 = torch.tensor(1.5, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda b, c: tensorops.normalize(x.detach(), b, c), (m, s2))


def test_grads_match_torch_autograd(device):
    x = torch.randint(0, 256, (4, 3, 6, 5), dtype=torch.uint8, device=device)
    m = torch.rand(4, 3, 1, 1, device=device, requires_grad=True)
    s = (torch.rand(1, 3, 1, 1, device=device) + 0.5).requires_grad_()
    g = torch.randn(4, 3, 6, 5, device=device)
    tensorops.normalize(x, m, s).backward(g)
    m2, s2 = m.detach().clone().requires_grad_(), s.detach().clone().requires_grad_()
    ((x.float() / 255 - m2) / s2).backward(g)
    assert_close(m.grad, m2.grad, rtol=1e-5, atol=1e-5)
    assert_close(s.grad, s2.grad, rtol=1e-5, atol=1e-4)


def test_half_input_grad(device):
    x = torch.rand(2, 3, 4, 4, device=device).half().requires_grad_()
    out = tensorops.normalize(x, MEAN, STD, dtype=torch.float32)
    out.sum().backward()
    exp = (1 / torch.tensor(STD, device=device)).view(3, 1, 1).expand(2, 3, 4, 4).half()
    assert x.grad.dtype == torch.float16
    assert_close(x.grad, exp, rtol=2e-3, atol=2e-3)


# ---- registration: opcheck, compile, the kernel really ran ---------------------------------------------------
@requires_compiled
def test_opcheck(device):
    x = make_input((2, 3, 4, 5), torch.uint8, device)
    xf = torch.rand(2, 3, 4, 5, device=device, requires_grad=True)
    cl = xf.detach().contiguous(memory_format=torch.channels_last)
    ops = torch.ops.tensorops
    torch.library.opcheck(ops.normalize.default, (x, MEAN, STD, 1, 1 / 255, torch.float32, torch.preserve_format))
    torch.library.opcheck(ops.normalize.default, (xf, MEAN, STD, 1, 1.0, torch.float16, torch.preserve_format))
    torch.library.opcheck(ops.normalize.default, (cl, [0.5], [2.0], 1, 1.0, torch.float32, torch.contiguous_format))
    m = torch.rand(2, 3, 1, 1, device=device, requires_grad=True)
    s = (torch.rand(1, 3, 1, 1, device=device) + 0.5).requires_grad_()
    torch.library.opcheck(ops.normalize_tensor.default, (xf, m, s, 1.0, torch.float32, torch.preserve_format))
    torch.library.opcheck(ops.normalize_tensor.default, (x, m, s, 1 / 255, torch.bfloat16, torch.channels_last))


@requires_compiled
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    x = make_input((2, 3, 8, 8), torch.uint8, device)
    xf = torch.rand(2, 3, 8, 8, device=device, requires_grad=True)
    m = torch.rand(2, 3, 1, 1, device=device, requires_grad=True)
    s = torch.rand(1, 3, 1, 1, device=device) + 0.5

    def pipeline(img, feat, mean):
        a = tensorops.normalize(img, MEAN, STD)
        b = tensorops.normalize(feat, mean, s, dtype=torch.float32)
        return (a * b).sum()

    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")
    out = compiled(x, xf, m)
    assert_close(out, pipeline(x, xf, m), rtol=1e-5, atol=1e-4)
    out.backward()
    assert xf.grad is not None and m.grad is not None


@requires_compiled
def test_compile_inductor(device):
    torch._dynamo.reset()
    x = make_input((2, 8, 8, 3), torch.uint8, device)
    m = torch.rand(2, 3, 1, 1, device=device)

    def pipeline(img):
        a = tensorops.normalize(img.permute(0, 3, 1, 2), MEAN, STD, memory_format=torch.contiguous_format)
        b = tensorops.normalize(img.permute(0, 3, 1, 2), m, 2.0, dtype=torch.bfloat16)
        return a.relu() + b.float()

    compiled = torch.compile(pipeline, fullgraph=True)
    assert_close(compiled(x), pipeline(x))


@requires_compiled
def test_compiled_kernel_ran(device):
    x = make_input((2, 3, 4, 4), torch.uint8, device)
    _, names = kernel_ran(tensorops.normalize, x, MEAN, STD)
    assert "tensorops::normalize" in names
    _, names = kernel_ran(tensorops.normalize, x, torch.rand(2, 3, 1, 1, device=device), torch.ones(3, device=device))
    assert "tensorops::normalize_tensor" in names


def test_fallback_without_extension():
    code = (
        "import warnings, torch, tensorops\n"
        "assert not tensorops.is_compiled(), 'extension should be disabled'\n"
        "assert tensorops.build_info()['compiled'] is False\n"
        "x = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)\n"
        "out = tensorops.normalize(x, [0.5, 0.5, 0.5], [0.25, 0.25, 0.25])\n"
        "ref = (x.float() / 255 - 0.5) / 0.25\n"
        "torch.testing.assert_close(out, ref)\n"
        "m = torch.rand(2, 3, 1, 1, requires_grad=True)\n"
        "tensorops.normalize(x, m, torch.ones(3)).sum().backward()\n"
        "assert m.grad is not None\n"
        "print('fallback ok')\n"
    )
    env = dict(os.environ, TENSOROPS_DISABLE_EXTENSION="1")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=os.getcwd())
    assert res.returncode == 0, res.stderr
    assert "fallback ok" in res.stdout


def test_missing_extension_warns_once():
    code = (
        "import sys, warnings\n"
        "sys.modules['tensorops._C'] = None  # makes `from tensorops import _C` raise ImportError\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    import tensorops\n"
        "msgs = [str(x.message) for x in w if 'compiled extension is not available' in str(x.message)]\n"
        "assert len(msgs) == 1, msgs\n"
        "assert not tensorops.is_compiled()\n"
        "print('warned')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.getcwd())
    assert res.returncode == 0, res.stderr
    assert "warned" in res.stdout


# ---- the module ----------------------------------------------------------------------------------------------
def test_module(device):
    mod = tensorops.Normalize(MEAN, STD).to(device)
    assert mod.mean.device.type == device and isinstance(mod, torch.nn.Module)
    x = make_input((2, 3, 5, 5), torch.uint8, device)
    check(mod(x), x, MEAN, STD)
    sd = mod.state_dict()
    assert set(sd) == {"mean", "std"}
    other = tensorops.Normalize([0.0] * 3, [1.0] * 3).to(device)
    other.load_state_dict(sd)
    assert_close(other(x), mod(x))
    cpu_mod = tensorops.Normalize([0.0] * 3, [1.0] * 3)
    cpu_mod.load_state_dict({k: v.cpu() for k, v in sd.items()})
    assert_close(cpu_mod(x), mod(x))  # statistics as numbers, input on any device
    clone = pickle.loads(pickle.dumps(cpu_mod))
    assert_close(clone(x), mod(x))
    assert_close(copy.deepcopy(mod)(x), mod(x))
    nhwc = tensorops.Normalize(MEAN, STD, dim=-1, dtype=torch.float16)
    y = make_input((2, 4, 4, 3), torch.uint8, "cpu")
    check(nhwc(y), y, MEAN, STD, dim=-1, dtype=torch.float16)


# ---- bad input -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(mean=[0.5, 0.5], std=STD), ValueError, "mean has 2 values but input has 3 channels"),
        (dict(mean=MEAN, std=[0.2] * 4), ValueError, "std has 4 values"),
        (dict(mean=MEAN, std=[0.2, 0.0, 0.2]), ValueError, "std has a zero"),
        (dict(mean=[float("nan"), 0, 0], std=STD), ValueError, "mean has a NaN"),
        (dict(mean=MEAN, std=[float("inf"), 1, 1]), ValueError, "std has a NaN or infinite"),
        (dict(mean=MEAN, std=STD, dim=4), IndexError, "dim 4 is out of range"),
        (dict(mean=MEAN, std=STD, dim=-5), IndexError, "dim -5 is out of range"),
        (dict(mean=MEAN, std=STD, dtype=torch.int32), TypeError, "dtype must be"),
        (dict(mean=MEAN, std=STD, dtype=torch.uint8), TypeError, "dtype must be"),
        (dict(mean="abc", std=STD), TypeError, "mean must be"),
        (dict(mean=MEAN, std=None), TypeError, "std must be"),
        (dict(mean=[[0.1, 0.2, 0.3]], std=STD), TypeError, "mean must hold numbers"),
        (dict(mean=[], std=STD), ValueError, "mean is empty"),
        (dict(mean=torch.zeros(2, 3, 1, 1), std=STD), ValueError, "mean of shape .* does not broadcast"),
        (dict(mean=torch.zeros(4), std=STD), ValueError, "mean has 4 values"),
        (dict(mean=MEAN, std=torch.ones(1, 1, 1, 1, 1)), ValueError, "std of shape .* has more dims"),
        (dict(mean=torch.zeros(3, dtype=torch.complex64), std=STD), TypeError, "mean must be a real"),
        (dict(mean=MEAN, std=STD, scale="x"), TypeError, "scale must be"),
        (dict(mean=MEAN, std=STD, memory_format=torch.channels_last_3d), ValueError, "memory_format"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    x = torch.zeros(1, 3, 4, 4, dtype=torch.uint8)
    with pytest.raises(exc, match=match):
        tensorops.normalize(x, **kwargs)


@pytest.mark.parametrize(
    "x,exc,match",
    [
        (torch.tensor(3, dtype=torch.uint8), ValueError, "0-dim"),
        (torch.zeros(3, 4, 4, dtype=torch.complex64), TypeError, "input must be uint8 or floating"),
        (torch.zeros(3, 4, 4, dtype=torch.bool), TypeError, "input must be uint8 or floating"),
        (torch.zeros(3, 4, 4, dtype=torch.int32), TypeError, "input must be uint8 or floating"),
        ([[1, 2, 3]], TypeError, "input must be a torch.Tensor"),
    ],
)
def test_bad_input(x, exc, match):
    with pytest.raises(exc, match=match):
        tensorops.normalize(x, MEAN if getattr(x, "dim", lambda: 0)() == 3 else [0.5], [0.5])


@requires_compiled
def test_direct_op_checks_name_the_argument():
    x = torch.zeros(1, 3, 2, 2, dtype=torch.uint8)
    with pytest.raises(ValueError, match="mean"):
        torch.ops.tensorops.normalize.default(x, [0.1, 0.2], STD, 1, 1.0, torch.float32, torch.preserve_format)
    with pytest.raises(IndexError, match="dim"):
        torch.ops.tensorops.normalize.default(x, MEAN, STD, 7, 1.0, torch.float32, torch.preserve_format)
    with pytest.raises(TypeError, match="dtype"):
        torch.ops.tensorops.normalize.default(x, MEAN, STD, 1, 1.0, torch.int64, torch.preserve_format)
    with pytest.raises(ValueError, match="std"):
        torch.ops.tensorops.normalize_tensor.default(
            x, torch.zeros(1, 3, 1, 1), torch.ones(1, 2, 1, 1), 1.0, torch.float32, torch.preserve_format)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU to put tensors on two devices")
def test_mixed_devices():
    x = torch.zeros(1, 3, 2, 2, dtype=torch.uint8, device="cuda")
    with pytest.raises(ValueError, match="mean is on cpu"):
        tensorops.normalize(x, torch.zeros(3), torch.ones(3, device="cuda"))


# ---- uint16 input (16-bit PNGs): scale 1/65535 by default -------------------------------------------------------
def make_u16(shape, device):
    g = torch.Generator().manual_seed(16)
    x = torch.randint(0, 65536, shape, generator=g, dtype=torch.int64)
    x.view(-1)[:2] = torch.tensor([0, 65535])  # both ends of the range
    return x.to(torch.uint16).to(device)


@pytest.mark.parametrize("out_dtype", [None] + FLOATS)
@pytest.mark.parametrize("layout", ["nchw", "channels_last", "nhwc_to_nchw", "strided"])
def test_uint16_input(device, out_dtype, layout):
    x = make_u16((2, 3, 6, 10), device)
    kw = {}
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    elif layout == "nhwc_to_nchw":
        x = make_u16((2, 6, 10, 3), device).permute(0, 3, 1, 2)
        kw = dict(memory_format=torch.contiguous_format)
    elif layout == "strided":
        x = x[:, :, ::2, 1:]
    out, names = kernel_ran(tensorops.normalize, x, MEAN, STD, dtype=out_dtype, **kw)
    assert "tensorops::normalize" in names or not tensorops.is_compiled()
    check(out, x, MEAN, STD, dtype=out_dtype or torch.float32, scale=1 / 65535)
    ref = reference.normalize(x, MEAN, STD, dim=1, scale=1 / 65535, dtype=out_dtype or torch.float32, **kw)
    assert out.stride() == ref.stride()
    assert_close(out, ref, rtol=TOL[out.dtype], atol=TOL[out.dtype])


def test_uint16_statistics_tensors_and_their_gradients(device):
    x = make_u16((2, 3, 4, 5), device)
    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1).requires_grad_()
    std = torch.full((2, 1, 1, 1), 0.25, device=device, requires_grad=True)
    out, names = kernel_ran(tensorops.normalize, x, mean, std, scale=2.0 / 65535)
    assert "tensorops::normalize_tensor" in names or not tensorops.is_compiled()
    check(out, x, mean.detach(), std.detach(), scale=2.0 / 65535, dtype=torch.float32)
    out.square().sum().backward()
    m, s = mean.detach().clone().requires_grad_(), std.detach().clone().requires_grad_()
    ((x.double() * (2.0 / 65535) - m.double()) / s.double()).square().sum().backward()
    assert_close(mean.grad, m.grad, rtol=1e-4, atol=1e-3)
    assert_close(std.grad, s.grad, rtol=1e-4, atol=1e-3)

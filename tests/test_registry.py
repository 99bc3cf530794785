"""tensorops.registry.OPS says what every public op supports; these tests hold each row to its word.

For every row: the function exists and is exported, its schemas are registered ops, ``out=`` is taken exactly
when the row says so, its derivatives (reverse and forward mode) and its vmap are torch's, it runs its kernels on
the devices it lists; and the table as a whole names every registered op and every public function. A new op
joins these checks by its registry row plus one entry in SAMPLES below (a missing entry fails).
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pathlib
from typing import Callable, NamedTuple, Tuple

import pytest
import torch

import tensorops
import tensorops.augment
from tensorops import _routing
from tensorops.registry import OPS, OpInfo, benchmark_modules, families

from conftest import DEVICES, kernel_ran, requires_compiled

ROOT = pathlib.Path(__file__).resolve().parents[1]
F64 = torch.float64
MEAN, STD = [0.1, 0.2, 0.3], [0.5, 0.6, 0.7]


class Sample(NamedTuple):
    """Small float64 inputs for one op (uint8 batches for tensorops.augment's): ``make(device)`` gives the
    primals; ``ours(*primals)`` calls the op, ``theirs(*primals)`` torch's equivalent (torchvision's, per sample);
    ``out(*primals)`` gives a fresh out= argument (None: no out=)."""

    make: Callable[[str], Tuple[torch.Tensor, ...]]
    ours: Callable
    theirs: Callable
    out: Callable = lambda *p: None  # noqa: E731


def _rand(*shape, device="cpu", seed=0):
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed)).to(device)


def _channels(t: torch.Tensor, values, ndim: int) -> torch.Tensor:
    return torch.tensor(values, dtype=F64, device=t.device).view([-1] + [1] * (ndim - 1))


def _torch_normalize(x):
    return (x - _channels(x, MEAN, 3)) / _channels(x, STD, 3)


def _torch_crop_mirror_normalize(x):
    # size (4, 4) centred in 6x6 images: rows and columns 1..4; the second image mirrored
    crop = x[:, :, 1:5, 1:5]
    crop = torch.stack([crop[0], crop[1].flip(-1)])
    return (crop - _channels(x, MEAN, 3)) / _channels(x, STD, 3)


def _torch_resized_crop_mirror_normalize(x):
    # the whole 6x6 images resized to (3, 4): torch's antialiased bilinear interpolate; the second image mirrored
    r = torch.nn.functional.interpolate(x, size=(3, 4), mode="bilinear", align_corners=False, antialias=True)
    r = torch.stack([r[0], r[1].flip(-1)])
    return (r - _channels(x, MEAN, 3)) / _channels(x, STD, 3)


def _clip_ours(g):
    p = torch.zeros_like(g, requires_grad=True)
    p.grad = g.clone()
    tensorops.clip_grad_value_([p], 0.4)
    return p.grad


def _clip_theirs(g):
    p = torch.zeros_like(g, requires_grad=True)
    p.grad = g.clone()
    torch.nn.utils.clip_grad_value_([p], 0.4)
    return p.grad


def _jpeg(x: torch.Tensor) -> torch.Tensor:
    """A float tensor (H, W) or (3, H, W) as the bytes of a JPEG (quality 95) of (x * 40 + 128) in uint8."""
    import io

    from PIL import Image

    a = (x * 40 + 128).clamp(0, 255).to(torch.uint8).cpu().numpy()
    im = Image.fromarray(a if a.ndim == 2 else a.transpose(1, 2, 0))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=95)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _pil_rgb(data: torch.Tensor) -> torch.Tensor:
    """Pillow's RGB decode of JPEG bytes as a (3, H, W) float64 tensor in [0, 1]."""
    import io

    import numpy as np
    from PIL import Image

    a = np.array(Image.open(io.BytesIO(data.numpy().tobytes())).convert("RGB"))
    return torch.from_numpy(a).permute(2, 0, 1).to(F64) / 255


def _decode_ours(x, out=None):
    return tensorops.decode_resized_crop_mirror_normalize([x, x], MEAN, STD, size=(3, 4), dtype=F64,
                                                          mirror=torch.tensor([False, True]), out=out)


SAMPLES = {
    "normalize": Sample(lambda d: (_rand(2, 3, 4, 4, device=d),),
                        lambda x: tensorops.normalize(x, MEAN, STD), _torch_normalize,
                        out=lambda x: torch.empty_like(x)),
    "clamp": Sample(lambda d: (_rand(3, 4, device=d),), lambda x: tensorops.clamp(x, -0.3, 0.4),
                    lambda x: torch.clamp(x, -0.3, 0.4), out=lambda x: torch.empty_like(x)),
    "clamp_": Sample(lambda d: (_rand(3, 4, device=d),), lambda x: tensorops.clamp_(x.clone(), -0.3, 0.4),
                     lambda x: x.clone().clamp_(-0.3, 0.4)),
    "clip_grad_value_": Sample(lambda d: (_rand(3, 4, device=d),), _clip_ours, _clip_theirs),
    "cat": Sample(lambda d: (_rand(2, 3, device=d), _rand(4, 3, device=d, seed=1)),
                  lambda a, b: tensorops.cat([a, b], 0), lambda a, b: torch.cat([a, b], 0),
                  out=lambda a, b: torch.empty(0, dtype=F64, device=a.device)),
    "split": Sample(lambda d: (_rand(5, 3, device=d),), lambda x: tensorops.split(x, [2, 3], 0),
                    lambda x: tuple(p.clone() for p in torch.split(x, [2, 3], 0)),
                    out=lambda x: [torch.empty(2, 3, dtype=F64, device=x.device), torch.empty(3, 3, dtype=F64,
                                                                                              device=x.device)]),
    "stack": Sample(lambda d: (_rand(2, 3, device=d), _rand(2, 3, device=d, seed=1)),
                    lambda a, b: tensorops.stack([a, b], 1), lambda a, b: torch.stack([a, b], 1),
                    out=lambda a, b: torch.empty(0, dtype=F64, device=a.device)),
    "chunk": Sample(lambda d: (_rand(5, 3, device=d),), lambda x: tensorops.chunk(x, 2, 0),
                    lambda x: tuple(p.clone() for p in torch.chunk(x, 2, 0))),
    "crop_mirror_normalize": Sample(
        lambda d: (_rand(2, 3, 6, 6, device=d),),
        lambda x: tensorops.crop_mirror_normalize(x, MEAN, STD, size=(4, 4), mirror=torch.tensor([False, True])),
        _torch_crop_mirror_normalize,
        out=lambda x: torch.empty(2, 3, 4, 4, dtype=F64, device=x.device),
    ),
    "resized_crop_mirror_normalize": Sample(
        lambda d: (_rand(2, 3, 6, 6, device=d),),
        lambda x: tensorops.resized_crop_mirror_normalize(x, MEAN, STD, size=(3, 4), mirror=torch.tensor([False, True])),
        _torch_resized_crop_mirror_normalize,
        out=lambda x: torch.empty(2, 3, 3, 4, dtype=F64, device=x.device),
    ),
    # the JPEG of a 6x6 image, twice: Pillow's decode, then the resized_crop_mirror_normalize sample's torch
    "decode_resized_crop_mirror_normalize": Sample(
        lambda d: (_jpeg(_rand(3, 6, 6)),),
        _decode_ours,
        lambda x: _torch_resized_crop_mirror_normalize(torch.stack([_pil_rgb(x)] * 2)),
        out=lambda x: torch.empty(2, 3, 3, 4, dtype=F64),
    ),
}



# ---- tensorops.augment: a (3, C, 6, 5) uint8 batch and per-sample arguments; theirs is torchvision v2 per sample --
def _u8(device, c=3, seed=0):
    return torch.randint(0, 256, (3, c, 6, 5), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed)
                         ).to(device)


def _tv():
    return pytest.importorskip("torchvision.transforms.v2.functional",
                               reason="tensorops.augment's reference is torchvision (an optional extra)")


def _per_sample(fn):
    """theirs for an augment op: ``fn(F, image, i, *primals)`` for each sample i, stacked."""
    return lambda x, *rest: torch.stack([fn(_tv(), x[i], i, *rest) for i in range(x.shape[0])])


_F64 = dict(dtype=F64)
# name: (the extra primals from the batch's device, ours(x, *extra), theirs per sample (F, image, i, *extra))
_AUGMENT = {
    "adjust_brightness": (lambda d: (torch.tensor([0.0, 0.7, 1.8], **_F64),),
                          lambda x, f: tensorops.augment.adjust_brightness(x, f),
                          lambda F, im, i, f: F.adjust_brightness(im, float(f[i]))),
    "adjust_contrast": (lambda d: (torch.tensor([0.0, 0.6, 1.7], **_F64),),
                        lambda x, f: tensorops.augment.adjust_contrast(x, f),
                        lambda F, im, i, f: F.adjust_contrast(im, float(f[i]))),
    "adjust_saturation": (lambda d: (torch.tensor([0.0, 0.5, 2.0], **_F64),),
                          lambda x, f: tensorops.augment.adjust_saturation(x, f),
                          lambda F, im, i, f: F.adjust_saturation(im, float(f[i]))),
    "adjust_hue": (lambda d: (torch.tensor([-0.5, 0.1, 0.45], **_F64),),
                   lambda x, f: tensorops.augment.adjust_hue(x, f),
                   lambda F, im, i, f: F.adjust_hue(im, float(f[i]))),
    "adjust_sharpness": (lambda d: (torch.tensor([0.0, 0.4, 2.5], **_F64),),
                         lambda x, f: tensorops.augment.adjust_sharpness(x, f),
                         lambda F, im, i, f: F.adjust_sharpness(im, float(f[i]))),
    "posterize": (lambda d: (torch.tensor([0, 3, 8]),), lambda x, b: tensorops.augment.posterize(x, b),
                  lambda F, im, i, b: F.posterize(im, int(b[i]))),
    "solarize": (lambda d: (torch.tensor([0.0, 127.5, 255.0], **_F64),),
                 lambda x, t: tensorops.augment.solarize(x, t), lambda F, im, i, t: F.solarize(im, float(t[i]))),
    "autocontrast": (lambda d: (), tensorops.augment.autocontrast, lambda F, im, i: F.autocontrast(im)),
    "equalize": (lambda d: (), tensorops.augment.equalize, lambda F, im, i: F.equalize(im)),
    "invert": (lambda d: (), tensorops.augment.invert, lambda F, im, i: F.invert(im)),
    "rgb_to_grayscale": (lambda d: (), lambda x: tensorops.augment.rgb_to_grayscale(x, 3),
                         lambda F, im, i: F.rgb_to_grayscale(im, 3)),
    # integer translations and half turns, nearest: exact in torchvision's float32 grid too
    "affine": (lambda d: (torch.tensor([0.0, 180.0, 0.0], **_F64), torch.tensor([[1, 0], [0, 0], [-2, 1]], **_F64)),
               lambda x, a, t: tensorops.augment.affine(x, a, t, 1.0, (0.0, 0.0), fill=9),
               lambda F, im, i, a, t: F.affine(im, float(a[i]), t[i].tolist(), 1.0, [0.0, 0.0], fill=9)),
    "rotate": (lambda d: (torch.tensor([180.0, -180.0, 0.0], **_F64),), lambda x, a: tensorops.augment.rotate(x, a),
               lambda F, im, i, a: F.rotate(im, float(a[i]))),
    "erase": (lambda d: (torch.tensor([[0, 0, 2, 3], [1, 2, 9, 9], [3, 1, 0, 2]]).to(d),),
              lambda x, b: tensorops.augment.erase(x, b, 7),
              lambda F, im, i, b: F.erase(im, *b[i].tolist(), v=torch.tensor(7, dtype=torch.uint8))),
    # brightness, equalize, rotate 180 (OPS indices 1, 9, 16)
    "apply_ops": (lambda d: (torch.tensor([1, 9, 16]), torch.tensor([1.3, 0.0, 180.0], **_F64)),
                  lambda x, o, m: tensorops.augment.apply_ops(x, o, m),
                  lambda F, im, i, o, m: [F.adjust_brightness(im, 1.3), F.equalize(im), F.rotate(im, 180.0)][i]),
}
for _name, (_extra, _ours, _theirs) in _AUGMENT.items():
    SAMPLES[_name] = Sample(lambda d, e=_extra: (_u8(d), *e(d)), _ours, _per_sample(_theirs))


def _torch_mix(x, *rest):
    """v2.AugMix's mix in float32: w0 * batch, then + w_i * augmented_i in order, truncated to uint8."""
    *augs, w = rest
    dims = (x.shape[0], 1, 1, 1)
    out = w[:, 0].reshape(dims) * x
    for i, a in enumerate(augs):
        out.add_(w[:, 1 + i].reshape(dims) * a)
    return out.to(torch.uint8)


SAMPLES["mix"] = Sample(lambda d: (_u8(d), _u8(d, seed=1), _u8(d, seed=2),
                                   torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.0, 0.9], [1.0, 0.0, 0.0]]).to(d)),
                        lambda x, a, b, w: tensorops.augment.mix(x, [a, b], w), _torch_mix)

ROWS = [pytest.param(op, id=name) for name, op in OPS.items()]


def _sample(op: OpInfo) -> Sample:
    assert op.name in SAMPLES, f"registry row {op.name!r} has no entry in tests/test_registry.py SAMPLES"
    return SAMPLES[op.name]


def _assert_same(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), (ours, theirs)
        for o, t in zip(ours, theirs):
            torch.testing.assert_close(o, t)
    else:
        torch.testing.assert_close(ours, theirs)


def _schemas_seen(names, op: OpInfo):
    return {n for n in names if n.split("::")[-1] in op.schemas}


# ---- the table ------------------------------------------------------------------------------------------------
def test_table_is_consistent():
    assert len(OPS) == len(set(OPS)) and all(name == op.name for name, op in OPS.items())
    assert set(families()) == {op.family for op in OPS.values()}
    for module in benchmark_modules():
        assert (ROOT / "benchmarks" / "ops" / f"{module}.py").is_file(), f"benchmarks/ops/{module}.py is missing"
    # a runner of its own (harness=False) is not a harness module (its own tests are in tests/test_benchmarks.py)
    assert not {op.bench for op in OPS.values() if not op.harness} & set(benchmark_modules())
    for op in OPS.values():
        assert op.schemas, op.name
        assert set(op.devices) <= {"cpu", "cuda"} and op.devices, op.name
        assert list((ROOT / "csrc" / "cpu").glob(f"*{op.family}*.cpp")), f"no csrc/cpu file of family {op.family}"
        # torchvision is an optional extra: its names are checked where it is installed (CI installs it)
        optional_missing = op.torch_name.startswith("torchvision.") and importlib.util.find_spec("torchvision") is None
        if op.torch_name.startswith("torch") and not optional_missing:
            module, _, attr = op.torch_name.rpartition(".")
            target = importlib.import_module(module) if module != "torch" else torch
            assert callable(getattr(target, attr)), op.torch_name
        if op.forward_ad or op.vmap:
            assert op.autograd or op.inplace, f"{op.name}: transforms claimed without derivatives"


def test_every_public_function_has_a_row():
    import tensorops.augment

    functions = {
        ("tensorops", name) for name in tensorops.__all__
        if inspect.isfunction(getattr(tensorops, name)) and name not in ("build_info", "is_compiled", "empty_cache")
    }
    # tensorops.augment's functional ops (its policies are classes over them, tests/test_augment_policies.py)
    functions |= {
        ("tensorops.augment", name) for name in tensorops.augment.__all__
        if inspect.isfunction(getattr(tensorops.augment, name))
        and getattr(tensorops.augment, name).__module__ == "tensorops.augment.functional"
    }
    rows = {(op.module, op.name) for op in OPS.values()}
    assert functions == rows, functions ^ rows


@requires_compiled
def test_every_registered_op_is_claimed():
    """Each torch.ops.tensorops op is a schema of some row, or the backward of one."""
    registered = {n.split("::")[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith("tensorops::")}
    claimed = {s for op in OPS.values() for s in op.schemas} | {s + "_out" for op in OPS.values()
                                                                for s in op.out_overloads}
    unclaimed = {n for n in registered - claimed if not (n.endswith("_backward") and n[: -len("_backward")] in claimed)}
    assert not unclaimed, unclaimed


# ---- each row -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ROWS)
def test_function_exists_and_is_exported(op):
    module = importlib.import_module(op.module)
    assert op.name in module.__all__
    assert callable(op.function) and op.function is getattr(module, op.name)
    assert op.function.__doc__, f"{op.qualname} has no docstring"


@requires_compiled
@pytest.mark.parametrize("op", ROWS)
def test_schemas_are_registered(op):
    for schema in op.schemas:
        packet = getattr(torch.ops.tensorops, schema)
        assert isinstance(packet.default, torch._ops.OpOverload), schema


@pytest.mark.parametrize("op", ROWS)
def test_values_match_torch(op):
    sample = _sample(op)
    primals = sample.make("cpu")
    _assert_same(sample.ours(*primals), sample.theirs(*primals))


@pytest.mark.parametrize("op", ROWS)
def test_out_taken_iff_claimed(op):
    sample = _sample(op)
    primals = sample.make("cpu")
    out = sample.out(*primals)
    if op.out:
        assert out is not None, f"{op.name}: SAMPLES entry needs an out= argument"
        res = _call_with_out(op, primals, out)
        _assert_same(out, sample.theirs(*primals))
        assert res is None if isinstance(out, list) else res is out
    else:
        assert out is None
        with pytest.raises(TypeError, match="out"):
            op.function(*[list(primals)] if op.name in ("cat", "stack") else primals, out=primals[0])


def _call_with_out(op: OpInfo, primals, out):
    """The sample's call with ``out=`` added (the samples call the functions with fixed arguments)."""
    calls = {
        "clamp": lambda x: tensorops.clamp(x, -0.3, 0.4, out=out),
        "cat": lambda a, b: tensorops.cat([a, b], 0, out=out),
        "split": lambda x: tensorops.split(x, [2, 3], 0, out=out),
        "stack": lambda a, b: tensorops.stack([a, b], 1, out=out),
        "normalize": lambda x: tensorops.normalize(x, MEAN, STD, out=out),
        "crop_mirror_normalize": lambda x: tensorops.crop_mirror_normalize(
            x, MEAN, STD, size=(4, 4), mirror=torch.tensor([False, True]), out=out),
        "resized_crop_mirror_normalize": lambda x: tensorops.resized_crop_mirror_normalize(
            x, MEAN, STD, size=(3, 4), mirror=torch.tensor([False, True]), out=out),
        "decode_resized_crop_mirror_normalize": lambda x: _decode_ours(x, out=out),
    }
    assert op.name in calls, f"{op.name}: add its out= call to _call_with_out"
    return calls[op.name](*primals)


# the list form of each tensor_list row, and torch's answer for it
LIST_FORMS = {
    "clamp": (lambda xs: tensorops.clamp(xs, -0.3, 0.4), lambda xs: [torch.clamp(x, -0.3, 0.4) for x in xs]),
    "clamp_": (lambda xs: tensorops.clamp_([x.clone() for x in xs], -0.3, 0.4),
               lambda xs: [x.clone().clamp_(-0.3, 0.4) for x in xs]),
    "clip_grad_value_": (lambda xs: [_clip_ours(x) for x in xs], lambda xs: [_clip_theirs(x) for x in xs]),
    "cat": (lambda xs: tensorops.cat(xs, 1), lambda xs: torch.cat(xs, 1)),
    "split": (lambda xs: tensorops.split(xs[0], 1, 1), lambda xs: tuple(p.clone() for p in torch.split(xs[0], 1, 1))),
    "stack": (lambda xs: tensorops.stack(xs), lambda xs: torch.stack(xs)),
    "chunk": (lambda xs: tensorops.chunk(xs[0], 2, 1), lambda xs: tuple(p.clone() for p in torch.chunk(xs[0], 2, 1))),
    "crop_mirror_normalize": (
        lambda xs: tensorops.crop_mirror_normalize([x.view(1, 3, 4) for x in xs], 0.5, 0.2, size=2),
        lambda xs: torch.stack([(x.view(1, 3, 4)[:, 0:2, 1:3] - 0.5) / 0.2 for x in xs]),
    ),
    "resized_crop_mirror_normalize": (  # (3, 4) images resized to (2, 2) with antialias
        lambda xs: tensorops.resized_crop_mirror_normalize([x.view(1, 3, 4) for x in xs], 0.5, 0.2, size=2),
        lambda xs: torch.stack([(torch.nn.functional.interpolate(x.view(1, 1, 3, 4), size=(2, 2), mode="bilinear",
                                                                 antialias=True)[0] - 0.5) / 0.2 for x in xs]),
    ),
    "decode_resized_crop_mirror_normalize": (  # (3, 4) grayscale JPEGs, decoded as RGB, resized to (2, 2)
        lambda xs: tensorops.decode_resized_crop_mirror_normalize([_jpeg(x) for x in xs], 0.5, 0.2, size=2,
                                                                  dtype=F64),
        lambda xs: torch.stack([(torch.nn.functional.interpolate(_pil_rgb(_jpeg(x))[None], size=(2, 2),
                                                                 mode="bilinear", antialias=True)[0] - 0.5) / 0.2
                                for x in xs]),
    ),
}


@pytest.mark.parametrize("op", ROWS)
def test_tensor_list_flag(op):
    """tensor_list rows take (or give) a list of tensors; the others refuse a list as their input."""
    xs = [_rand(3, 4, seed=i) for i in range(2)]
    if op.tensor_list:
        assert op.name in LIST_FORMS, f"{op.name}: add its list form to LIST_FORMS"
        ours, theirs = LIST_FORMS[op.name]
        _assert_same(ours(xs), theirs(xs))
    else:
        assert op.name not in LIST_FORMS
        # the first argument is named in the error (normalize's input, augment's batch); the others as many as the
        # function requires
        params = [p for p in inspect.signature(op.function).parameters.values() if p.default is p.empty]
        with pytest.raises(TypeError, match=rf"\b{params[0].name}\b"):
            op.function(xs, *[0.5, 0.2][: len(params) - 1])


@pytest.mark.parametrize("op", ROWS)
def test_inplace_flag(op):
    """inplace rows write their input (and end with _, torch's convention); the others leave it untouched."""
    sample = _sample(op)
    x = sample.make("cpu")
    before = [t.clone() for t in x]
    if op.name == "clip_grad_value_":  # it writes the .grad of its parameters
        p = torch.zeros(3, 4, dtype=F64, requires_grad=True)
        p.grad = x[0]
        op.function([p], 0.4)
        changed = not torch.equal(p.grad, before[0])
    elif op.inplace:
        res = op.function(x[0], -0.3, 0.4)
        changed = res is x[0] and not torch.equal(x[0], before[0])
    else:
        sample.ours(*x)
        changed = any(not torch.equal(t, b) for t, b in zip(x, before))
    assert changed == op.inplace, op.name
    assert op.name.endswith("_") == op.inplace, op.name


@pytest.mark.parametrize("op", ROWS)
def test_gradients_are_torchs(op):
    if not op.autograd:
        pytest.skip(f"{op.name}: the registry claims no autograd")
    sample = _sample(op)
    primals = [p.requires_grad_() for p in sample.make("cpu")]
    ours, theirs = sample.ours(*primals), sample.theirs(*primals)
    outs = list(ours) if isinstance(ours, (tuple, list)) else [ours]
    refs = list(theirs) if isinstance(theirs, (tuple, list)) else [theirs]
    cot = [torch.randn_like(o) for o in refs]
    g_ours = torch.autograd.grad(outs, primals, cot)
    g_theirs = torch.autograd.grad(refs, primals, cot)
    _assert_same(g_ours, g_theirs)


@pytest.mark.parametrize("op", ROWS)
def test_forward_ad_gives_torchs_tangent(op):
    if not op.forward_ad:
        pytest.skip(f"{op.name}: the registry claims no forward AD")
    sample = _sample(op)
    primals = sample.make("cpu")
    tangents = tuple(torch.randn_like(p) for p in primals)
    ours = torch.func.jvp(sample.ours, primals, tangents)
    theirs = torch.func.jvp(sample.theirs, primals, tangents)
    _assert_same(ours[0], theirs[0])
    _assert_same(ours[1], theirs[1])


@requires_compiled
@pytest.mark.filterwarnings("ignore:There is a performance drop")  # torch's own clamp_ under vmap (the oracle)
@pytest.mark.parametrize("op", ROWS)
def test_vmap_matches_torch_in_one_kernel_call(op):
    if not op.vmap:
        pytest.skip(f"{op.name}: the registry claims no vmap")
    sample = _sample(op)
    batched = tuple(torch.stack([p * k for k in range(1, 6)]) for p in sample.make("cpu"))
    ours, names = kernel_ran(lambda: torch.func.vmap(sample.ours)(*batched))
    _assert_same(ours, torch.func.vmap(sample.theirs)(*batched))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.func.vmap(sample.ours)(*batched)
    calls = [e.name for e in prof.events() if e.name.split("::")[-1] in op.schemas and e.name.startswith("tensorops::")]
    # one kernel call for the batch of 5: the op's record, and the batched call's own record where the wrapper
    # calls the op on the batched tensor (torch.library's batching rule then calls it once more, unbatched)
    assert 1 <= len(calls) <= 2, f"{op.name} under vmap: {calls} (one kernel call for the whole batch)"


@requires_compiled
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ROWS)
def test_kernels_run_on_listed_devices(op, device):
    if device not in op.devices:
        pytest.skip(f"{op.name}: the registry does not list {device}")
    sample = _sample(op)
    primals = sample.make(device)
    # sizes above the tiny-tensor crossover (clamp's smallest inputs run torch.clamp itself)
    big = tuple(p.repeat(*([64] + [1] * (p.dim() - 1))) if op.name in ("clamp", "clamp_") else p for p in primals)
    ours, names = kernel_ran(sample.ours, *big)
    assert _schemas_seen(names, op), f"{op.name} on {device}: none of {op.schemas} ran ({names})"
    _assert_same(ours, sample.theirs(*big))


# ---- kernel limits from the extension ---------------------------------------------------------------------------
def _many_dims(n: int) -> torch.Tensor:
    """A float64 tensor of n dims of size 2 whose strides no two dims can merge."""
    strides = [2 ** (n - k) - 1 for k in range(n)]
    storage = torch.randn(sum(strides) + 1, dtype=F64, generator=torch.Generator().manual_seed(n))
    return storage.as_strided([2] * n, strides)


@requires_compiled
def test_max_kernel_dims_is_the_extensions():
    assert _routing.MAX_KERNEL_DIMS == tensorops.build_info()["max_kernel_dims"] > 0


@requires_compiled
@pytest.mark.parametrize(
    "name, ours, theirs, planned",
    [
        ("normalize", lambda x: tensorops.normalize(x, 0.5, 0.2, dim=-1), lambda x: (x - 0.5) / 0.2, True),
        ("normalize-tensor", lambda x: tensorops.normalize(x, torch.tensor([0.5, 0.1], dtype=F64), 0.2, dim=-1),
         lambda x: (x - torch.tensor([0.5, 0.1], dtype=F64)) / 0.2, True),
        ("clamp", lambda x: tensorops.clamp(x, -0.3, 0.4), lambda x: torch.clamp(x, -0.3, 0.4), True),
        ("clamp-tensor", lambda x: tensorops.clamp(x, torch.zeros(2, dtype=F64), torch.ones(2, dtype=F64)),
         lambda x: torch.clamp(x, torch.zeros(2, dtype=F64), torch.ones(2, dtype=F64)), True),
        ("clamp_", lambda x: tensorops.clamp_(x.clone(), -0.3, 0.4), lambda x: x.clone().clamp_(-0.3, 0.4), True),
        ("cat", lambda x: tensorops.cat([x, x], 3), lambda x: torch.cat([x, x], 3), False),
        ("split", lambda x: tensorops.split(x, 1, -2), lambda x: tuple(p.clone() for p in torch.split(x, 1, -2)),
         False),
    ],
)
def test_more_dims_than_the_kernels_hold(name, ours, theirs, planned):
    """Inputs with more dims than an iteration plan holds go to torch for the ops whose kernels use a plan
    (normalize, clamp); cat and split copy through their own tables, which take any rank. (clamp's C entry
    leaves ranks to the kernel, which refuses them, and then to the route: the plain call is checked by value,
    the route by the call that needs gradients, where no tensorops op may run.)"""
    x = _many_dims(_routing.MAX_KERNEL_DIMS + 1)
    _assert_same(ours(x), theirs(x))
    leaf = x.detach().requires_grad_()
    out, names = kernel_ran(ours, leaf)
    _assert_same(out, theirs(x))
    assert bool(names) != planned, (name, names)
    ref_leaf = x.detach().requires_grad_()
    ref = theirs(ref_leaf)
    outs, refs = (list(out), list(ref)) if isinstance(ref, tuple) else ([out], [ref])
    _assert_same(torch.autograd.grad(outs, leaf, [torch.ones_like(r) for r in refs]),
                 torch.autograd.grad(refs, ref_leaf, [torch.ones_like(r) for r in refs]))
    y = _many_dims(_routing.MAX_KERNEL_DIMS)
    out, names = kernel_ran(ours, y)
    _assert_same(out, theirs(y))
    assert names, f"{name}: the kernels should take {_routing.MAX_KERNEL_DIMS} dims"

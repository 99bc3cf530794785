"""tensorops.transforms.Normalize against the torchvision pair it replaces: v2.ToDtype(dtype, scale=True) followed by
v2.Normalize(mean, std), run inside v2.Compose on the same samples."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
import torch
from torch.testing import assert_close
from torch.utils._pytree import tree_flatten

import tensorops
from conftest import kernel_ran, requires_compiled

try:
    import PIL.Image
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    import tensorops.transforms as T
except ImportError as exc:  # the whole file but the import tests needs torchvision
    T = None
    _MISSING = f"needs torchvision ({exc})"
else:
    _MISSING = ""

needs_tv = pytest.mark.skipif(T is None, reason=_MISSING or "torchvision present")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
INPUTS = [torch.uint8, torch.uint16, torch.float16, torch.bfloat16, torch.float32, torch.float64]


def image(shape, dtype=torch.uint8, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype in (torch.uint8, torch.uint16):
        hi = 256 if dtype == torch.uint8 else 65536
        return torch.randint(0, hi, shape, generator=g, dtype=torch.int64).to(dtype).to(device)
    return torch.rand(shape, generator=g, dtype=torch.float64).to(dtype).to(device)


def pair(dtype=torch.float32, mean=MEAN, std=STD, scale=True):
    return v2.Compose([v2.ToDtype(dtype, scale=scale), v2.Normalize(mean, std)])


def ours(dtype=torch.float32, mean=MEAN, std=STD, scale=True):
    return v2.Compose([T.Normalize(mean, std, dtype=dtype, scale=scale)])


def assert_same_as_pair(sample, dtype=torch.float32, atol=1e-6, **kw):
    """Both pipelines on the same sample: same structure, same types, images within atol (rtol 0), everything
    else passed through as the very same object."""
    expect, got = pair(dtype, **kw)(sample), ours(dtype, **kw)(sample)
    flat_e, spec_e = tree_flatten(expect)
    flat_g, spec_g = tree_flatten(got)
    flat_in, _ = tree_flatten(sample)
    assert spec_e == spec_g
    for i, (e, g, x) in enumerate(zip(flat_e, flat_g, flat_in)):
        assert type(e) is type(g), f"entry {i}: {type(g).__name__} instead of {type(e).__name__}"
        if e is x:
            assert g is x, f"entry {i}: the pair passed it through, tensorops changed it"
        elif isinstance(e, torch.Tensor):
            assert g.dtype == e.dtype and g.shape == e.shape, f"entry {i}"
            assert_close(g.as_subclass(torch.Tensor), e.as_subclass(torch.Tensor), rtol=0, atol=atol)
    return got


def ran_kernel(fn, *args):
    out, names = kernel_ran(fn, *args)
    assert "tensorops::normalize" in names, f"the tensorops kernel did not run ({names})"
    return out


# ---- import rules ----------------------------------------------------------------------------------------------
def _python(code):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)


def test_import_tensorops_does_not_import_torchvision():
    res = _python("import sys, tensorops; print('torchvision' in sys.modules)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_missing_torchvision_is_a_clear_import_error():
    code = (
        "import sys; sys.modules['torchvision'] = None\n"  # makes `import torchvision` raise ImportError
        "import tensorops\n"
        "for how in ('attribute', 'import'):\n"
        "    try:\n"
        "        tensorops.transforms if how == 'attribute' else __import__('tensorops.transforms')\n"
        "    except ImportError as e:\n"
        "        print(how, 'ImportError', e)\n"
        "    sys.modules.pop('tensorops.transforms', None)\n"
    )
    res = _python(code)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert [ln.split()[:2] for ln in lines] == [["attribute", "ImportError"], ["import", "ImportError"]], res.stdout
    assert all("needs torchvision" in ln for ln in lines), res.stdout


@needs_tv
def test_attribute_access_imports_the_submodule():
    assert tensorops.transforms.Normalize is T.Normalize
    assert isinstance(T.Normalize(MEAN, STD), v2.Transform)


# ---- values: the pair's, through the tensorops kernel ------------------------------------------------------------
@needs_tv
@requires_compiled
@pytest.mark.parametrize("in_dtype", INPUTS)
@pytest.mark.parametrize("shape", [(3, 17, 9), (2, 3, 8, 10)])
def test_float32_matches_pair(device, in_dtype, shape):
    x = image(shape, in_dtype, device)
    expect = pair()(x)
    got = ran_kernel(ours(), x)
    assert type(got) is torch.Tensor and got.dtype == torch.float32 and got.device == x.device
    assert_close(got, expect, rtol=0, atol=1e-6)


@needs_tv
@requires_compiled
@pytest.mark.parametrize("layout", ["channels_last", "permuted_nhwc", "sliced"])
def test_layouts_match_pair(layout):
    if layout == "channels_last":
        x = image((2, 3, 9, 7), torch.uint8).contiguous(memory_format=torch.channels_last)
    elif layout == "permuted_nhwc":
        x = image((2, 9, 7, 3), torch.uint8).permute(0, 3, 1, 2)
    else:
        x = image((2, 5, 9, 14), torch.uint16)[:, 1:4, :, ::2]
    got, expect = ran_kernel(ours(), x), pair()(x)
    assert_close(got, expect, rtol=0, atol=1e-6)
    assert got.stride() == expect.stride()  # the same memory layout as the pair's


@needs_tv
@requires_compiled
@pytest.mark.parametrize("in_dtype", [torch.uint8, torch.uint16, torch.float32])
def test_float64_output_matches_pair(in_dtype):
    x = image((3, 6, 5), in_dtype)
    got = ran_kernel(ours(torch.float64), x)
    assert got.dtype == torch.float64
    assert_close(got, pair(torch.float64)(x), rtol=1e-14, atol=1e-14)


@needs_tv
@requires_compiled
@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("in_dtype", [torch.uint8, torch.uint16, torch.float32])
def test_half_outputs_round_the_float32_value_once(in_dtype, out_dtype):
    """fp16/bf16: exactly the float32 result rounded to nearest even (tensorops' rounding, as normalize gives), and
    within one rounding step of the pair's float32 result. The pair itself computes in fp16/bf16 and rounds at
    every step (and overflows uint16 values above 65519 to inf in fp16), so it is compared at its own precision."""
    x = image((2, 3, 16, 12), in_dtype)
    got = ran_kernel(ours(out_dtype), x)
    assert got.dtype == out_dtype
    assert torch.equal(got, tensorops.normalize(x, MEAN, STD).to(out_dtype))
    eps = torch.finfo(out_dtype).eps
    assert_close(got.float(), pair()(x), rtol=eps, atol=eps)
    if in_dtype == torch.uint8:  # the pair in fp16/bf16 arithmetic: a few of its own rounding steps away
        assert_close(got.float(), pair(out_dtype)(x).float(), rtol=4 * eps, atol=4 * eps)


@needs_tv
@requires_compiled
def test_one_channel_with_three_statistics_broadcasts_like_the_pair(device):
    for shape in [(1, 6, 5), (4, 1, 6, 5)]:
        x = image(shape, torch.uint8, device)
        got = ran_kernel(ours(), x)
        assert got.shape[-3] == 3
        assert_close(got, pair()(x), rtol=0, atol=1e-6)
    gray = tv_tensors.Image(image((1, 8, 8), torch.uint16, device))
    got = ran_kernel(ours(), gray)
    assert type(got) is tv_tensors.Image and got.shape == (3, 8, 8)
    assert_close(got.as_subclass(torch.Tensor), pair()(gray).as_subclass(torch.Tensor), rtol=0, atol=1e-6)


@needs_tv
@requires_compiled
def test_scale_false_matches_todtype_without_scaling():
    x = image((3, 5, 4), torch.uint8)
    got = ran_kernel(ours(scale=False, mean=[100.0, 110.0, 120.0], std=[50.0, 60.0, 70.0]), x)
    assert_close(got, pair(scale=False, mean=[100.0, 110.0, 120.0], std=[50.0, 60.0, 70.0])(x), rtol=0, atol=1e-5)


# ---- samples: what is an image, what passes through ------------------------------------------------------------
@needs_tv
@requires_compiled
def test_image_label_tuple_in_compose():
    img = tv_tensors.Image(image((3, 10, 12), torch.uint8))
    pipeline = v2.Compose([v2.RandomHorizontalFlip(p=1.0), T.Normalize(MEAN, STD)])
    reference = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
    (out, label), names = kernel_ran(pipeline, (img, 7))
    assert "tensorops::normalize" in names
    exp, exp_label = reference((img, 7))
    assert label == exp_label == 7 and type(out) is tv_tensors.Image
    assert_close(out.as_subclass(torch.Tensor), exp.as_subclass(torch.Tensor), rtol=0, atol=1e-6)
    plain, label = pipeline(img.as_subclass(torch.Tensor), 3)  # *inputs, like the pair
    assert type(plain) is torch.Tensor and label == 3


@needs_tv
@requires_compiled
def test_dict_sample_with_boxes_mask_and_label():
    img = tv_tensors.Image(image((3, 10, 12), torch.uint8))
    sample = {
        "image": img,
        "boxes": tv_tensors.BoundingBoxes(torch.tensor([[1, 2, 5, 6]]), format="XYXY", canvas_size=(10, 12)),
        "mask": tv_tensors.Mask(torch.ones(10, 12, dtype=torch.uint8)),
        "label": 4,
        "meta": {"name": "a.png", "extra": torch.arange(3)},  # a plain tensor next to an explicit image
    }
    got = assert_same_as_pair(sample)
    assert type(got["image"]) is tv_tensors.Image and got["image"].dtype == torch.float32
    assert got["boxes"] is sample["boxes"] and got["mask"] is sample["mask"]
    assert got["meta"]["extra"] is sample["meta"]["extra"]


@needs_tv
@requires_compiled
def test_video_stays_a_video():
    video = tv_tensors.Video(image((4, 3, 6, 7), torch.uint8))
    got = assert_same_as_pair(video)
    assert type(got) is tv_tensors.Video
    batch = tv_tensors.Video(image((2, 4, 3, 6, 7), torch.uint16))
    assert type(assert_same_as_pair(batch)) is tv_tensors.Video


@needs_tv
@requires_compiled
def test_plain_tensors_follow_torchvisions_heuristic():
    a, b = image((3, 6, 6), torch.uint8, seed=1), image((3, 6, 6), torch.uint8, seed=2)
    got = assert_same_as_pair((a, b))  # only the first plain tensor is an image
    assert got[0].dtype == torch.float32 and got[1] is b
    img = tv_tensors.Image(a)
    got = assert_same_as_pair((b, img))  # an explicit image: plain tensors pass through
    assert got[0] is b and type(got[1]) is tv_tensors.Image


@needs_tv
def test_pil_images_raise_like_the_pair():
    pil = PIL.Image.new("RGB", (8, 6))
    with pytest.raises(TypeError, match="does not support PIL"):
        pair()(pil)
    with pytest.raises(TypeError, match="does not support PIL"):
        ours()(pil)
    converted = v2.Compose([v2.PILToTensor(), T.Normalize(MEAN, STD)])(pil)  # the usual way in
    assert_close(converted, pair()(v2.PILToTensor()(pil)), rtol=0, atol=1e-6)


# ---- what the kernels do not cover goes through torchvision itself ----------------------------------------------
@needs_tv
@pytest.mark.parametrize("in_dtype", [torch.int16, torch.int32, torch.bool])
def test_other_integer_inputs_fall_back_to_the_pair(in_dtype):
    x = image((3, 5, 4), torch.uint8).to(in_dtype)
    assert_same_as_pair(x)


@needs_tv
@pytest.mark.parametrize(
    "x",
    [image((6, 5), torch.uint8), image((2, 6, 5), torch.uint8), image((0, 6, 5), torch.uint8)],
    ids=["2d", "2-channels", "0-channels"],
)
def test_inputs_the_pair_rejects_raise_the_same(x):
    with pytest.raises(Exception) as exp:
        pair()(x)
    with pytest.raises(type(exp.value)):
        ours()(x)


# ---- construction, repr, pickling ------------------------------------------------------------------------------
@needs_tv
@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(mean=MEAN, std=STD, dtype=torch.uint8), TypeError, "dtype must be"),
        (dict(mean=MEAN, std=[0.2, 0.0, 0.2]), ValueError, "std has a zero"),
        (dict(mean=[float("nan")] * 3, std=STD), ValueError, "mean has a NaN"),
        (dict(mean="abc", std=STD), TypeError, "mean must be"),
        (dict(mean=MEAN, std=STD, scale=0.5), TypeError, "scale must be"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        T.Normalize(**kwargs)


@needs_tv
@requires_compiled
def test_repr_and_pickle():
    t = T.Normalize(MEAN, STD, dtype=torch.float16)
    assert "mean=[0.485, 0.456, 0.406]" in repr(t) and "dtype=torch.float16" in repr(t)
    clone = pickle.loads(pickle.dumps(t))  # DataLoader workers with spawn pickle the dataset and its transforms
    x = image((3, 4, 4), torch.uint8)
    assert torch.equal(clone(x), t(x))

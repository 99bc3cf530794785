"""Concurrency and processes: Python threads, DataLoader workers (fork and spawn), the Normalize module's
pickling/copying/state_dict, torch.compile and TorchScript pipelines, and on a GPU non-default streams, CUDA
graph capture and a second device."""
from __future__ import annotations

import copy
import dataclasses
import io
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Tuple

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import tensorops
import tensorops.augment
from _datasets import NormalizedImages
from conftest import requires_compiled
from tensorops import registry

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
HAS_CUDA_KERNELS = torch.cuda.is_available() and tensorops.build_info()["cuda"]
requires_gpu = pytest.mark.skipif(not HAS_CUDA_KERNELS, reason="needs a CUDA GPU and tensorops built with CUDA kernels")
requires_two_gpus = pytest.mark.skipif(
    not (HAS_CUDA_KERNELS and torch.cuda.device_count() >= 2), reason="needs two CUDA GPUs"
)


# ---- one case per op: CPU inputs from a seed, the op on some device, the expected result from native torch --------
def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _stats64(vals, nd=4, dim=1):
    shape = [1] * nd
    shape[dim] = len(vals)
    return torch.tensor(vals, dtype=torch.float64).view(shape)


@dataclasses.dataclass(frozen=True)
class Case:
    op: str  # the tensorops.registry op it calls ("Normalize" for the module)
    make: Callable[[torch.Generator], Tuple[torch.Tensor, ...]]  # CPU inputs
    run: Callable[..., List[torch.Tensor]]  # the tensorops call(s) on inputs (any device)
    expected: Callable[..., List[torch.Tensor]]  # native torch on the CPU inputs
    not_captured: str = ""  # why the CUDA graph test does not capture it (capture-safety not claimed)


def _clamp_inplace(x):
    out = tensorops.clamp_(x, min=-0.25)
    assert out is x, "clamp_ must return its input"
    return [x]


def _clip_grads(*grads):
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g
    assert tensorops.clip_grad_value_(params, 0.3) is None
    return [p.grad for p in params]


CMN_TOP_LEFT = torch.tensor([[0, 3], [5, 1], [2, 2], [9, 0]])
CMN_MIRROR = torch.tensor([True, False, False, True])


def _crops(x):
    return torch.stack([im[:, y:y + 9, c:c + 8].flip(-1) if f else im[:, y:y + 9, c:c + 8]
                        for im, (y, c), f in zip(x, CMN_TOP_LEFT.tolist(), CMN_MIRROR.tolist())])


_SHARED_NORMALIZE = tensorops.Normalize(MEAN, STD)
RCMN_BOXES = torch.tensor([[0, 3, 20, 15], [5, 1, 9, 8], [2, 2, 17, 13], [9, 0, 11, 18]])


def _resized(x):
    """torch's antialiased interpolate of each box in float64, mirrored where CMN_MIRROR says, normalized."""
    outs = []
    for im, (t, l, h, w), f in zip(x, RCMN_BOXES.tolist(), CMN_MIRROR.tolist()):
        r = torch.nn.functional.interpolate(im[None, :, t:t + h, l:l + w].double(), size=(9, 8), mode="bilinear",
                                            align_corners=False, antialias=True)[0]
        outs.append(r.flip(-1) if f else r)
    return ((torch.stack(outs) / 255 - _stats64(MEAN)) / _stats64(STD)).float()


_NOT_CAPTURED = ("it raises a clear error under CUDA graph capture (its crop table is built on the host per call); "
                 "tests/test_gpu.py checks that error")

def _jpegs(g):
    """Four 20x18 JPEGs (quality 95) of random uint8 images from g, as 1-D uint8 tensors."""
    import io

    from PIL import Image

    out = []
    for _ in range(4):
        a = torch.randint(0, 256, (20, 18, 3), dtype=torch.uint8, generator=g).numpy()
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="JPEG", quality=95)
        out.append(torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8))
    return tuple(out)


def _pil_chw(data):
    import io

    import numpy as np
    from PIL import Image

    return torch.from_numpy(np.array(Image.open(io.BytesIO(data.cpu().numpy().tobytes())).convert("RGB"))).permute(2, 0, 1)


CASES: Dict[str, Case] = {
    "normalize_list": Case(
        "normalize",
        lambda g: (torch.randint(0, 256, (4, 3, 64, 48), dtype=torch.uint8, generator=g),),
        lambda x: [tensorops.normalize(x, MEAN, STD)],
        lambda x: [((x.double() / 255 - _stats64(MEAN)) / _stats64(STD)).float()],
    ),
    "normalize_nhwc_half": Case(
        "normalize",
        lambda g: (torch.randint(0, 256, (2, 40, 36, 3), dtype=torch.uint8, generator=g),),
        lambda x: [tensorops.normalize(x, MEAN, STD, dim=-1, dtype=torch.float16)],
        lambda x: [((x.double() / 255 - _stats64(MEAN, dim=3)) / _stats64(STD, dim=3)).half()],
    ),
    "Normalize_module_shared": Case(
        "Normalize",
        lambda g: (torch.randint(0, 256, (4, 3, 64, 48), dtype=torch.uint8, generator=g),),
        lambda x: [_SHARED_NORMALIZE(x)],  # one module instance used by every thread at once
        lambda x: [((x.double() / 255 - _stats64(MEAN)) / _stats64(STD)).float()],
    ),
    "normalize_tensor": Case(
        "normalize",
        lambda g: (torch.rand(4, 3, 32, 40, generator=g), torch.rand(4, 3, 1, 1, generator=g),
                   torch.rand(1, 3, 1, 1, generator=g) + 0.5),
        lambda x, m, s: [tensorops.normalize(x, m, s)],
        lambda x, m, s: [((x.double() - m.double()) / s.double()).float()],
    ),
    "clamp_numbers": Case(
        "clamp",
        lambda g: (torch.randn(4, 3, 64, 48, generator=g),),
        lambda x: [tensorops.clamp(x, min=-0.5, max=0.7)],
        lambda x: [x.clamp(-0.5, 0.7)],
    ),
    "clamp_tensors": Case(
        "clamp",
        lambda g: (torch.randn(4, 3, 64, 48, generator=g), torch.randn(1, 3, 1, 48, generator=g) - 1),
        lambda x, lo: [tensorops.clamp(x, min=lo, max=lo + 1.5)],
        lambda x, lo: [torch.clamp(x, lo, lo + 1.5)],
    ),
    "clamp_inplace": Case(
        "clamp_",
        lambda g: (torch.randn(4, 3, 64, 48, generator=g),),
        _clamp_inplace,
        lambda x: [x.clamp(min=-0.25)],
    ),
    "cat": Case(
        "cat",
        lambda g: tuple(torch.randn(4, c, 33, 17, generator=g) for c in (1, 3, 2)),
        lambda *ts: [tensorops.cat(list(ts), dim=1)],
        lambda *ts: [torch.cat(ts, dim=1)],
    ),
    "split": Case(
        "split",
        lambda g: (torch.randn(4, 6, 40, 32, generator=g),),
        lambda x: [*tensorops.split(x, [1, 2, 3], dim=1), *tensorops.split(x, 7, dim=2)],
        lambda x: [*torch.split(x, [1, 2, 3], dim=1), *torch.split(x, 7, dim=2)],
    ),
    "stack": Case(
        "stack",
        lambda g: tuple(torch.randn(3, 33, 17, generator=g) for _ in range(4)),
        lambda *ts: [tensorops.stack(list(ts), dim=1)],
        lambda *ts: [torch.stack(ts, dim=1)],
    ),
    "chunk": Case(
        "chunk",
        lambda g: (torch.randn(4, 7, 40, 32, generator=g),),
        lambda x: list(tensorops.chunk(x, 3, dim=1)),
        lambda x: [p.contiguous() for p in torch.chunk(x, 3, dim=1)],
    ),
    "clip_grad_value": Case(
        "clip_grad_value_",
        lambda g: (torch.randn(64, 33, generator=g), torch.randn(7, generator=g).half(), torch.randn(3, 5, generator=g)),
        _clip_grads,
        lambda *gs: [g.clamp(-0.3, 0.3) for g in gs],
    ),
    "crop_mirror_normalize": Case(
        "crop_mirror_normalize",
        lambda g: (torch.randint(0, 256, (4, 3, 20, 18), dtype=torch.uint8, generator=g),),
        lambda x: [tensorops.crop_mirror_normalize(x, MEAN, STD, size=(9, 8), top_left=CMN_TOP_LEFT, mirror=CMN_MIRROR)],
        lambda x: [((_crops(x).double() / 255 - _stats64(MEAN)) / _stats64(STD)).float()],
        not_captured=_NOT_CAPTURED,
    ),
    "resized_crop_mirror_normalize": Case(
        "resized_crop_mirror_normalize",
        lambda g: (torch.randint(0, 256, (4, 3, 20, 18), dtype=torch.uint8, generator=g),),
        lambda x: [tensorops.resized_crop_mirror_normalize(x, MEAN, STD, size=(9, 8), boxes=RCMN_BOXES,
                                                           mirror=CMN_MIRROR)],
        lambda x: [_resized(x)],
        not_captured=_NOT_CAPTURED,
    ),
    "decode_resized_crop_mirror_normalize": Case(
        "decode_resized_crop_mirror_normalize",
        _jpegs,
        lambda *xs: [tensorops.decode_resized_crop_mirror_normalize(list(xs), MEAN, STD, size=(9, 8),
                                                                    boxes=RCMN_BOXES, mirror=CMN_MIRROR)],
        lambda *xs: [_resized(torch.stack([_pil_chw(x) for x in xs]))],
        not_captured="it decodes on the host (encoded bytes in, a CPU batch out)",
    ),
}


# ---- tensorops.augment: a (4, C, 36, 36) uint8 batch with per-sample arguments drawn from the seed; the expected
# result is torchvision v2 per sample (an optional extra: without it, the same call made alone in this thread) ------
_AUG_NOT_CAPTURED = ("its per-sample arguments are read on the host (CPU tensors in, a params table built per call), "
                     "as the policies draw them")


def _aug_batch(g, c=3, channels_last=False, side=36):
    x = torch.randint(0, 256, (4, c, side, side), dtype=torch.uint8, generator=g)
    return x.contiguous(memory_format=torch.channels_last) if channels_last else x


def _aug_case(op, make, call, per_sample):
    """A Case for tensorops.augment.<op>: ``call(batch, *args)`` is ours, ``per_sample(F, image, i, *args)`` the
    torchvision v2 call for sample i."""
    def expected(x, *args):
        try:
            from torchvision.transforms.v2 import functional as F
        except ImportError:  # the reference is optional: then concurrent calls must equal one call made alone
            return [call(x, *args)]
        out = torch.stack([per_sample(F, x[i], i, *args) for i in range(x.shape[0])])
        return [out.contiguous(memory_format=torch.channels_last) if x.is_contiguous(memory_format=torch.channels_last)
                and not x.is_contiguous() else out]

    return Case(op, make, lambda *a: [call(*a)], expected, not_captured=_AUG_NOT_CAPTURED)


def _factors(g, lo=0.0, hi=2.0):
    return torch.rand(4, generator=g, dtype=torch.float64) * (hi - lo) + lo


def _box_of(v, box):
    """The pixels of a per-pixel value inside one box (top, left, height, width)."""
    t, l, h, w = box.tolist()
    return v[:, t:t + h, l:l + w]


def _convex(w):
    """Mixing weights as AugMix's: non-negative, summing to 1 per sample (the mix stays within uint8)."""
    return w / w.sum(1, keepdim=True)


A = tensorops.augment
QUARTERS = [90.0, -90.0, 180.0, 270.0]
AUGMENT_CASES = {
    "augment_brightness_nhwc": _aug_case(
        "adjust_brightness", lambda g: (_aug_batch(g, channels_last=True), _factors(g)), A.adjust_brightness,
        lambda F, im, i, f: F.adjust_brightness(im, float(f[i]))),
    # 32x32: the grayscale mean is exact on every device (CUDA's torch mean may round apart from the CPU's elsewhere)
    "augment_contrast": _aug_case("adjust_contrast", lambda g: (_aug_batch(g, side=32), _factors(g)), A.adjust_contrast,
                                  lambda F, im, i, f: F.adjust_contrast(im, float(f[i]))),
    "augment_saturation": _aug_case("adjust_saturation", lambda g: (_aug_batch(g), _factors(g)), A.adjust_saturation,
                                    lambda F, im, i, f: F.adjust_saturation(im, float(f[i]))),
    "augment_hue": _aug_case("adjust_hue", lambda g: (_aug_batch(g), _factors(g, -0.5, 0.5)), A.adjust_hue,
                             lambda F, im, i, f: F.adjust_hue(im, float(f[i]))),
    "augment_sharpness": _aug_case("adjust_sharpness", lambda g: (_aug_batch(g), _factors(g)), A.adjust_sharpness,
                                   lambda F, im, i, f: F.adjust_sharpness(im, float(f[i]))),
    "augment_posterize": _aug_case("posterize", lambda g: (_aug_batch(g), torch.randint(0, 9, (4,), generator=g)),
                                   A.posterize, lambda F, im, i, b: F.posterize(im, int(b[i]))),
    "augment_solarize": _aug_case("solarize", lambda g: (_aug_batch(g), _factors(g, 0.0, 255.0)), A.solarize,
                                  lambda F, im, i, t: F.solarize(im, float(t[i]))),
    "augment_autocontrast": _aug_case("autocontrast", lambda g: (_aug_batch(g, c=1),), A.autocontrast,
                                      lambda F, im, i: F.autocontrast(im)),
    "augment_equalize": _aug_case("equalize", lambda g: (_aug_batch(g),), A.equalize, lambda F, im, i: F.equalize(im)),
    "augment_invert": _aug_case("invert", lambda g: (_aug_batch(g),), A.invert, lambda F, im, i: F.invert(im)),
    "augment_grayscale": _aug_case("rgb_to_grayscale", lambda g: (_aug_batch(g),), A.rgb_to_grayscale,
                                   lambda F, im, i: F.rgb_to_grayscale(im)),
    # integer translations and half turns (nearest): exact in torchvision's float32 grid as well
    "augment_affine_nhwc": _aug_case(
        "affine", lambda g: (_aug_batch(g, channels_last=True), torch.randint(-5, 6, (4, 2), generator=g).double()),
        lambda x, t: A.affine(x, torch.tensor([0.0, 180.0, 0.0, -180.0]), t, fill=[1, 2, 3]),
        lambda F, im, i, t: F.affine(im, [0.0, 180.0, 0.0, -180.0][i], t[i].tolist(), 1.0, [0.0, 0.0], fill=[1, 2, 3])),
    "augment_rotate": _aug_case(
        "rotate", lambda g: (_aug_batch(g),),
        lambda x: A.rotate(x, torch.tensor(QUARTERS), interpolation="bilinear"),
        lambda F, im, i: F.rotate(im, QUARTERS[i], interpolation="bilinear")),
    "augment_erase": _aug_case(
        "erase", lambda g: (_aug_batch(g), torch.randint(0, 20, (4, 4), generator=g), _aug_batch(g)),
        A.erase, lambda F, im, i, b, v: F.erase(im, *b[i].tolist(), v=_box_of(v[i], b[i]))),
    # invert, posterize, solarize, equalize (OPS 10, 6, 7, 9)
    "augment_apply_ops": _aug_case(
        "apply_ops",
        lambda g: (_aug_batch(g), torch.tensor([10, 6, 7, 9]), torch.tensor([0.0, 3.0, 100.0, 0.0], dtype=torch.float64)),
        A.apply_ops,
        lambda F, im, i, o, m: [F.invert(im), F.posterize(im, 3), F.solarize(im, 100.0), F.equalize(im)][i]),
    # AugMix's mix of two chains with per-sample weights (pure torch: v2's float32 order)
    "augment_mix": Case(
        "mix", lambda g: (_aug_batch(g), _aug_batch(g), _aug_batch(g), _convex(torch.rand(4, 3, generator=g))),
        lambda x, a, b, w: [A.mix(x, [a, b], w)],
        lambda x, a, b, w: [(w[:, :1, None, None] * x).add_(w[:, 1:2, None, None] * a).add_(w[:, 2:, None, None] * b)
                            .to(torch.uint8)],
        not_captured=_AUG_NOT_CAPTURED),
}
CASES.update(AUGMENT_CASES)


def test_cases_cover_every_registry_op():
    ops = {case.op for case in CASES.values()}
    assert ops - {"Normalize"} <= set(registry.OPS), f"cases for ops the registry does not list: {ops - set(registry.OPS)}"
    missing = [name for name in registry.OPS if name not in ops]
    assert not missing, f"registry ops without a concurrency case: {missing}"


def check(got: List[torch.Tensor], exp: List[torch.Tensor], what: str = "") -> None:
    assert len(got) == len(exp), f"{what}: {len(got)} outputs, expected {len(exp)}"
    for i, (a, b) in enumerate(zip(got, exp)):
        a = a.cpu()
        assert a.dtype == b.dtype and a.shape == b.shape, f"{what}[{i}]: {a.dtype}{tuple(a.shape)} != {b.dtype}{tuple(b.shape)}"
        tol = 1e-3 if b.dtype == torch.float16 else 1e-5
        assert_close(a, b, rtol=tol, atol=tol, msg=lambda m: f"{what}[{i}]: {m}")


def prepare(name: str, seed: int) -> Tuple[Case, Tuple[torch.Tensor, ...], List[torch.Tensor]]:
    """The case, its CPU inputs from ``seed`` and native torch's result on copies of them."""
    case = CASES[name]
    inputs = case.make(_gen(seed))
    return case, inputs, case.expected(*[t.clone() for t in inputs])


def run_case(name: str, seed: int, device: str = "cpu") -> None:
    case, inputs, expected = prepare(name, seed)
    check(case.run(*[t.to(device, copy=True) for t in inputs]), expected, f"{name} seed {seed}")


# ---- threads -------------------------------------------------------------------------------------------------
def test_threads_calling_every_op_at_once():
    names = list(CASES)
    barrier = threading.Barrier(4)

    def worker(t):
        barrier.wait()  # all threads start together
        for it in range(12):
            for k, name in enumerate(names):
                run_case(name, 10_000 * t + 100 * it + k)
        return t

    with ThreadPoolExecutor(max_workers=4) as pool:
        done = sorted(f.result(timeout=300) for f in [pool.submit(worker, t) for t in range(4)])
    assert done == [0, 1, 2, 3]


def test_threads_with_autograd():
    barrier = threading.Barrier(3)

    def worker(t):
        g = _gen(t)
        barrier.wait()
        for _ in range(20):
            x = torch.rand(2, 3, 16, 16, generator=g, dtype=torch.float64).requires_grad_()
            m = torch.rand(2, 3, 1, 1, generator=g, dtype=torch.float64).requires_grad_()
            s = (torch.rand(1, 3, 1, 1, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
            w = torch.randn(2, 3, 16, 16, generator=g, dtype=torch.float64)
            got = torch.autograd.grad((tensorops.normalize(x, m, s) * w).sum(), (x, m, s))
            exp = torch.autograd.grad((((x - m) / s) * w).sum(), (x, m, s))
            for a, b in zip(got, exp):
                assert_close(a, b)
        return t

    with ThreadPoolExecutor(max_workers=3) as pool:
        assert sorted(f.result(timeout=300) for f in [pool.submit(worker, t) for t in range(3)]) == [0, 1, 2]


# ---- DataLoader workers ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_dataloader_workers(start_method):
    import multiprocessing

    if start_method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {start_method} start method on this platform")
    # use the intra-op thread pool in this process first: forking after it started is the classic hang
    tensorops.normalize(torch.zeros(16, 3, 256, 256, dtype=torch.uint8), MEAN, STD)
    ds = NormalizedImages(n=24)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=4, num_workers=2, multiprocessing_context=start_method, timeout=120, shuffle=False
    )
    seen = []
    for batch, idx in loader:
        assert batch.shape == (len(idx), 3, 24, 20) and batch.dtype == torch.float32
        for b, i in zip(batch, idx.tolist()):
            assert_close(b, ds.expected(i), rtol=1e-5, atol=1e-5, msg=lambda m: f"sample {i}: {m}")
        seen += idx.tolist()
    assert seen == list(range(24))


# ---- the Normalize module: pickle, deepcopy, state_dict, changed buffers ------------------------------------------
def _img(shape=(2, 3, 6, 5), seed=0):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=_gen(seed))


def test_normalize_module_pickle_deepcopy_state_dict():
    mod = tensorops.Normalize([0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], dim=-1, dtype=torch.float16, scale=1 / 128)
    x = _img((2, 5, 7, 4))
    ref = mod(x)
    for name, other in [
        ("pickle", pickle.loads(pickle.dumps(mod))),
        ("deepcopy", copy.deepcopy(mod)),
    ]:
        assert (other.dim, other.dtype, other.scale) == (-1, torch.float16, 1 / 128), name
        assert torch.equal(other(x), ref), name
    buf = io.BytesIO()
    torch.save(mod, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert torch.equal(loaded(x), ref)
    # state_dict into a module built with other statistics
    fresh = tensorops.Normalize([0.0] * 4, [1.0] * 4, dim=-1, dtype=torch.float16, scale=1 / 128)
    fresh.load_state_dict(mod.state_dict())
    assert torch.equal(fresh(x), ref)
    buf = io.BytesIO()
    torch.save(mod.state_dict(), buf)
    buf.seek(0)
    fresh2 = tensorops.Normalize([0.0] * 4, [1.0] * 4, dim=-1, dtype=torch.float16, scale=1 / 128)
    fresh2.load_state_dict(torch.load(buf))
    assert torch.equal(fresh2(x), ref)
    # a deep copy is independent of the original
    twin = copy.deepcopy(mod)
    with torch.no_grad():
        twin.mean.zero_()
    assert torch.equal(mod(x), ref) and not torch.equal(twin(x), ref)


def test_normalize_module_sees_changed_buffers():
    """Regression: forward used numbers cached at construction, ignoring buffers changed afterwards."""
    x = _img()
    mod = tensorops.Normalize(MEAN, STD)
    mod(x)

    def expect(m, s):
        return tensorops.normalize(x, m, s)

    with torch.no_grad():
        mod.mean.fill_(0.25)  # in place
    assert_close(mod(x), expect([0.25] * 3, STD))
    mod.std = torch.tensor([0.5, 1.0, 2.0])  # replaced
    assert_close(mod(x), expect([0.25] * 3, [0.5, 1.0, 2.0]))
    mod.load_state_dict({"mean": torch.tensor(MEAN), "std": torch.tensor(STD)})
    assert_close(mod(x), expect(MEAN, STD))
    mod.double()  # float64 output (nn.Module's dtype habit), statistics never rounded
    assert_close(mod(x), tensorops.normalize(x, MEAN, STD, dtype=torch.float64))
    clone = pickle.loads(pickle.dumps(mod))
    with torch.no_grad():
        clone.std.mul_(2)
    assert_close(clone(x), tensorops.normalize(x, MEAN, [2 * s for s in STD], dtype=torch.float64))


# ---- torch.compile / TorchScript ------------------------------------------------------------------------------
class Preprocess(nn.Module):
    """uint8 NCHW images -> normalize -> clamp -> split channels -> cat in BGR order -> conv."""

    def __init__(self, full: bool) -> None:
        super().__init__()
        self.full = full
        self.norm = tensorops.Normalize(MEAN, STD)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, img: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
        y = self.norm(img)
        y = tensorops.normalize(y, [0.0], [2.0], dim=1)  # the functional form too, with a float input
        if self.full:
            y = tensorops.clamp(y, min=-bound, max=bound)
            r, g, b = tensorops.split(y, [1, 1, 1], dim=1)
            y = tensorops.cat([b, g, r], dim=1)
        return self.conv(y)


def _compile_case(full: bool, backend: str):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Preprocess(full)
    img = _img((2, 3, 16, 12), seed=3)
    bound = torch.rand(1, 3, 1, 1) + 0.2
    eager = model(img, bound)
    eager.sum().backward()
    eager_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True, backend=backend)
    out = compiled(img, bound)
    assert_close(out, eager, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    for p, g in zip(model.parameters(), eager_grads):
        assert_close(p.grad, g, rtol=1e-5, atol=1e-5)
    # a second batch with other values reuses the graph and still matches
    img2 = _img((2, 3, 16, 12), seed=4)
    assert_close(compiled(img2, bound), model(img2, bound), rtol=1e-5, atol=1e-5)


@requires_compiled
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_compile_fullgraph_pipeline_all_ops(backend):
    _compile_case(True, backend)


@requires_compiled
@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_compile_fullgraph_pipeline_normalize(backend):
    _compile_case(False, backend)


@requires_compiled
@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.jit.* deprecation notices
def test_torchscript_through_torch_ops():
    @torch.jit.script
    def preprocess(img: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        y = torch.ops.tensorops.normalize(img, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], 1, 1.0 / 255.0,
                                          torch.float32, torch.preserve_format)
        return torch.ops.tensorops.normalize_tensor(y, mean, std, 1.0, torch.float16, torch.contiguous_format)

    img = _img((2, 3, 8, 8)).contiguous(memory_format=torch.channels_last)
    mean, std = torch.rand(2, 3, 1, 1), torch.rand(1, 3, 1, 1) + 0.5
    out = preprocess(img, mean, std)
    step = tensorops.normalize(img, MEAN, STD)
    assert_close(out, tensorops.normalize(step, mean, std, dtype=torch.float16, memory_format=torch.contiguous_format))
    assert out.is_contiguous() and out.dtype == torch.float16
    assert "tensorops::normalize" in str(preprocess.graph)
    # and it survives save/load like any scripted function
    buf = io.BytesIO()
    torch.jit.save(preprocess, buf)
    buf.seek(0)
    assert torch.equal(torch.jit.load(buf)(img, mean, std), out)


# ---- CUDA: streams, graphs, a second device ------------------------------------------------------------------------
@requires_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("name", list(CASES))
def test_cuda_non_default_stream(name):
    case, inputs, expected = prepare(name, 7)
    staged = [t.cuda() for t in inputs]
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        # the op's inputs are written on the side stream after a long sleep: a kernel launched on any other
        # stream would read them before they are there
        torch.cuda._sleep(100_000_000)
        dev_inputs = [t.clone() for t in staged]
        got = case.run(*dev_inputs)
    side.synchronize()
    check(got, expected, f"{name} on a side stream")


@requires_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.skipif(bool(case.not_captured), reason=case.not_captured))
    for name, case in CASES.items()
])
def test_cuda_graph_capture(name):
    case = CASES[name]
    static = [t.cuda() for t in case.make(_gen(0))]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            case.run(*[t.clone() for t in static])  # warm up (allocator, caches) outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = case.run(*static)
    for seed in (1, 2):  # new values into the static inputs, replay, compare
        new = case.make(_gen(seed))
        for dst, src in zip(static, new):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        check(outs, case.expected(*new), f"{name} replayed from a CUDA graph, seed {seed}")


@requires_two_gpus
@pytest.mark.cuda
@pytest.mark.parametrize("name", list(CASES))
def test_cuda_second_device(name):
    case, inputs, expected = prepare(name, 11)
    with torch.cuda.device(0):  # current device 0, tensors on cuda:1: no device-0 assumption may leak in
        got = case.run(*[t.to("cuda:1") for t in inputs])
        for t in got:
            assert t.device == torch.device("cuda:1"), t.device
    torch.cuda.synchronize(1)
    check(got, expected, f"{name} on cuda:1")

"""Calls every tensorops CUDA kernel, forward and backward, on small awkward inputs, for compute-sanitizer.

    compute-sanitizer --tool memcheck  --error-exitcode 1 python -m benchmarks.sanitize_ops
    compute-sanitizer --tool racecheck --error-exitcode 1 python -m benchmarks.sanitize_ops

Awkward means: odd lengths (vector loops' tails), views starting one element in (``x[1:]``: unaligned pointers),
empty tensors, channels_last and permuted layouts, broadcast statistics/bounds, 1,000 tensors for cat/split, and
zero-size pieces. Sizes stay small: the sanitizer slows kernels 10-100x (and the > 2^31-element cases belong in
the CUDA tests). Families that tensorops does not have yet are skipped with a note. Each result is also checked
against native torch, so a kernel that reads out of bounds without faulting still fails here.

Run it under ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` (gpu_check.sh does): then every tensor is its own allocation
and memcheck sees an access one past a tensor's end, which the caching allocator would otherwise hide.
``--device cpu`` runs the same calls on the CPU kernels (the test suite uses it to keep this script honest).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, List, Optional

import torch

import tensorops

CALLS: List[str] = []


def _call(label: str, fn: Callable[[], None]) -> None:
    print(f"  {label}", flush=True)
    fn()
    CALLS.append(label)


# tensorops' clamp answers as torch 2.14 in three corners (a NaN number bound, gradients at ties and NaN), where
# older torch (2.11, the GPU check machine's) answers otherwise: there the corner cases still run (for the
# sanitizers) but their values are not compared with the running torch.
_CLAMP_CORNERS_LIKE_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


def _close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    tol = 1e-2 if actual.dtype in (torch.float16, torch.bfloat16) else 1e-5
    torch.testing.assert_close(actual, expected.to(actual.dtype), rtol=tol, atol=tol, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


class _deterministic:
    """torch.use_deterministic_algorithms(on) inside the block."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        self.before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(self.on)

    def __exit__(self, *exc) -> None:
        torch.use_deterministic_algorithms(self.before)


def _unaligned(shape, dtype, device, low=0, high=256) -> torch.Tensor:
    """A tensor of ``shape`` whose data starts one element into its storage (a misaligned pointer)."""
    n = 1
    for s in shape:
        n *= s
    if dtype.is_floating_point:
        flat = torch.randn(n + 1, device=device).to(dtype)
    else:
        flat = torch.randint(low, high, (n + 1,), device=device).to(dtype)
    return flat[1:].view(shape)


# ---------------------------------------------------------------------------------------------------- normalize

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def _normalize_oracle(x, mean, std, dim=-3, dtype=torch.float32, scale=None):
    scale = (1 / 255 if x.dtype == torch.uint8 else 1.0) if scale is None else scale
    shape = [1] * x.dim()
    shape[dim] = -1
    m = mean if isinstance(mean, torch.Tensor) else torch.tensor(mean, dtype=torch.float64, device=x.device).view(shape)
    s = std if isinstance(std, torch.Tensor) else torch.tensor(std, dtype=torch.float64, device=x.device).view(shape)
    return ((x.double() * scale - m.double()) / s.double()).to(dtype)


def run_normalize(device: torch.device) -> None:
    u8 = torch.uint8
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        for shape in [(2, 3, 5, 7), (1, 3, 33, 65), (3, 1, 1)]:
            def f(shape=shape, dtype=dtype):
                c = shape[-3]
                x = torch.randint(0, 256, shape, dtype=u8, device=device)
                y = tensorops.normalize(x, MEAN[:c], STD[:c], dtype=dtype)
                _close(y, _normalize_oracle(x, MEAN[:c], STD[:c], dtype=dtype), f"normalize {shape}")
            _call(f"normalize u8 {shape} -> {dtype}", f)

    def unaligned():
        x = _unaligned((2, 3, 7, 9), u8, device)
        _close(tensorops.normalize(x, MEAN, STD), _normalize_oracle(x, MEAN, STD), "normalize x[1:]")
    _call("normalize u8 unaligned view x[1:]", unaligned)

    def nhwc(fmt, dtype):
        x = torch.randint(0, 256, (2, 5, 7, 3), dtype=u8, device=device).permute(0, 3, 1, 2)  # channels_last
        y = tensorops.normalize(x, MEAN, STD, dtype=dtype, memory_format=fmt)
        _close(y, _normalize_oracle(x, MEAN, STD, dtype=dtype), f"normalize channels_last {fmt}")
    for fmt in (torch.preserve_format, torch.contiguous_format):
        for dtype in (torch.float32, torch.float16):
            _call(f"normalize u8 channels_last -> {dtype} {fmt}", lambda fmt=fmt, dtype=dtype: nhwc(fmt, dtype))

    def to_channels_last():
        x = torch.randint(0, 256, (2, 3, 5, 7), dtype=u8, device=device)
        y = tensorops.normalize(x, MEAN, STD, memory_format=torch.channels_last)
        _close(y, _normalize_oracle(x, MEAN, STD), "normalize -> channels_last")
    _call("normalize u8 NCHW -> channels_last", to_channels_last)

    def hwc():
        x = torch.randint(0, 256, (5, 7, 3), dtype=u8, device=device)
        _close(tensorops.normalize(x, MEAN, STD, dim=-1), _normalize_oracle(x, MEAN, STD, dim=-1), "normalize dim=-1")
    _call("normalize u8 HWC dim=-1", hwc)

    def empty():
        x = torch.empty((0, 3, 4, 4), dtype=u8, device=device)
        assert tensorops.normalize(x, MEAN, STD).shape == x.shape
    _call("normalize empty (0,3,4,4)", empty)

    def per_sample():
        x = torch.randint(0, 256, (2, 3, 5, 7), dtype=u8, device=device)
        m = torch.rand(2, 3, 1, 1, device=device)
        s = torch.rand(2, 3, 1, 1, device=device) + 0.5
        _close(tensorops.normalize(x, m, s), _normalize_oracle(x, m, s), "normalize per-sample stats")
    _call("normalize u8 per-sample tensor stats", per_sample)

    for dtype in (torch.float32, torch.float16, torch.float64):
        def backward(dtype=dtype):
            x = _unaligned((2, 3, 5, 7), dtype, device).requires_grad_()
            m = torch.rand(1, 3, 1, 1, device=device, dtype=dtype, requires_grad=True)
            s = (torch.rand(1, 3, 1, 1, device=device, dtype=dtype) + 0.5).requires_grad_()
            g = torch.randn(2, 3, 5, 7, device=device, dtype=dtype)
            got = torch.autograd.grad(tensorops.normalize(x, m, s), (x, m, s), g)
            want = torch.autograd.grad(((x.double() - m.double()) / s.double()).to(dtype), (x, m, s), g)
            for a, b, name in zip(got, want, ("input", "mean", "std")):
                _close(a, b, f"normalize backward grad {name} {dtype}")
        _call(f"normalize {dtype} forward+backward (input, mean, std)", backward)

    def backward_list_stats():
        x = torch.randn(3, 3, 4, device=device, requires_grad=True)
        (gx,) = torch.autograd.grad(tensorops.normalize(x, MEAN, STD).sum(), (x,))
        _close(gx, (1 / torch.tensor(STD, device=device)).view(3, 1, 1).expand(3, 3, 4), "normalize grad list stats")
    _call("normalize float32 backward with sequence stats", backward_list_stats)

    for entries, deterministic in ((600, False), (5, True), (600, True)):
        def backward_many(entries=entries, deterministic=deterministic):
            # > 512 entries: global atomics; deterministic mode: torch's reductions sum the statistics' gradients
            x = torch.randn(2, entries, 3, device=device, requires_grad=True)
            m = torch.randn(1, entries, 1, device=device, requires_grad=True)
            s = (torch.rand(1, entries, 1, device=device) + 0.5).requires_grad_()
            g = torch.randn(2, entries, 3, device=device)
            with _deterministic(deterministic):
                got = torch.autograd.grad(tensorops.normalize(x, m, s), (x, m, s), g)
            want = torch.autograd.grad((x - m) / s, (x, m, s), g)
            for a, b, name in zip(got, want, ("input", "mean", "std")):
                _close(a, b, f"normalize backward grad {name}, {entries} entries")
        _call(f"normalize backward, {entries} statistics entries, deterministic={deterministic}", backward_many)


# ---------------------------------------------------------------------------------------------------- clamp


def run_clamp(device: torch.device) -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.uint8,
                  torch.int64):
        lo_s, hi_s = (-0.5, 0.5) if dtype.is_floating_point else (3, 100)
        for shape in [(7,), (2, 3, 5, 7), (1, 3, 33, 65)]:
            def scalar(shape=shape, dtype=dtype, lo_s=lo_s, hi_s=hi_s):
                x = _unaligned(shape, dtype, device)
                _close(tensorops.clamp(x, lo_s, hi_s), torch.clamp(x, lo_s, hi_s), "clamp scalar")
                _close(tensorops.clamp(x, min=lo_s), torch.clamp(x, min=lo_s), "clamp min only")
                _close(tensorops.clamp(x, max=hi_s), torch.clamp(x, max=hi_s), "clamp max only")
            _call(f"clamp {dtype} {shape} scalar bounds, x[1:]", scalar)

        def tensor_bounds(dtype=dtype, lo_s=lo_s, hi_s=hi_s):
            x = _unaligned((2, 3, 5, 7), dtype, device)
            lo = torch.full((1, 3, 1, 1), lo_s, dtype=dtype, device=device)
            hi = torch.full((3, 1, 7), hi_s, dtype=dtype, device=device)
            _close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp tensor bounds")
            big = torch.full((4, 2, 3, 5, 7), lo_s, dtype=dtype, device=device)  # bound larger than input
            _close(tensorops.clamp(x, big), torch.clamp(x, big), "clamp bound larger than input")
        _call(f"clamp {dtype} broadcast tensor bounds", tensor_bounds)

    def channels_last():
        x = torch.randn(2, 3, 5, 7, device=device).contiguous(memory_format=torch.channels_last)
        lo = torch.full((1, 3, 1, 1), -0.5, device=device)
        hi = torch.full((1, 1, 1, 7), 0.5, device=device)
        _close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp channels_last")
        _close(tensorops.clamp(x, -0.5, 0.5), torch.clamp(x, -0.5, 0.5), "clamp channels_last scalar")
    _call("clamp channels_last input", channels_last)

    def nans():
        x = torch.tensor([float("nan"), -2.0, 0.0, 2.0, float("inf"), -float("inf"), 0.3], device=device)
        lo = torch.tensor([0.0, float("nan"), -1.0, -1.0, -1.0, -1.0, 1.0], device=device)
        hi = torch.tensor([0.5, 0.5, float("nan"), 0.5, 0.5, 0.5, 0.5], device=device)
        _close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp nan/inf tensor bounds")
        got = tensorops.clamp(x, float("nan"), 0.5)
        if _CLAMP_CORNERS_LIKE_TORCH:
            _close(got, torch.clamp(x, float("nan"), 0.5), "clamp nan scalar bound")
    _call("clamp NaN/inf, min > max", nans)

    def empty():
        x = torch.empty(0, 3, device=device)
        assert tensorops.clamp(x, -1.0, 1.0).shape == (0, 3)
    _call("clamp empty", empty)

    if hasattr(tensorops, "clamp_"):
        def inplace():
            x = torch.randn(3, 33, device=device)
            ref = torch.clamp(x, -0.5, 0.5)
            view = x[:, 1:]  # non-contiguous, unaligned
            tensorops.clamp_(view, -0.5, 0.5)
            _close(x[:, 1:], ref[:, 1:], "clamp_ in place on a view")
        _call("clamp_ in place on a non-contiguous view", inplace)

    for dtype in (torch.float32, torch.float64, torch.float16):
        def backward(dtype=dtype):
            x = _unaligned((2, 3, 5, 7), dtype, device)
            x[0, 0, 0, :3] = torch.tensor([-0.5, 0.5, 0.0], dtype=dtype, device=device)  # ties with the bounds
            x.requires_grad_()
            lo = torch.tensor([-0.5, -0.2, 0.3], dtype=dtype, device=device).view(1, 3, 1, 1).requires_grad_()
            hi = torch.tensor([0.5, -0.3, 0.9], dtype=dtype, device=device).view(1, 3, 1, 1).requires_grad_()
            g = torch.randn(2, 3, 5, 7, device=device, dtype=dtype)
            got = torch.autograd.grad(tensorops.clamp(x, lo, hi), (x, lo, hi), g)
            want = torch.autograd.grad(torch.clamp(x, lo, hi), (x, lo, hi), g)
            for a, b, name in zip(got, want, ("input", "min", "max")):
                if _CLAMP_CORNERS_LIKE_TORCH:  # x ties with the bounds above
                    _close(a, b, f"clamp backward grad {name} {dtype}")
        _call(f"clamp {dtype} forward+backward (input, min, max)", backward)

    def backward_scalar():
        x = torch.randn(1, 3, 33, 65, device=device, requires_grad=True)
        (gx,) = torch.autograd.grad(tensorops.clamp(x, -0.5, 0.5).sum(), (x,))
        (want,) = torch.autograd.grad(torch.clamp(x, -0.5, 0.5).sum(), (x,))
        _close(gx, want, "clamp backward scalar bounds")
    _call("clamp float32 backward, scalar bounds", backward_scalar)

    for entries, deterministic in ((3000, False), (3, True), (3000, True)):
        def backward_many(entries=entries, deterministic=deterministic):
            # > 2048 bound entries: global atomics; deterministic mode: per-element terms summed by torch
            x = torch.randn(5, entries, device=device, requires_grad=True)
            lo = (torch.randn(entries, device=device) - 0.5).requires_grad_()
            hi = (lo.detach() + 1).requires_grad_()
            g = torch.randn(5, entries, device=device)
            with _deterministic(deterministic):
                got = torch.autograd.grad(tensorops.clamp(x, lo, hi), (x, lo, hi), g)
            want = torch.autograd.grad(torch.clamp(x, lo, hi), (x, lo, hi), g)
            for a, b, name in zip(got, want, ("input", "min", "max")):
                _close(a, b, f"clamp backward grad {name}, {entries} entries")
        _call(f"clamp backward, {entries} bound entries, deterministic={deterministic}", backward_many)


# ---------------------------------------------------------------------------------------------------- cat/split


def run_cat(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(0, 8, (1000,), generator=gen).tolist()  # 0..7 elements: odd, empty, unaligned
    for dtype in (torch.float32, torch.float16, torch.uint8, torch.int64):
        def many(dtype=dtype):
            ts = [_unaligned((n,), dtype, device) if i % 2 else torch.ones(n, dtype=dtype, device=device)
                  for i, n in enumerate(lengths)]
            _close(tensorops.cat(ts), torch.cat(ts), "cat 1000")
        _call(f"cat 1000 tensors {dtype} (lengths 0-7, half unaligned)", many)

    def dim1():
        ts = [_unaligned((3, w, 5), torch.float32, device) for w in (1, 4, 7, 0, 2)]
        _close(tensorops.cat(ts, dim=1), torch.cat(ts, dim=1), "cat dim 1")
        _close(tensorops.cat(ts, dim=-1 - 1), torch.cat(ts, dim=-2), "cat dim -2")
    _call("cat dim 1 of odd widths, one empty", dim1)

    def channels_last():
        ts = [torch.randn(2, 3, 5, 7, device=device).contiguous(memory_format=torch.channels_last) for _ in range(3)]
        _close(tensorops.cat(ts, dim=1), torch.cat(ts, dim=1), "cat channels_last")
        _close(tensorops.cat([t.transpose(2, 3) for t in ts], dim=0), torch.cat([t.transpose(2, 3) for t in ts]),
               "cat transposed")
    _call("cat channels_last and transposed inputs", channels_last)

    def empty():
        assert tensorops.cat([torch.empty(0, 3, device=device)] * 3).shape == (0, 3)
    _call("cat of empty tensors", empty)

    def backward():
        ts = [torch.randn(n, 3, device=device, requires_grad=True) for n in lengths[:1000]]
        g = torch.randn(sum(lengths[:1000]), 3, device=device)
        got = torch.autograd.grad(tensorops.cat(ts), ts, g)
        want = torch.autograd.grad(torch.cat(ts), ts, g)
        for a, b in zip(got, want):
            _close(a, b, "cat backward")
    _call("cat 1000 tensors forward+backward", backward)


def run_split(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(1)
    sizes = torch.randint(0, 8, (1000,), generator=gen).tolist()  # zero-size pieces included
    for dtype in (torch.float32, torch.float16, torch.uint8, torch.int64):
        def many(dtype=dtype):
            x = _unaligned((sum(sizes),), dtype, device)
            for a, b in zip(tensorops.split(x, sizes), torch.split(x, sizes)):
                _close(a, b, "split 1000")
                assert a.is_contiguous()
        _call(f"split into 1000 pieces {dtype} (sizes 0-7, unaligned input)", many)

    def dim1():
        x = _unaligned((3, 17, 5), torch.float32, device)
        for secs in ([1, 0, 16], 4, [17]):
            for a, b in zip(tensorops.split(x, secs, dim=1), torch.split(x, secs, dim=1)):
                _close(a, b, f"split dim 1 {secs}")
        for a, b in zip(tensorops.split(x, 2, dim=-1), torch.split(x, 2, dim=-1)):
            _close(a, b, "split dim -1")
    _call("split dim 1 / -1 with zero-size and uneven pieces", dim1)

    def channels_last():
        x = torch.randn(2, 6, 5, 7, device=device).contiguous(memory_format=torch.channels_last)
        for a, b in zip(tensorops.split(x, [1, 2, 3], dim=1), torch.split(x, [1, 2, 3], dim=1)):
            _close(a, b, "split channels_last")
    _call("split a channels_last input", channels_last)

    def empty():
        pieces = tensorops.split(torch.empty(0, 4, device=device), 2, dim=1)
        assert [tuple(p.shape) for p in pieces] == [(0, 2), (0, 2)]
    _call("split an empty tensor", empty)

    def backward():
        x = torch.randn(sum(sizes), 3, device=device, requires_grad=True)
        pieces = tensorops.split(x, sizes)
        used = [i for i in range(len(sizes)) if i % 3 != 1]  # the others get no gradient (counted as zeros)
        gs = [torch.randn_like(pieces[i]) for i in used]
        (got,) = torch.autograd.grad([pieces[i] for i in used], (x,), gs)
        ref = torch.split(x, sizes)
        (want,) = torch.autograd.grad([ref[i] for i in used], (x,), gs)
        _close(got, want, "split backward")
    _call("split 1000 pieces forward+backward, some gradients missing", backward)


# ---------------------------------------------------------------------------------------- crop_mirror_normalize


def run_crop_mirror_normalize(device: torch.device) -> None:
    from tensorops import reference

    def check(images, dim=-3, size=(9, 8), n_mirror=None, pad=True, channels=None, dtype=torch.float32,
              fmt=torch.contiguous_format, what=""):
        n = len(images)
        C = images[0].shape[dim]
        sizes = [(im.shape[-2], im.shape[-1]) if dim == -3 else (im.shape[0], im.shape[1]) for im in images]
        tl = torch.tensor([[(H - size[0]) // 2 + (k % 3) - 1, (W - size[1]) // 2 - (k % 2)] for k, (H, W) in
                           enumerate(sizes)])
        mirror = torch.arange(n) % 2 == 0
        out = tensorops.crop_mirror_normalize(images, MEAN[:1] * C, STD[:1] * C, dim=dim, size=size, top_left=tl,
                                              mirror=mirror, dtype=dtype, memory_format=fmt, pad_channels=channels,
                                              fill=-2.0, out_of_bounds="pad")
        m = torch.tensor([MEAN[:1] * C], device=device)
        s = torch.tensor([STD[:1] * C], device=device)
        scale = 1 / 255 if images[0].dtype == torch.uint8 else 1.0
        ref = reference.crop_mirror_normalize(images, m, s, tl, mirror, size, dim=dim, scale=scale, dtype=dtype,
                                              memory_format=fmt, channels=channels or C, fill=-2.0, pad=True)
        _close(out, ref, f"crop_mirror_normalize {what}")

    def unaligned_list():
        check([_unaligned((3, 11 + k, 13 - k), torch.uint8, device) for k in range(5)], what="x[1:] list")
    _call("crop_mirror_normalize a list of x[1:] uint8 CHW images, mirrored, partly outside", unaligned_list)

    def hwc():
        check([_unaligned((10 + k, 9 + 2 * k, 3), torch.uint8, device) for k in range(4)], dim=-1, channels=4,
              fmt=torch.channels_last, dtype=torch.float16, what="HWC")
    _call("crop_mirror_normalize HWC x[1:] images -> channels_last fp16 with a padded channel", hwc)

    def many():  # past the kernel-parameter table: the per-sample table goes through a device buffer
        check([torch.randint(0, 256, (3, 12, 10 + k % 3), dtype=torch.uint8, device=device) for k in range(61)],
              what="61 images")
    _call("crop_mirror_normalize 61 images (device-side sample table)", many)

    def batch():
        x = torch.randn(5, 3, 12, 11, device=device)
        check(x, dtype=torch.float64, what="batch")
        check(x.permute(0, 2, 3, 1), dim=-1, what="permuted batch")
    _call("crop_mirror_normalize a float batch and a permuted one", batch)

    def empty():
        out = tensorops.crop_mirror_normalize(torch.empty(0, 3, 8, 8, device=device), MEAN, STD, size=4)
        assert out.shape == (0, 3, 4, 4)
    _call("crop_mirror_normalize an empty batch", empty)

    def backward():
        ims = [torch.randn(3, 9 + k, 8, device=device, requires_grad=True) for k in range(3)]
        tl = torch.tensor([[0, 0], [-1, 2], [3, 1]])
        mirror = torch.tensor([True, False, True])
        args = dict(size=(6, 5), top_left=tl, mirror=mirror, out_of_bounds="pad")
        g = torch.randn(3, 3, 6, 5, device=device)
        got = torch.autograd.grad(tensorops.crop_mirror_normalize(ims, MEAN, STD, **args), ims, g)
        m, s = torch.tensor([MEAN], device=device), torch.tensor([STD], device=device)
        ref = reference.crop_mirror_normalize(ims, m, s, tl, mirror, (6, 5), dim=-3, scale=1.0,
                                              dtype=torch.float32, memory_format=torch.contiguous_format,
                                              channels=3, fill=0.0, pad=True)
        want = torch.autograd.grad(ref, ims, g)
        for a, b in zip(got, want):
            _close(a, b, "crop_mirror_normalize backward")
    _call("crop_mirror_normalize backward of a list", backward)


FAMILIES = {"normalize": ("normalize", run_normalize), "clamp": ("clamp", run_clamp),
            "cat": ("cat", run_cat), "split": ("split", run_split),
            "crop_mirror_normalize": ("crop_mirror_normalize", run_crop_mirror_normalize)}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--ops", default=",".join(FAMILIES), help="comma-separated subset of " + ",".join(FAMILIES))
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("sanitize_ops: no CUDA GPU visible to torch", file=sys.stderr)
            return 2
        if not tensorops.build_info().get("cuda"):
            print(f"sanitize_ops: tensorops has no CUDA kernels ({tensorops.build_info()}): nothing to sanitize",
                  file=sys.stderr)
            return 2
    torch.manual_seed(0)
    CALLS.clear()
    ran, skipped = [], []
    for name in [o.strip() for o in args.ops.split(",") if o.strip()]:
        attr, fn = FAMILIES[name]
        if not hasattr(tensorops, attr):
            print(f"note: tensorops has no `{attr}`: skipping {name}", flush=True)
            skipped.append(name)
            continue
        print(f"{name}:", flush=True)
        fn(device)
        ran.append(name)
    if device.type == "cuda":
        torch.cuda.synchronize()
    print(f"sanitize_ops: {len(CALLS)} calls ok on {device} (families run: {', '.join(ran) or 'none'}; "
          f"skipped: {', '.join(skipped) or 'none'})", flush=True)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())

"""compute-sanitizer calls of the normalize kernels (forward, backward, sequence and tensor statistics)."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import MEAN, STD, call, close, deterministic_algorithms, unaligned


def normalize_oracle(x, mean, std, dim=-3, dtype=torch.float32, scale=None):
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
                close(y, normalize_oracle(x, MEAN[:c], STD[:c], dtype=dtype), f"normalize {shape}")
            call(f"normalize u8 {shape} -> {dtype}", f)

    def unaligned_view():
        x = unaligned((2, 3, 7, 9), u8, device)
        close(tensorops.normalize(x, MEAN, STD), normalize_oracle(x, MEAN, STD), "normalize x[1:]")
    call("normalize u8 unaligned view x[1:]", unaligned_view)

    def nhwc(fmt, dtype):
        x = torch.randint(0, 256, (2, 5, 7, 3), dtype=u8, device=device).permute(0, 3, 1, 2)  # channels_last
        y = tensorops.normalize(x, MEAN, STD, dtype=dtype, memory_format=fmt)
        close(y, normalize_oracle(x, MEAN, STD, dtype=dtype), f"normalize channels_last {fmt}")
    for fmt in (torch.preserve_format, torch.contiguous_format):
        for dtype in (torch.float32, torch.float16):
            call(f"normalize u8 channels_last -> {dtype} {fmt}", lambda fmt=fmt, dtype=dtype: nhwc(fmt, dtype))

    def to_channels_last():
        x = torch.randint(0, 256, (2, 3, 5, 7), dtype=u8, device=device)
        y = tensorops.normalize(x, MEAN, STD, memory_format=torch.channels_last)
        close(y, normalize_oracle(x, MEAN, STD), "normalize -> channels_last")
    call("normalize u8 NCHW -> channels_last", to_channels_last)

    def hwc():
        x = torch.randint(0, 256, (5, 7, 3), dtype=u8, device=device)
        close(tensorops.normalize(x, MEAN, STD, dim=-1), normalize_oracle(x, MEAN, STD, dim=-1), "normalize dim=-1")
    call("normalize u8 HWC dim=-1", hwc)

    def empty():
        x = torch.empty((0, 3, 4, 4), dtype=u8, device=device)
        assert tensorops.normalize(x, MEAN, STD).shape == x.shape
    call("normalize empty (0,3,4,4)", empty)

    def per_sample():
        x = torch.randint(0, 256, (2, 3, 5, 7), dtype=u8, device=device)
        m = torch.rand(2, 3, 1, 1, device=device)
        s = torch.rand(2, 3, 1, 1, device=device) + 0.5
        close(tensorops.normalize(x, m, s), normalize_oracle(x, m, s), "normalize per-sample stats")
    call("normalize u8 per-sample tensor stats", per_sample)

    for dtype in (torch.float32, torch.float16, torch.float64):
        def backward(dtype=dtype):
            x = unaligned((2, 3, 5, 7), dtype, device).requires_grad_()
            m = torch.rand(1, 3, 1, 1, device=device, dtype=dtype, requires_grad=True)
            s = (torch.rand(1, 3, 1, 1, device=device, dtype=dtype) + 0.5).requires_grad_()
            g = torch.randn(2, 3, 5, 7, device=device, dtype=dtype)
            got = torch.autograd.grad(tensorops.normalize(x, m, s), (x, m, s), g)
            want = torch.autograd.grad(((x.double() - m.double()) / s.double()).to(dtype), (x, m, s), g)
            for a, b, name in zip(got, want, ("input", "mean", "std")):
                close(a, b, f"normalize backward grad {name} {dtype}")
        call(f"normalize {dtype} forward+backward (input, mean, std)", backward)

    def backward_list_stats():
        x = torch.randn(3, 3, 4, device=device, requires_grad=True)
        (gx,) = torch.autograd.grad(tensorops.normalize(x, MEAN, STD).sum(), (x,))
        close(gx, (1 / torch.tensor(STD, device=device)).view(3, 1, 1).expand(3, 3, 4), "normalize grad list stats")
    call("normalize float32 backward with sequence stats", backward_list_stats)

    for entries, deterministic in ((600, False), (5, True), (600, True)):
        def backward_many(entries=entries, deterministic=deterministic):
            # > 512 entries: global atomics; deterministic mode: torch's reductions sum the statistics' gradients
            x = torch.randn(2, entries, 3, device=device, requires_grad=True)
            m = torch.randn(1, entries, 1, device=device, requires_grad=True)
            s = (torch.rand(1, entries, 1, device=device) + 0.5).requires_grad_()
            g = torch.randn(2, entries, 3, device=device)
            with deterministic_algorithms(deterministic):
                got = torch.autograd.grad(tensorops.normalize(x, m, s), (x, m, s), g)
            want = torch.autograd.grad((x - m) / s, (x, m, s), g)
            for a, b, name in zip(got, want, ("input", "mean", "std")):
                close(a, b, f"normalize backward grad {name}, {entries} entries")
        call(f"normalize backward, {entries} statistics entries, deterministic={deterministic}", backward_many)

"""compute-sanitizer calls of the clamp kernels: clamp (forward, backward), clamp_, and the list forms."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import (CLAMP_CORNERS_LIKE_TORCH, call, close, deterministic_algorithms,
                                     unaligned)


def run_clamp(device: torch.device) -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.uint8,
                  torch.int64):
        lo_s, hi_s = (-0.5, 0.5) if dtype.is_floating_point else (3, 100)
        for shape in [(7,), (2, 3, 5, 7), (1, 3, 33, 65)]:
            def scalar(shape=shape, dtype=dtype, lo_s=lo_s, hi_s=hi_s):
                x = unaligned(shape, dtype, device)
                close(tensorops.clamp(x, lo_s, hi_s), torch.clamp(x, lo_s, hi_s), "clamp scalar")
                close(tensorops.clamp(x, min=lo_s), torch.clamp(x, min=lo_s), "clamp min only")
                close(tensorops.clamp(x, max=hi_s), torch.clamp(x, max=hi_s), "clamp max only")
            call(f"clamp {dtype} {shape} scalar bounds, x[1:]", scalar)

        def tensor_bounds(dtype=dtype, lo_s=lo_s, hi_s=hi_s):
            x = unaligned((2, 3, 5, 7), dtype, device)
            lo = torch.full((1, 3, 1, 1), lo_s, dtype=dtype, device=device)
            hi = torch.full((3, 1, 7), hi_s, dtype=dtype, device=device)
            close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp tensor bounds")
            big = torch.full((4, 2, 3, 5, 7), lo_s, dtype=dtype, device=device)  # bound larger than input
            close(tensorops.clamp(x, big), torch.clamp(x, big), "clamp bound larger than input")
        call(f"clamp {dtype} broadcast tensor bounds", tensor_bounds)

    def channels_last():
        x = torch.randn(2, 3, 5, 7, device=device).contiguous(memory_format=torch.channels_last)
        lo = torch.full((1, 3, 1, 1), -0.5, device=device)
        hi = torch.full((1, 1, 1, 7), 0.5, device=device)
        close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp channels_last")
        close(tensorops.clamp(x, -0.5, 0.5), torch.clamp(x, -0.5, 0.5), "clamp channels_last scalar")
    call("clamp channels_last input", channels_last)

    def nans():
        x = torch.tensor([float("nan"), -2.0, 0.0, 2.0, float("inf"), -float("inf"), 0.3], device=device)
        lo = torch.tensor([0.0, float("nan"), -1.0, -1.0, -1.0, -1.0, 1.0], device=device)
        hi = torch.tensor([0.5, 0.5, float("nan"), 0.5, 0.5, 0.5, 0.5], device=device)
        close(tensorops.clamp(x, lo, hi), torch.clamp(x, lo, hi), "clamp nan/inf tensor bounds")
        got = tensorops.clamp(x, float("nan"), 0.5)
        if CLAMP_CORNERS_LIKE_TORCH:
            close(got, torch.clamp(x, float("nan"), 0.5), "clamp nan scalar bound")
    call("clamp NaN/inf, min > max", nans)

    def empty():
        x = torch.empty(0, 3, device=device)
        assert tensorops.clamp(x, -1.0, 1.0).shape == (0, 3)
    call("clamp empty", empty)

    for dtype in (torch.float32, torch.float64, torch.float16):
        def backward(dtype=dtype):
            x = unaligned((2, 3, 5, 7), dtype, device)
            x[0, 0, 0, :3] = torch.tensor([-0.5, 0.5, 0.0], dtype=dtype, device=device)  # ties with the bounds
            x.requires_grad_()
            lo = torch.tensor([-0.5, -0.2, 0.3], dtype=dtype, device=device).view(1, 3, 1, 1).requires_grad_()
            hi = torch.tensor([0.5, -0.3, 0.9], dtype=dtype, device=device).view(1, 3, 1, 1).requires_grad_()
            g = torch.randn(2, 3, 5, 7, device=device, dtype=dtype)
            got = torch.autograd.grad(tensorops.clamp(x, lo, hi), (x, lo, hi), g)
            want = torch.autograd.grad(torch.clamp(x, lo, hi), (x, lo, hi), g)
            for a, b, name in zip(got, want, ("input", "min", "max")):
                if CLAMP_CORNERS_LIKE_TORCH:  # x ties with the bounds above
                    close(a, b, f"clamp backward grad {name} {dtype}")
        call(f"clamp {dtype} forward+backward (input, min, max)", backward)

    def backward_scalar():
        x = torch.randn(1, 3, 33, 65, device=device, requires_grad=True)
        (gx,) = torch.autograd.grad(tensorops.clamp(x, -0.5, 0.5).sum(), (x,))
        (want,) = torch.autograd.grad(torch.clamp(x, -0.5, 0.5).sum(), (x,))
        close(gx, want, "clamp backward scalar bounds")
    call("clamp float32 backward, scalar bounds", backward_scalar)

    for entries, deterministic in ((3000, False), (3, True), (3000, True)):
        def backward_many(entries=entries, deterministic=deterministic):
            # > 2048 bound entries: global atomics; deterministic mode: per-element terms summed by torch
            x = torch.randn(5, entries, device=device, requires_grad=True)
            lo = (torch.randn(entries, device=device) - 0.5).requires_grad_()
            hi = (lo.detach() + 1).requires_grad_()
            g = torch.randn(5, entries, device=device)
            with deterministic_algorithms(deterministic):
                got = torch.autograd.grad(tensorops.clamp(x, lo, hi), (x, lo, hi), g)
            want = torch.autograd.grad(torch.clamp(x, lo, hi), (x, lo, hi), g)
            for a, b, name in zip(got, want, ("input", "min", "max")):
                close(a, b, f"clamp backward grad {name}, {entries} entries")
        call(f"clamp backward, {entries} bound entries, deterministic={deterministic}", backward_many)


def run_clamp_(device: torch.device) -> None:
    def inplace():
        x = torch.randn(3, 33, device=device)
        ref = torch.clamp(x, -0.5, 0.5)
        view = x[:, 1:]  # non-contiguous, unaligned
        tensorops.clamp_(view, -0.5, 0.5)
        close(x[:, 1:], ref[:, 1:], "clamp_ in place on a view")
    call("clamp_ in place on a non-contiguous view", inplace)

    def inplace_list():
        ts = [unaligned((n, 3), dtype, device) for n in (0, 1, 7, 33) for dtype in (torch.float32, torch.float16)]
        want = [torch.clamp(t, -0.5, 0.5) for t in ts]
        tensorops.clamp_(ts, -0.5, 0.5)
        for a, b in zip(ts, want):
            close(a, b, "clamp_ of a list")
    call("clamp_ of a list of x[1:] tensors, two dtypes, one empty", inplace_list)


def run_clip_grad_value_(device: torch.device) -> None:
    def many():
        params = []
        for k in range(300):
            p = torch.zeros(k % 7 + 1, 5, device=device, dtype=torch.float16 if k % 3 == 0 else torch.float32,
                            requires_grad=True)
            p.grad = unaligned(tuple(p.shape), p.dtype, device)
            params.append(p)
        want = [torch.clamp(p.grad, -0.1, 0.1) for p in params]
        tensorops.clip_grad_value_(params, 0.1)
        for p, b in zip(params, want):
            close(p.grad, b, "clip_grad_value_")
    call("clip_grad_value_ of 300 x[1:] gradients, float32 and float16", many)

    def out_of_place_list():
        ts = [unaligned((n,), torch.float32, device) for n in (5, 0, 129)] + [torch.randn(3, 4, device=device).t()]
        for a, b in zip(tensorops.clamp(ts, min=-0.5), [torch.clamp(t, min=-0.5) for t in ts]):
            close(a, b, "clamp of a list")
    call("clamp of a list (unaligned, empty, transposed), min only", out_of_place_list)

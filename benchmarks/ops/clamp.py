"""clamp benchmarks: forward with scalar and (1, C, 1, 1) tensor bounds, and forward+backward with gradients
to input, min and max.

Written against ``tensorops.clamp(input, min=None, max=None)`` (a torch.clamp drop-in); native eager is
``torch.clamp(x, lo, hi)``. Bytes moved: forward reads the input and writes the output (+ the bounds);
forward+backward also reads the output gradient and the input again and writes the input gradient, i.e.
5 x input bytes (+ the bounds and their gradients, negligible at (1, C, 1, 1)).
"""
from __future__ import annotations

from typing import List, Tuple

import torch

from benchmarks.case import SHORT, Bench, Case, element_size, image_label, numel, random_tensor

IMAGENET = (32, 3, 224, 224)
DTYPES = {"float32": torch.float32, "float16": torch.float16, "int32": torch.int32}

Shape = Tuple[int, int, int, int]


def _bounds(dtype: torch.dtype, bounds: str, c: int, device: torch.device):
    if bounds == "scalar":
        return (-0.5, 0.5) if dtype.is_floating_point else (-50, 50)
    lo = torch.linspace(-0.5, 0.0, c) if dtype.is_floating_point else torch.linspace(-50, 0, c)
    hi = torch.linspace(0.5, 1.0, c) if dtype.is_floating_point else torch.linspace(50, 100, c)
    return (lo.to(dtype).to(device).view(1, c, 1, 1), hi.to(dtype).to(device).view(1, c, 1, 1))


def _make_forward(shape: Shape, dtype: torch.dtype, bounds: str):
    def make(device: torch.device) -> Bench:
        import tensorops

        x = random_tensor(shape, dtype, device)
        lo, hi = _bounds(dtype, bounds, shape[1], device)

        def eager(x, lo, hi):
            return torch.clamp(x, lo, hi)

        def tops(x, lo, hi):
            return tensorops.clamp(x, lo, hi)

        return Bench(eager=eager, tensorops=tops, args=(x, lo, hi), extras={"x.clone()": lambda: x.clone()})

    return make


def _make_fwd_bwd(shape: Shape):
    def make(device: torch.device) -> Bench:
        import tensorops

        x = torch.randn(shape, device=device, requires_grad=True)
        lo, hi = (b.requires_grad_() for b in _bounds(torch.float32, "tensor", shape[1], device))
        grad = torch.randn(shape, device=device)
        inputs = (x, lo, hi)

        def eager(x, lo, hi):
            return torch.clamp(x, lo, hi)

        def tops(x, lo, hi):
            return tensorops.clamp(x, lo, hi)

        def run(fn):
            return lambda: torch.autograd.grad(fn(*inputs), inputs, grad)

        return Bench(eager=eager, tensorops=tops, args=inputs, run=run)

    return make


def _fwd_case(shape: Shape, dtype_name: str, bounds: str, compile_grids=("smoke", "quick", "full")) -> Case:
    dtype = DTYPES[dtype_name]
    esize = element_size(dtype)
    bound_bytes = 0 if bounds == "scalar" else 2 * shape[1] * esize
    bl = "scalar bounds" if bounds == "scalar" else f"(1,{shape[1]},1,1) bounds"
    return Case(
        op="clamp",
        series=f"clamp {SHORT[dtype_name]} {bounds} bounds",
        case=image_label(shape),
        shape="x".join(map(str, shape)),
        dtype=SHORT[dtype_name],
        layout=f"NCHW, {bl}",
        nbytes=2 * numel(shape) * esize + bound_bytes,
        make=_make_forward(shape, dtype, bounds),
        eager_expr="torch.clamp(x, lo, hi)",
        compile_grids=tuple(compile_grids),
    )


def _fwd_bwd_case(shape: Shape, compile_grids=("smoke", "quick", "full")) -> Case:
    return Case(
        op="clamp_fwd_bwd",
        series="clamp fwd+bwd f32 tensor bounds",
        case=image_label(shape),
        shape="x".join(map(str, shape)),
        dtype="f32",
        layout=f"NCHW, (1,{shape[1]},1,1) bounds",
        nbytes=5 * numel(shape) * 4 + 4 * shape[1] * 4,
        make=_make_fwd_bwd(shape),
        times="clamp",
        eager_expr="torch.autograd.grad(torch.clamp(x, lo, hi), (x, lo, hi), g), all requiring grad",
        compile_grids=tuple(compile_grids),
    )


def cases(device: torch.device, grid: str) -> List[Case]:
    big = (256, 3, 224, 224) if device.type == "cuda" else (128, 3, 224, 224)
    if grid == "smoke":
        # The smoke grid compiles only normalize's first row: one torch.compile checks the harness path.
        return [_fwd_case((1, 3, 8, 8), "float32", "tensor", compile_grids=()),
                _fwd_bwd_case((1, 3, 5, 7), compile_grids=())]
    if grid == "quick":  # compiled: tiny (overhead), the ImageNet floors; the rest in the full grid
        full = ("full",)
        out = [
            _fwd_case((1, 3, 8, 8), "float32", "scalar", compile_grids=full),
            _fwd_case(IMAGENET, "float32", "scalar"),
            _fwd_case((1, 3, 8, 8), "float32", "tensor"),
            _fwd_case((8, 3, 64, 64), "float32", "tensor", compile_grids=full),
            _fwd_case(IMAGENET, "float32", "tensor"),
            _fwd_case(IMAGENET, "float16", "tensor", compile_grids=full),
            _fwd_case(IMAGENET, "int32", "scalar", compile_grids=full),
            _fwd_case(IMAGENET, "int32", "tensor", compile_grids=full),
            _fwd_bwd_case((1, 3, 8, 8), compile_grids=full),
            _fwd_bwd_case(IMAGENET),
        ]
        if device.type == "cuda":
            out += [_fwd_case(big, "float32", "tensor"), _fwd_bwd_case(big)]
        return out
    shapes = [(1, 3, 8, 8), (1, 3, 64, 64), (1, 3, 224, 224), (8, 3, 224, 224), IMAGENET, big]
    out = []
    for dtype_name in DTYPES:
        for bounds in ("scalar", "tensor"):
            out += [_fwd_case(s, dtype_name, bounds) for s in shapes]
    out += [_fwd_bwd_case(s) for s in shapes]
    return out

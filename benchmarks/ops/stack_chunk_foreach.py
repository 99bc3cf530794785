"""stack, chunk and the many-tensor clamp (clip_grad_value_) benchmarks.

* ``stack``: N image tensors (3, 224, 224) into one batch, against ``torch.stack``; bytes: read + write.
* ``chunk``: (B, 12, 112, 112) into 4 contiguous pieces along dim 1, against
  ``torch.split_with_sizes_copy`` with torch.chunk's sizes (torch.chunk itself returns views).
* ``clip_grad_value``: resnet18's 62 gradient tensors (11.7 M float32 values, shapes of
  ``torchvision.models.resnet18()``, hard-coded so that no torchvision is needed) clipped in place, against
  ``torch.nn.utils.clip_grad_value_(params, 0.01, foreach=True)`` (two foreach passes: clamp_min_ then
  clamp_max_). Bytes: what one pass must move, read + write of every gradient. In place and idempotent, so
  every timed call does the same work.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import torch

from benchmarks.case import Bench, Case, element_size, numel

# the parameter shapes of torchvision.models.resnet18() in parameters() order (tests check them against it)
RESNET18_SHAPES: List[Tuple[int, ...]] = (
    [(64, 3, 7, 7), (64,), (64,)]
    + [(64, 64, 3, 3), (64,), (64,)] * 4
    + [(128, 64, 3, 3), (128,), (128,), (128, 128, 3, 3), (128,), (128,), (128, 64, 1, 1), (128,), (128,)]
    + [(128, 128, 3, 3), (128,), (128,)] * 2
    + [(256, 128, 3, 3), (256,), (256,), (256, 256, 3, 3), (256,), (256,), (256, 128, 1, 1), (256,), (256,)]
    + [(256, 256, 3, 3), (256,), (256,)] * 2
    + [(512, 256, 3, 3), (512,), (512,), (512, 512, 3, 3), (512,), (512,), (512, 256, 1, 1), (512,), (512,)]
    + [(512, 512, 3, 3), (512,), (512,)] * 2
    + [(1000, 512), (1000,)]
)


def _contiguous_case(op: str, series: str, label: str, shape: str, nbytes: int, make, eager_expr: str,
                     dtype: str = "f32", **kw) -> Case:
    return Case(op=op, series=series, case=label, shape=shape, dtype=dtype, layout="contiguous", nbytes=nbytes,
                make=make, eager_expr=eager_expr, **kw)


def _params(shapes: Sequence[Tuple[int, ...]], dtype: torch.dtype, device: torch.device) -> List[torch.Tensor]:
    params = []
    for s in shapes:
        p = torch.zeros(s, dtype=dtype, device=device, requires_grad=True)
        p.grad = (torch.randn(s, device=device) * 0.02).to(dtype)
        params.append(p)
    return params


def clip_case(dtype: torch.dtype, short: str, grid: str) -> Case:
    total = sum(numel(s) for s in RESNET18_SHAPES)
    size = element_size(dtype)

    def make(device: torch.device) -> Bench:
        import tensorops

        params = _params(RESNET18_SHAPES, dtype, device)

        def eager(params):
            torch.nn.utils.clip_grad_value_(params, 0.01, foreach=True)
            return [p.grad for p in params]

        def tops(params):
            tensorops.clip_grad_value_(params, 0.01)
            return [p.grad for p in params]

        def loop(params=params):
            for p in params:
                p.grad.clamp_(-0.01, 0.01)

        return Bench(eager=eager, tensorops=tops, args=(params,),
                     extras={"foreach=False": lambda: torch.nn.utils.clip_grad_value_(params, 0.01, foreach=False),
                             "per-tensor clamp_": loop})

    return _contiguous_case(
        "clip_grad_value", f"clip_grad_value_ resnet18 grads {short}", "resnet18", f"62 tensors, {total} values",
        2 * total * size, make, "torch.nn.utils.clip_grad_value_(params, 0.01, foreach=True)", dtype=short,
        times="clip_grad_value_", compile_grids=("full",),
        no_compile_reason="" if grid == "full" else "compiled only in the full grid (62 graph inputs)",
    )


def stack_case(count: int, shape: Sequence[int], grid: str) -> Case:
    def make(device: torch.device) -> Bench:
        import tensorops

        xs = [torch.randn(tuple(shape), device=device) for _ in range(count)]
        return Bench(eager=lambda xs: torch.stack(xs, 0), tensorops=lambda xs: tensorops.stack(xs, 0), args=(xs,))

    return _contiguous_case(
        "stack", "stack N x (3,224,224) f32", f"x{count}", f"{count} x ({','.join(map(str, shape))}), dim 0",
        2 * count * numel(shape) * 4, make, "torch.stack(tensors, 0)",
        compile_grids=("quick", "full") if count <= 8 else ("full",),
    )


def chunk_case(shape: Sequence[int], chunks: int, grid: str) -> Case:
    def make(device: torch.device) -> Bench:
        import tensorops
        from tensorops.stack_chunk import chunk_sizes

        x = torch.randn(tuple(shape), device=device)
        sizes = chunk_sizes(shape[1], chunks)
        return Bench(eager=lambda x: torch.split_with_sizes_copy(x, sizes, 1),
                     tensorops=lambda x: tensorops.chunk(x, chunks, 1), args=(x,),
                     extras={"chunk+contiguous": lambda: [p.contiguous() for p in torch.chunk(x, chunks, 1)]})

    return _contiguous_case(
        "chunk", "chunk dim1 (B,12,112,112) -> 4 f32", f"B{shape[0]}",
        f"({','.join(map(str, shape))}) -> {chunks} pieces, dim 1", 2 * numel(shape) * 4, make,
        "torch.split_with_sizes_copy(x, torch.chunk sizes, 1)",
    )


def cases(device: torch.device, grid: str) -> List[Case]:
    if grid == "smoke":
        smoke = [stack_case(3, (3, 8, 8), grid), chunk_case((2, 12, 4, 4), 4, grid), clip_case(torch.float32, "f32", grid)]
        for c in smoke:
            c.compile_grids = ()
        return smoke
    out = [clip_case(torch.float32, "f32", grid)]
    if grid == "full" or device.type == "cuda":
        out.append(clip_case(torch.float16, "f16", grid))
    out += [stack_case(n, (3, 224, 224), grid) for n in ([8, 32] if grid == "quick" else [2, 8, 32, 64])]
    out += [chunk_case((b, 12, 112, 112), 4, grid) for b in ([32] if grid == "quick" else [8, 32])]
    return out

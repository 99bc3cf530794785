"""cat and split benchmarks: 2 to 10,000 tensors, and the large image-batch cases.

Written against ``tensorops.cat(tensors, dim=0)`` (a torch.cat drop-in) and
``tensorops.split(tensor, split_size_or_sections, dim=0)`` whose pieces are contiguous copies, like
``torch.split_with_sizes_copy`` -- the native eager it is compared with (``torch.split`` + ``.contiguous()`` is
timed too, as an extra). Bytes moved: every byte is read once and written once, 2 x the total bytes.

torch.compile is not timed above 100 tensors: dynamo turns each tensor into a graph input or output, and
compiling 1,000 of them takes 14 s (cat) to 80 s (split) on 2 cores, 10,000 far longer -- which is itself
the answer for that regime.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import torch

from benchmarks.case import DTYPES, GRIDS, SHORT, Bench, Case, element_size, numel, random_tensor


def _tensor(shape: Sequence[int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return random_tensor(shape, dtype, device, int_range=1000)


def _compile_limit(count: int, grid: str) -> Tuple[Tuple[str, ...], str]:
    """Compile grids and the reason compile is not timed, for a row with ``count`` tensors. Measured on 2
    cores: compiling cat of 100 tensors takes ~3 s, of 1,000 ~14 s, split into 1,000 pieces ~80 s."""
    if count > 100:
        return (), f"torch.compile of {count} tensors takes 10 s to minutes to compile"
    return GRIDS, ""


def _make_cat(count: int, shape: Sequence[int], dtype: torch.dtype, dim: int):
    def make(device: torch.device) -> Bench:
        import tensorops

        tensors = [_tensor(shape, dtype, device) for _ in range(count)]

        def eager(tensors):
            return torch.cat(tensors, dim)

        def tops(tensors):
            return tensorops.cat(tensors, dim)

        return Bench(eager=eager, tensorops=tops, args=(tensors,))

    return make


def _make_split(shape: Sequence[int], sizes: List[int], dtype: torch.dtype, dim: int):
    def make(device: torch.device) -> Bench:
        import tensorops

        x = _tensor(shape, dtype, device)

        def eager(x):
            return torch.split_with_sizes_copy(x, sizes, dim)

        def tops(x):
            return tensorops.split(x, sizes, dim)

        return Bench(eager=eager, tensorops=tops, args=(x,),
                     extras={"split+contiguous": lambda: [p.contiguous() for p in torch.split(x, sizes, dim)]})

    return make


def _case(op: str, count: int, shape: str, dtype_name: str, nbytes: int, make, eager_expr: str, grid: str,
          series: str) -> Case:
    """A cat or split row: ``count`` tensors in or out, contiguous, every byte read and written once."""
    grids, reason = _compile_limit(count, grid)
    return Case(op=op, series=series, case=f"x{count}", shape=shape, dtype=SHORT[dtype_name], layout="contiguous",
                nbytes=nbytes, make=make, eager_expr=eager_expr, compile_grids=grids, no_compile_reason=reason)


def cat_case(count: int, shape: Sequence[int], dtype_name: str, dim: int, grid: str, series: str) -> Case:
    dtype = DTYPES[dtype_name]
    return _case("cat", count, f"{count} x ({','.join(map(str, shape))}), dim {dim}", dtype_name,
                 2 * count * numel(shape) * element_size(dtype), _make_cat(count, shape, dtype, dim),
                 f"torch.cat(tensors, {dim})", grid, series)


def split_case(shape: Sequence[int], pieces: int, dtype_name: str, dim: int, grid: str, series: str) -> Case:
    dtype = DTYPES[dtype_name]
    base, rem = divmod(shape[dim], pieces)
    sizes = [base + (1 if i < rem else 0) for i in range(pieces)]
    return _case("split", pieces, f"({','.join(map(str, shape))}) -> {pieces} pieces, dim {dim}", dtype_name,
                 2 * numel(shape) * element_size(dtype), _make_split(shape, sizes, dtype, dim),
                 f"torch.split_with_sizes_copy(x, sizes, {dim})", grid, series)


def cases(device: torch.device, grid: str) -> List[Case]:
    cuda = device.type == "cuda"
    if grid == "smoke":  # only normalize's first row is compiled in the smoke grid (one compile is enough)
        smoke = [
            cat_case(3, (5,), "float32", 0, grid, "cat 1-D (5,) f32"),
            split_case((2, 7, 3), 3, "float32", 1, grid, "split dim1 f32"),
        ]
        for c in smoke:
            c.compile_grids = ()
        return smoke
    counts = [2, 100, 10000] if grid == "quick" else [2, 10, 100, 1000, 10000]
    out: List[Case] = []
    # Many small tensors: launch/per-tensor overhead bound; the floor is 10,000 x (64,) float32.
    out += [cat_case(n, (64,), "float32", 0, grid, "cat N x (64,) f32") for n in counts]
    out += [split_case((64 * n,), n, "float32", 0, grid, "split (64N,) -> N f32") for n in counts]
    # Image batches: bandwidth bound; the floors are cat dim 1 of 4 x (8,3,224,224) and split dim 1 of
    # (32,12,112,112) into 4.
    batches = [8] if grid == "quick" else [1, 8, 32]
    if cuda:
        batches.append(64)
    for b in batches:
        out.append(cat_case(4, (b, 3, 224, 224), "float32", 1, grid, "cat dim1 4 x (B,3,224,224) f32"))
    for b in ([32] if grid == "quick" else [1, 8, 32]) + ([128] if cuda else []):
        out.append(split_case((b, 12, 112, 112), 4, "float32", 1, grid, "split dim1 (B,12,112,112) -> 4 f32"))
    # Other dtypes (element-size agnostic kernels; the int path has no float tricks to hide behind).
    dtypes = ["float16", "int32"]
    for d in dtypes:
        out.append(cat_case(4, (8, 3, 224, 224), d, 1, grid, f"cat dim1 4 x (B,3,224,224) {SHORT[d]}"))
        out.append(split_case((32, 12, 112, 112), 4, d, 1, grid, f"split dim1 (B,12,112,112) -> 4 {SHORT[d]}"))
        if grid == "full":
            out.append(cat_case(1000, (64,), d, 0, grid, f"cat N x (64,) {SHORT[d]}"))
    if grid == "quick":  # compiled in the quick grid: 2 tensors (overhead) and the image-batch floors only
        for c in out:
            if c.dtype != "f32" or c.case == "x100":
                c.compile_grids = tuple(g for g in c.compile_grids if g == "full")
    return out

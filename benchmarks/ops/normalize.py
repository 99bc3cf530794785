"""normalize benchmarks: uint8 images -> float32/float16/bfloat16 with per-channel (ImageNet) statistics.

Native eager is what people write: ``(x.float() / 255 - mean) / std`` (then ``.to(dtype)`` for half outputs, and
``.contiguous()`` when an NHWC batch must become NCHW). Bytes moved: 1 read + the output's bytes written per element.
Each row also times ``out.copy_(x)`` into a preallocated buffer of the output dtype: the same bytes, no math. The
ImageNet float32 rows of the quick grid also time ``normalize(..., out=result)`` in the same interleaved rounds
(``paired``): the kernel writing a preallocated result should cost no more than allocating one.
"""
from __future__ import annotations

from typing import List, Tuple

import torch

from benchmarks.case import SHORT, Bench, Case, element_size, image_label, numel

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
IMAGENET = (32, 3, 224, 224)
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

Shape = Tuple[int, int, int, int]


def _make(shape: Shape, dtype: torch.dtype, layout: str, with_out: bool = False):
    def make(device: torch.device) -> Bench:
        import tensorops

        n, c, h, w = shape
        if layout == "NCHW":
            x = torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
            fmt = torch.preserve_format
        else:  # an NHWC batch seen as NCHW (channels_last strides), written out as NCHW-contiguous
            x = torch.randint(0, 256, (n, h, w, c), dtype=torch.uint8, device=device).permute(0, 3, 1, 2)
            fmt = torch.contiguous_format
        mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
        out = torch.empty(shape, dtype=dtype, device=device)

        if dtype == torch.float32 and layout == "NCHW":
            def eager(x, mean, std):
                return (x.float() / 255 - mean) / std
        elif layout == "NCHW":
            def eager(x, mean, std):
                return ((x.float() / 255 - mean) / std).to(dtype)
        else:
            def eager(x, mean, std):
                return ((x.float() / 255 - mean) / std).to(dtype).contiguous()

        def tops(x, mean, std):
            return tensorops.normalize(x, MEAN, STD, dtype=dtype, memory_format=fmt)

        paired = {}
        if with_out:  # the same call writing a preallocated result (out=), timed in the same rounds
            result = torch.empty(shape, dtype=dtype, device=device)
            paired["tensorops out="] = lambda: tensorops.normalize(x, MEAN, STD, dtype=dtype, memory_format=fmt,
                                                                   out=result)
        return Bench(eager=eager, tensorops=tops, args=(x, mean, std),
                     extras={f"out.copy_(x) ->{_short(dtype)}": lambda: out.copy_(x)}, paired=paired)

    return make


def _short(dtype: torch.dtype) -> str:
    return SHORT[str(dtype).replace("torch.", "")]


def _expr(dtype_name: str, layout: str) -> str:
    e = "(x.float() / 255 - mean) / std"
    if dtype_name != "float32" or layout != "NCHW":
        e = f"({e}).to(torch.{dtype_name})"
    if layout != "NCHW":
        e += ".contiguous()"
    return e


def _case(shape: Shape, dtype_name: str, layout: str, label: str, compile_grids=("smoke", "quick", "full"),
          with_out: bool = False) -> Case:
    dtype = DTYPES[dtype_name]
    lay = "NCHW" if layout == "NCHW" else "NHWC->NCHW"
    return Case(
        op="normalize",
        series=f"normalize u8->{_short(dtype)} {lay}",
        case=label,
        shape="x".join(map(str, shape)),
        dtype=f"u8->{_short(dtype)}",
        layout=lay,
        nbytes=numel(shape) * (1 + element_size(dtype)),
        make=_make(shape, dtype, layout, with_out),
        eager_expr=_expr(dtype_name, layout),
        compile_grids=tuple(compile_grids),
    )


def cases(device: torch.device, grid: str) -> List[Case]:
    big = (256, 3, 224, 224) if device.type == "cuda" else (128, 3, 224, 224)
    out: List[Case] = []
    if grid == "smoke":
        out.append(_case((1, 3, 8, 8), "float32", "NCHW", "tiny"))
        out.append(_case((2, 3, 9, 7), "float16", "NHWC", "odd", compile_grids=()))
        return out
    if grid == "quick":
        # torch.compile costs 1-2 s per row (plus ~15-30 s for the first one, cold) on 2 cores: the quick grid
        # compiles the rows that answer a question (tiny: overhead; ImageNet NCHW and NHWC: the floors) only.
        full = ("full",)
        out.append(_case((1, 3, 8, 8), "float32", "NCHW", "tiny"))
        out.append(_case((8, 3, 64, 64), "float32", "NCHW", "mid", compile_grids=full))
        out.append(_case(IMAGENET, "float32", "NCHW", "imagenet", with_out=True))
        if device.type == "cuda":
            out.append(_case(big, "float32", "NCHW", "large"))
        out.append(_case(IMAGENET, "float16", "NCHW", "imagenet", compile_grids=full))
        out.append(_case(IMAGENET, "bfloat16", "NCHW", "imagenet", compile_grids=full))
        out.append(_case((1, 3, 8, 8), "float32", "NHWC", "tiny", compile_grids=full))
        out.append(_case(IMAGENET, "float32", "NHWC", "imagenet", with_out=True))
        out.append(_case(IMAGENET, "float16", "NHWC", "imagenet", compile_grids=full))
        return out
    shapes = [(1, 3, 8, 8), (1, 3, 64, 64), (1, 3, 224, 224), (8, 3, 224, 224), IMAGENET, big]
    for layout in ("NCHW", "NHWC"):
        for dtype_name in DTYPES:
            for shape in shapes:
                out.append(_case(shape, dtype_name, layout, image_label(shape)))
    return out

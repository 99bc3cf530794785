"""crop_mirror_normalize benchmarks: decoded uint8 images of different sizes -> a cropped, randomly mirrored,
ImageNet-normalized float batch.

Native eager is what people write without DALI: a Python loop of slices and flips, ``torch.stack``, then
``(x.float() / 255 - mean) / std`` (four passes with float temporaries). Bytes moved: the crops read once
(1 byte per element) and the float output written once.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import torch

from benchmarks.case import GRIDS, Bench, Case

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def _make(n: int, lo: int, hi: int, crop: int, batch_tensor: bool):
    def make(device: torch.device) -> Bench:
        import tensorops

        g = torch.Generator().manual_seed(0)
        if batch_tensor:
            images = torch.randint(0, 256, (n, 3, hi, hi), dtype=torch.uint8, generator=g).to(device)
            sizes = [(hi, hi)] * n
        else:
            sizes = [tuple(int(v) for v in torch.randint(lo, hi + 1, (2,), generator=g)) for _ in range(n)]
            images = [torch.randint(0, 256, (3, H, W), dtype=torch.uint8, generator=g).to(device) for H, W in sizes]
        top_left = torch.tensor([[int(torch.randint(0, H - crop + 1, (), generator=g)),
                                  int(torch.randint(0, W - crop + 1, (), generator=g))] for H, W in sizes])
        mirror = torch.rand(n, generator=g) < 0.5
        origins, flips = top_left.tolist(), mirror.tolist()
        mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=device).view(1, 3, 1, 1)

        def eager(images, mean, std):
            crops = []
            for im, (y, x), f in zip(images, origins, flips):
                c = im[:, y : y + crop, x : x + crop]
                crops.append(c.flip(-1) if f else c)
            return (torch.stack(crops).float() / 255 - mean) / std

        def tops(images, mean, std):
            return tensorops.crop_mirror_normalize(images, MEAN, STD, size=(crop, crop), top_left=top_left,
                                                   mirror=mirror)

        # the same call writing a preallocated batch (out=), timed in the same interleaved rounds
        result = torch.empty(n, 3, crop, crop, device=device)
        paired = {"tensorops out=": lambda: tensorops.crop_mirror_normalize(
            images, MEAN, STD, size=(crop, crop), top_left=top_left, mirror=mirror, out=result)}
        return Bench(eager=eager, tensorops=tops, args=(images, mean, std), paired=paired)

    return make


def _case(n: int, lo: int, hi: int, crop: int, label: str, batch_tensor: bool = False,
          compile_grids: Sequence[str] = GRIDS) -> Case:
    numel = n * 3 * crop * crop
    form = f"(N,3,{hi},{hi}) batch" if batch_tensor else f"list of (3,{lo}-{hi},{lo}-{hi})"
    return Case(
        op="crop_mirror_normalize",
        series=f"crop_mirror_normalize u8->f32 {'batch' if batch_tensor else 'list'}",
        case=label,
        shape=f"{n}x{form}->{crop}x{crop}",
        dtype="u8->f32",
        layout="NCHW",
        nbytes=numel * (1 + 4),
        make=_make(n, lo, hi, crop, batch_tensor),
        eager_expr="loop of im[:, y:y+h, x:x+w] (.flip(-1)), torch.stack, (x.float() / 255 - mean) / std",
        compile_grids=tuple(compile_grids),
    )


def cases(device: torch.device, grid: str) -> List[Case]:
    if grid == "smoke":
        return [_case(2, 10, 14, 8, "tiny", compile_grids=())]
    # torch.compile of a 32-image list costs many seconds on 2 cores: timed in the full grid only
    out = [
        _case(4, 40, 48, 32, "small", compile_grids=("full",)),
        _case(32, 256, 320, 224, "imagenet", compile_grids=("full",)),
        _case(32, 288, 288, 224, "imagenet", batch_tensor=True, compile_grids=("full",)),
    ]
    if grid == "full" or device.type == "cuda":
        out.append(_case(256, 256, 320, 224, "large", compile_grids=("full",)))
    return out

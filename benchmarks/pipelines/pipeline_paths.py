"""What ``benchmarks.pipeline`` times: the JPEG files it writes, the decoders, and its five pipelines (a)-(e)
(``PATHS``, ``DESCRIBE``): datasets, transforms, collates and loaders, each a DataLoader over the same files."""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

from benchmarks.case import photo_like

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
BATCH = 32
CROP = 224
RESIZE = 256
PATHS = {
    "a": "tv PIL",
    "b": "tv tensor",
    "c": "tops float",
    "d": "tops u8+NL",
    "e": "tops PIL",
    "f": "tops bytes u8+NL",
}
DESCRIBE = {
    "a": "PIL decode + torchvision v2 transforms + default_collate",
    "b": "decode_jpeg + torchvision v2 transforms on tensors + default_collate",
    "c": "decode_jpeg + tensorops ResizedCropMirrorNormalizeCollate (float32 batch from the workers)",
    "d": "decode_jpeg + tensorops collate dtype=uint8 + NormalizingLoader (normalize in the consumer)",
    "e": "PIL decode + tensorops collate (PIL images read in place)",
    "f": "file bytes (tensorops.io.loader) + the collate decoding each JPEG only where its box reads, dtype=uint8 "
         "+ NormalizingLoader",
}


# ------------------------------------------------------------------------------------------------ the files


def imagenet_like_sizes(n: int, g: torch.Generator) -> List[Tuple[int, int]]:
    """(H, W) like ImageNet's: mostly 4:3 / 3:4 around 500x375, some squares and odd sizes, 300-500 px."""
    common = [(375, 500), (500, 375), (333, 500), (500, 333), (400, 400), (480, 360), (360, 480), (500, 500)]
    out = []
    for k in range(n):
        if k % 3 == 2:
            out.append(tuple(int(v) for v in torch.randint(300, 501, (2,), generator=g)))
        else:
            out.append(common[int(torch.randint(0, len(common), (), generator=g))])
    return out


def write_jpegs(root: str, n: int, seed: int = 0) -> Tuple[List[str], List[int]]:
    """``n`` photo-like JPEGs (quality 90) in ``root/class{0,1}/``; returns (paths, labels) in file order."""
    from torchvision.io import encode_jpeg

    g = torch.Generator().manual_seed(seed)
    paths, labels = [], []
    for k, (H, W) in enumerate(imagenet_like_sizes(n, g)):
        label = k % 2
        folder = os.path.join(root, f"class{label}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"img{k:04d}.jpg")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_CODEC_DEPRECATION, category=DeprecationWarning)
            data = encode_jpeg(photo_like(H, W, g), quality=90)
        with open(path, "wb") as f:
            f.write(data.numpy().tobytes())
        paths.append(path)
        labels.append(label)
    return paths, labels


def pil_decode(path: str) -> Any:
    """ImageFolder's loader: open and convert to RGB (which decodes)."""
    from PIL import Image

    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


# torchvision 0.29 deprecates its image codecs in favour of TorchCodec; decode_jpeg is still what most pipelines call
_CODEC_DEPRECATION = "The image decoding and encoding capabilities of TorchVision are deprecated"


def tensor_decode(path: str) -> torch.Tensor:
    from torchvision.io import decode_jpeg, read_file

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_CODEC_DEPRECATION, category=DeprecationWarning)
        return decode_jpeg(read_file(path))


class Files(torch.utils.data.Dataset):
    """(decode(path) [-> transform], label) per file, as ImageFolder; ``length`` items, cycling over the files (an
    epoch long enough for the workers to reach their steady state without encoding more files)."""

    def __init__(self, paths: Sequence[str], labels: Sequence[int], decode: Callable[[str], Any],
                 transform: Optional[Callable[[Any], Any]] = None, length: Optional[int] = None) -> None:
        self.paths, self.labels, self.decode, self.transform = list(paths), list(labels), decode, transform
        self.length = len(self.paths) if length is None else length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> Tuple[Any, int]:
        i %= len(self.paths)
        img = self.decode(self.paths[i])
        return (img if self.transform is None else self.transform(img)), self.labels[i]


# ------------------------------------------------------------------------------------------------ pipelines


def tv_transform(train: bool) -> Callable[[Any], Any]:
    from torchvision.transforms import v2

    geometry = ([v2.RandomResizedCrop(CROP, antialias=True), v2.RandomHorizontalFlip()] if train
                else [v2.Resize(RESIZE, antialias=True), v2.CenterCrop(CROP)])
    return v2.Compose(geometry + [v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])


def tops_collate(train: bool, uint8: bool = False) -> Callable[[Any], Any]:
    from tensorops.data import ResizedCropMirrorNormalizeCollate

    if uint8:
        return ResizedCropMirrorNormalizeCollate(CROP, None, None, train=train, resize_size=RESIZE, dtype=torch.uint8)
    return ResizedCropMirrorNormalizeCollate(CROP, MEAN, STD, train=train, resize_size=RESIZE)


def make_loader(path: str, train: bool, workers: int, paths: Sequence[str], labels: Sequence[int],
                length: Optional[int] = None) -> Any:
    from torch.utils.data import DataLoader, default_collate

    from tensorops.data import NormalizingLoader

    from tensorops import io as tio

    decode = pil_decode if path in ("a", "e") else tio.loader if path == "f" else tensor_decode
    transform = tv_transform(train) if path in ("a", "b") else None
    collate = default_collate if path in ("a", "b") else tops_collate(train, uint8=path in ("d", "f"))
    loader = DataLoader(Files(paths, labels, decode, transform, length), batch_size=BATCH, shuffle=False,
                        num_workers=workers, collate_fn=collate, persistent_workers=workers > 0)
    return NormalizingLoader(loader, MEAN, STD) if path in ("d", "f") else loader


def epoch(loader: Any) -> int:
    n = 0
    for images, labels in loader:
        n += images.shape[0]
    return n


def check_batch(loader: Any, n_images: int, what: str) -> None:
    seen = 0
    for images, labels in loader:
        if images.dtype != torch.float32 or tuple(images.shape[1:]) != (3, CROP, CROP):
            raise AssertionError(f"{what}: batch is {images.dtype}{tuple(images.shape)}")
        seen += images.shape[0]
    if seen != n_images:
        raise AssertionError(f"{what}: {seen} images, not the epoch's {n_images}")


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds of these processes so far (/proc/<pid>/stat; a vanished one counts 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            pass
    return total / _TICK


def worker_pids(loader: Any) -> List[int]:
    loader = getattr(loader, "loader", loader)  # a wrapper's DataLoader
    it = getattr(loader, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", []) or [] if w.pid is not None]

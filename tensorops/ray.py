"""Ray Data stages backed by tensorops' batch ops (needs ray: ``pip install 'tensorops[ray]'``).

``import tensorops`` never imports ray: this module is loaded on first use of ``tensorops.ray`` (or
``import tensorops.ray``) and raises an ImportError that names ray when it is missing.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from tensorops._optional import require

# the stage runs inside ray.data; imported here so a missing ray fails early and clearly
require("ray.data", feature="tensorops.ray", package="ray (Ray Data)", extra="ray")

import numpy as np

from tensorops import _decode_ops
from tensorops._checks import where
from tensorops.data import ResizedCropMirrorNormalizeCollate, as_image
from tensorops.data.collates import _encoded, decode_encoded
from tensorops.data.seeding import stream_seed
from tensorops.resized_crop_mirror_normalize import resized_crop_mirror_normalize

__all__ = ["ResizedCropMirrorNormalize"]

_FN = where("ray.ResizedCropMirrorNormalize")
_KEY_COLUMNS = ("path", "id")


class ResizedCropMirrorNormalize:
    """A ``Dataset.map_batches`` stage (``batch_format="numpy"``): the images of a batch, of any sizes, decoded
    or still encoded, become one ``(N, C', h, w)`` array by one call of :func:`tensorops.resized_crop_mirror_normalize`
    (or :func:`tensorops.decode_resized_crop_mirror_normalize`).

    Training (``train=True``): RandomResizedCrop boxes and horizontal flips; evaluation: Resize + CenterCrop, as
    :class:`tensorops.data.ResizedCropMirrorNormalizeCollate` (whose ``boxes`` draws them; its options are taken
    here by keyword: ``scale``, ``ratio``, ``resize_size``, ``interpolation``, ``antialias``, ``mirror_prob``,
    ``dtype``, ``memory_format``, ``pad_channels``, ``fill``, ``on_error``, ``strict``). ``batch[column]`` holds
    HWC uint8 arrays (an object array or a list, as ``ray.data.read_images(..., mode="RGB")`` gives without
    ``size=``; 2-D grayscale arrays are one channel); the result replaces it, a zero-copy numpy view of the op's
    output; other columns pass through. numpy has no bfloat16, so the output dtype is float16, float32, float64 or
    uint8.

    Encoded images: ``ray.data.read_binary_files(paths, include_paths=True)`` gives each file's bytes in a column
    ``"bytes"``, so the object store carries JPEG bytes instead of decoded pixels; pass ``column="bytes"`` (the
    column is named, not detected). When every row is ``bytes`` (or a 1-D uint8 array) the batch takes the
    collate's decode path: sizes from the headers (:func:`tensorops.io.image_size`), the same boxes and flips
    as for the decoded rows, then each JPEG decoded only where its box reads (other formats whole, by Pillow;
    grayscale and CMYK as RGB, 3 channels). The result equals the decoded column's (``read_images(mode="RGB")``,
    same ``seed`` and key) bit for bit, and replaces ``"bytes"`` (``Dataset.rename_columns({"bytes": "image"})``
    renames it). A file that cannot be decoded: with ``on_error="raise"`` (the default) a ValueError naming its
    path; with ``on_error="drop"`` its row leaves the batch, every column, with one warning per path (the batch
    is then shorter). ``on_error`` concerns encoded rows: a decoded row that is not an image always raises. A
    JPEG that libjpeg warns about (corrupt data it resynchronises past, junk before a marker, a file cut short)
    decodes as ``decode_jpeg`` decodes it, with one warning per path (``strict=True``: an error instead);
    ``stage.report`` counts, in the process that ran the stage, the rows decoded despite warnings, through the
    fallback decoder (lossless JPEGs, other formats) and dropped.

    Randomness (training): with ``seed=None`` each process draws fresh entropy. With an integer ``seed`` each
    row's box and flip come from its own generator, seeded from ``(seed, epoch, key)`` where ``key`` is the row's
    ``key_column`` (default: ``path``, else ``id``): the run repeats whatever the number of actors, the order in
    which blocks reach them or how rows are cut into batches; pass a new ``epoch`` for new crops. A ``seed``
    needs such a key column: without one every actor and task would start the same stream and repeat each
    other's crops, so the stage raises a ValueError naming ``key_column`` instead (add one with
    ``read_images(..., include_paths=True)`` or ``Dataset.add_column``, or pass ``seed=None``).

    An empty batch gives an empty ``(0, C', h, w)`` array, its channels taken from the column's shape where it
    has one (``(0, H, W)``: grayscale, one channel; ``(0, H, W, C)``: C), else ``pad_channels`` or 3.

    Errors (``ValueError``/``TypeError``), of the op or of a row that is not an image, are re-raised with the
    same type and the offending row's key (``path=...``), so Ray's task error names the file.

    Example (not run by the docs build: it needs a Ray cluster and a bucket; tests/test_ray.py runs the stage on
    a local two-node cluster)::

        ds = ray.data.read_images("s3://bucket/train", mode="RGB", include_paths=True)
        ds = ds.map_batches(ResizedCropMirrorNormalize, batch_format="numpy", batch_size=64, concurrency=4,
                            fn_constructor_kwargs=dict(size=224, mean=[0.485, 0.456, 0.406],
                                                       std=[0.229, 0.224, 0.225], seed=0, epoch=epoch))
        for batch in ds.iter_torch_batches(batch_size=64): batch["image"]  # (64, 3, 224, 224) float32

    The same from the files' bytes, decoded in the stage::

        ds = ray.data.read_binary_files("s3://bucket/train", include_paths=True)  # columns "bytes", "path"
        ds = ds.map_batches(ResizedCropMirrorNormalize, batch_format="numpy", batch_size=64, concurrency=4,
                            fn_constructor_kwargs=dict(size=224, mean=[0.485, 0.456, 0.406], column="bytes",
                                                       std=[0.229, 0.224, 0.225], seed=0, epoch=epoch))
        ds = ds.rename_columns({"bytes": "image"})
    """

    def __init__(self, size: Union[int, Tuple[int, int]], mean: Any, std: Any, *, train: bool = True,
                 column: str = "image", seed: Optional[int] = None, epoch: int = 0, key_column: Optional[str] = None,
                 **options: Any) -> None:
        for name in ("generator", "dim"):
            if name in options:
                raise TypeError(f"{_FN}{name!r} is not an option of the stage (randomness comes from seed; "
                                f"images are HWC)")
        if options.get("dtype") is torch.bfloat16:
            raise TypeError(f"{_FN}dtype=torch.bfloat16 has no numpy dtype; use float16 or float32 and convert "
                            f"after iter_torch_batches")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"{_FN}seed must be an int or None, got {seed!r}")
        # validates every option once, on the driver (before any task runs)
        self.collate = ResizedCropMirrorNormalizeCollate(size, mean, std, train=train, dim=-1, **options)
        self.column, self.seed, self.epoch, self.key_column = column, seed, int(epoch), key_column
        self._generator: Optional[torch.Generator] = None

    @property
    def report(self) -> Dict[str, int]:
        """Encoded rows this process decoded despite libjpeg warnings, through the fallback decoder, or dropped."""
        return self.collate.report

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_generator"] = None  # every process (task or actor) starts its own stream
        return state

    def _stream(self) -> torch.Generator:
        """seed=None: fresh entropy, drawn once in each process (actor or task)."""
        if self._generator is None:
            self._generator = torch.Generator()
            self._generator.seed()
        return self._generator

    def _key(self, batch: Dict[str, Any]) -> Optional[str]:
        if self.key_column is not None:
            if self.key_column not in batch:
                raise KeyError(f"{_FN}key_column {self.key_column!r} is not a column of the batch "
                               f"(columns: {sorted(batch)})")
            return self.key_column
        return next((k for k in _KEY_COLUMNS if k in batch), None)

    def _boxes(self, sizes: List[Tuple[int, int]], keys: Optional[Sequence[Any]]) -> Tuple[torch.Tensor, torch.Tensor]:
        collate = self.collate
        if not collate.train:
            return collate.boxes(sizes)
        try:
            if self.seed is None:
                collate.generator = self._stream()
                return collate.boxes(sizes)
            # one generator per row, so that a row's draws depend on the row alone; the boxes in one call
            draws = torch.stack([torch.rand(collate.DRAWS, dtype=torch.float64, generator=torch.Generator().manual_seed(
                stream_seed(self.seed, self.epoch, key))) for key in keys])
            return collate.boxes(sizes, uniforms=draws.numpy())
        finally:
            collate.generator = None  # the stage pickles without generators

    def _run(self, images: List[torch.Tensor], boxes: torch.Tensor, mirror: torch.Tensor) -> torch.Tensor:
        c = self.collate
        return resized_crop_mirror_normalize(
            images, c.mean, c.std, size=c.size, boxes=boxes, mirror=mirror, dim=-1,
            interpolation=c.interpolation, antialias=c.antialias, dtype=c.dtype, memory_format=c.memory_format,
            pad_channels=c.pad_channels, fill=c.fill, out_of_bounds="pad", crop_first=c.train,
        )

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        if self.column not in batch:
            hint = " (read_binary_files' column: pass column='bytes')" if "bytes" in batch else ""
            raise KeyError(f"{_FN}column {self.column!r} is not in the batch (columns: {sorted(batch)}){hint}")
        column = batch[self.column]
        key_name = self._key(batch)
        if self.collate.train and self.seed is not None and key_name is None:
            raise ValueError(
                f"{_FN}seed={self.seed} needs a key column to seed each row from (key_column=..., or a column named "
                f"{' or '.join(_KEY_COLUMNS)}; the batch has {sorted(batch)}): without one every actor and task "
                f"would draw the same stream and repeat the same crops. Add one (read_images(..., "
                f"include_paths=True), Dataset.add_column) or pass seed=None")
        keys = None if key_name is None else list(batch[key_name])
        names = [f"{key_name}={k!r}" for k in keys] if keys is not None else \
            [_decode_ops.Unnamed(f"row {i}") for i in range(len(column))]  # named by their bytes in warnings
        out = dict(batch)
        if len(column) == 0:
            out[self.column] = self._empty(column)
            return out
        if all(_encoded_row(im) for im in column):
            return self._decode(batch, column, keys, names)
        images = []
        for i, im in enumerate(column):
            try:
                array = np.asarray(im)
                if array.dtype.kind not in "biuf":
                    raise TypeError(f"an image must be a numeric array, got {type(im).__name__} of dtype {array.dtype}")
                image = as_image(array, _FN)
                if image.dim() != 3:
                    raise ValueError(f"an image must be an (H, W) or (H, W, C) array, got shape {tuple(image.shape)}")
                images.append(image)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"{_FN}{names[i]}: {exc}") from exc
        sizes = [(int(im.shape[0]), int(im.shape[1])) for im in images]
        boxes, mirror = self._boxes(sizes, keys)
        try:
            result = self._run(images, boxes, mirror)
        except (ValueError, TypeError) as exc:
            raise type(exc)(self._blame(exc, images, boxes, mirror, names)) from exc
        out[self.column] = result.numpy()  # a view of the op's output: Ray stores these bytes
        return out

    def _decode(self, batch: Dict[str, Any], column: Any, keys: Optional[List[Any]], names: List[str]
                ) -> Dict[str, Any]:
        """A column of encoded rows: the collate's decode path with this stage's boxes (the same as for decoded
        rows); rows dropped by ``on_error="drop"`` leave every column."""
        try:
            result, kept = decode_encoded(self.collate, list(column), names, lambda sizes: self._boxes(sizes, keys),
                                          _FN)
        except (ValueError, TypeError) as exc:
            text = str(exc)
            raise type(exc)(text if text.startswith(_FN) else f"{_FN}{text}") from exc
        out = dict(batch)
        if kept is not None:
            out = {name: _take(value, kept) for name, value in batch.items()}
        out[self.column] = result.numpy()
        return out

    def _empty(self, column: Any) -> np.ndarray:
        """The output of an empty batch: (0, C', h, w), C' from the column's shape where it has one."""
        c = self.collate
        shape = getattr(column, "shape", None)
        channels = 3
        if shape is not None and len(shape) == 3:
            channels = 1  # (0, H, W): grayscale rows, as as_image reads 2-D arrays
        elif shape is not None and len(shape) == 4:
            channels = int(shape[3])
        channels = c.pad_channels or channels
        return torch.empty((0, channels, *c.size), dtype=c.dtype or torch.float32).numpy()

    def _blame(self, exc: Exception, images: List[torch.Tensor], boxes: torch.Tensor, mirror: torch.Tensor,
               names: List[str]) -> str:
        """The op's message with the row(s) that make it fail: each row is run alone (only on this error path)."""
        bad = []
        for i, im in enumerate(images):
            try:
                self._run([im], boxes[i:i + 1], mirror[i:i + 1])
            except (ValueError, TypeError) as row_exc:
                bad.append(f"{names[i]}: {row_exc}")
        if bad:
            return f"{_FN}{len(bad)} of {len(images)} rows failed: " + "; ".join(bad[:5])
        return f"{_FN}the batch failed ({exc}); its rows: " + ", ".join(names[:8]) + ("..." if len(names) > 8 else "")


def _encoded_row(row: Any) -> bool:
    """Encoded bytes: ``bytes`` (read_binary_files' rows) or a 1-D uint8 array; strings are not read as paths."""
    return isinstance(row, (bytes, bytearray, memoryview, np.ndarray)) and _encoded(row)


def _take(value: Any, kept: List[int]) -> Any:
    """The kept rows of one column (a numpy array, or a list)."""
    if isinstance(value, np.ndarray):
        return value[np.asarray(kept, dtype=np.int64)]
    return [value[k] for k in kept]

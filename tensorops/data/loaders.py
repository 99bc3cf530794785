"""NormalizingLoader: uint8 batches from a DataLoader, normalized in the consumer (on the CPU, or on a CUDA device
one batch ahead on a side stream)."""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Tuple

import torch

from tensorops._checks import where
from tensorops.data import augmenting as _augmenting
from tensorops.data import shared_batches as _shared_batches
from tensorops.normalize import normalize

__all__ = ["NormalizingLoader", "RecyclingLoader"]

_FN = where("data.NormalizingLoader")


class _CudaStreams:
    """The few stream operations the CUDA handover uses, in one place (tests put a recording twin here to check
    the order of waits without a GPU)."""

    Stream = staticmethod(torch.cuda.Stream)
    current_stream = staticmethod(torch.cuda.current_stream)
    use = staticmethod(torch.cuda.stream)  # a context: work queued inside runs on the given stream

    @staticmethod
    def on_cuda(t: torch.Tensor) -> bool:
        return t.device.type == "cuda"

    @staticmethod
    def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
        """Queued on the current stream: host memory through pinned memory, without blocking the host."""
        if t.device.type != "cuda" and not t.is_pinned():
            t = t.pin_memory()
        return t.to(device, non_blocking=True)

    @staticmethod
    def record(t: torch.Tensor, stream: Any) -> None:
        """``t``'s memory is in use on ``stream`` too: the caching allocator must not reuse it before that."""
        t.record_stream(stream)

    @staticmethod
    def done_event(stream: Any) -> Any:
        """An event recorded on ``stream`` now: it completes when everything queued there so far has."""
        event = torch.cuda.Event()
        event.record(stream)
        return event


class NormalizingLoader:
    """Wraps a DataLoader whose batches carry uint8 images (``dtype=torch.uint8`` collates) and normalizes each
    batch as it arrives in the consumer: the workers ship 4x fewer bytes than float batches (a fresh float32
    shared-memory batch costs more to place than the collate itself).

    On the CPU (``device=None``) each batch is normalized in the main process by :func:`tensorops.normalize`.

    With a CUDA ``device`` the loader runs one batch ahead: while the consumer uses batch k, batch k+1 is copied
    from pinned memory (``non_blocking``) and normalized on a side stream. Batch k is handed over on the stream
    current at the handover (the consumer's, default or not), which waits on an event recorded right after batch
    k's normalize: never on batch k+1's work, so a step that synchronizes (``loss.item()``) still overlaps with
    the next copy. Batches that are already on a CUDA device are normalized on the side stream after it waits for
    the stream that was current when the wrapped loader yielded them (their producer's), and their memory is
    recorded on the side stream; the output's memory is recorded on the consumer's stream.

    ``augment``: a transform or a sequence of transforms (``tensorops.augment``'s policies) applied in order to
    each uint8 batch where it is normalized, just before the normalize: with a CUDA ``device`` on the GPU, on the
    batch just copied, on the side stream (one batch ahead, as the normalize); on the CPU in the main process.
    Their draws are made on the CPU from ``generator`` (``make_params(batch, generator=...)``; the main process's
    one stream, which goes on advancing, so every epoch draws anew and a run repeats from the seed). A transform
    that mixes labels (MixUp, CutMix, :mod:`tensorops.data.augmenting`) replaces the labels at ``label_key`` with
    its soft labels (computed where the labels are: the loader moves only the images). Where each augmentation runs is the caller's choice: given to the collate (``augment=`` of
    :class:`~tensorops.data.ResizedCropMirrorNormalizeCollate`) they run in the DataLoader workers on their CPUs;
    given here they run on the device that normalizes.

    ``after_normalize``: transforms for the normalized float batch, right after the normalize, from the same
    ``generator`` and where the normalize runs: where the recipes put RandomErasing and MixUp / CutMix. The batch
    is the loader's fresh output: give them ``inplace=True`` (they then write only what they change: RandomErasing
    is not fused into the normalize pass, in place it costs its boxes only). With a CPU loader this is how the
    workers can ship uint8 batches while the float-scale steps still come last.

    Args:
        loader: any iterable of batches: a tensor, or a tuple/list/dict holding the images at ``image_key``.
        mean, std, dtype, memory_format: as :func:`tensorops.normalize` (images uint8 -> /255).
        device: None (CPU) or a CUDA device.
        image_key: where the images are in each batch (0 for ``(images, labels)``).
        augment: transforms for the uint8 batch before the normalize (see above).
        after_normalize: transforms for the normalized batch (see above).
        generator: a ``torch.Generator`` the augmentations draw from (None: torch's global RNG).
        label_key: where the labels are in each batch (1 for ``(images, labels)``), for label-mixing transforms.

    Example:
        >>> from torch.utils.data import DataLoader
        >>> from tensorops.data import NormalizingLoader, ResizedCropMirrorNormalizeCollate
        >>> ds = [(torch.randint(0, 256, (3, 300, 400), dtype=torch.uint8), 0) for _ in range(8)]
        >>> collate = ResizedCropMirrorNormalizeCollate(224, None, None, dtype=torch.uint8)  # uint8 batches
        >>> loader = NormalizingLoader(DataLoader(ds, batch_size=4, collate_fn=collate),
        ...                            [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])       # on the CPU
        >>> [(images.dtype, tuple(images.shape)) for images, labels in loader]
        [(torch.float32, (4, 3, 224, 224)), (torch.float32, (4, 3, 224, 224))]

        With ``device="cuda"`` each batch is copied from pinned memory and normalized on a side stream, one
        batch ahead (skipped here: it needs a GPU)::

            loader = NormalizingLoader(DataLoader(ds, batch_size=32, collate_fn=collate, num_workers=2),
                                       [0.485, 0.456, 0.406], [0.229, 0.224, 0.225], device="cuda")
    """

    _cuda = _CudaStreams

    def __init__(self, loader: Any, mean: Any, std: Any, *, device: Any = None, dtype: Optional[torch.dtype] = None,
                 memory_format: torch.memory_format = torch.contiguous_format, image_key: Any = 0,
                 augment: Any = None, generator: Optional[torch.Generator] = None, label_key: Any = 1,
                 after_normalize: Any = None) -> None:
        self.loader, self.mean, self.std = loader, mean, std
        self.augment = _augmenting.as_transforms(augment, _FN)
        self.after_normalize = _augmenting.as_transforms(after_normalize, _FN, "after_normalize")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"{_FN}generator must be a torch.Generator, got {generator!r}")
        self.generator, self.label_key = generator, label_key
        self._mixes = _augmenting.any_needs_labels(self.augment + self.after_normalize)
        self.device = None if device is None else torch.device(device)
        if self.device is not None and self.device.type not in ("cuda", "cpu"):
            raise ValueError(f"{_FN}device must be None, 'cpu' or a CUDA device, got {device!r}")
        if self.device is not None and self.device.type == "cpu":
            self.device = None
        self.dtype, self.memory_format, self.image_key = dtype, memory_format, image_key

    def __len__(self) -> int:
        return len(self.loader)

    def _images(self, batch: Any) -> torch.Tensor:
        images = batch if isinstance(batch, torch.Tensor) else batch[self.image_key]
        if not isinstance(images, torch.Tensor):
            raise TypeError(f"{_FN}batch[{self.image_key!r}] must be a tensor, got {type(images).__name__}")
        return images

    def _replace(self, batch: Any, images: torch.Tensor, labels: Any = None) -> Any:
        if isinstance(batch, torch.Tensor):
            return images
        if isinstance(batch, dict):
            return {**batch, self.image_key: images, **({self.label_key: labels} if labels is not None else {})}
        items = list(batch)
        items[self.image_key] = images
        if labels is not None:
            items[self.label_key] = labels
        if isinstance(batch, tuple):  # a namedtuple stays one (its fields by position, as _make takes them)
            return type(batch)._make(items) if hasattr(type(batch), "_make") else tuple(items)
        return items

    def _normalize(self, images: torch.Tensor) -> torch.Tensor:
        return normalize(images, self.mean, self.std, dtype=self.dtype, memory_format=self.memory_format)

    def _labels(self, batch: Any) -> Any:
        if not self._mixes:
            return None
        if isinstance(batch, torch.Tensor):
            raise TypeError(f"{_FN}augment mixes labels (MixUp, CutMix) but the batches are bare tensors: give "
                            "(images, labels) batches")
        return batch[self.label_key]

    def _augmented(self, images: torch.Tensor, labels: Any) -> Tuple[torch.Tensor, Any]:
        """The uint8 ``images`` (on their device) after ``augment``, then normalized, then ``after_normalize``;
        the (soft) labels."""
        if self.augment and images.shape[0] > 0:
            images, labels = _augmenting.apply(self.augment, images, labels, self.generator)
        images = self._normalize(images)
        if self.after_normalize and images.shape[0] > 0:
            images, labels = _augmenting.apply(self.after_normalize, images, labels, self.generator)
        return images, labels

    def __iter__(self) -> Iterator[Any]:
        return _Normalizing(self)

    def _stage(self, batch: Any, side: Any) -> Tuple[Any, torch.Tensor, Any, Any]:
        """CUDA: ``batch`` copied and normalized on the side stream; (batch, images, labels, done event)."""
        cuda = self._cuda
        images = self._images(batch)
        producer = cuda.current_stream(images.device) if cuda.on_cuda(images) else None
        with cuda.use(side):
            if producer is not None:  # written on the producer's stream: read it only after that
                side.wait_stream(producer)
                cuda.record(images, side)
            ready, labels = self._augmented(cuda.to_device(images, self.device), self._labels(batch))
            done = cuda.done_event(side)  # this batch's work, and nothing queued after it
        return batch, ready, labels, done

    def _handover(self, batch: Any, images: torch.Tensor, labels: Any, done: Any) -> Any:
        current = self._cuda.current_stream(self.device)
        current.wait_event(done)
        self._cuda.record(images, current)
        if isinstance(labels, torch.Tensor) and labels.device.type == "cuda":
            self._cuda.record(labels, current)
        return self._replace(batch, images, labels)


class _Normalizing:
    """NormalizingLoader's iterator. On the CPU each batch is normalized as it is asked for; with a CUDA device
    batch k + 1 is staged before batch k is handed over. An exception of the wrapped loader passes through as the
    wrapped iterator raised it, in its place in the sequence (after the batch staged before it), and iteration
    goes on after it as the wrapped iterator's does."""

    def __init__(self, owner: NormalizingLoader) -> None:
        self._owner, self._it = owner, iter(owner.loader)
        self._side = None if owner.device is None else owner._cuda.Stream(owner.device)
        self._pending: Optional[Tuple[Any, ...]] = None
        self._error: Optional[BaseException] = None

    def __iter__(self) -> "_Normalizing":
        return self

    def __next__(self) -> Any:
        o = self._owner
        if self._side is None:
            batch = next(self._it)
            images, labels = o._augmented(o._images(batch), o._labels(batch))
            return o._replace(batch, images, labels)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        while True:
            try:
                batch = next(self._it)
            except StopIteration:
                if self._pending is None:
                    raise
                ready, self._pending = self._pending, None
                return o._handover(*ready)
            except Exception as e:  # the batch staged before it first, then this
                if self._pending is None:
                    raise
                self._error = e
                ready, self._pending = self._pending, None
                return o._handover(*ready)
            staged = o._stage(batch, self._side)
            if self._pending is None:
                self._pending = staged
                continue
            ready, self._pending = self._pending, staged
            return o._handover(*ready)

    def __len__(self) -> int:
        return len(self._it)  # type: ignore[arg-type]


_RFN = where("data.RecyclingLoader")


class RecyclingLoader:
    """Wraps a DataLoader (or any iterable of batches) and hands the shared memory of the batches it has let go of
    back to the workers that made them at every step: ``loader`` as it is, with the release checked once more per
    step (:func:`tensorops.data.shared_batches.sweep`).

    The workers of tensorops' collates reuse their shared blocks without this wrapper: a process that receives a
    block registers it and releases it once its storage there is gone, checked whenever another block arrives
    (:mod:`tensorops.data.shared_batches`: a block is reused only when no process can read it, whatever holds it:
    views at any offset, storage objects, numpy arrays, DLPack capsules, autograd graphs and hooks, a queue or a
    fork to another process). The wrapper changes nothing that the consumer sees: its batches, its exceptions (a
    loop that catches a failed batch and goes on gets every other batch, as from the DataLoader; a killed worker
    raises as the DataLoader raises), its length and its attributes are the DataLoader's. What no part of this can
    see: memory another process reaches without pickling or forking (a file descriptor taken with
    ``untyped_storage()._share_fd_cpu_()`` and sent by hand, a raw ``data_ptr()``).

    Args:
        loader: an iterable of batches (a DataLoader with ``num_workers > 0`` and one of tensorops' collates).
        image_key: accepted for compatibility; every block in a batch is released, wherever it is.

    Example:
        >>> from torch.utils.data import DataLoader
        >>> from tensorops.data import RecyclingLoader, ResizedCropMirrorNormalizeCollate
        >>> ds = [(torch.randint(0, 256, (3, 300, 400), dtype=torch.uint8), 0) for _ in range(8)]
        >>> collate = ResizedCropMirrorNormalizeCollate(224, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        >>> loader = RecyclingLoader(DataLoader(ds, batch_size=4, collate_fn=collate))
        >>> [tuple(images.shape) for images, labels in loader]
        [(4, 3, 224, 224), (4, 3, 224, 224)]
    """

    def __init__(self, loader: Any, *, image_key: Any = 0) -> None:
        self.loader, self.image_key = loader, image_key

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:  # the DataLoader's attributes (dataset, batch_size, ...)
        if name == "loader":
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __iter__(self) -> "_Sweeping":
        _shared_batches.sweep()
        return _Sweeping(iter(self.loader))


class _Sweeping:
    """The wrapped loader's iterator, with a release check before every batch and at the end; everything it raises
    passes through unchanged and it goes on after an exception exactly as the wrapped iterator does."""

    def __init__(self, it: Iterator[Any]) -> None:
        self._it = it

    def __iter__(self) -> "_Sweeping":
        return self

    def __next__(self) -> Any:
        _shared_batches.sweep()
        try:
            return next(self._it)
        except StopIteration:
            _shared_batches.sweep()
            raise

    def __len__(self) -> int:
        return len(self._it)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:  # the DataLoader iterator's attributes
        if name == "_it":
            raise AttributeError(name)
        return getattr(self._it, name)

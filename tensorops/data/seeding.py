"""Random streams for the collates: one per DataLoader worker and epoch, repeatable from a seed.

A collate given ``generator=`` draws, in the main process (``num_workers=0``), from that generator itself: it
advances batch after batch and epoch after epoch. In a DataLoader worker it draws from a generator of its own,
seeded from ``generator.initial_seed()`` and the worker's seed (``get_worker_info().seed``: the DataLoader's base
seed plus the worker id). DataLoader draws a new base seed for every epoch's iterator, so non-persistent workers,
forked anew each epoch, get new streams each epoch; persistent workers keep theirs, which go on advancing. Either
way a run repeats when the DataLoader's own seed does (``torch.manual_seed`` before building it, or
``DataLoader(generator=...)``), exactly as torch's per-worker seeding does.
"""
from __future__ import annotations

import hashlib
from typing import Any, Optional, Tuple

import torch
from torch.utils.data import get_worker_info

__all__ = ["stream_seed"]


def stream_seed(*parts: Any) -> int:
    """A 63-bit seed from ``parts`` (ints, strings), the same in every process (Python's ``hash()`` is salted)."""
    text = "\x00".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") & (2**63 - 1)


class Seeded:
    """What the collates share: their ``size``, ``mirror_prob`` and ``generator`` checks, and :meth:`_rng`."""

    generator: Optional[torch.Generator]
    _worker_generator: Optional[torch.Generator] = None
    _worker_key: Optional[Tuple[int, int]] = None

    def _rng(self) -> Optional[torch.Generator]:
        """The generator to draw from here: None (torch's global RNG, which DataLoader seeds per worker), the
        collate's own in the main process, or this worker's for this epoch (see the module's docstring)."""
        if self.generator is None:
            return None
        info = get_worker_info()
        if info is None:
            return self.generator
        key = (info.id, info.seed)
        if self._worker_generator is None or self._worker_key != key:
            self._worker_generator = torch.Generator().manual_seed(
                stream_seed("worker", self.generator.initial_seed(), info.seed))
            self._worker_key = key
        return self._worker_generator

    def _common(self, where_: str, size: Any, mirror_prob: Any, generator: Any) -> None:
        """Checks and sets what every collate takes: ``size``, ``mirror_prob`` and ``generator``."""
        if isinstance(size, int) and not isinstance(size, bool):
            size = (size, size)
        if not (isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(v, int) and v > 0 for v in size)):
            raise ValueError(f"{where_}size must be a positive int or (h, w), got {size!r}")
        if not 0.0 <= float(mirror_prob) <= 1.0:
            raise ValueError(f"{where_}mirror_prob must be in [0, 1], got {mirror_prob!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"{where_}generator must be a torch.Generator, got {generator!r}")
        self.size = (int(size[0]), int(size[1]))
        self.mirror_prob = float(mirror_prob)
        self.generator = generator

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_worker_generator", None)  # a worker's stream is its own (spawned workers start afresh)
        state.pop("_worker_key", None)
        return state

"""Batches a DataLoader worker writes straight into shared memory, and the recycling of that memory.

A batch a worker returns crosses to the main process in shared memory. Pickling a private tensor copies it there;
``default_collate`` avoids the copy by stacking into fresh shared memory, and so do the collates here
(:func:`worker_batch`). Fresh shared memory still costs its page faults (the kernel zero-fills every page on first
touch: about 0.3 ms/image for float32 176 x 176 batches on the 2-core build machine, a quarter of the collate's
whole cost), in the worker, for every batch.

Recycling removes them: each worker keeps the shared blocks it made (a few per process, :data:`MAX_BLOCKS`) and
writes a later batch into one whose previous batch the main process has let go of. A block carries a 64-byte
trailer after the batch's bytes: a magic number and a state, HELD from the moment the worker takes it, FREE once
the main process releases it (:func:`release`). The main process releases a batch only when nothing there can
read it any more: :class:`tensorops.data.RecyclingLoader` releases batch k when batch k + 2 is requested (by then
the loop variables hold batch k + 1) and only if no other Python reference to its tensor and no other tensor on
its memory (a view, a slice kept in a list) is left; a batch someone still holds is never released, and the worker
makes a new block instead (beyond MAX_BLOCKS in use, fresh memory as before). Without RecyclingLoader nothing is
released and every batch gets fresh memory, as with ``default_collate``: a worker that sees none of its first
PROBE blocks come back stops keeping blocks (nothing stays pinned in its memory).
"""
from __future__ import annotations

import sys
from typing import Any, List, Optional, Tuple

import torch
from torch.utils.data import get_worker_info

__all__ = ["worker_batch", "shared", "release", "holders", "is_block", "times_written", "MAX_BLOCKS"]

MAGIC = 0x306F7370736E6574  # "tensops0" as bytes, little-endian
FREE, HELD = 0, 1
TRAILER = 64  # bytes: int64 [magic, state, times written, 0...]
MAX_BLOCKS = 8  # per worker process: in flight (prefetch_factor) + held by the consumer, with room to spare

_blocks: List[torch.UntypedStorage] = []  # this worker's blocks (empty in the main process)
# whether this worker's batches come back: None until a block is seen released or PROBE batches go by without one
# (then False: no RecyclingLoader in the main process, and the worker keeps no blocks pinned in memory)
_recycled: Optional[bool] = None
_taken = 0
PROBE = 2 * MAX_BLOCKS


def _trailer(storage: torch.UntypedStorage) -> Optional[torch.Tensor]:
    """The int64 view of a block's trailer, or None for memory that is not a block."""
    n = storage.nbytes()
    if n < TRAILER or n % 8:
        return None
    t = torch.empty(0, dtype=torch.int64).set_(storage, (n - TRAILER) // 8, (TRAILER // 8,), (1,))
    return t if int(t[0]) == MAGIC else None


def is_block(batch: torch.Tensor) -> bool:
    """Whether ``batch``'s memory is a worker's block (its trailer's magic number)."""
    return _trailer(batch.untyped_storage()) is not None


def times_written(batch: torch.Tensor) -> int:
    """How many batches a worker has written into ``batch``'s block so far (1: fresh; 0: not a block)."""
    trailer = _trailer(batch.untyped_storage())
    return 0 if trailer is None else int(trailer[2])


def worker_batch(shape: Tuple[int, ...], dtype: torch.dtype, memory_format: torch.memory_format
                 ) -> Optional[torch.Tensor]:
    """In a DataLoader worker: an empty batch in shared memory (the layout ``memory_format`` gives) for the last
    op to write into: one of this worker's blocks that the main process released, a new block, or (MAX_BLOCKS
    in use) fresh shared memory. None in the main process (its batches stay private)."""
    if get_worker_info() is None or 0 in shape:
        return None
    global _recycled, _taken
    like = torch.empty(shape, dtype=dtype, memory_format=memory_format)  # its strides (no pages touched)
    nbytes = like.numel() * like.element_size()
    size = -(-nbytes // 64) * 64 + TRAILER  # the batch, padded to 64 bytes, then the trailer
    storage = None
    _taken += 1
    if _recycled is None and _taken > PROBE:  # nothing came back: no recycler; pin nothing
        _recycled = False
        _blocks.clear()
    for block in _blocks:
        if block.nbytes() == size:
            trailer = _trailer(block)
            if trailer is not None and int(trailer[1]) == FREE:
                trailer[1] = HELD
                trailer[2] += 1
                storage = block
                _recycled = True
                break
    if storage is None:
        storage = torch.UntypedStorage._new_shared(size)
        trailer = torch.empty(0, dtype=torch.int64).set_(storage, (size - TRAILER) // 8, (TRAILER // 8,), (1,))
        trailer.zero_()
        if _recycled is not False and len(_blocks) < MAX_BLOCKS:
            trailer[0], trailer[1], trailer[2] = MAGIC, HELD, 1
            _blocks.append(storage)
        # else: kept by no one here, not a block: never reused, freed with the batch
    return torch.empty(0, dtype=dtype).set_(storage, 0, like.shape, like.stride())


def layout_of(batch: torch.Tensor) -> torch.memory_format:
    """channels_last for a 4-d batch laid out so (and not also contiguous), else contiguous_format."""
    if batch.dim() == 4 and batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        return torch.channels_last
    return torch.contiguous_format


def shared(batch: torch.Tensor) -> torch.Tensor:
    """In a worker, ``batch`` in shared memory for the trip to the main process: as it is when it already is there
    (an op wrote it into :func:`worker_batch`'s memory), else copied into a block (the copy pickling would make
    anyway, into memory whose pages are already there once the block is recycled). Elsewhere ``batch``."""
    if get_worker_info() is None or batch.is_shared() or batch.numel() == 0 or batch.device.type != "cpu":
        return batch
    out = worker_batch(tuple(batch.shape), batch.dtype, layout_of(batch))
    if out is None:
        return batch
    if out.stride() != batch.stride():  # a layout the blocks do not make (an expanded or strided batch)
        release(out)  # never left this worker: back to the pool
        return batch
    return out.copy_(batch)


def holders(batch: torch.Tensor) -> Tuple[int, int]:
    """(Python references to ``batch``, counting this call's; tensors on its memory, counting this call's views):
    what :class:`tensorops.data.RecyclingLoader` compares with the same counts of a batch it alone holds. (-1,
    -1) where this torch cannot count the tensors on a storage: then nothing is ever released."""
    use_count = getattr(torch._C, "_storage_Use_Count", None)
    if use_count is None:
        return -1, -1
    storage = batch.untyped_storage()
    return sys.getrefcount(batch), use_count(storage._cdata)


def release(batch: torch.Tensor) -> bool:
    """Main process: marks ``batch``'s block FREE, for its worker to write a later batch into. The caller must
    know that nothing in this process can read the batch any more (RecyclingLoader's reference counts). False
    where ``batch`` is not a worker's block or is not HELD."""
    trailer = _trailer(batch.untyped_storage())
    if trailer is None or int(trailer[1]) != HELD:
        return False
    trailer[1] = FREE
    return True

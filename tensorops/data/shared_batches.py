"""Batches a DataLoader worker writes straight into shared memory, and the safe reuse of that memory.

A batch a worker returns crosses to the main process in shared memory. Pickling a private tensor copies it there;
``default_collate`` avoids the copy by stacking into fresh shared memory, and so do the collates here
(:func:`worker_batch`). Fresh shared memory still costs its page faults (the kernel zero-fills every page on first
touch: about 0.3 ms/image for float32 176 x 176 batches on the 2-core build machine, a quarter of the collate's
whole cost), in the worker, for every batch.

Reuse removes them. Each worker keeps a few shared blocks (:data:`MAX_BLOCKS`: a file descriptor and one mapping
each, whose pages are faulted in once) and writes a later batch into a block only when **no process can read the
block's previous batch any more**, decided by the allocator's own bookkeeping on both sides, as
``torch.multiprocessing``'s shared-memory cache decides, never by counting Python references:

* **in the worker**: each batch is handed out on a storage of its own over the block's mapping
  (``torch.frombuffer``), and the block is free again only when that storage is gone
  (``StorageWeakRef(...).expired()``): no tensor, view, storage object, cache or running statistic of the worker
  reaches it. Such a storage is pickled as the block's file, as torch pickles a shared storage;
* **everywhere the block went**: a block leaves a process only by being pickled (the DataLoader's result queue,
  any ``torch.multiprocessing`` queue or pipe: ``ForkingPickler``). Pickling one of a worker's blocks counts one
  *send* in the block's trailer (a page after the batch's bytes) and makes its receiver register it; a receiver
  counts one *release* once the storage it rebuilt is gone (its ``StorageWeakRef`` expired, checked whenever it
  receives another block and on every step of :class:`tensorops.data.RecyclingLoader`). The worker reuses the block
  only when releases equal sends. A freed storage cannot be read by anything in that process: not a view at any
  offset, a storage object, a numpy array, a DLPack capsule, an autograd graph or a saved-tensors hook.

What a receiver hands on is never released: a block it pickles again (a queue to a third process,
``ForkingPickler`` bytes kept for later) and every block it holds when it forks (a ``multiprocessing.Process``
inherits its memory) is dropped from its register, so its releases never catch up with the sends and the worker
retires the block (the block is then freed when everyone lets go, as ordinary shared memory). A block that does
not come back, for whatever reason (a consumer that keeps every batch, batches drained at a ``break``), costs
only speed: when all MAX_BLOCKS are out the worker retires the least recently used and makes a new one.
What no part of this can see: memory a process reaches without pickling or forking (a file descriptor taken with
``untyped_storage()._share_fd_cpu_()`` and sent by hand, a raw ``data_ptr()``).
``TENSOROPS_REUSE_SHARED_MEMORY=0`` in the environment turns reuse off (every batch in fresh shared memory, as
``default_collate`` does). Reuse needs torch's ``file_descriptor`` sharing strategy (Linux's default); with
``file_system`` every batch gets fresh memory.

A block's layout: the batch's bytes from offset 0, padded to the allocation granularity, then one granule whose
first 64 bytes are the trailer: int64 ``[magic, sends, releases, times written, 0...]``.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading
import warnings
import multiprocessing.reduction
from multiprocessing.reduction import ForkingPickler
from typing import Any, List, Optional, Tuple

import torch
import torch.multiprocessing as _torch_mp  # noqa: F401  (registers torch's reductions, which ours wrap)
from torch.multiprocessing import reductions as _reductions
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.data import get_worker_info

__all__ = ["worker_batch", "shared", "is_block", "times_written", "sweep", "reuse_enabled", "MAX_BLOCKS"]

MAGIC = 0x316F7370736E6574  # "tensops1" as bytes, little-endian
PAGE = mmap.ALLOCATIONGRANULARITY  # the trailer's own mapping starts on a granule
TRAILER = 64  # bytes used of the trailer's granule
SENDS, RELEASES, WRITTEN = 1, 2, 3  # trailer fields after the magic
MAX_BLOCKS = 6  # per worker: in flight (prefetch_factor) + held by the consumer until the next batch arrives
MAX_RECEIVED = 256  # blocks a receiver waits on at most (the oldest beyond are dropped: never released)
_ENV = "TENSOROPS_REUSE_SHARED_MEMORY"
_MADV_POPULATE_WRITE = 23  # Linux 5.14+: a new mapping's page tables filled in one call instead of per fault


def reuse_enabled() -> bool:
    """Whether workers reuse their blocks: torch's ``file_descriptor`` sharing strategy (Linux's default) and
    ``TENSOROPS_REUSE_SHARED_MEMORY`` not ``0`` (read when a worker takes memory for a batch)."""
    return (os.environ.get(_ENV, "1") != "0" and sys.platform.startswith("linux")
            and _torch_mp.get_sharing_strategy() == "file_descriptor")


def _fields(buffer: Any, offset: int = 0) -> Any:
    """The trailer's int64 fields in ``buffer`` (a writable mapping) at ``offset``."""
    return (ctypes.c_int64 * (TRAILER // 8)).from_buffer(buffer, offset)


def _storage_trailer(storage: torch.UntypedStorage) -> Optional[torch.Tensor]:
    """The int64 view of a block's trailer through ``storage``, or None for memory that is not a block."""
    n = storage.nbytes()
    if n < 2 * PAGE or n % PAGE or storage.device.type != "cpu":
        return None
    t = torch.empty(0, dtype=torch.int64).set_(storage, (n - PAGE) // 8, (TRAILER // 8,), (1,))
    return t if int(t[0]) == MAGIC else None


def is_block(batch: torch.Tensor) -> bool:
    """Whether ``batch``'s memory is a worker's block (its trailer's magic number)."""
    return _storage_trailer(batch.untyped_storage()) is not None


def times_written(batch: torch.Tensor) -> int:
    """How many batches a worker has written into ``batch``'s block so far (1: fresh; 0: not a block)."""
    trailer = _storage_trailer(batch.untyped_storage())
    return 0 if trailer is None else int(trailer[WRITTEN])


class _Trailer:
    """A block's trailer through a mapping of its own (the trailer's granule only): it outlives every torch
    storage on the block, so a process can count a release after its storage is gone."""

    def __init__(self, fd: int, size: int) -> None:
        self._map = mmap.mmap(fd, PAGE, offset=size - PAGE)
        self.fields = _fields(self._map)

    def close(self) -> None:
        del self.fields
        self._map.close()


class _Block:
    """One of a worker's blocks: its file (a descriptor of our own), the worker's one mapping of it (a Python
    ``mmap``, kept for the block's life: its pages are faulted in once), and a weak reference to the storage the
    last batch was handed out on. That storage is a new one each time (``torch.frombuffer`` over the mapping): when
    it is gone, nothing in this worker reaches the block, whatever held the batch."""

    def __init__(self, size: int) -> None:
        storage = torch.UntypedStorage._new_shared(size)
        self.fd = os.dup(storage._share_fd_cpu_()[0])
        del storage
        self.size = size
        self.map = mmap.mmap(self.fd, size)
        self.fields = _fields(self.map, size - PAGE)
        f = self.fields
        f[0], f[SENDS], f[RELEASES], f[WRITTEN] = MAGIC, 0, 0, 0
        self.ref: Optional[StorageWeakRef] = None
        self.address = 0  # where the mapping is (a storage on the block starts there)
        self.used = 0  # the pool's clock at the last take

    def free(self) -> bool:
        """Nothing here reaches the block's memory, and every process it was sent to has let it go."""
        f = self.fields
        return (self.ref is None or self.ref.expired()) and f[RELEASES] == f[SENDS]

    def take(self, clock: int) -> torch.UntypedStorage:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            storage = torch.frombuffer(self.map, dtype=torch.uint8).untyped_storage()
        if self.ref is None:  # the first batch: the page tables filled in one call instead of one fault per page
            _populate(storage.data_ptr(), self.size - PAGE)
        self.ref = StorageWeakRef(storage)
        self.address = storage.data_ptr()
        self.used = clock
        self.fields[WRITTEN] += 1
        return storage

    def close(self) -> None:
        """Stops tracking the block: its memory is freed when the last storage on it is (the mapping is closed
        by the garbage collector then), and on the receivers' side when theirs are."""
        del self.fields  # (the mapping's export released)
        os.close(self.fd)


class _Pool:
    """A worker's blocks (this process's, never inherited by a child)."""

    def __init__(self) -> None:
        self.blocks: List[_Block] = []
        self.clock = 0
        self.pid = os.getpid()

    def take(self, size: int) -> torch.UntypedStorage:
        self.clock += 1
        for block in self.blocks:
            if block.size == size and block.free():
                return block.take(self.clock)
        if len(self.blocks) >= MAX_BLOCKS:  # retire the least recently used: freed once nobody holds it
            oldest = min(self.blocks, key=lambda b: b.used)
            self.blocks.remove(oldest)
            oldest.close()
        block = _Block(size)
        self.blocks.append(block)
        return block.take(self.clock)

    def find(self, storage: torch.UntypedStorage) -> Optional[_Block]:
        impl = storage._cdata  # the storage itself (its StorageImpl), not only its address
        for block in self.blocks:
            if block.ref is not None and block.ref.cdata == impl and not block.ref.expired():
                # (still on the mapping: share_memory_() would have moved it to other memory)
                return block if storage.data_ptr() == block.address else None
        return None

    def close(self) -> None:
        for block in self.blocks:
            block.close()
        self.blocks.clear()


_pool: Optional[_Pool] = None


def _own_block(storage: torch.UntypedStorage) -> Optional[_Block]:
    """The block of this worker's pool that ``storage`` is the current storage of, if any."""
    if _pool is None or _pool.pid != os.getpid():
        return None
    return _pool.find(storage)


def _worker_pool() -> _Pool:
    global _pool
    if _pool is None or _pool.pid != os.getpid():
        _pool = _Pool()
    return _pool


_libc: Any = None


def _populate(address: int, nbytes: int) -> None:
    """Fill a new mapping's page tables for writing in one system call where Linux offers it (a no-op
    elsewhere): the pages exist already, only the faults would remain."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        except (OSError, AttributeError):
            _libc = False
    if _libc and nbytes > 0:
        _libc.madvise(address, nbytes, _MADV_POPULATE_WRITE)  # EINVAL on older kernels: the faults then happen


def worker_batch(shape: Tuple[int, ...], dtype: torch.dtype, memory_format: torch.memory_format
                 ) -> Optional[torch.Tensor]:
    """In a DataLoader worker: an empty batch in shared memory (the layout ``memory_format`` gives) for the last
    op to write into: one of this worker's blocks that no process can read any more, or a new block; fresh shared
    memory where reuse is off (:func:`reuse_enabled`). None in the main process (its batches stay private) and for
    an empty shape."""
    if get_worker_info() is None or 0 in shape:
        return None
    like = torch.empty(shape, dtype=dtype, memory_format=memory_format)  # its strides (no pages touched)
    nbytes = like.numel() * like.element_size()
    if reuse_enabled():
        size = -(-nbytes // PAGE) * PAGE + PAGE  # the batch, padded to a granule, then the trailer's granule
        storage = _worker_pool().take(size)
    else:  # fresh shared memory, as default_collate's (its pages mapped in one call)
        storage = torch.UntypedStorage._new_shared(nbytes)
        _populate(storage.data_ptr(), nbytes)
    return torch.empty(0, dtype=dtype).set_(storage, 0, like.shape, like.stride())


def layout_of(batch: torch.Tensor) -> torch.memory_format:
    """channels_last for a 4-d batch laid out so (and not also contiguous), else contiguous_format."""
    if batch.dim() == 4 and batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        return torch.channels_last
    return torch.contiguous_format


def shared(batch: torch.Tensor) -> torch.Tensor:
    """In a worker, ``batch`` in shared memory for the trip to the main process: as it is when it already is there
    (an op wrote it into :func:`worker_batch`'s memory, or a transform returned a view of it), else copied into a
    block (the copy pickling would make anyway, into memory whose pages are already there once a block is
    reused). Elsewhere ``batch``."""
    if get_worker_info() is None or batch.numel() == 0 or batch.device.type != "cpu" or batch.is_shared():
        return batch
    if _own_block(batch.untyped_storage()) is not None:
        return batch
    out = worker_batch(tuple(batch.shape), batch.dtype, layout_of(batch))
    if out is None or out.stride() != batch.stride():  # a layout the blocks do not make (expanded, strided)
        return batch  # (a block taken here never left this worker: free again once `out` is gone)
    return out.copy_(batch)


# ---- the receivers' side: every block a process receives, until its storage there is gone -----------------------
class _Received:
    """A block this process rebuilt from a pickle: a weak reference to its storage, and its trailer."""

    __slots__ = ("ref", "trailer")

    def __init__(self, storage: torch.UntypedStorage) -> None:
        self.ref = StorageWeakRef(storage)
        self.trailer = _Trailer(storage._share_fd_cpu_()[0], storage.nbytes())


_received: List[_Received] = []
_received_pid = os.getpid()
_lock = threading.Lock()  # the DataLoader's pin-memory thread receives too


def _drop(entries: List[_Received], release: bool) -> None:
    for entry in entries:
        if release:
            entry.trailer.fields[RELEASES] += 1  # only receivers write this field
        entry.trailer.close()


def sweep() -> int:
    """Counts a release for every block this process received whose storage here is gone, and forgets them;
    returns how many. Runs whenever this process receives a block and on every step of
    :class:`~tensorops.data.RecyclingLoader`; call it to hand blocks back sooner (it is cheap)."""
    with _lock:
        if os.getpid() != _received_pid:
            return 0
        gone: List[_Received] = []
        live: List[_Received] = []
        for e in _received:
            (gone if e.ref.expired() else live).append(e)
        _received[:] = live
        _drop(gone, True)
        return len(gone)


def _forget_all() -> None:
    """Before this process forks: the child inherits every block it maps, so none of them is ever released."""
    sweep()
    with _lock:
        _drop(_received, False)
        _received.clear()


def _in_child() -> None:
    global _received_pid, _lock
    _lock = threading.Lock()  # (another thread may have held the parent's)
    _received_pid = os.getpid()
    _received.clear()  # the parent's trailer mappings stay mapped here, unused: nothing in the child releases


def _rebuild_block(rebuild: Any, args: Tuple[Any, ...]) -> Any:
    """Unpickling a worker's block: torch's own rebuild (the same storage as without tensorops), registered to be
    released once it is gone here."""
    storage = rebuild(*args)
    sweep()
    if os.getpid() == _received_pid and isinstance(storage, torch.UntypedStorage) \
            and _storage_trailer(storage) is not None:
        entry = _Received(storage)
        with _lock:
            _received.append(entry)
            old = _received[:-MAX_RECEIVED] if len(_received) > MAX_RECEIVED else []
            del _received[:len(old)]
        _drop(old, False)
    return storage


_torch_reduce_storage = _reductions.reduce_storage


def _reduce_storage(storage: Any) -> Any:
    """torch's reduction of a CPU storage for ``ForkingPickler``, which also counts a worker's block leaving this
    process (a send) and drops a received block being handed on from the register (never released)."""
    block = _own_block(storage) if storage.device.type == "cpu" else None
    if block is not None:  # the block's own file, as torch sends a shared storage's
        block.fields[SENDS] += 1
        args = (type(storage), multiprocessing.reduction.DupFd(block.fd), block.size)
        return _rebuild_block, (_reductions.rebuild_storage_fd, args)
    rebuild, args = _torch_reduce_storage(storage)
    if rebuild is not _reductions.rebuild_storage_fd:
        return rebuild, args
    if _received:
        with _lock:
            handed = [e for e in _received if e.ref.cdata == storage._cdata]
            for e in handed:
                _received.remove(e)
        _drop(handed, False)
    return rebuild, args


for _t in torch._storage_classes:
    if _t.__name__ == "UntypedStorage":
        ForkingPickler.register(_t, _reduce_storage)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_forget_all, after_in_child=_in_child)

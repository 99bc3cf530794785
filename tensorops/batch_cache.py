"""The cache of large CPU outputs (csrc/include/tensorops/batch_cache.h), seen from Python: ``empty_cache``."""
from __future__ import annotations

from tensorops import _extension

__all__ = ["empty_cache"]


def empty_cache() -> None:
    """Gives every block that tensorops' cache of large CPU outputs holds back to the operating system, as
    ``torch.cuda.empty_cache()`` does for the CUDA caching allocator.

    CPU batches of 4 MB or more (the outputs of :func:`tensorops.normalize`, :func:`tensorops.crop_mirror_normalize`,
    :func:`tensorops.resized_crop_mirror_normalize` and the decode op) come from a small per-process cache of freed
    blocks, so that the next batch of the same size reuses their pages instead of page-faulting fresh ones. The
    cache holds at most 4 blocks and 256 MB, evicts its oldest blocks when a newer one does not fit, and gives back
    a block that 16 requests in a row passed over; a forked DataLoader worker starts with an empty cache. Tensors
    that are alive are never touched: only blocks whose tensors died.

    Call it when a process stops making batches but lives on (after training, before a long evaluation that uses
    other sizes, before forking processes that do not need the cache), or to measure memory without it. It costs
    the next batch of each size its page faults (a few ms per 19 MB batch). Without the compiled extension there
    is no cache and it does nothing.

    Example:
        >>> batch = tensorops.normalize(torch.zeros(32, 3, 224, 224, dtype=torch.uint8), [0.5] * 3, [0.5] * 3)
        >>> del batch                # its 19 MB block goes to the cache, for the next batch of that size
        >>> tensorops.empty_cache()  # and now back to the system
    """
    if _extension._C is not None:
        _extension._C.batch_cache_release()

"""tensorops.data.shared_batches and RecyclingLoader: a worker's batches written into its shared blocks, handed
back by the main process only when nothing there can read them, never overwritten while held."""
from __future__ import annotations

import sys

import pytest
import torch
from torch.utils.data import DataLoader

from tensorops.data import RecyclingLoader, ResizedCropMirrorNormalizeCollate
from tensorops.data import shared_batches as sb

from conftest import requires_compiled

pytestmark = requires_compiled

# RecyclingLoader counts the tensors on a batch's memory with torch._C._storage_Use_Count (registered with the CUDA
# module in some torch builds); without it nothing is ever released, which these tests would see as no reuse
counts_storage_users = pytest.mark.skipif(not hasattr(torch._C, "_storage_Use_Count"),
                                          reason="this torch has no torch._C._storage_Use_Count: nothing is recycled")

MEAN, STD = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]


def _dataset(n=48):
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 256, (3, 50 + k % 7, 60), dtype=torch.uint8, generator=g), k) for k in range(n)]


def _loader(workers=2, persistent=True, **kw):
    # evaluation crops and an augment without draws: every run gives the same batches
    collate = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, train=False, augment=lambda b: 255 - b, **kw)
    return DataLoader(_dataset(), batch_size=4, collate_fn=collate, num_workers=workers,
                      persistent_workers=persistent and workers > 0)


@pytest.fixture
def worker(monkeypatch):
    """This process as a DataLoader worker, as far as shared_batches can tell, with an empty pool."""
    monkeypatch.setattr(sb, "get_worker_info", lambda: object())
    monkeypatch.setattr(sb, "_blocks", [])
    monkeypatch.setattr(sb, "_recycled", None)
    monkeypatch.setattr(sb, "_taken", 0)


@pytest.fixture(scope="module")
def plain():
    return [x.clone() for x, _ in _loader(workers=0)]


def test_the_main_process_keeps_its_batches_private():
    assert sb.worker_batch((2, 3, 4, 4), torch.float32, torch.contiguous_format) is None
    x, _ = next(iter(_loader(workers=0)))
    assert not x.is_shared() and not sb.is_block(x)


@counts_storage_users
def test_recycled_batches_are_the_plain_batches_and_blocks_are_reused(plain):
    loader = RecyclingLoader(_loader())
    written = []
    for _ in range(2):
        for k, (x, _) in enumerate(loader):
            assert torch.equal(x, plain[k]), f"batch {k}"
            written.append(sb.times_written(x))
    assert min(written) >= 1, "a batch did not come from a worker's block"
    assert max(written) > 1, "no block was written twice: nothing was recycled"


def test_batches_the_consumer_keeps_are_never_overwritten(plain):
    kept = [x for x, _ in RecyclingLoader(_loader())]  # every batch held to the end
    assert [sb.times_written(x) for x in kept] == [1] * len(kept)
    assert all(torch.equal(a, b) for a, b in zip(kept, plain))


def test_a_kept_view_or_container_keeps_its_batch(plain):
    loader = RecyclingLoader(_loader())
    view = tuples = None
    for k, batch in enumerate(loader):
        if k == 0:
            view = batch[0][1:3]  # a slice of batch 0's images: another tensor on its memory
        if k == 1:
            tuples = batch  # batch 1's tuple itself
    assert torch.equal(view, plain[0][1:3]) and sb.times_written(view) == 1
    assert torch.equal(tuples[0], plain[1]) and sb.times_written(tuples[0]) == 1


@counts_storage_users
def test_holders_count_references_and_views_and_release_frees_a_held_block(worker):
    x = sb.worker_batch((2, 3, 5, 7), torch.float32, torch.channels_last)
    assert sb.is_block(x) and x.is_contiguous(memory_format=torch.channels_last) and sb.times_written(x) == 1
    refs, uses = sb.holders(x)
    other = x  # a second reference
    assert sb.holders(x) == (refs + 1, uses)
    del other
    view = x[0]  # another tensor on its memory (which may also keep x's Python object alive: its _base)
    assert sb.holders(x)[1] == uses + 1
    del view
    assert sb.holders(x) == (refs, uses)
    assert sb.release(x) and not sb.release(x)  # released once; then FREE, not HELD
    y = sb.worker_batch((2, 3, 5, 7), torch.float32, torch.channels_last)
    assert y.data_ptr() == x.data_ptr() and sb.times_written(y) == 2  # the released block, written again
    z = sb.worker_batch((2, 3, 5, 7), torch.float32, torch.channels_last)
    assert z.data_ptr() != y.data_ptr()  # y is HELD: a new block
    assert not sb.release(torch.zeros(4))  # not a block


@counts_storage_users
@pytest.mark.parametrize("form", ["tuple", "list", "dict", "tensor"])
def test_recycling_loader_releases_only_what_nobody_else_holds(worker, form):
    """The loader's reference counts against its calibrated baseline, for every batch form: a batch released
    once nothing holds it, kept while a name, a list or a view holds it."""
    made = []

    def batches():
        for _ in range(6):
            x = sb.worker_batch((2, 3, 4, 4), torch.float32, torch.contiguous_format)
            made.append(x.data_ptr())
            yield {"tuple": lambda: (x, 0), "list": lambda: [x, 0], "dict": lambda: {0: x, 1: 0},
                   "tensor": lambda: x}[form]()
            del x

    held = []
    for k, batch in enumerate(RecyclingLoader(batches())):
        if k == 1:
            held.append(batch)  # batch 1 kept by the consumer
        if k == 2:
            keep_view = (batch if form == "tensor" else batch[0])[0]  # a view of batch 2 kept
    # batch 0 was released (at batch 2's request) and its block written again; batches 1 and 2 never
    assert made.count(made[0]) > 1
    assert made.count(made[1]) == 1 and made.count(made[2]) == 1
    images = held[0] if form == "tensor" else held[0][0]
    assert sb.times_written(images) == 1 and sb.times_written(keep_view) == 1


def test_blocks_are_capped_per_worker(worker):
    held = [sb.worker_batch((1, 3, 4, 4), torch.float32, torch.contiguous_format) for _ in range(sb.MAX_BLOCKS + 2)]
    assert len(sb._blocks) == sb.MAX_BLOCKS
    assert [sb.is_block(t) for t in held] == [True] * sb.MAX_BLOCKS + [False, False]  # beyond: fresh memory
    assert all(t.is_shared() for t in held)


def test_batches_that_are_not_blocks_pass_through(plain):
    got = [x for x, _ in RecyclingLoader(_loader(workers=0))]
    assert all(torch.equal(a, b) for a, b in zip(got, plain))
    assert len(RecyclingLoader(_loader(workers=0))) == len(plain)
    bare = [torch.ones(2), torch.zeros(3)]
    assert [t.sum().item() for t in RecyclingLoader(bare)] == [2.0, 0.0]


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_workers_that_are_not_persistent_start_afresh(plain):
    loader = RecyclingLoader(_loader(persistent=False))
    for _ in range(2):
        assert all(torch.equal(x, plain[k]) for k, (x, _) in enumerate(loader))


def test_a_worker_whose_blocks_never_come_back_stops_keeping_them(worker):
    """Without RecyclingLoader nothing is released: after PROBE batches the worker keeps no block pinned."""
    batches = [sb.worker_batch((1, 3, 4, 4), torch.float32, torch.contiguous_format) for _ in range(sb.PROBE)]
    assert sum(sb.is_block(b) for b in batches) == sb.MAX_BLOCKS and len(sb._blocks) == sb.MAX_BLOCKS
    late = sb.worker_batch((1, 3, 4, 4), torch.float32, torch.contiguous_format)
    assert sb._blocks == [] and not sb.is_block(late) and late.is_shared()


def test_shared_copies_a_private_batch_once_into_a_block(worker):
    x = torch.randn(2, 3, 5, 6).contiguous(memory_format=torch.channels_last)
    y = sb.shared(x)
    assert y.is_shared() and sb.is_block(y) and torch.equal(y, x) and y.stride() == x.stride()
    assert sb.shared(y) is y  # already shared: as it is


@pytest.mark.parametrize("collate_kind", ["fused", "crop", "after_normalize_copying"])
@counts_storage_users
def test_every_collate_path_sends_blocks_that_come_back(collate_kind, plain):
    """The fused pass (no augment), the crop collate and a non-inplace after_normalize all end in a block that
    RecyclingLoader hands back (the batches are the plain ones, and blocks are written again)."""
    from tensorops.data import CropMirrorNormalizeCollate

    if collate_kind == "fused":
        collate = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, train=False)
    elif collate_kind == "crop":
        collate = CropMirrorNormalizeCollate(24, MEAN, STD, train=False)
    else:
        collate = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, train=False, augment=lambda b: 255 - b,
                                                    after_normalize=lambda b: b * 1.0)  # a new tensor
    want = [x.clone() for x, _ in DataLoader(_dataset(), batch_size=4, collate_fn=collate)]
    loader = RecyclingLoader(DataLoader(_dataset(), batch_size=4, collate_fn=collate, num_workers=2,
                                        persistent_workers=True))
    written = []
    for _ in range(2):
        for k, (x, _) in enumerate(loader):
            assert torch.equal(x, want[k])
            written.append(sb.times_written(x))
    assert min(written) >= 1 and max(written) > 1

"""The cache of large CPU outputs (csrc/include/tensorops/batch_cache.h): a batch of the size of one that died
takes that one's pages back instead of page-faulting fresh ones, a live batch is never handed out twice, the cache
stays within its bounds, a forked DataLoader worker never writes its parent's blocks, and the tensors behave as
torch's own (resizable, shareable, picklable)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading

import pytest
import torch

import tensorops
from conftest import requires_compiled

pytestmark = requires_compiled

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BIG = (8, 3, 224, 224)  # 4.8 MB as float32: over the cache's 4 MB
MIN_BYTES, MAX_BLOCKS, MAX_BYTES = 4 << 20, 4, 256 << 20  # batch_cache.h


def _stats():
    return tensorops._extension._C.batch_cache_stats()


def _u8(shape, seed):
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def _expected(x):
    m, s = torch.tensor(MEAN).view(3, 1, 1), torch.tensor(STD).view(3, 1, 1)
    return (x.float() / 255 - m) / s


def test_a_batch_takes_back_the_pages_of_one_that_died():
    x = _u8(BIG, 0)
    first = tensorops.normalize(x, MEAN, STD)
    ptr = first.data_ptr()
    del first
    before = _stats()
    second = tensorops.normalize(_u8(BIG, 1), MEAN, STD)
    after = _stats()
    assert after["hits"] == before["hits"] + 1 and second.data_ptr() == ptr
    torch.testing.assert_close(second, _expected(_u8(BIG, 1)))


@pytest.mark.parametrize("op", ["resized_crop_mirror_normalize", "crop_mirror_normalize"])
def test_the_batch_ops_allocate_from_it(op):
    images = [_u8((3, 260, 250), k) for k in range(8)]
    call = {
        "resized_crop_mirror_normalize": lambda: tensorops.resized_crop_mirror_normalize(images, MEAN, STD, size=224),
        "crop_mirror_normalize": lambda: tensorops.crop_mirror_normalize(images, MEAN, STD, size=224),
    }[op]
    fresh = call()
    want = fresh.clone()  # from a fresh block: the reused one must give the same batch
    del fresh
    before = _stats()
    got = call()
    assert _stats()["hits"] == before["hits"] + 1
    torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_a_live_batch_is_never_handed_out_twice():
    xs = [_u8(BIG, k) for k in range(6)]
    outs = [tensorops.normalize(x, MEAN, STD) for x in xs]  # all alive at once
    assert len({o.data_ptr() for o in outs}) == len(outs)
    for x, o in zip(xs, outs):  # none overwritten by a later one
        torch.testing.assert_close(o, _expected(x))


def test_it_stays_within_its_bounds_and_releases():
    outs = [tensorops.normalize(_u8(BIG, k), MEAN, STD) for k in range(MAX_BLOCKS + 3)]
    del outs
    s = _stats()
    assert 1 <= s["cached_blocks"] <= MAX_BLOCKS and s["cached_bytes"] <= MAX_BYTES
    tensorops.empty_cache()
    s = _stats()
    assert s["cached_blocks"] == 0 and s["cached_bytes"] == 0


def test_empty_cache_without_the_extension_does_nothing():
    code = "import tensorops; assert not tensorops.is_compiled(); tensorops.empty_cache(); print('ok')"
    env = {**os.environ, "TENSOROPS_DISABLE_EXTENSION": "1"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]


def test_small_outputs_do_not_use_it():
    shape = (1, 3, 224, 224)  # 0.6 MB
    assert torch.Size(shape).numel() * 4 < MIN_BYTES
    before = _stats()
    out = tensorops.normalize(_u8(shape, 0), MEAN, STD)
    assert _stats()["hits"] == before["hits"] and _stats()["misses"] == before["misses"]
    torch.testing.assert_close(out, _expected(_u8(shape, 0)))


def test_deterministic_fill_goes_where_torch_goes():
    # with torch.use_deterministic_algorithms(True), torch fills fresh memory with NaN: the op allocates as torch does
    before = _stats()
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        out = tensorops.normalize(_u8(BIG, 0), MEAN, STD)
    finally:
        torch.use_deterministic_algorithms(prev)
    assert _stats()["hits"] == before["hits"] and _stats()["misses"] == before["misses"]
    torch.testing.assert_close(out, _expected(_u8(BIG, 0)))


def test_its_tensors_behave_as_torch_tensors():
    out = tensorops.normalize(_u8(BIG, 0), MEAN, STD)
    want = _expected(_u8(BIG, 0))
    assert out.untyped_storage().resizable()
    out.resize_(2 * BIG[0], *BIG[1:])  # grows through the same allocator, keeping the values
    torch.testing.assert_close(out[: BIG[0]], want)
    buf = io.BytesIO()
    torch.save(out[: BIG[0]].clone(), buf)
    buf.seek(0)
    torch.testing.assert_close(torch.load(buf), want)
    out.untyped_storage().resize_(0)  # and shrinks to nothing, as torch's own storages do
    assert out.untyped_storage().nbytes() == 0
    shared = tensorops.normalize(_u8(BIG, 0), MEAN, STD).share_memory_()
    assert shared.is_shared()
    torch.testing.assert_close(shared, want)


def _stats_in_worker(batch):
    before = _stats()
    out = tensorops.normalize(batch[0], MEAN, STD)
    after = _stats()
    return out, torch.tensor([after["hits"] - before["hits"], after["misses"] - before["misses"]])


def test_a_forked_worker_never_reuses_its_parents_blocks():
    parked = tensorops.normalize(_u8(BIG, 0), MEAN, STD)
    del parked  # the parent caches a block of the size the worker asks for
    assert _stats()["cached_blocks"] >= 1
    loader = torch.utils.data.DataLoader([_u8(BIG, 3)], batch_size=None, num_workers=1,
                                         collate_fn=lambda b: _stats_in_worker([b]),
                                         multiprocessing_context="fork")
    (out, (hits, misses)), = list(loader)
    assert hits == 0 and misses == 1  # the parent's block stays the parent's: a fresh one in the child
    torch.testing.assert_close(out, _expected(_u8(BIG, 3)))


def test_threads_allocating_at_once_get_their_own_batches():
    errors = []

    def work(k):
        try:
            for r in range(10):
                x = _u8(BIG, 10 * k + r)
                torch.testing.assert_close(tensorops.normalize(x, MEAN, STD), _expected(x))
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]

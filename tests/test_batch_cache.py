"""The cache of large CPU outputs (csrc/include/tensorops/batch_cache.h): a batch of the size of one that died
takes that one's pages back instead of page-faulting fresh ones, a live batch is never handed out twice, the cache
stays within its bounds by evicting its oldest blocks, gives back blocks nobody asks for and everything on
tensorops.empty_cache() (to the system, not to glibc's heap), a forked DataLoader worker never writes nor keeps its
parent's blocks, and the tensors behave as torch's own (resizable, shareable, picklable, lazily clonable)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import tensorops
from conftest import requires_compiled

pytestmark = requires_compiled

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BIG = (8, 3, 224, 224)  # 4.8 MB as float32: over the cache's 4 MB
MIN_BYTES, MAX_BLOCKS, MAX_BYTES, IDLE_REQUESTS = 4 << 20, 4, 256 << 20, 16  # batch_cache.h
MiB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def test_a_full_cache_evicts_its_oldest_blocks_for_the_newest():
    # two 120 MiB outputs (a large validation batch) fill most of the budget; the training batches of 18.4 MiB that
    # follow must still be reused: the oldest block leaves for the newest (it was the other way round: every
    # training batch missed, and the 240 MiB stayed for the life of the process)
    tensorops.empty_cache()
    huge = torch.zeros(2, 3, 2048, 2560, dtype=torch.uint8)
    first, second = tensorops.normalize(huge, MEAN, STD), tensorops.normalize(huge, MEAN, STD)
    del first, second
    held = _stats()
    assert held["cached_blocks"] == 2 and held["cached_bytes"] == 2 * 120 * MiB
    batch = (32, 3, 224, 224)
    assert 2 * 120 * MiB + torch.Size(batch).numel() * 4 > MAX_BYTES  # the newest does not fit beside both
    before = _stats()
    for k in range(10):
        x = _u8(batch, k)
        out = tensorops.normalize(x, MEAN, STD)
        if k == 9:
            torch.testing.assert_close(out, _expected(x))
        del out
    after = _stats()
    assert after["misses"] - before["misses"] == 1 and after["hits"] - before["hits"] == 9
    assert after["evicted"] - before["evicted"] == 1  # the older 120 MiB block only: the rest fits
    assert after["cached_bytes"] == 120 * MiB + torch.Size(batch).numel() * 4 <= MAX_BYTES
    tensorops.empty_cache()


def test_a_block_over_the_whole_budget_goes_straight_back():
    tensorops.empty_cache()
    out = tensorops.normalize(torch.zeros(2, 3, 4096, 2800, dtype=torch.uint8), MEAN, STD)  # 262 MiB
    assert out.numel() * 4 > MAX_BYTES
    del out
    assert _stats()["cached_blocks"] == 0 and _stats()["cached_bytes"] == 0


def test_blocks_that_requests_keep_passing_over_go_back_to_the_system():
    # the idle trim: a block of a size nobody asks for any more leaves after IDLE_REQUESTS requests passed it over;
    # the block the loop keeps reusing stays
    tensorops.empty_cache()
    odd = tensorops.normalize(_u8((8, 3, 256, 256), 0), MEAN, STD)  # 6 MiB: a last partial batch, say
    del odd
    before = _stats()
    for k in range(IDLE_REQUESTS):
        out = tensorops.normalize(_u8(BIG, k), MEAN, STD)
        del out
        s = _stats()
        if k < IDLE_REQUESTS - 1:
            assert s["cached_blocks"] == 2, k
    s = _stats()
    assert s["trimmed"] - before["trimmed"] == 1 and s["cached_blocks"] == 1
    assert s["cached_bytes"] == torch.Size(BIG).numel() * 4
    assert s["hits"] - before["hits"] == IDLE_REQUESTS - 1  # the loop's own block was never trimmed
    tensorops.empty_cache()


# A fresh process (glibc's thresholds at their defaults): a torch tensor of 19 MB freed raises glibc's dynamic mmap
# threshold to 19 MB (and its heap trim threshold to 38 MB), so blocks of 4.8 MB from malloc would come from the
# heap, and freeing 29 MB of them would leave those pages in the process.
_RSS_AFTER_EMPTY_CACHE = textwrap.dedent("""
    import torch, tensorops
    def rss():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
    x = torch.zeros(8, 3, 224, 224, dtype=torch.uint8)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    warm = tensorops.normalize(torch.zeros(1, 3, 224, 224, dtype=torch.uint8), mean, std)
    raise_threshold = torch.empty(19 << 20, dtype=torch.uint8).fill_(1)
    del raise_threshold
    before = rss()
    outs = [tensorops.normalize(x, mean, std) for _ in range(6)]  # 6 x 4.8 MB, written
    held = rss()
    del outs
    tensorops.empty_cache()
    print(before, held, rss())
""")


def test_empty_cache_gives_the_pages_back_to_the_system():
    r = subprocess.run([sys.executable, "-c", _RSS_AFTER_EMPTY_CACHE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    before, held, after = map(int, r.stdout.split())
    assert held - before > 25 * MiB  # the 6 batches were resident
    assert after - before < 4 * MiB, (before, held, after)


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


def _rss_anon():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("RssAnon:"))


def _fork_report(_):
    s = _stats()
    return torch.tensor([s["cached_blocks"], s["cached_bytes"], _rss_anon()])


def test_a_forked_worker_gives_back_its_parents_cached_blocks():
    # the child unmaps the free list it inherited: it starts with an empty budget, and does not keep the parent's
    # pages (which the parent's next batches rewrite: each child still mapping them would hold copies)
    tensorops.empty_cache()
    parked = tensorops.normalize(torch.zeros(8, 3, 1024, 1024, dtype=torch.uint8), MEAN, STD)  # 96 MiB, written
    nbytes = parked.numel() * 4
    del parked
    assert _stats()["cached_bytes"] == nbytes
    loader = torch.utils.data.DataLoader([0], batch_size=None, num_workers=1, collate_fn=_fork_report,
                                         multiprocessing_context="fork")
    parent_rss = _rss_anon()
    (blocks, cached, child_rss), = list(loader)
    assert blocks == 0 and cached == 0
    assert child_rss < parent_rss - 0.9 * nbytes, (parent_rss, child_rss)
    assert _stats()["cached_bytes"] == nbytes  # the parent's own cache is untouched
    tensorops.empty_cache()


def _lazy_clone_case(k):
    x = _u8(BIG, k)
    return tensorops.normalize(x, MEAN, STD), _expected(x)


def test_lazy_clone_of_a_batch_copies_on_write():
    out, want = _lazy_clone_case(0)
    clone = torch._lazy_clone(out)  # refused before: the DataPtr's context was not its data
    torch.testing.assert_close(clone, want)
    clone[0].fill_(1.0)  # copies: out still shares the data
    out[1].fill_(2.0)  # the last reference: writes the block in place
    torch.testing.assert_close(clone[0], torch.ones_like(want[0]))
    torch.testing.assert_close(clone[1:], want[1:])
    torch.testing.assert_close(out[0], want[0])
    torch.testing.assert_close(out[1], torch.full_like(want[1], 2.0))
    torch.testing.assert_close(out[2:], want[2:])


def test_a_lazily_cloned_batch_goes_back_to_the_cache():
    out, want = _lazy_clone_case(1)
    ptr = out.data_ptr()
    clone = torch._lazy_clone(out)
    del clone
    out.add_(1.0)  # out is the last reference: torch hands the block back to it, unwrapped
    assert out.data_ptr() == ptr
    torch.testing.assert_close(out, want + 1)
    del out
    before = _stats()
    again, want = _lazy_clone_case(2)
    assert _stats()["hits"] == before["hits"] + 1 and again.data_ptr() == ptr
    torch.testing.assert_close(again, want)


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


def test_dataloader_workers_forked_in_later_epochs_do_not_hold_the_main_processs_blocks(tmp_path):
    # benchmarks/pipelines/batch_cache_rss.py on a small run (2 workers, 2 batches an epoch): from the second epoch on the
    # workers are forked from a main process whose cache holds its float batches' blocks (18.4 MiB each); they
    # used to map them all (RssAnon +37 MiB per worker), now they unmap them at fork
    r = subprocess.run([sys.executable, "-m", "benchmarks.batch_cache_rss", "--epochs", "2", "--workers", "2",
                        "--batches-per-worker", "1", "--out", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(tmp_path / "batch_cache_rss.json") as f:
        result = json.load(f)
    first, second = (e["mid_epoch"] for e in result["epochs"])
    assert first["workers"] == second["workers"] == 2
    assert result["epochs"][1]["main_cache"]["cached_blocks"] >= 1  # what the second epoch's workers inherited
    assert second["workers_rss_anon_mib"] < first["workers_rss_anon_mib"] + 16, (first, second)
    assert abs(result["main_rss_growth_after_first_epoch_mib"]) < 16
    if ROOT not in sys.path:  # benchmarks/ is not installed with the package: import it from the checkout
        sys.path.append(ROOT)
    from benchmarks import docs_views

    header, rows = docs_views.view_batch_cache_rss("batch_cache_rss.json", result)
    assert len(rows) == 2 and all(len(row) == len(header) for row in rows)

"""tensorops.data.shared_batches and RecyclingLoader: a worker's batches written into its shared blocks, a block
reused only when no process can read its last batch, and a loader that passes every batch and every exception on.

Every end-to-end test holds batches in some form (a view at an offset, a storage object, numpy, DLPack, an
autograd graph, a saved-tensors hook, a forked process, pickled bytes, a worker-side cache), iterates on so that
the workers take blocks again, and compares what it holds with a clone taken when the batch was yielded."""
from __future__ import annotations

import multiprocessing
import os
import random
import sys
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from tensorops.data import RecyclingLoader, ResizedCropMirrorNormalizeCollate
from tensorops.data import shared_batches as sb

from conftest import requires_compiled

pytestmark = requires_compiled

linux_fd = pytest.mark.skipif(not sb.reuse_enabled(), reason="blocks are reused only with torch's file_descriptor "
                              "sharing strategy on Linux")

MEAN, STD = [0.5, 0.5, 0.5], [0.25, 0.25, 0.25]


def _dataset(n=48):
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 256, (3, 50 + k % 7, 60), dtype=torch.uint8, generator=g), k) for k in range(n)]


def _collate(**kw):
    # evaluation crops and an augment without draws: every run gives the same batches
    return ResizedCropMirrorNormalizeCollate(24, MEAN, STD, train=False, augment=lambda b: 255 - b, **kw)


def _loader(workers=2, persistent=True, dataset=None, **kw):
    return DataLoader(_dataset() if dataset is None else dataset, batch_size=4, collate_fn=_collate(**kw),
                      num_workers=workers, persistent_workers=persistent and workers > 0)


def _plain(**kw):
    return [x.clone() for x, _ in _loader(workers=0, **kw)]


@pytest.fixture(scope="module")
def plain():
    return _plain()


@pytest.fixture
def worker(monkeypatch):
    """This process as a DataLoader worker, as far as shared_batches can tell, with a pool of its own."""
    monkeypatch.setattr(sb, "get_worker_info", lambda: object())
    monkeypatch.setattr(sb, "_pool", None)
    yield
    if sb._pool is not None:
        sb._pool.close()


def _take(shape=(2, 3, 4, 4), memory_format=torch.contiguous_format):
    return sb.worker_batch(shape, torch.float32, memory_format)


# ---- one process: the worker's rules --------------------------------------------------------------------------
def test_the_main_process_keeps_its_batches_private():
    assert _take() is None
    x, _ = next(iter(_loader(workers=0)))
    assert not x.is_shared() and not sb.is_block(x)


@linux_fd
def test_a_block_nothing_reaches_is_written_again(worker):
    x = _take(memory_format=torch.channels_last)
    assert sb.is_block(x) and x.is_contiguous(memory_format=torch.channels_last) and sb.times_written(x) == 1
    ptr = x.untyped_storage().data_ptr()
    del x  # never sent, nothing holds it
    y = _take(memory_format=torch.channels_last)
    assert sb.times_written(y) == 2 and len(sb._pool.blocks) == 1
    del y, ptr


@linux_fd
@pytest.mark.parametrize("hold", ["view at an offset", "storage", "typed storage", "numpy", "dlpack", "autograd",
                                  "list"])
def test_a_block_the_worker_still_reaches_is_not_reused(worker, hold):
    x = _take()
    x.copy_(torch.arange(x.numel(), dtype=torch.float32).view_as(x))
    want = x.clone()
    w = torch.ones_like(want, requires_grad=True)
    held = {"view at an offset": lambda: x[1:, :, 2:],
            "storage": lambda: x.untyped_storage(),
            "typed storage": lambda: x._typed_storage(),
            "numpy": lambda: x.numpy(),
            "dlpack": lambda: torch.utils.dlpack.to_dlpack(x),
            "autograd": lambda: (x * w).sum(),
            "list": lambda: [x]}[hold]()
    del x
    others = [_take() for _ in range(3)]  # new blocks: the held one is not free
    for o in others:
        o.fill_(-1.0)
    read = {"view at an offset": lambda h: h,
            "storage": lambda h: torch.empty(0).set_(h, 0, want.shape, want.stride()),
            "typed storage": lambda h: torch.empty(0).set_(h._untyped_storage, 0, want.shape, want.stride()),
            "numpy": lambda h: torch.from_numpy(h),
            "dlpack": lambda h: torch.from_dlpack(h),
            "autograd": lambda h: (h.backward(), w.grad)[1],
            "list": lambda h: h[0]}[hold](held)
    torch.testing.assert_close(read, want[1:, :, 2:] if hold == "view at an offset" else want, rtol=0, atol=0)
    assert len(sb._pool.blocks) == 4


@linux_fd
def test_a_sent_block_waits_for_its_receivers_release(worker):
    x = _take()
    payload = ForkingPickler.dumps(x)  # leaves this "worker": one send counted
    del x
    assert _take().untyped_storage().nbytes() and len(sb._pool.blocks) == 2  # not free: a new block
    got = ForkingPickler.loads(payload)  # the receiver (this process) registers it
    assert any(not e.ref.expired() for e in sb._received)
    del got
    sb.sweep()  # the receiver's storage is gone: released
    z = _take()
    assert sb.times_written(z) == 2 and len(sb._pool.blocks) == 2


@linux_fd
def test_the_pool_retires_blocks_that_do_not_come_back(worker):
    held = [_take() for _ in range(sb.MAX_BLOCKS + 3)]
    assert all(sb.is_block(t) for t in held)  # every batch in a block
    assert len(sb._pool.blocks) == sb.MAX_BLOCKS  # the pool holds MAX_BLOCKS descriptors at most
    assert [sb.times_written(t) for t in held] == [1] * len(held)  # nothing held was reused


@linux_fd
def test_shared_copies_a_private_batch_once_into_a_block(worker):
    x = torch.randn(2, 3, 5, 6).contiguous(memory_format=torch.channels_last)
    y = sb.shared(x)
    assert sb.is_block(y) and torch.equal(y, x) and y.stride() == x.stride()
    assert sb.shared(y) is y  # already shared: as it is
    z = sb.shared(x.expand(2, 3, 5, 6)[:, :, ::2])  # a layout the blocks do not make: as it is
    assert not z.is_shared()


def test_reuse_can_be_turned_off(worker, monkeypatch):
    monkeypatch.setenv("TENSOROPS_REUSE_SHARED_MEMORY", "0")
    x = _take()
    assert x.is_shared() and not sb.is_block(x) and sb._pool is None  # fresh shared memory, no pool


# ---- DataLoader workers: holding batches in every form ---------------------------------------------------------
def _read_back(kind, held):
    """The values a held form reads now."""
    if kind in ("tensor", "view", "container"):
        return held if kind != "container" else held[0]
    if kind in ("storage", "typed storage"):
        storage, offset, shape, stride = held
        return torch.empty(0).set_(storage, offset, shape, stride)
    if kind == "numpy":
        return torch.from_numpy(held)
    if kind == "dlpack":
        return torch.from_dlpack(held)
    if kind == "autograd":
        loss, w = held
        loss.backward()
        return w.grad
    raise AssertionError(kind)


def _hold(kind, batch):
    """(held form, expected values read through it) for ``batch``, keeping nothing else of it."""
    x = batch[0]
    if kind == "tensor":
        return x, x.clone()
    if kind == "view":
        v = x[1:, :, 2:-2, 2:-2]
        return v, v.clone()
    if kind == "container":
        return batch, x.clone()
    if kind == "storage":
        v = x[1:]
        return (v.untyped_storage(), v.storage_offset(), v.shape, v.stride()), v.clone()
    if kind == "typed storage":
        v = x[2:]
        return (v._typed_storage()._untyped_storage, v.storage_offset(), v.shape, v.stride()), v.clone()
    if kind == "numpy":
        return x.numpy(), x.clone()
    if kind == "dlpack":
        return torch.utils.dlpack.to_dlpack(x), x.clone()
    if kind == "autograd":
        w = torch.ones_like(x, requires_grad=True)
        return ((x * w).sum(), w), x.clone()  # mul saves x for the backward
    raise AssertionError(kind)


KINDS = ["tensor", "view", "container", "storage", "typed storage", "numpy", "dlpack", "autograd"]


@linux_fd
@pytest.mark.parametrize("wrap", [False, True], ids=["DataLoader", "RecyclingLoader"])
def test_random_hold_patterns_never_see_a_change(plain, wrap):
    """Property-style: over 4 epochs every batch is held in a random form (or dropped), some for the rest of the
    run, some for a few batches; at every step everything still held reads its clone's values."""
    rng = random.Random(1234)
    loader = _loader()
    loader = RecyclingLoader(loader) if wrap else loader
    held = []  # (kind, form, expected, release at step)
    step = 0
    written = []
    for _ in range(4):
        for k, batch in enumerate(loader):
            assert torch.equal(batch[0], plain[k]), f"batch {k} differs when yielded"
            written.append(sb.times_written(batch[0]))
            if rng.random() < 0.6:
                kind = rng.choice(KINDS)
                form, want = _hold(kind, batch)
                held.append((kind, form, want, step + rng.choice([1, 2, 3, 10**9])))
            del batch
            step += 1
            keep = []
            for kind, form, want, until in held:
                if kind != "autograd":  # (a backward frees the graph: read once, at the end)
                    assert torch.equal(_read_back(kind, form), want), f"a held {kind} changed"
                if until > step:
                    keep.append((kind, form, want, until))
            held = keep
    for kind, form, want, _ in held:
        assert torch.equal(_read_back(kind, form), want), f"a held {kind} changed"
    assert max(written) > 1, "no block was written twice: nothing was reused"


@linux_fd
@pytest.mark.parametrize("after", ["offset view", "first-sample view", "narrow", "new tensor"])
def test_after_normalize_returning_views_never_shares_a_block_between_batches(after):
    """A transform that returns a view not starting at the batch's first element (a crop, b[1:]), or a new
    tensor: every batch is right when yielded and stays right while held."""
    fn = {"offset view": lambda b: b[:, :, 2:-2, 2:-2], "first-sample view": lambda b: b[1:],
          "narrow": lambda b: b.narrow(3, 3, 10), "new tensor": lambda b: b * 2.0}[after]
    want = _plain(after_normalize=fn)
    loader = _loader(after_normalize=fn)
    kept = []
    for epoch in range(3):
        for k, (x, _) in enumerate(loader):
            assert torch.equal(x, want[k]), f"epoch {epoch}, batch {k} wrong when yielded"
            if k % 3 == 0:
                kept.append((x, want[k]))
    assert all(torch.equal(a, b) for a, b in kept)


@linux_fd
def test_saved_tensors_hooks_that_keep_storages_see_their_batches(plain):
    """Gradient accumulation through a pack hook that keeps (storage, offset, size, stride) only."""
    def pack(t):
        return t.untyped_storage(), t.storage_offset(), t.shape, t.stride(), t.dtype

    def unpack(p):
        storage, offset, shape, stride, dtype = p
        return torch.empty(0, dtype=dtype).set_(storage, offset, shape, stride)

    w = torch.ones(plain[0].shape, requires_grad=True)
    losses = []
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        for k, (x, _) in enumerate(RecyclingLoader(_loader())):
            losses.append((x * w).sum())
            del x
            if len(losses) == 4:
                break
    for loss in losses:
        loss.backward()
    torch.testing.assert_close(w.grad, sum(plain[:4]), rtol=0, atol=0)


class _CachingTransform:
    """A worker-side transform keeping its last outputs (a cache): it checks them on every call."""

    def __init__(self):
        self.cache = []

    def __call__(self, b):
        for out, want in self.cache:
            if not torch.equal(out, want):
                raise AssertionError("a batch the worker holds was overwritten")
        self.cache = (self.cache + [(b, b.clone())])[-4:]
        return b


@linux_fd
def test_batches_a_worker_keeps_are_never_overwritten():
    loader = RecyclingLoader(_loader(after_normalize=_CachingTransform()))
    n = 0
    for _ in range(3):
        for _x, _ in loader:
            n += 1
    assert n == 36


@linux_fd
@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method")
def test_a_forked_process_reads_the_batch_it_inherited():
    ctx = multiprocessing.get_context("fork")
    go, results = ctx.Event(), ctx.Queue()

    def child(x, go, results):
        go.wait(60)
        results.put(x.double().sum().item())

    loader = RecyclingLoader(_loader())
    batches = iter(loader)
    x, _ = next(batches)
    want = x.double().sum().item()
    p = ctx.Process(target=child, args=(x, go, results))
    p.start()
    del x
    for _ in range(2):  # two epochs' worth of batches: the workers take every block they can
        for _x in batches:
            pass
        batches = iter(loader)
    go.set()
    got = results.get(timeout=60)
    p.join(60)
    assert got == want


@linux_fd
def test_pickled_bytes_loaded_later_read_their_batch():
    loader = RecyclingLoader(_loader())
    batches = iter(loader)
    x, _ = next(batches)
    want = x.clone()
    payload = ForkingPickler.dumps(x)  # handed on: never released
    del x
    for _ in range(2):
        for _x in batches:
            pass
        batches = iter(loader)
    assert torch.equal(ForkingPickler.loads(payload), want)


@linux_fd
def test_reuse_survives_a_tracer_reading_frame_locals(plain):
    """No reference-count calibration: a tracer that reads every frame's locals (debuggers, coverage) changes
    nothing: kept batches stay, and blocks keep coming back after it stops."""
    loader = RecyclingLoader(_loader())

    def tracer(frame, event, arg):
        frame.f_locals
        return tracer

    kept = []
    sys.settrace(tracer)
    try:
        for k, (x, _) in enumerate(loader):
            kept.append((x, plain[k]))
    finally:
        sys.settrace(None)
    kept = kept[:2]
    written = []
    for _ in range(3):
        for k, (x, _) in enumerate(loader):
            assert torch.equal(x, plain[k])
            written.append(sb.times_written(x))
    assert all(torch.equal(a, b) for a, b in kept)
    assert sum(w > 1 for w in written[-12:]) >= 8, written


# ---- exceptions, breaks, long runs -----------------------------------------------------------------------------
class _Flaky(Dataset):
    """_dataset(), except that sample ``bad`` raises (in the worker)."""

    def __init__(self, bad=5):
        self.items, self.bad = _dataset(), bad

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"sample {i} cannot be read")
        return self.items[i]


def _skip_failed(loader):
    """A loop that catches a failed batch and goes on: (batches, errors)."""
    got, errors = [], 0
    it = iter(loader)
    while True:
        try:
            x, _ = next(it)
        except StopIteration:
            return got, errors
        except ValueError:
            errors += 1
            continue
        got.append(x.clone())


@pytest.mark.parametrize("workers", [0, 2])
def test_an_exception_passes_through_as_from_the_dataloader(workers, plain):
    want = _skip_failed(_loader(workers=workers, dataset=_Flaky()))
    got = _skip_failed(RecyclingLoader(_loader(workers=workers, dataset=_Flaky())))
    assert want[1] == got[1] == 1 and len(want[0]) == len(got[0]) == 11
    assert all(torch.equal(a, b) for a, b in zip(got[0], want[0]))
    assert all(torch.equal(a, b) for a, b in zip(got[0], plain[:1] + plain[2:]))


def test_the_wrapper_is_the_dataloader_to_its_user(plain):
    dl = _loader(workers=0)
    loader = RecyclingLoader(dl)
    assert len(loader) == len(dl) and loader.batch_size == 4 and loader.dataset is dl.dataset
    assert all(torch.equal(x, plain[k]) for k, (x, _) in enumerate(loader))
    bare = [torch.ones(2), torch.zeros(3)]
    assert [t.sum().item() for t in RecyclingLoader(bare)] == [2.0, 0.0]


@pytest.mark.skipif(sys.platform != "linux", reason="killing a worker with a signal")
def test_a_killed_worker_raises_as_from_the_dataloader():
    import signal

    class Slow(Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            import time
            time.sleep(0.05)
            return _dataset(1)[0]

    loader = RecyclingLoader(DataLoader(Slow(), batch_size=4, collate_fn=_collate(), num_workers=2, timeout=60))
    it = iter(loader)
    next(it)
    os.kill(it._workers[0].pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="DataLoader worker"):
        for _ in it:
            pass


def _shm_bytes(pid):
    """Bytes of the /dev/shm files process ``pid`` holds open (a worker's blocks, each counted once)."""
    files = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/dev/shm/"):
                st = os.stat(f"/proc/{pid}/fd/{fd}")
                files[st.st_ino] = st.st_size
        except OSError:
            pass
    return sum(files.values())


def _mapped_blocks():
    """/dev/shm files mapped by this process."""
    with open("/proc/self/maps") as f:
        return len({line.split()[4] for line in f if "/dev/shm/" in line})


@linux_fd
@pytest.mark.parametrize("wrap", [False, True], ids=["DataLoader", "RecyclingLoader"])
def test_a_long_run_with_breaks_and_failures_keeps_reusing_in_flat_memory(wrap):
    """20 epochs, every third one left with a break, one failing sample in each: the last epoch reuses as many
    blocks as the first, and the shared memory held by the workers and mapped here stays bounded."""
    dl = _loader(dataset=_Flaky())
    loader = RecyclingLoader(dl) if wrap else dl
    reused, held, mapped = [], [], []
    for epoch in range(20):
        it = iter(loader)
        count = 0
        for k in range(12):
            try:
                x, _ = next(it)
            except ValueError:
                continue
            count += sb.times_written(x) > 1
            del x
            if epoch % 3 == 1 and k == 5:
                break  # an early break: batches in flight are drained at the next epoch's start
        workers = getattr(it, "_workers", [])
        held.append(sum(_shm_bytes(w.pid) for w in workers))
        mapped.append(_mapped_blocks())
        if epoch % 3 != 1:
            reused.append(count)
        del it
    assert reused[-1] >= reused[0] and reused[-1] >= 8, reused
    block = -(-4 * 3 * 24 * 24 * 4 // sb.PAGE) * sb.PAGE + sb.PAGE
    # flat = bounded by the pools: 2 workers, each its pool (which may fill to MAX_BLOCKS on a loaded machine, the
    # blocks of batches drained at a break retired only then) and its batches in flight, at every epoch
    assert max(held) <= 2 * (sb.MAX_BLOCKS + 2) * block, held
    assert max(mapped[-5:]) <= max(mapped[:5]) + 2, mapped


# ---- torchvision v2 transforms in augment= / after_normalize= --------------------------------------------------
def test_torchvision_v2_transforms_run_per_batch():
    v2 = pytest.importorskip("torchvision.transforms.v2", reason="torchvision is not installed")
    collate = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, augment=v2.ColorJitter(0.4, 0.4, 0.4, 0.1),
                                                after_normalize=[v2.RandomErasing(0.5),
                                                                 v2.RandomChoice([v2.MixUp(num_classes=48),
                                                                                  v2.CutMix(num_classes=48)])])
    x, labels = collate(_dataset(4))
    assert x.shape == (4, 3, 24, 24) and x.dtype == torch.float32
    assert labels.shape == (4, 48) and torch.allclose(labels.sum(1), torch.ones(4))  # mixed soft labels
    y, plain_labels = ResizedCropMirrorNormalizeCollate(24, MEAN, STD, augment=v2.RandomHorizontalFlip(1.0))(
        _dataset(4))
    assert plain_labels.tolist() == [0, 1, 2, 3]  # a v2 transform that does not mix passes the labels through
    torch.manual_seed(0)
    jitter = ResizedCropMirrorNormalizeCollate(24, None, None, dtype=torch.uint8, train=False,
                                               augment=v2.ColorJitter(brightness=(0.5, 0.5)))
    got, _ = jitter(_dataset(4))
    base, _ = ResizedCropMirrorNormalizeCollate(24, None, None, dtype=torch.uint8, train=False)(_dataset(4))
    assert torch.equal(got, v2.functional.adjust_brightness(base, 0.5))

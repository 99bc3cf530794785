"""tensorops.data's Python data path: the collates' random streams across DataLoader workers and epochs, and
NormalizingLoader's handover (CPU; the CUDA handover's order of waits on a recording twin of its stream
operations, and on a real GPU under the ``cuda`` marker)."""
from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils.data import DataLoader

from tensorops.data import CropMirrorNormalizeCollate, NormalizingLoader, ResizedCropMirrorNormalizeCollate
from tensorops.data import loaders as loaders_module

from conftest import requires_compiled, requires_cuda

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

pytestmark = requires_compiled


def images(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (3, int(h), int(w)), dtype=torch.uint8, generator=g)
            for h, w in torch.randint(40, 90, (n, 2), generator=g)]


# ---- seeded collates: new draws every epoch, the same run twice ------------------------------------------------
COLLATES = {
    "resized": lambda seed: ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8,
                                                              generator=torch.Generator().manual_seed(seed)),
    "crop": lambda seed: CropMirrorNormalizeCollate(24, MEAN, STD, generator=torch.Generator().manual_seed(seed)),
}
WORKERS = [pytest.param(0, False, id="main-process"), pytest.param(2, False, id="workers"),
           pytest.param(2, True, id="persistent-workers")]


def _epochs(kind, workers, persistent, n_epochs=2, seed=5):
    """The batches of ``n_epochs`` epochs of a seeded run (torch's seed set first, as a repeatable run does)."""
    torch.manual_seed(1234)
    dataset = [(im, k) for k, im in enumerate(images(12, seed=1))]
    loader = DataLoader(dataset, batch_size=4, collate_fn=COLLATES[kind](seed), num_workers=workers,
                        persistent_workers=persistent)
    return [torch.cat([batch for batch, _ in loader]) for _ in range(n_epochs)]


@pytest.mark.parametrize("workers,persistent", WORKERS)
@pytest.mark.parametrize("kind", sorted(COLLATES))
def test_seeded_collate_draws_anew_each_epoch_and_repeats(kind, workers, persistent):
    first = _epochs(kind, workers, persistent)
    assert not torch.equal(first[0], first[1]), "a seeded run repeated its crops and flips in the next epoch"
    again = _epochs(kind, workers, persistent)
    for a, b in zip(first, again):
        assert torch.equal(a, b), "the same seeds did not give the same run"
    other = _epochs(kind, workers, persistent, seed=6)
    assert not torch.equal(first[0], other[0]), "the collate's generator seed did not matter"


def test_workers_draw_streams_of_their_own():
    # two workers, one batch each: different streams (a shared one would give both the same boxes)
    torch.manual_seed(0)
    dataset = [(torch.zeros(3, 64, 64, dtype=torch.uint8), k) for k in range(8)]
    collate = ResizedCropMirrorNormalizeCollate(16, None, None, dtype=torch.uint8,
                                                generator=torch.Generator().manual_seed(3))
    boxes = []

    def record(samples):
        boxes.append(collate.boxes([(64, 64)] * len(samples))[0])
        return boxes[-1]

    got = list(DataLoader(dataset, batch_size=4, collate_fn=record, num_workers=2))
    assert not torch.equal(got[0], got[1])


# ---- NormalizingLoader -----------------------------------------------------------------------------------------
def uint8_loader(seed, batch_size=2):
    collate = ResizedCropMirrorNormalizeCollate(32, None, None, dtype=torch.uint8, train=False)
    return DataLoader([(im, k) for k, im in enumerate(images(5, seed))], batch_size=batch_size, collate_fn=collate)


def test_normalizing_loader_cpu():
    loader = uint8_loader(11)
    floats = ResizedCropMirrorNormalizeCollate(32, MEAN, STD, train=False)
    samples = [(im, k) for k, im in enumerate(images(5, 11))]
    got = list(NormalizingLoader(loader, MEAN, STD))
    want = [floats(samples[i:i + 2]) for i in range(0, 5, 2)]
    assert len(got) == len(want) == 3
    for (a, la), (b, lb) in zip(got, want):
        assert a.dtype == torch.float32 and la.tolist() == lb.tolist()
        torch.testing.assert_close(a, b, atol=0.5 / (255 * min(STD)) + 1e-4, rtol=0)


class _Stream:
    def __init__(self, name):
        self.name, self.queue = name, []

    def wait_event(self, event):
        self.queue.append(("wait", event[0].name, event[1]))

    def wait_stream(self, other):
        self.wait_event((other, len(other.queue)))


class _RecordingStreams:
    """A twin of loaders._CudaStreams that queues work symbolically: a stream is a list of what was queued on it,
    an event is (stream, how much of its queue it covers), and a wait is queued on the waiting stream."""

    def __init__(self, consumer):
        self.current = consumer
        self.side = None
        self.cuda_tensors = set()

    def Stream(self, device):  # noqa: N802 (the name of the call it stands for)
        self.side = _Stream("side")
        return self.side

    def current_stream(self, device):
        return self.current

    @contextlib.contextmanager
    def use(self, stream):
        before, self.current = self.current, stream
        try:
            yield
        finally:
            self.current = before

    def on_cuda(self, t):
        return id(t) in self.cuda_tensors

    def to_device(self, t, device):
        self.current.queue.append(("copy", int(t.flatten()[0])))
        return t

    def record(self, t, stream):
        pass

    def done_event(self, stream):
        return (stream, len(stream.queue))


def _recording_loader(monkeypatch, batches, consumer):
    streams = _RecordingStreams(consumer)
    loader = NormalizingLoader(batches, MEAN, STD, device="cuda")
    monkeypatch.setattr(loader, "_cuda", streams)
    normalize = loader._normalize

    def logged(images):  # each batch's images are filled with its index
        streams.current.queue.append(("normalize", int(images.flatten()[0])))
        return normalize(images)

    monkeypatch.setattr(loader, "_normalize", logged)
    return loader, streams


def test_cuda_handover_waits_for_its_own_batch_only(monkeypatch):
    consumer = _Stream("consumer")  # a consumer stream of its own (not the default one)
    batches = [(torch.full((2, 3, 4, 4), k, dtype=torch.uint8), k) for k in range(4)]
    loader, streams = _recording_loader(monkeypatch, batches, consumer)
    got = 0
    for k, (images, label) in enumerate(loader):
        assert label == k
        wait = consumer.queue[-1]
        assert wait[:2] == ("wait", "side"), consumer.queue
        covered = streams.side.queue[:wait[2]]
        # the handover of batch k waits for batch k's copy and normalize, and for nothing of batch k+1
        assert covered[-1] == ("normalize", k), covered
        assert all(item[1] <= k for item in covered if item[0] in ("copy", "normalize")), covered
        consumer.queue.append(("step", k))  # the consumer's work on batch k
        got += 1
    assert got == len(batches)


def test_cuda_batches_wait_for_their_producer_stream(monkeypatch):
    consumer = _Stream("consumer")
    tensors = [torch.full((2, 3, 4, 4), k, dtype=torch.uint8) for k in range(3)]

    def produced_on_cuda():  # the wrapped loader writes each batch on the stream current when it yields
        for k, t in enumerate(tensors):
            consumer.queue.append(("write", k))
            yield t, k

    loader, streams = _recording_loader(monkeypatch, produced_on_cuda(), consumer)
    streams.cuda_tensors.update(id(t) for t in tensors)
    assert len(list(loader)) == len(tensors)
    side = streams.side.queue
    for k in range(len(tensors)):
        use = side.index(("normalize", k))
        waits = [item for item in side[:use] if item[0] == "wait" and item[1] == "consumer"]
        assert waits, f"batch {k} was read on the side stream without waiting for its producer: {side}"
        assert ("write", k) in consumer.queue[:waits[-1][2]], (side, consumer.queue)


class _FailingAt:
    """An iterator of ``batches`` that raises ValueError in place of batch ``bad`` and goes on after it, as a
    DataLoader does when one batch's sample fails."""

    def __init__(self, batches, bad):
        self.batches, self.bad, self.k = batches, bad, 0

    def __iter__(self):
        return self

    def __next__(self):
        k = self.k
        self.k += 1
        if k >= len(self.batches):
            raise StopIteration
        if k == self.bad:
            raise ValueError(f"batch {k} failed")
        return self.batches[k]


class _Iterable:
    def __init__(self, make):
        self.make = make

    def __iter__(self):
        return self.make()


def _skip_failures(loader):
    got, errors, it = [], [], iter(loader)
    while True:
        try:
            images, label = next(it)
        except StopIteration:
            return got, errors
        except ValueError as e:
            errors.append(str(e))
            continue
        got.append(label)


@pytest.mark.parametrize("where", ["cpu", "cuda handover (recording twin)"])
def test_normalizing_loader_passes_an_exception_through_and_goes_on(monkeypatch, where):
    """A loop that catches a failed batch and goes on gets every other batch, in order, and the error in its
    place, as from the wrapped loader (the CUDA path stages one batch ahead: the error comes after the batch
    staged before it)."""
    batches = [(torch.full((2, 3, 4, 4), k, dtype=torch.uint8), k) for k in range(5)]
    source = _Iterable(lambda: _FailingAt(batches, 2))
    if where == "cpu":
        loader = NormalizingLoader(source, MEAN, STD)
    else:
        loader, _ = _recording_loader(monkeypatch, source, _Stream("consumer"))
    got, errors = _skip_failures(loader)
    assert got == [0, 1, 3, 4] and errors == ["batch 2 failed"]


@pytest.mark.cuda
@requires_cuda
@pytest.mark.parametrize("consumer", ["default", "own"])
def test_normalizing_loader_cuda(consumer):
    loader = uint8_loader(12)
    cpu = list(NormalizingLoader(loader, MEAN, STD))
    sides = []

    class KeepSide(loaders_module._CudaStreams):
        @staticmethod
        def Stream(device):  # noqa: N802
            sides.append(torch.cuda.Stream(device))
            return sides[-1]

    gpu = NormalizingLoader(loader, MEAN, STD, device="cuda")
    gpu._cuda = KeepSide
    normalize, calls = gpu._normalize, []

    def delayed(images):  # every batch after the first keeps the side stream busy for a while before its normalize
        if calls:
            torch.cuda._sleep(500_000_000)  # cycles: a quarter of a second or so, queued on the side stream
        calls.append(1)
        return normalize(images)

    gpu._normalize = delayed
    stream = torch.cuda.current_stream() if consumer == "default" else torch.cuda.Stream()
    got = []
    with torch.cuda.stream(stream):
        for k, (images, labels) in enumerate(gpu):
            assert images.device.type == "cuda"
            mark = torch.cuda.Event()
            mark.record(torch.cuda.current_stream())
            mark.synchronize()  # batch k is ready on the consumer's stream ...
            if k + 1 < len(cpu):  # ... while batch k+1's work is still running on the side stream
                assert not sides[0].query(), f"batch {k}'s handover waited for batch {k + 1}'s work too"
            got.append((images.cpu(), labels))
    assert len(got) == len(cpu) == 3
    for (a, la), (b, lb) in zip(cpu, got):
        torch.testing.assert_close(a, b)
        assert la.tolist() == lb.tolist()

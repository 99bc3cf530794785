"""compute-sanitizer calls of the copy kernels: cat and split, and stack and chunk (which run them)."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import call, close, unaligned


def run_cat(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(0)
    lengths = torch.randint(0, 8, (1000,), generator=gen).tolist()  # 0..7 elements: odd, empty, unaligned
    for dtype in (torch.float32, torch.float16, torch.uint8, torch.int64):
        def many(dtype=dtype):
            ts = [unaligned((n,), dtype, device) if i % 2 else torch.ones(n, dtype=dtype, device=device)
                  for i, n in enumerate(lengths)]
            close(tensorops.cat(ts), torch.cat(ts), "cat 1000")
        call(f"cat 1000 tensors {dtype} (lengths 0-7, half unaligned)", many)

    def dim1():
        ts = [unaligned((3, w, 5), torch.float32, device) for w in (1, 4, 7, 0, 2)]
        close(tensorops.cat(ts, dim=1), torch.cat(ts, dim=1), "cat dim 1")
        close(tensorops.cat(ts, dim=-1 - 1), torch.cat(ts, dim=-2), "cat dim -2")
    call("cat dim 1 of odd widths, one empty", dim1)

    def channels_last():
        ts = [torch.randn(2, 3, 5, 7, device=device).contiguous(memory_format=torch.channels_last) for _ in range(3)]
        close(tensorops.cat(ts, dim=1), torch.cat(ts, dim=1), "cat channels_last")
        close(tensorops.cat([t.transpose(2, 3) for t in ts], dim=0), torch.cat([t.transpose(2, 3) for t in ts]),
               "cat transposed")
    call("cat channels_last and transposed inputs", channels_last)

    def empty():
        assert tensorops.cat([torch.empty(0, 3, device=device)] * 3).shape == (0, 3)
    call("cat of empty tensors", empty)

    def backward():
        ts = [torch.randn(n, 3, device=device, requires_grad=True) for n in lengths[:1000]]
        g = torch.randn(sum(lengths[:1000]), 3, device=device)
        got = torch.autograd.grad(tensorops.cat(ts), ts, g)
        want = torch.autograd.grad(torch.cat(ts), ts, g)
        for a, b in zip(got, want):
            close(a, b, "cat backward")
    call("cat 1000 tensors forward+backward", backward)


def run_split(device: torch.device) -> None:
    gen = torch.Generator().manual_seed(1)
    sizes = torch.randint(0, 8, (1000,), generator=gen).tolist()  # zero-size pieces included
    for dtype in (torch.float32, torch.float16, torch.uint8, torch.int64):
        def many(dtype=dtype):
            x = unaligned((sum(sizes),), dtype, device)
            for a, b in zip(tensorops.split(x, sizes), torch.split(x, sizes)):
                close(a, b, "split 1000")
                assert a.is_contiguous()
        call(f"split into 1000 pieces {dtype} (sizes 0-7, unaligned input)", many)

    def dim1():
        x = unaligned((3, 17, 5), torch.float32, device)
        for secs in ([1, 0, 16], 4, [17]):
            for a, b in zip(tensorops.split(x, secs, dim=1), torch.split(x, secs, dim=1)):
                close(a, b, f"split dim 1 {secs}")
        for a, b in zip(tensorops.split(x, 2, dim=-1), torch.split(x, 2, dim=-1)):
            close(a, b, "split dim -1")
    call("split dim 1 / -1 with zero-size and uneven pieces", dim1)

    def channels_last():
        x = torch.randn(2, 6, 5, 7, device=device).contiguous(memory_format=torch.channels_last)
        for a, b in zip(tensorops.split(x, [1, 2, 3], dim=1), torch.split(x, [1, 2, 3], dim=1)):
            close(a, b, "split channels_last")
    call("split a channels_last input", channels_last)

    def empty():
        pieces = tensorops.split(torch.empty(0, 4, device=device), 2, dim=1)
        assert [tuple(p.shape) for p in pieces] == [(0, 2), (0, 2)]
    call("split an empty tensor", empty)

    def backward():
        x = torch.randn(sum(sizes), 3, device=device, requires_grad=True)
        pieces = tensorops.split(x, sizes)
        used = [i for i in range(len(sizes)) if i % 3 != 1]  # the others get no gradient (counted as zeros)
        gs = [torch.randn_like(pieces[i]) for i in used]
        (got,) = torch.autograd.grad([pieces[i] for i in used], (x,), gs)
        ref = torch.split(x, sizes)
        (want,) = torch.autograd.grad([ref[i] for i in used], (x,), gs)
        close(got, want, "split backward")
    call("split 1000 pieces forward+backward, some gradients missing", backward)


def run_stack(device: torch.device) -> None:
    def odd():
        ts = [unaligned((3, 5, 7), torch.float16, device) for _ in range(5)]
        for dim in (0, 2, -1):
            close(tensorops.stack(ts, dim), torch.stack(ts, dim), f"stack dim {dim}")
    call("stack 5 x[1:] tensors along dims 0, 2, -1", odd)


def run_chunk(device: torch.device) -> None:
    def odd():
        x = unaligned((4, 13, 5), torch.float32, device)
        for chunks, dim in ((4, 1), (13, 1), (3, -1)):
            for a, b in zip(tensorops.chunk(x, chunks, dim), torch.chunk(x, chunks, dim)):
                close(a, b, f"chunk {chunks} dim {dim}")
                assert a.is_contiguous()
    call("chunk an x[1:] tensor into uneven pieces", odd)

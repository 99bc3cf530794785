"""Scale: tensors past 2^31 elements (64-bit indexing) and memory: no temporaries beyond the output, no growth
over thousands of calls.

The big-tensor tests need about 6.5 GiB of RAM (uint8 input -> float16 output) and a few seconds each on two
cores; they are marked slow (CI runs them; deselect locally with -m 'not slow'). Memory is measured in fresh
subprocesses so the test runner's own allocations do not blur the numbers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import tensorops

GiB = 1 << 30
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")


def _available_ram() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62


def needs_ram(gib: float):
    return pytest.mark.skipif(_available_ram() < gib * GiB, reason=f"needs {gib} GiB of free RAM")


def fill_pattern(x: torch.Tensor, period: int) -> torch.Tensor:
    """x.view(-1)[k] = k % period (uint8), written in chunks without an int64 temporary the size of x."""
    flat = x.view(-1)
    chunk = period * (1 << 20)
    pat = torch.arange(period, dtype=torch.uint8).repeat(1 << 20)
    for i in range(0, flat.numel(), chunk):
        m = min(chunk, flat.numel() - i)
        flat[i:i + m].copy_(pat[:m])
    return x


def windows(n: int, marks) -> torch.Tensor:
    """Flat indices to check: 4096 at the start and the tail, 2 x 2048 around each mark (2^31, plane edges),
    and 65536 spread over everything."""
    parts = [torch.arange(0, 4096), torch.arange(n - 4096, n), torch.randint(0, n, (65536,), generator=torch.Generator().manual_seed(0))]
    for m in marks:
        parts.append(torch.arange(max(0, m - 2048), min(n, m + 2048)))
    return torch.cat(parts)


# ---- past 2^31 elements ---------------------------------------------------------------------------------------
@pytest.mark.slow
@needs_ram(8)
def test_normalize_past_2_31_elements():
    c, h, w = 3, 16385, 43691  # 2^31 + 147457 elements; channel 2 starts past 2^30 and ends past 2^31
    n = c * h * w
    assert n > 2**31
    x = fill_pattern(torch.empty(c, h, w, dtype=torch.uint8), 251)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    out = tensorops.normalize(x, mean, std, dtype=torch.float16)
    assert out.shape == x.shape and out.dtype == torch.float16 and out.is_contiguous()
    idx = windows(n, [2**31, 2**31 - 1, h * w, 2 * h * w])
    got = out.view(-1)[idx].double()
    chan = idx // (h * w)
    exp = ((idx % 251).double() / 255 - torch.tensor(mean, dtype=torch.float64)[chan]) / torch.tensor(std, dtype=torch.float64)[chan]
    torch.testing.assert_close(got, exp, rtol=2e-3, atol=2e-3)
    del out
    # the same through the tensor-statistics kernel (per-channel tensors, broadcast)
    out = tensorops.normalize(x, torch.tensor(mean).view(3, 1, 1), torch.tensor(std).view(3, 1, 1), dtype=torch.float16)
    torch.testing.assert_close(out.view(-1)[idx].double(), exp, rtol=2e-3, atol=2e-3)
    del out
    # channels last (HWC, dim=-1) over the same memory: the CPU kernel's periodic-coefficient path
    hwc = x.view(h, w, c)
    out = tensorops.normalize(hwc, mean, std, dim=-1, dtype=torch.float16)
    chan = idx % 3
    exp = ((idx % 251).double() / 255 - torch.tensor(mean, dtype=torch.float64)[chan]) / torch.tensor(std, dtype=torch.float64)[chan]
    torch.testing.assert_close(out.view(-1)[idx].double(), exp, rtol=2e-3, atol=2e-3)


@pytest.mark.slow
@needs_ram(6)
def test_cat_past_2_31_elements():
    rows, a_cols, b_cols = 3, 500_000_003, 216_000_000  # output: 2^31 + 516361 elements
    n = rows * (a_cols + b_cols)
    assert n > 2**31
    a = fill_pattern(torch.empty(rows, a_cols, dtype=torch.uint8), 251)
    b = fill_pattern(torch.empty(rows, b_cols, dtype=torch.uint8), 241)
    out = tensorops.cat([a, b], dim=1)
    assert out.shape == (rows, a_cols + b_cols) and out.dtype == torch.uint8
    idx = windows(n, [2**31, a_cols, a_cols + b_cols + a_cols, 2 * (a_cols + b_cols)])
    r, j = idx // (a_cols + b_cols), idx % (a_cols + b_cols)
    exp = torch.where(j < a_cols, (r * a_cols + j) % 251, (r * b_cols + j - a_cols) % 241).to(torch.uint8)
    assert torch.equal(out.view(-1)[idx], exp)
    del out
    # along dim 0: two blocks copied whole
    out = tensorops.cat([a.view(-1), b.view(-1)], dim=0)
    k = windows(n, [2**31, rows * a_cols])
    exp = torch.where(k < rows * a_cols, k % 251, (k - rows * a_cols) % 241).to(torch.uint8)
    assert torch.equal(out[k], exp)


# ---- memory ---------------------------------------------------------------------------------------------------
def run_child(code: str, timeout: float = 120.0) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)
    assert proc.returncode == 0, f"child failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


PEAK_CHILD = """
import json, resource, torch, tensorops
torch.set_num_threads(2)
def peak():  # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
variant = {variant!r}
small = torch.zeros(2, 4, 8, 8, dtype=torch.uint8)
tensorops.normalize(small, [0.5] * 4, [0.25] * 4)  # warm up: first-call allocations are not the kernel's
tensorops.normalize(small, torch.rand(2, 4, 1, 1), torch.rand(1, 4, 1, 1) + 0.5)
before = peak()
x = torch.empty(1024, 4, 512, 512, dtype=torch.uint8)  # 1 GiB
if variant == "channels_last_to_contiguous":
    x = torch.empty(1024, 512, 512, 4, dtype=torch.uint8).permute(0, 3, 1, 2)
x.fill_(7)  # touch every page
with_input = peak()
if variant == "tensor_stats":
    out = tensorops.normalize(x, torch.rand(1024, 4, 1, 1), torch.rand(1, 4, 1, 1) + 0.5)
elif variant == "channels_last_to_contiguous":
    out = tensorops.normalize(x, [0.5] * 4, [0.25] * 4, memory_format=torch.contiguous_format)
else:
    out = tensorops.normalize(x, [0.5] * 4, [0.25] * 4)
after = peak()
assert out.dtype == torch.float32 and out.numel() == x.numel()
print(json.dumps(dict(before=before, with_input=with_input, after=after, input=x.numel(), output=out.numel() * 4)))
"""


@pytest.mark.slow
@needs_ram(7)
@pytest.mark.parametrize("variant", ["list_stats", "tensor_stats", "channels_last_to_contiguous"])
def test_normalize_peak_memory_is_input_plus_output(variant):
    r = run_child(PEAK_CHILD.format(variant=variant))
    used = r["after"] - r["before"]
    limit = 1.10 * (r["input"] + r["output"])
    extra = r["after"] - r["with_input"] - r["output"]
    assert used <= limit, (
        f"peak RSS grew by {used / GiB:.2f} GiB for a {r['input'] / GiB:.2f} GiB input and a "
        f"{r['output'] / GiB:.2f} GiB output (limit {limit / GiB:.2f} GiB): {extra / 2**20:.0f} MiB of temporaries"
    )


LEAK_CHILD = """
import gc, json, torch, tensorops
torch.set_num_threads(1)
page = __import__("os").sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
g = torch.Generator().manual_seed(0)
img = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=g)
xf = torch.rand(8, 3, 32, 32, generator=g)
mean_t, std_t = torch.rand(8, 3, 1, 1, generator=g), torch.rand(1, 3, 1, 1, generator=g) + 0.5
norm = tensorops.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
calls = []
calls.append(lambda: tensorops.normalize(img, [0.5, 0.4, 0.3], [0.2, 0.3, 0.25]))
calls.append(lambda: tensorops.normalize(img.permute(0, 2, 3, 1).contiguous(), [0.5, 0.4, 0.3], [0.2, 0.3, 0.25], dim=-1, dtype=torch.float16))
calls.append(lambda: tensorops.normalize(img, mean_t, std_t))
calls.append(lambda: norm(img))
def normalize_backward():
    x = xf.clone().requires_grad_()
    m = mean_t.clone().requires_grad_()
    tensorops.normalize(x, m, std_t).sum().backward()
    tensorops.normalize(x, [0.5, 0.4, 0.3], [0.2, 0.3, 0.25]).sum().backward()
calls.append(normalize_backward)
if hasattr(tensorops, "clamp"):
    calls.append(lambda: tensorops.clamp(xf, min=0.2, max=0.8))
    calls.append(lambda: tensorops.clamp(xf, min=mean_t, max=mean_t + 0.5))
    def clamp_backward():
        x = xf.clone().requires_grad_()
        tensorops.clamp(x, min=mean_t, max=0.9 + mean_t).sum().backward()
    calls.append(clamp_backward)
if hasattr(tensorops, "clamp_"):
    calls.append(lambda: tensorops.clamp_(xf.clone(), min=0.2, max=0.8))
if hasattr(tensorops, "cat"):
    calls.append(lambda: tensorops.cat([xf, xf, xf[:, :1]], dim=1))
    def cat_backward():
        a = xf.clone().requires_grad_()
        tensorops.cat([a, a], dim=0).sum().backward()
    calls.append(cat_backward)
if hasattr(tensorops, "split"):
    calls.append(lambda: tensorops.split(xf, [1, 2], dim=1))
    calls.append(lambda: tensorops.split(xf, 3, dim=2))
    def split_backward():
        a = xf.clone().requires_grad_()
        sum(p.sum() for p in tensorops.split(a, [1, 2], dim=1)).backward()
    calls.append(split_backward)
def round_(n):
    for _ in range(n):
        for c in calls:
            c()
round_({warmup})
gc.collect()
rss0, objs0 = rss(), len(gc.get_objects())
round_({iters})
gc.collect()
rss1, objs1 = rss(), len(gc.get_objects())
print(json.dumps(dict(rss0=rss0, rss1=rss1, objs0=objs0, objs1=objs1, calls=len(calls) * {iters})))
"""


def test_no_memory_growth_over_thousands_of_calls():
    # every call allocates ~100 KiB of output: leaking one output (or one autograd graph) per call would add
    # hundreds of MiB over the run; growing Python object counts would show a reference leak in the wrappers
    r = run_child(LEAK_CHILD.format(warmup=200, iters=2000))
    grown = r["rss1"] - r["rss0"]
    assert grown < 24 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over {r['calls']} calls"
    assert r["objs1"] - r["objs0"] < 500, f"{r['objs1'] - r['objs0']} more live Python objects after {r['calls']} calls"

"""Fast divisors (csrc/include/tensorops/fast_divide.h) and the launch plan that uses them
(LaunchPlan in csrc/include/tensorops/plan.h), checked without a GPU.

The CUDA kernels find every operand's offset through LaunchPlan::offsets / next, which divide by the plan's sizes
with a multiply-high and a shift. Those functions are __host__ __device__: here the real headers are compiled with
the host compiler into a small probe program (as tests/test_index_width.py does), and its answers are compared
with Python's exact integer arithmetic and with the plain-division Plan::offsets. On a GPU the same source
runs with __umulhi / __umul64hi in place of the host's wide multiply (tests/test_gpu.py covers those paths).
"""
from __future__ import annotations

import random

import pytest

import _probe

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
N_OPERANDS = 3
MAX_DIMS = 16  # kMaxPlanDims

PROGRAM = r"""
#include <cstdio>
#include <cstdint>
#include <vector>
#include "tensorops/plan.h"
using namespace tensorops;

template <typename index_t>
long long quotient(long long d, long long n) {
  return static_cast<long long>(IntDivider<index_t>(static_cast<index_t>(d)).div(static_cast<index_t>(n)));
}

// Every n in [lo, hi] against the plain division: prints the mismatches and the first one.
template <typename index_t>
void sweep(long long d, long long lo, long long hi) {
  const IntDivider<index_t> div(static_cast<index_t>(d));
  long long bad = 0, first = -1;
  for (long long n = lo;; ++n) {
    if (div.div(static_cast<index_t>(n)) != static_cast<index_t>(n) / static_cast<index_t>(d)) {
      if (bad++ == 0) first = n;
    }
    if (n == hi) break;
  }
  std::printf("%lld %lld\n", bad, first);
}

// offsets of every queried linear index: plain Plan::offsets, LaunchPlan::offsets (and its inner index), and
// LaunchPlan::next from the previous index
template <typename index_t>
void walk(const Plan<3>& p, const std::vector<long long>& queries) {
  const LaunchPlan<3, index_t> lp(p);
  for (long long q : queries) {
    int64_t plain[3];
    p.offsets<int64_t>(q, plain);
    index_t fast[3], stepped[3];
    const index_t inner = lp.offsets(static_cast<index_t>(q), fast);
    if (q > 0) {
      index_t prev_inner = lp.offsets(static_cast<index_t>(q - 1), stepped);
      lp.next(static_cast<index_t>(q), prev_inner, stepped);
      std::printf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld\n", (long long)plain[0], (long long)plain[1],
                  (long long)plain[2], (long long)fast[0], (long long)fast[1], (long long)fast[2], (long long)inner,
                  (long long)stepped[0], (long long)stepped[1], (long long)stepped[2]);
    } else {
      std::printf("%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld\n", (long long)plain[0], (long long)plain[1],
                  (long long)plain[2], (long long)fast[0], (long long)fast[1], (long long)fast[2], (long long)inner,
                  (long long)fast[0], (long long)fast[1], (long long)fast[2]);
    }
  }
}

int main() {
  char mode[8];
  while (std::scanf("%7s", mode) == 1) {
    int bits = 0;
    if (mode[0] == 'D') {  // D bits d n  ->  n / d
      long long d, n;
      std::scanf("%d %lld %lld", &bits, &d, &n);
      std::printf("%lld\n", bits == 32 ? quotient<int32_t>(d, n) : quotient<int64_t>(d, n));
    } else if (mode[0] == 'S') {  // S bits d lo hi (inclusive)  ->  mismatches first
      long long d, lo, hi;
      std::scanf("%d %lld %lld %lld", &bits, &d, &lo, &hi);
      if (bits == 32) sweep<int32_t>(d, lo, hi); else sweep<int64_t>(d, lo, hi);
    } else {  // P bits ndim numel sizes[ndim] strides[3][ndim] count queries[count]
      Plan<3> p;
      long long numel, count;
      std::scanf("%d %d %lld", &bits, &p.ndim, &numel);
      p.numel = numel;
      for (int d = 0; d < p.ndim; ++d) { long long v; std::scanf("%lld", &v); p.sizes[d] = v; }
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < p.ndim; ++d) { long long v; std::scanf("%lld", &v); p.strides[k][d] = v; }
      std::scanf("%lld", &count);
      std::vector<long long> queries(count);
      for (auto& q : queries) std::scanf("%lld", &q);
      if (bits == 32) walk<int32_t>(p, queries); else walk<int64_t>(p, queries);
    }
  }
  return 0;
}
"""


# the host's 64-bit multiply-high: the compiler's 128-bit integers, and the portable fallback (MSVC has no
# unsigned __int128); the GPU uses __umul64hi
@pytest.fixture(scope="module", params=["int128", "portable"])
def probe(request, tmp_path_factory):
    # plan.h includes c10 headers (their header-only parts)
    defines = ["-DTENSOROPS_NO_INT128"] if request.param == "portable" else []
    exe = _probe.build(tmp_path_factory, f"fast-divide {request.param}", PROGRAM, opt="-O2", defines=defines,
                       torch_headers=True)

    def run(text: str) -> list[list[int]]:
        out = _probe.run(exe, text)
        return [[int(v) for v in line.split()] for line in out.splitlines()]

    return run


def _divisors(bits: int, rng: random.Random) -> list[int]:
    top = INT32_MAX if bits == 32 else INT64_MAX
    ds = {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 25, 100, 224, 255, 641, 1000, 4097, 65535, 65536, 65537,
          2**31 - 1, 2**31 - 2, 2**30 + 1, 2**30 - 1, 3 * 2**29}
    ds |= {2**k for k in range(31)} | {2**k + 1 for k in range(31)} | {2**k - 1 for k in range(2, 32)}
    if bits == 64:
        ds |= {2**k for k in range(31, 63)} | {2**k + 1 for k in range(31, 63)} | {2**k - 1 for k in range(32, 64)}
        ds |= {2**62 + 12345, 2**63 - 2, 10**18 + 9, 3**39, 2**32 * 3}
    ds |= {rng.randrange(1, 2**16) for _ in range(50)}
    ds |= {rng.randrange(1, top + 1) for _ in range(100)}
    return sorted(d for d in ds if 1 <= d <= top)


def _dividends(d: int, bits: int, rng: random.Random) -> list[int]:
    top = INT32_MAX if bits == 32 else INT64_MAX
    ns = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 3 * d + 1, top, top - 1, top - d, top - d + 1, top // 2}
    q_top = top // d
    for q in (q_top, q_top - 1, rng.randrange(0, q_top + 1), rng.randrange(0, q_top + 1)):
        ns |= {q * d - 1, q * d, q * d + 1, q * d + d - 1}
    ns |= {rng.randrange(0, top + 1) for _ in range(12)}
    return sorted(n for n in ns if 0 <= n <= top)


@pytest.mark.parametrize("bits", [32, 64])
def test_quotients_equal_exact_division(probe, bits):
    rng = random.Random(bits)
    cases = [(d, n) for d in _divisors(bits, rng) for n in _dividends(d, bits, rng)]
    got = probe("".join(f"D {bits} {d} {n}\n" for d, n in cases))
    assert len(got) == len(cases)
    wrong = [(d, n, q) for (d, n), [q] in zip(cases, got) if q != n // d]
    assert not wrong, f"{len(wrong)} wrong quotients, e.g. (d, n, got) = {wrong[:5]}"


@pytest.mark.parametrize("bits", [32, 64])
def test_sweeps_of_every_dividend(probe, bits):
    # every dividend in long ranges (bottom, top of the index type and around 2^31), checked inside the probe
    # against the compiler's own division
    top = INT32_MAX if bits == 32 else INT64_MAX
    span = 1 << 18
    ranges = [(0, 1 << 20), (top - span, top)]  # inclusive
    if bits == 64:
        ranges += [(2**31 - span, 2**31 + span), (2**32 - span, 2**32 + span)]
    divisors = [1, 2, 3, 7, 10, 224, 641, 65537, 2**20 + 7, 2**31 - 1, 3 * 2**29]
    if bits == 64:
        divisors += [2**31, 2**32 + 1, 2**40 - 3, 2**62 + 1, 2**63 - 1]
    lines = [f"S {bits} {d} {lo} {hi}\n" for d in divisors for lo, hi in ranges]
    got = probe("".join(lines))
    bad = [(line.split()[2:], res) for line, res in zip(lines, got) if res[0] != 0]
    assert not bad, f"mismatches (divisor, lo, hi) -> (count, first): {bad[:5]}"


def _plan_cases(rng: random.Random):
    """(bits, sizes, strides[3][ndim]) of plans: odd and power-of-two sizes, broadcast (0) strides, up to 16 dims."""
    cases = []
    for ndim in (1, 2, 3, 4, 7, MAX_DIMS):
        for _ in range(6):
            sizes = [rng.choice([2, 3, 4, 5, 7, 8, 13, 16, 31]) for _ in range(ndim)]
            if ndim <= 3:
                sizes = [rng.randrange(2, 700) for _ in range(ndim)]
            numel = 1
            for s in sizes:
                numel *= s
            if numel > 2**40:  # keep 16-dim plans in range
                continue
            dense, acc = [], 1
            for s in sizes:
                dense.append(acc)
                acc *= s
            perm = list(range(ndim))
            rng.shuffle(perm)
            other = [0] * ndim
            acc = 1
            for d in perm:  # another dense order (a transposed input)
                other[d] = acc
                acc *= sizes[d]
            bcast = [rng.choice([0, dense[d]]) for d in range(ndim)]
            cases.append((sizes, [dense, other, bcast]))
    # sizes that force 64-bit math: more than 2^31 elements, and few elements with far offsets
    cases.append(([3, 1000003, 1001], [[1, 3, 3000009], [1001 * 1000003, 1001, 1], [0, 1, 0]]))
    cases.append(([7, 5], [[1, 7], [2**33 + 1, 1], [0, 2**40]]))
    cases.append(([2**31 - 1, 3], [[1, 2**31 - 1], [3, 1], [1, 0]]))
    return cases


def _oracle(sizes, strides, linear):
    off = [0] * N_OPERANDS
    inner = None
    for d, s in enumerate(sizes):
        i = linear % s
        linear //= s
        if inner is None:
            inner = i
        for k in range(N_OPERANDS):
            off[k] += i * strides[k][d]
    return off, inner


def test_launch_plan_offsets_equal_the_plain_plan(probe):
    rng = random.Random(0)
    lines, expected = [], []
    for sizes, strides in _plan_cases(rng):
        numel = 1
        for s in sizes:
            numel *= s
        largest = max(numel, *(sum((s - 1) * abs(st) for s, st in zip(sizes, row)) for row in strides))
        widths = [64] + ([32] if largest <= INT32_MAX else [])
        queries = {0, 1, numel - 1, numel - 2, sizes[0], sizes[0] - 1, min(numel - 1, sizes[0] * 2)}
        queries |= {rng.randrange(0, numel) for _ in range(40)}
        queries = sorted(q for q in queries if 0 <= q < numel)
        for bits in widths:
            flat = " ".join(str(v) for row in strides for v in row)
            lines.append(f"P {bits} {len(sizes)} {numel} {' '.join(map(str, sizes))} {flat} {len(queries)} "
                         f"{' '.join(map(str, queries))}\n")
            expected += [(bits, sizes, q, *_oracle(sizes, strides, q)) for q in queries]
    got = probe("".join(lines))
    assert len(got) == len(expected)
    for (bits, sizes, q, off, inner), row in zip(expected, got):
        plain, fast, fast_inner, stepped = row[0:3], row[3:6], row[6], row[7:10]
        assert plain == off, (sizes, q)
        assert fast == off, (bits, sizes, q)
        assert fast_inner == inner, (bits, sizes, q)
        assert stepped == off, ("next", bits, sizes, q)

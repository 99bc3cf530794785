"""math/augment.h's fma_soft: a * b + c rounded once, in double arithmetic, which x86's baseline build runs where the
CPU has no FMA instruction (TENSOROPS_CPU_ISA=base-nofma runs that build on any CPU; tests/test_cpu_isa.py checks its
ops against torchvision). Here the header is compiled into a probe program (tests/_probe.py) that compares it with
the C library's fmaf, bit for bit, on triples made to be hard: random bit patterns (every exponent, subnormals,
infinities, NaN), near-cancellations, and products that are exactly halfway between two floats with a tiny addend,
where rounding the double sum to float rounds twice (the probe counts those, so that the test shows it met them).
Both forms GCC makes of it run: the scalar function, and a loop over arrays that -O3 vectorizes (SSE2 on x86).
"""
from __future__ import annotations

import pytest

import _probe

PROGRAM = r"""
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "tensorops/math/augment.h"
using tensorops::augment::fma_soft;

static uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static bool same(float x, float y) { return bits(x) == bits(y) || (x != x && y != y); }

__attribute__((noinline)) void loop(const float* a, const float* b, const float* c, float* y, long n) {
  for (long i = 0; i < n; ++i) y[i] = fma_soft(a[i], b[i], c[i]);
}

int main() {
  long n = 0, seed = 0;
  if (std::scanf("%ld %ld", &n, &seed) != 2) return 2;
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  std::vector<float> a(n), b(n), c(n), y(n);
  for (long i = 0; i < n; ++i) {
    const uint64_t r = rng();
    switch (i % 4) {
      case 0:  // any bit pattern
        a[i] = from_bits(static_cast<uint32_t>(r));
        b[i] = from_bits(static_cast<uint32_t>(r >> 32));
        c[i] = from_bits(static_cast<uint32_t>(rng()));
        break;
      case 1: {  // c within a few floats of -a * b
        a[i] = from_bits(0x3f800000u | (r & 0x7fffff));
        b[i] = from_bits(0x3f800000u | ((r >> 23) & 0x7fffff));
        c[i] = from_bits(bits(static_cast<float>(-static_cast<double>(a[i]) * b[i])) +
                         static_cast<uint32_t>(static_cast<int>((r >> 46) & 7) - 3));
        break;
      }
      case 2: {  // a * b exactly halfway between two floats, c far below half a double step of it
        const float u = static_cast<float>((r & 0x7ff) | 1), v = static_cast<float>(((r >> 11) & 0x7ff) | 1);
        const int scale = static_cast<int>((r >> 42) & 31) - 15;
        a[i] = std::ldexp(1.f + std::ldexp(u, -12), scale) * (((r >> 41) & 1) ? -1.f : 1.f);
        b[i] = 1.f + std::ldexp(v, -12);
        c[i] = std::ldexp(1.f + std::ldexp(static_cast<float>((r >> 28) & 0xfff), -12),
                          scale - 54 - static_cast<int>((r >> 22) & 63)) * (((r >> 40) & 1) ? -1.f : 1.f);
        break;
      }
      default:  // pixel values and weights
        a[i] = static_cast<float>(r % 256);
        b[i] = from_bits(0x3e000000u + static_cast<uint32_t>((r >> 8) & 0x1ffffff));
        c[i] = static_cast<float>((r >> 40) % 65536) / 257.f;
    }
  }
  loop(a.data(), b.data(), c.data(), y.data(), n);
  long scalar_off = 0, loop_off = 0, ties = 0;
  for (long i = 0; i < n; ++i) {
    const float want = std::fma(a[i], b[i], c[i]);
    const volatile float x = fma_soft(a[i], b[i], c[i]);
    if (!same(x, want)) {
      if (scalar_off++ < 3) std::printf("# off %a * %a + %a: %a, fmaf %a\n", a[i], b[i], c[i], (float)x, want);
    }
    loop_off += !same(y[i], want);
    const float twice = static_cast<float>(static_cast<double>(a[i]) * b[i] + static_cast<double>(c[i]));
    ties += !same(twice, want);
  }
  std::printf("%ld %ld %ld\n", scalar_off, loop_off, ties);
  return 0;
}
"""


@pytest.fixture(scope="module", params=["-O1", "-O3"])
def probe(request, tmp_path_factory):
    # -O3: the loop vectorizes (as the baseline build's loops do); -ffp-contract=off as in cpu/augment.cpp
    return _probe.build(tmp_path_factory, f"fma-soft {request.param}", PROGRAM, opt=request.param,
                        defines=["-ffp-contract=off"])


@pytest.mark.parametrize("seed", [1, 2])
def test_fma_soft_rounds_once_as_fmaf_does(probe, seed):
    n = 400_000
    out = _probe.run(probe, f"{n} {seed}").split("\n")
    scalar_off, loop_off, ties = (int(v) for v in out[-2].split())
    assert (scalar_off, loop_off) == (0, 0), "\n".join(out)
    # the double-rounding cases were there: a * b + c computed in double and rounded to float misses fmaf on them
    assert ties > n // 16

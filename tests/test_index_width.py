"""The one decision between 32- and 64-bit index math in the CUDA launches (csrc/include/tensorops/index_width.h),
checked without a GPU: the header is plain C++, compiled here with the host compiler into a tiny program.

The rule: every index a grid-stride loop forms (counters below numel + step, operand offsets up to the plan's
largest offset) must fit in int32; when only the step is too large, the grid shrinks so 32-bit indexing still
serves tensors up to about 2^31 elements (the old rule took the 32-bit path up to 2^31 - 1024 elements with a
step of about numel, so counters wrapped between 2^30 and 2^31 elements).
"""
from __future__ import annotations

import pytest

import _probe

INT32_MAX = 2**31 - 1
ITEMS = 256 * 4  # threads * elements per thread: the elementwise launches
DEFAULT_MAX_BLOCKS = 1 << 24

PROGRAM = r"""
#include <cstdio>
#include "tensorops/index_width.h"
int main() {
  long long n, off, items, maxb;
  while (std::scanf("%lld %lld %lld %lld", &n, &off, &items, &maxb) == 4) {
    const tensorops::IndexedLaunch l = tensorops::pick_indexed_launch(n, off, items, maxb);
    std::printf("%lld %d\n", static_cast<long long>(l.blocks), l.use_int32 ? 1 : 0);
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def pick(tmp_path_factory):
    exe = _probe.build(tmp_path_factory, "index-width", PROGRAM)

    def run(cases):
        text = "".join(f"{n} {off} {items} {maxb}\n" for n, off, items, maxb in cases)
        out = _probe.run(exe, text)
        return [(int(b), u == "1") for b, u in (line.split() for line in out.splitlines())]

    return run


def _largest_index(n, blocks, items):
    return (n - 1) + blocks * items  # the last counter value a grid-stride loop computes


SIZES = [1, 1000, 2**20, 2**30 - 1, 2**30, 2**30 + 12345, 1_200_000_000, 1_500_000_000, 1_800_000_000,
         2**31 - 2048, 2**31 - 1024, 2**31 - 1, 2**31, 2**31 + 1, 3 * 2**30, 2**33]


@pytest.mark.parametrize("items", [ITEMS, 256, 1])
def test_int32_only_when_every_index_fits(pick, items):
    cases = [(n, n, items, DEFAULT_MAX_BLOCKS) for n in SIZES]
    for (n, _, _, _), (blocks, use32) in zip(cases, pick(cases)):
        assert 1 <= blocks <= DEFAULT_MAX_BLOCKS
        if use32:
            assert _largest_index(n, blocks, items) <= INT32_MAX, (n, blocks)
        else:
            assert n > INT32_MAX - items or n > INT32_MAX, f"{n} elements could have used 32-bit indexing"


def test_sizes_between_2_30_and_2_31_keep_the_32_bit_path_with_a_smaller_grid(pick):
    # the sizes that wrapped before: 1.2e9 and 1.8e9 elements
    for n in (1_200_000_000, 1_800_000_000):
        [(blocks, use32)] = pick([(n, n, ITEMS, DEFAULT_MAX_BLOCKS)])
        assert use32
        assert blocks < -(-n // ITEMS), "the grid must shrink: a full grid's step would wrap"
        assert _largest_index(n, blocks, ITEMS) <= INT32_MAX
    [(blocks, use32)] = pick([(2**20, 2**20, ITEMS, DEFAULT_MAX_BLOCKS)])
    assert use32 and blocks == 2**20 // ITEMS  # small tensors: one element group per thread, as before


def test_large_offsets_or_counts_take_the_64_bit_path(pick):
    cases = [
        (2**31, 2**31, ITEMS, DEFAULT_MAX_BLOCKS),            # over 2^31 elements
        (1000, 2**31, ITEMS, DEFAULT_MAX_BLOCKS),             # few elements, a far offset (large strides)
        (2**31 - 1, 2**31 - 1, ITEMS, DEFAULT_MAX_BLOCKS),    # no room for one step
        (2**40, 2**40, ITEMS, DEFAULT_MAX_BLOCKS),
    ]
    for case, (blocks, use32) in zip(cases, pick(cases)):
        assert not use32, case
        assert blocks == min(-(-case[0] // ITEMS), DEFAULT_MAX_BLOCKS)


def test_the_callers_grid_cap_is_kept(pick):
    [(blocks, use32)] = pick([(10**8, 10**8, 256, 528)])  # e.g. 4 blocks per SM for per-block partial sums
    assert use32 and blocks == 528
    [(blocks, use32)] = pick([(0, 0, ITEMS, DEFAULT_MAX_BLOCKS)])
    assert blocks == 1 and use32

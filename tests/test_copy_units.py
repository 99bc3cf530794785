"""cat / split on CUDA copy in units chosen per piece (csrc/include/tensorops/copy_table.h: piece_unit,
write_unit_groups, find_group, unit_group), checked without a GPU.

The CUDA kernel walks a grouped copy table: pieces grouped by their own unit (16, 8, 4, 2 or 1 bytes), tiles of a
fixed number of units, each tile inside one group. Here the real header is compiled with the host compiler into
a probe that builds the grouped table from a plain one and walks it tile by tile exactly as copy_groups_kernel
does (a tile inside one piece row is copied as one contiguous run, other tiles locate every unit). The test checks
that every byte goes from its source to its destination exactly once, that every unit is naturally aligned at
both ends, and that each piece gets the largest unit its own addresses allow, whatever the other pieces are.
"""
from __future__ import annotations

import random

import pytest

import _probe

PROGRAM = r"""
#include <cstdio>
#include <cstdint>
#include <vector>
#include "tensorops/copy_table.h"
using namespace tensorops::copy_table;

int main() {
  long long n, rows, tile_units;
  while (std::scanf("%lld %lld %lld", &n, &rows, &tile_units) == 3) {
    std::vector<int64_t> plain(table_words(n));
    int64_t c = 0;
    for (long long s = 0; s < n; ++s) {
      long long w, src, src_rs, dst, dst_rs;
      std::scanf("%lld %lld %lld %lld %lld", &w, &src, &src_rs, &dst, &dst_rs);
      plain[s] = c;
      plain[n + 1 + s] = src;
      plain[2 * n + 1 + s] = src_rs;
      plain[3 * n + 1 + s] = dst;
      plain[4 * n + 1 + s] = dst_rs;
      c += w;
    }
    plain[n] = c;
    const SegmentTable t = table_view(plain.data(), n, c, rows);
    for (long long s = 0; s < n; ++s) std::printf("%lld ", static_cast<long long>(piece_unit(t, s)));
    std::printf("\n");
    const int64_t groups = class_count(unit_classes(t));
    std::vector<int64_t> buf(grouped_words(n, groups) + 8, -7);  // + guard words that must stay untouched
    const int64_t tiles = write_unit_groups(t, tile_units, buf.data());
    long long guards = 0;
    for (size_t k = grouped_words(n, groups); k < buf.size(); ++k) guards += buf[k] != -7;
    std::printf("%lld %lld %lld\n", static_cast<long long>(groups), static_cast<long long>(tiles), guards);
    // the kernel's walk, one line per unit: unit src dst
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const UnitGroup g = unit_group(buf.data(), find_group(buf.data(), tile), rows);
      const int64_t first = (tile - g.first_tile) * tile_units;
      const int64_t count = tile_units < g.units - first ? tile_units : g.units - first;
      const int64_t V = g.unit;
      const Location l0 = locate(g, first * V);
      const bool contiguous = l0.run >= count * V;
      for (int64_t k = 0; k < count; ++k) {
        if (contiguous) {
          std::printf("%lld %lld %lld\n", (long long)V, (long long)(l0.src + k * V), (long long)(l0.dst + k * V));
        } else {
          const Location l = locate(g, (first + k) * V);
          std::printf("%lld %lld %lld\n", (long long)V, (long long)l.src, (long long)l.dst);
        }
      }
    }
    std::printf("end\n");
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    exe = _probe.build(tmp_path_factory, "copy-unit", PROGRAM)

    def run(rows: int, pieces: list[tuple[int, int, int, int, int]], tile_units: int):
        text = f"{len(pieces)} {rows} {tile_units}\n" + "".join(" ".join(map(str, p)) + "\n" for p in pieces)
        lines = _probe.run(exe, text).splitlines()
        units = [int(v) for v in lines[0].split()]
        groups, tiles, guards = (int(v) for v in lines[1].split())
        walk = [tuple(int(v) for v in line.split()) for line in lines[2:-1]]
        assert lines[-1] == "end"
        return units, groups, tiles, guards, walk

    return run


def _lowbit(x: int) -> int:
    return x & -x


def _expected_unit(rows, width, src, src_rs, dst, dst_rs):
    bits = 16 | width | src | dst
    if rows > 1:
        bits |= src_rs | dst_rs
    return _lowbit(bits)


def _check(probe, rows, pieces, tile_units):
    units, groups, tiles, guards, walk = probe(rows, pieces, tile_units)
    assert guards == 0, "write_unit_groups wrote past grouped_words"
    assert units == [_expected_unit(rows, *p) for p in pieces]
    assert groups == len(set(units))
    expected = {}
    for width, src, src_rs, dst, dst_rs in pieces:
        for r in range(rows):
            for b in range(width):
                expected[dst + r * dst_rs + b] = src + r * src_rs + b
    got = {}
    for unit, src, dst in walk:
        assert src % unit == 0 and dst % unit == 0, ("unaligned unit", unit, src, dst)
        for b in range(unit):
            assert dst + b not in got, f"destination byte {dst + b} written twice"
            got[dst + b] = src + b
    assert got == expected
    return units, walk


def _cat_like(rng: random.Random, rows: int, n: int):
    """Pieces of a cat: each piece its own buffer (some 16-aligned, some not), the output's rows side by side."""
    widths = [rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 100]) for _ in range(n)]
    out = 1 << 20 | rng.choice([0, 0, 4, 8, 2, 1])
    row_bytes = sum(widths)
    pieces, col, addr = [], 0, 1 << 24
    for w in widths:
        src = addr + rng.choice([0, 0, 0, 1, 2, 4, 8])
        src_rs = w + rng.choice([0, 0, 16, 3])
        pieces.append((w, src, src_rs, out + col, row_bytes))
        addr += 1 << 16
        col += w
    return pieces


@pytest.mark.parametrize("tile_units", [1, 3, 8, 1024])
def test_every_byte_copied_once_with_aligned_units(probe, tile_units):
    rng = random.Random(tile_units)
    for rows in (1, 2, 5):
        for n in (1, 2, 3, 7, 20):
            _check(probe, rows, _cat_like(rng, rows, n), tile_units)


def test_a_badly_aligned_piece_does_not_shrink_the_others(probe):
    # one long row (cat along dim 0 of flat tensors): 16-byte pieces at 16-byte offsets, then one of 5 bytes
    # (before: every unit 1 byte, the common alignment; now: 16 for the first two, 1 for the odd one)
    base_out, rows = 1 << 20, 1
    pieces = [(4096, 1 << 24, 4096, base_out, 0), (160, 2 << 24, 160, base_out + 4096, 0),
              (5, 3 << 24, 5, base_out + 4256, 0)]
    units, walk = _check(probe, rows, pieces, 8)
    assert units == [16, 16, 1]
    assert sum(1 for u, _, _ in walk if u == 16) == (4096 + 160) // 16
    # with several rows the row strides count too: a 12-byte output row makes every piece 4-byte aligned
    pieces = [(8, 1 << 24, 8, base_out, 12), (4, 2 << 24, 4, base_out + 8, 12)]
    units, _ = _check(probe, 3, pieces, 4)
    assert units == [4, 4]


def test_split_like_tables_and_odd_row_strides(probe):
    rng = random.Random(7)
    for rows in (1, 3):
        wide = (1 << 20) + rng.choice([0, 2])
        widths = [rng.choice([2, 16, 32, 7, 64]) for _ in range(9)]
        row_bytes = sum(widths) + rng.choice([0, 16, 1])  # the input's row stride may exceed the pieces' bytes
        pieces, col = [], 0
        for k, w in enumerate(widths):
            pieces.append((w, wide + col, row_bytes, (k + 2) << 24, w))
            col += w
        _check(probe, rows, pieces, 5)

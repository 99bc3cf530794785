// The copy table: cat and split as one copy problem, shared by the CPU and CUDA kernels (cpu/cat_split.cpp,
// cuda/cat_split_cuda.cu; the host side that fills it is host/cat_split_host.cpp). find_segment also serves the
// many-tensor clamp, which finds its tensors the same way.
//
// Both ops move bytes between one "wide" tensor and a list of "narrow" ones. Laid out in the wide tensor's
// memory order, every tensor is `rows` rows (the dims before `dim`); row r of piece s is `width[s]` contiguous
// bytes at column `col[s]` of the wide tensor's row. The copy is driven over the wide tensor's
// [rows, row_bytes] byte space: a byte position q sits in row q / row_bytes, column q % row_bytes, and the
// column falls in the piece whose column range holds it (a binary search over the prefix offsets `col`).
//
//   cat:   src = piece s (row stride src_rs[s]), dst = the output at column col[s] (row stride row_bytes)
//   split: src = the input at column col[s] (row stride src_rs[s]), dst = piece s (row stride dst_rs[s])
//
// Only pieces with at least one byte per row are in the table, so `col` is strictly increasing and
// col[n] == row_bytes. Everything is in bytes: the kernels do not depend on the dtype.
#pragma once
#include <cstdint>

#include "tensorops/fast_divide.h"
#include "tensorops/macros.h"

namespace tensorops {
namespace copy_table {

// The per-piece table, as arrays of n (col: n + 1) 64-bit numbers. On the GPU it lives in one device buffer.
struct SegmentTable {
  const int64_t* col;     // column (byte) where piece s starts in a wide row; col[n] == row_bytes
  const int64_t* src;     // address of row 0, column 0 of piece s's source bytes
  const int64_t* src_rs;  // source row stride in bytes
  const int64_t* dst;     // address of row 0, column 0 of piece s's destination bytes
  const int64_t* dst_rs;  // destination row stride in bytes
  int64_t n;              // pieces in the table
  int64_t row_bytes;      // bytes in one wide row
  int64_t rows;           // rows
};

// Number of int64 words a table of n pieces takes in one buffer, and where each array starts in it.
TENSOROPS_HD int64_t table_words(int64_t n) { return 5 * n + 1; }
TENSOROPS_HD SegmentTable table_view(const int64_t* buf, int64_t n, int64_t row_bytes, int64_t rows) {
  SegmentTable t;
  t.col = buf;
  t.src = buf + (n + 1);
  t.src_rs = buf + (2 * n + 1);
  t.dst = buf + (3 * n + 1);
  t.dst_rs = buf + (4 * n + 1);
  t.n = n;
  t.row_bytes = row_bytes;
  t.rows = rows;
  return t;
}

// The piece whose column range [col[s], col[s + 1]) holds column c (0 <= c < col[n]): the last s with
// col[s] <= c, by binary search.
TENSOROPS_HD int64_t find_segment(const int64_t* col, int64_t n, int64_t c) {
  int64_t lo = 0, hi = n - 1;  // invariant: col[lo] <= c < col[hi + 1]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (col[mid] <= c) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Where byte q of the wide [rows, row_bytes] space comes from and goes to.
struct Location {
  int64_t seg;  // the piece
  int64_t row;  // the row
  int64_t off;  // byte offset inside the piece's row
  int64_t src;  // source address
  int64_t dst;  // destination address
  int64_t run;  // bytes left in this piece's row from here
};

// The same with the row (q / row_bytes) already known.
TENSOROPS_HD Location locate_in_row(const SegmentTable& t, int64_t q, int64_t row) {
  Location l;
  l.row = row;
  const int64_t c = q - l.row * t.row_bytes;
  l.seg = find_segment(t.col, t.n, c);
  l.off = c - t.col[l.seg];
  l.src = t.src[l.seg] + l.row * t.src_rs[l.seg] + l.off;
  l.dst = t.dst[l.seg] + l.row * t.dst_rs[l.seg] + l.off;
  l.run = t.col[l.seg + 1] - c;
  return l;
}

TENSOROPS_HD Location locate(const SegmentTable& t, int64_t q) { return locate_in_row(t, q, q / t.row_bytes); }

// ---- copy units chosen per piece (the CUDA kernel) ---------------------------------------------------------------
// A GPU thread copies one unit of V bytes at a time (V = 16: one vector load and store). A unit must not straddle
// pieces and must stay naturally aligned, so one badly aligned piece (a 1-byte tensor of odd length, ...) would
// force small units on the whole copy. Instead the pieces are grouped by their own unit (16, 8, 4, 2 or 1 bytes),
// and each group gets a table of its own whose columns are the group's pieces side by side (the columns are only
// used to find a piece and the offset inside its row: the addresses and row strides are the pieces' own). One
// launch walks the groups one after another in tiles of a fixed number of units; each tile belongs to one group.
//
// The grouped buffer: word 0 the number of groups G; then per group g kGroupWords words at 1 + kGroupWords * g:
// unit (bytes), pieces n_g, row bytes (the group's widths summed), first tile (tiles of the groups before it), the
// word where its table (table_words(n_g) words, the layout above) starts, its units, and the row bytes as a fast
// divisor (magic, shift: fast_divide.h), so that a unit finds its row without a 64-bit division; then the tables.
// Groups come largest unit first.
constexpr int kUnitClasses = 5;  // units of 16, 8, 4, 2 and 1 bytes
constexpr int64_t kGroupWords = 8;

TENSOROPS_HD int64_t grouped_words(int64_t n, int64_t groups) { return 1 + kGroupWords * groups + 5 * n + groups; }

// The unit of piece s: the largest power of two (16 bytes at most) that divides its width and its source and
// destination addresses, and its row strides when there is more than one row.
inline int64_t piece_unit(const SegmentTable& t, int64_t s) {
  uint64_t bits = 16u | static_cast<uint64_t>(t.col[s + 1] - t.col[s]) | static_cast<uint64_t>(t.src[s]) |
                  static_cast<uint64_t>(t.dst[s]);
  if (t.rows > 1) bits |= static_cast<uint64_t>(t.src_rs[s]) | static_cast<uint64_t>(t.dst_rs[s]);
  return static_cast<int64_t>(bits & (~bits + 1));  // lowest set bit
}

// The class of a unit: 0 for 16 bytes, 1 for 8, ..., 4 for 1 (groups come in this order).
inline int unit_class(int64_t unit) {
  int c = 0;
  while ((int64_t{16} >> c) != unit) ++c;
  return c;
}

// The unit classes present among the pieces (bit c set: some piece has the unit 16 >> c).
inline unsigned unit_classes(const SegmentTable& t) {
  unsigned present = 0;
  for (int64_t s = 0; s < t.n; ++s) present |= 1u << unit_class(piece_unit(t, s));
  return present;
}

inline int64_t class_count(unsigned present) {
  int64_t g = 0;
  for (int c = 0; c < kUnitClasses; ++c) g += (present >> c) & 1u;
  return g;
}

// Writes the grouped buffer for t into buf (grouped_words(t.n, class_count(unit_classes(t))) words), with tiles of
// `tile_units` units. Returns the total number of tiles. Two passes over the pieces (count per class, then fill
// each piece into its group's table in order), so many pieces cost the same whatever the number of groups.
inline int64_t write_unit_groups(const SegmentTable& t, int64_t tile_units, int64_t* buf) {
  int64_t count[kUnitClasses] = {}, filled[kUnitClasses] = {}, width[kUnitClasses] = {};
  for (int64_t s = 0; s < t.n; ++s) ++count[unit_class(piece_unit(t, s))];
  int64_t groups = 0;
  for (int c = 0; c < kUnitClasses; ++c) groups += count[c] > 0;
  buf[0] = groups;
  int64_t table_at[kUnitClasses] = {}, word = 1 + kGroupWords * groups;
  for (int c = 0; c < kUnitClasses; ++c) {
    if (count[c] == 0) continue;
    table_at[c] = word;
    word += table_words(count[c]);
  }
  for (int64_t s = 0; s < t.n; ++s) {
    const int c = unit_class(piece_unit(t, s));
    const int64_t n = count[c], k = filled[c]++;
    int64_t* col = buf + table_at[c];
    col[k] = width[c];
    col[n + 1 + k] = t.src[s];
    col[2 * n + 1 + k] = t.src_rs[s];
    col[3 * n + 1 + k] = t.dst[s];
    col[4 * n + 1 + k] = t.dst_rs[s];
    width[c] += t.col[s + 1] - t.col[s];
  }
  int64_t g = 0, tiles = 0;
  for (int c = 0; c < kUnitClasses; ++c) {
    if (count[c] == 0) continue;
    const int64_t unit = int64_t{16} >> c;
    buf[table_at[c] + count[c]] = width[c];
    const int64_t units = t.rows * width[c] / unit;
    const IntDivider<int64_t> row_div(width[c]);
    int64_t* head = buf + 1 + kGroupWords * g;
    head[0] = unit;
    head[1] = count[c];
    head[2] = width[c];
    head[3] = tiles;
    head[4] = table_at[c];
    head[5] = units;
    head[6] = static_cast<int64_t>(row_div.magic);
    head[7] = row_div.shift;
    tiles += (units + tile_units - 1) / tile_units;
    ++g;
  }
  return tiles;
}

// One group of a grouped buffer, as the kernel sees it.
struct UnitGroup {
  int64_t unit;                  // bytes per unit
  int64_t first_tile;            // the group's first tile
  int64_t units;                 // units in the group
  SegmentTable table;            // the group's pieces (columns of the group's own rows)
  IntDivider<int64_t> row_div;   // table.row_bytes as a fast divisor
};

TENSOROPS_HD UnitGroup unit_group(const int64_t* buf, int64_t g, int64_t rows) {
  const int64_t* head = buf + 1 + kGroupWords * g;
  UnitGroup u;
  u.unit = head[0];
  u.first_tile = head[3];
  u.table = table_view(buf + head[4], head[1], head[2], rows);
  u.units = head[5];
  u.row_div.divisor = head[2];
  u.row_div.magic = static_cast<uint64_t>(head[6]);
  u.row_div.shift = static_cast<int>(head[7]);
  return u;
}

// Where byte q of the group's [rows, row_bytes] space comes from and goes to (locate, without its division).
TENSOROPS_HD Location locate(const UnitGroup& g, int64_t q) { return locate_in_row(g.table, q, g.row_div.div(q)); }

// The group holding tile `tile` (0 <= tile < the total returned by write_unit_groups): the last one starting at
// or before it.
TENSOROPS_HD int64_t find_group(const int64_t* buf, int64_t tile) {
  int64_t g = 0;
  for (int64_t k = 1; k < buf[0]; ++k)
    if (buf[1 + kGroupWords * k + 3] <= tile) g = k;
  return g;
}

}  // namespace copy_table
}  // namespace tensorops

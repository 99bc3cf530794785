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

TENSOROPS_HD Location locate(const SegmentTable& t, int64_t q) {
  Location l;
  l.row = q / t.row_bytes;
  const int64_t c = q - l.row * t.row_bytes;
  l.seg = find_segment(t.col, t.n, c);
  l.off = c - t.col[l.seg];
  l.src = t.src[l.seg] + l.row * t.src_rs[l.seg] + l.off;
  l.dst = t.dst[l.seg] + l.row * t.dst_rs[l.seg] + l.off;
  l.run = t.col[l.seg + 1] - c;
  return l;
}

// Largest power-of-two chunk (16 bytes at most) that divides every address, row stride and column of the
// table: copies in units of that many bytes never straddle a piece and stay naturally aligned.
inline int64_t common_alignment(const SegmentTable& t) {
  uint64_t bits = static_cast<uint64_t>(t.row_bytes) | 16u;
  for (int64_t s = 0; s < t.n; ++s)
    bits |= static_cast<uint64_t>(t.col[s]) | static_cast<uint64_t>(t.src[s]) |
            static_cast<uint64_t>(t.src_rs[s]) | static_cast<uint64_t>(t.dst[s]) | static_cast<uint64_t>(t.dst_rs[s]);
  return static_cast<int64_t>(bits & (~bits + 1));  // lowest set bit
}

}  // namespace copy_table
}  // namespace tensorops

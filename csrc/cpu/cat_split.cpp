// cat and split on the CPU: one pass over the bytes of the wide tensor (cat's output, split's input), split
// in large chunks over the threads tensorops/parallel.h grants, not one task per tensor. Each chunk finds its
// first piece with the binary search of copy_table.h and then walks the piece table, one memcpy per contiguous
// run (a piece's row). Many small tensors cost one table entry and one memcpy each. The checks, the output and
// the table come from host/cat_split_host.cpp, shared with the CUDA ops; the lean Python entries
// (tensorops._C.cat_fast / split_fast) are in py_entry.cpp.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cat_split_host.h"
#include "tensorops/copy_table.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

using namespace cat_split_host;
using copy_table::Location;
using copy_table::SegmentTable;

void copy_table_cpu(const SegmentTable& t) {
  const int64_t total = t.rows * t.row_bytes;
  if (total == 0 || t.n == 0) return;
  parallel_for_bytes(0, total, 2 * total, [&](int64_t begin, int64_t end) {
    Location l = copy_table::locate(t, begin);
    int64_t q = begin;
    for (;;) {
      const int64_t n = std::min(l.run, end - q);
      std::memcpy(reinterpret_cast<void*>(l.dst), reinterpret_cast<const void*>(l.src), static_cast<size_t>(n));
      q += n;
      if (q >= end) break;
      if (++l.seg == t.n) {  // next row
        l.seg = 0;
        ++l.row;
      }
      // runs of a few hundred bytes from scattered inputs: prefetch the source a few pieces ahead
      if (l.seg + 4 < t.n) __builtin_prefetch(reinterpret_cast<const void*>(t.src[l.seg + 4] + l.row * t.src_rs[l.seg + 4]));
      l.src = t.src[l.seg] + l.row * t.src_rs[l.seg];
      l.dst = t.dst[l.seg] + l.row * t.dst_rs[l.seg];
      l.run = t.col[l.seg + 1] - t.col[l.seg];
    }
  });
}

void run(const Prepared& p, bool into_wide) {
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  std::unique_ptr<int64_t[]> buf(new int64_t[static_cast<size_t>(copy_table::table_words(n))]);  // no zero fill
  fill_table(buf.get(), p.pieces, p.wide, p.wide_rs, into_wide);
  copy_table_cpu(copy_table::table_view(buf.get(), n, p.row_bytes, p.rows));
}

at::Tensor cat_cpu(at::TensorList tensors, int64_t dim) {
  Prepared p;
  at::Tensor out = cat_prepare(tensors, dim, p);
  run(p, /*into_wide=*/true);
  return out;
}

std::vector<at::Tensor> split_cpu(const at::Tensor& input, c10::SymIntArrayRef sizes, int64_t dim) {
  Prepared p;
  std::vector<at::Tensor> outs = split_prepare(input, sizes, dim, p);
  run(p, /*into_wide=*/false);
  return outs;
}

}  // namespace
}  // namespace tensorops

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("cat", &tensorops::cat_cpu);
  m.impl("split", &tensorops::split_cpu);
}

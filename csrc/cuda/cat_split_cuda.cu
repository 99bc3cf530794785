// cat and split on CUDA: ONE kernel launch for any number of inputs/outputs.
//
// The per-piece copy table of copy_table.h (addresses, row strides, prefix column offsets) travels in the kernel
// parameters when it fits (up to 90 pieces, 97 of one unit): no host-to-device copy, and a CUDA graph captures the
// table's values. Larger tables go to a device buffer by cuda::upload_table (device_table.cuh): a non-blocking
// copy from a pinned block outside graph capture, fill kernels while capturing (no pinned block taken then).
// Every thread copies units of V bytes (kernels/cat_split.cuh), chosen per piece: V = 16 (one 16-byte vector load
// and store) for a piece whose addresses, row strides and width are multiples of 16, else the largest power of two
// that divides them (down to single bytes), so one badly aligned piece does not slow the others and the kernel
// never depends on the dtype. The table is grouped by unit
// (copy_table.h's write_unit_groups); a unit finds its row with a fast divisor and its piece with locate() of
// copy_table.h (a binary search over the prefix offsets), the same code the CPU kernel runs. All offsets are
// 64-bit. The checks, the output and the table come from host/cat_split_host.cpp, compiled once for the CPU and
// CUDA ops.
#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cat_split_host.h"
#include "tensorops/copy_table.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/device_table.cuh"
#include "tensorops/kernels/cat_split.cuh"

namespace tensorops {
namespace {

using namespace cat_split_host;

void run_cuda(const Prepared& p, bool into_wide, c10::Device device) {
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  const cuda::stream_t stream = cuda::current_stream(device);
  // the plain table first (host memory), then the grouped one that the kernel reads
  std::vector<int64_t> plain(static_cast<size_t>(copy_table::table_words(n)));
  fill_table(plain.data(), p.pieces, p.wide, p.wide_rs, into_wide);
  const copy_table::SegmentTable t = copy_table::table_view(plain.data(), n, p.row_bytes, p.rows);
  const int64_t words = copy_table::grouped_words(n, copy_table::class_count(copy_table::unit_classes(t)));
  // the grouped table: in the kernel parameters when it fits, else uploaded (kept alive until the launch is queued)
  kernels::CopyTableParam inline_table;
  int64_t tiles = 0;
  const auto write = [&](int64_t* dst) { tiles = copy_table::write_unit_groups(t, kernels::kCopyTile, dst); };
  at::Tensor table;
  if (words > kernels::kCopyParamWords)
    table = cuda::upload_table(words, device, write);
  else
    write(inline_table.w);
  const int64_t* dev = table.defined() ? table.const_data_ptr<int64_t>() : nullptr;
  cuda::launch(kernels::copy_groups_kernel, cuda::blocks_for(tiles, 1), cuda::kThreads, 0, stream, inline_table, dev,
               p.rows, tiles);
}

// The guard follows tensors[0]; a tensor on another device is reported by cat_prepare with its position.
at::Tensor cat_cuda(at::TensorList tensors, int64_t dim) {
  cuda::OptionalDeviceGuard guard;
  if (!tensors.empty() && tensors[0].is_cuda()) guard.set_device(tensors[0].device());
  Prepared p;
  at::Tensor out = cat_prepare(tensors, dim, p);
  run_cuda(p, /*into_wide=*/true, out.device());
  return out;
}

std::vector<at::Tensor> split_cuda(const at::Tensor& input, c10::SymIntArrayRef sizes, int64_t dim) {
  const cuda::DeviceGuard guard(input.device());
  Prepared p;
  std::vector<at::Tensor> outs = split_prepare(input, sizes, dim, p);
  run_cuda(p, /*into_wide=*/false, input.device());
  return outs;
}

}  // namespace

TENSOROPS_CUDA_LIBRARY_IMPL(m) {
  m.impl("cat", &cat_cuda);
  m.impl("split", &split_cuda);
}

}  // namespace tensorops

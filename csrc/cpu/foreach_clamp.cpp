// The many-tensor clamp on the CPU: one parallel pass (parallel.h's policy) over the elements of every tensor in the list together
// (a list of small tensors runs on the calling thread), not one task per tensor. A task finds
// its first tensor by binary search over the prefix counts and walks the list from there, one contiguous run per
// tensor, with clamp's own inner loops (clamp_loops.h: math.h's value rules, AVX-512, AVX2 and baseline builds).
#pragma GCC optimize("no-trapping-math")  // as clamp.cpp: lets GCC turn the selects into vector blends

#include <algorithm>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "tensorops/copy_table.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/cpu_loop.h"
#include "tensorops/dispatch.h"
#include "tensorops/foreach_clamp_host.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/clamp.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

using clamp_host::Acc;
using foreach_clamp_host::from_bits;
using foreach_clamp_host::Item;

TENSOROPS_AVX512_BUILD
#include "clamp_loops.h"
TENSOROPS_AVX2_BUILD
#include "clamp_loops.h"
TENSOROPS_BASE_BUILD
#include "clamp_loops.h"
TENSOROPS_END_BUILDS

template <typename scalar_t>
void clamp_item(const Item& it, int64_t offset, int64_t n, bool has_lo, bool has_hi) {
  const scalar_t* x = static_cast<const scalar_t*>(it.x) + offset;
  scalar_t* y = static_cast<scalar_t*>(it.y) + offset;
  const scalar_t lo = from_bits<scalar_t>(it.lo), hi = from_bits<scalar_t>(it.hi);
  // number bounds in scalar_t, not NaN (the host sent NaN bounds to torch)
  either_switch(has_lo, has_hi, [&]<bool L, bool H>() {
    TENSOROPS_CPU_DISPATCH(clamp_run_fixed<scalar_t, typename Acc<scalar_t>::type, L, H>)(x, y, n, lo, hi);
  });
}

void run_items(const std::vector<Item>& items, bool has_lo, bool has_hi) {
  if (items.empty()) return;
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<int64_t> start(static_cast<size_t>(n) + 1, 0);
  for (int64_t s = 0; s < n; ++s) start[s + 1] = start[s] + items[s].numel;
  int64_t bytes = 0;  // read once, written once
  for (const Item& it : items) bytes += 2 * it.numel * static_cast<int64_t>(c10::elementSize(it.dtype));
  parallel_for_bytes(0, start[n], bytes, [&](int64_t begin, int64_t end) {
    for (int64_t s = copy_table::find_segment(start.data(), n, begin), q = begin; q < end; ++s) {
      const Item& it = items[s];
      const int64_t offset = q - start[s];
      const int64_t count = std::min(start[s + 1], end) - q;
      TENSOROPS_DISPATCH_FOREACH_CLAMP(it.dtype, "tensorops_foreach_clamp_cpu",
                                       [&] { clamp_item<scalar_t>(it, offset, count, has_lo, has_hi); });
      q += count;
    }
  });
}

std::vector<at::Tensor> foreach_clamp_scalar_cpu(at::TensorList tensors, const std::optional<at::Scalar>& min,
                                                 const std::optional<at::Scalar>& max) {
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/false, min, max);
  run_items(p.items, p.has_min, p.has_max);
  return p.outs;
}

void foreach_clamp_scalar_inplace_cpu(at::TensorList tensors, const std::optional<at::Scalar>& min,
                                      const std::optional<at::Scalar>& max) {
  foreach_clamp_host::Prepared p = foreach_clamp_host::prepare(tensors, /*inplace=*/true, min, max);
  run_items(p.items, p.has_min, p.has_max);
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("foreach_clamp_scalar", &foreach_clamp_scalar_cpu);
  m.impl("foreach_clamp_scalar_", &foreach_clamp_scalar_inplace_cpu);
}

}  // namespace tensorops

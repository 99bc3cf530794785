// The one place that decides whether a grid-stride CUDA loop may count with 32-bit integers.
//
// A grid-stride loop forms more indices than the element count suggests: a thread's counter starts below
// `step` (= blocks * items per block) and grows by `step` until it passes the last element, so the largest
// counter value the loop computes is below numel + step; a thread handling `per_thread` neighbours adds up to
// per_thread - 1 to a counter below numel; and every operand offset is at most the plan's largest offset.
// 32-bit indexing is safe iff all of these stay <= INT32_MAX. When they would not only because of the step,
// the grid is shrunk (each thread then loops more often) so the 32-bit path still serves every tensor up to
// about 2^31 elements.
//
// Dependency-free plain C++ on purpose: tests/test_index_width.py compiles it with the host compiler and
// checks the decision without a GPU.
#pragma once
#include <cstdint>

namespace tensorops {

struct IndexedLaunch {
  int64_t blocks;    // grid size (>= 1)
  bool use_int32;    // every index the loop forms fits in int32_t
};

// numel: elements the loop walks; max_offset: largest element offset of any operand (>= 0);
// items_per_block: indices one block covers per grid step (threads * per_thread);
// max_blocks: the caller's cap on the grid (a few blocks per SM for kernels with per-block partials, ...).
inline IndexedLaunch pick_indexed_launch(int64_t numel, int64_t max_offset, int64_t items_per_block,
                                         int64_t max_blocks = int64_t{1} << 24) {
  constexpr int64_t kMax32 = 2147483647;  // INT32_MAX
  if (items_per_block < 1) items_per_block = 1;
  if (max_blocks < 1) max_blocks = 1;
  int64_t blocks = (numel + items_per_block - 1) / items_per_block;
  if (blocks > max_blocks) blocks = max_blocks;
  if (blocks < 1) blocks = 1;
  IndexedLaunch r{blocks, false};
  if (numel < 0 || max_offset < 0 || max_offset > kMax32 || numel > kMax32) return r;
  // largest counter: below numel + step, i.e. numel - 1 + step (step = blocks * items_per_block) must fit
  const int64_t headroom = kMax32 - (numel > 0 ? numel - 1 : 0);  // room for one step
  const int64_t fit_blocks = headroom / items_per_block;
  if (fit_blocks < 1) return r;
  if (r.blocks > fit_blocks) r.blocks = fit_blocks;
  r.use_int32 = true;
  return r;
}

}  // namespace tensorops

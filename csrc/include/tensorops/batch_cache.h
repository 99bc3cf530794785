// Where the ops' large CPU outputs (the batches) come from: a small cache of freed blocks that keep their pages.
//
// glibc serves a request of a few MB with a fresh mmap every time (its dynamic mmap threshold only rises to the
// size of the block last freed, and a request of that same size is still at or above it), so each new 19 MB
// float batch page-faults and zero-fills its 4,700 pages: measured 4-6 ms of system time per batch of 32, more
// than the normalize that fills it (0.5 ms when its pages are already there). Blocks of at least kMinBytes come
// from here instead and go back to the cache when their tensor dies (up to kMaxBlocks blocks and kMaxBytes in
// all; the rest go back to the system); a request takes a cached block of its own size (in whole pages). The
// tensors are ordinary resizable CPU tensors. (Transparent huge pages were tried: a first batch then took 24 ms
// instead of 4, the kernel compacting memory for them.)
//
// After fork() a child never reuses its parent's blocks (each block remembers the process that allocated it):
// writing them would copy every page.
#pragma once
#include <cstddef>
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tensorops {
namespace batch_cache {

constexpr std::size_t kMinBytes = std::size_t{4} << 20;   // smaller requests: at::empty, as before
constexpr std::size_t kMaxBlocks = 4;                     // freed blocks kept
constexpr std::size_t kMaxBytes = std::size_t{256} << 20; // and their bytes in all

// at::empty(sizes, options.memory_format(format)), from the cache when on the CPU and at least kMinBytes.
at::Tensor empty(c10::IntArrayRef sizes, const at::TensorOptions& options, at::MemoryFormat format);
// at::empty_like(like, options, format) likewise (strides as empty_like gives them).
at::Tensor empty_like(const at::Tensor& like, const at::TensorOptions& options, at::MemoryFormat format);

struct Stats {
  int64_t hits, misses, cached_blocks, cached_bytes;
};
Stats stats();   // for the tests: a second batch of the same size must be a hit
void release();  // frees every cached block

}  // namespace batch_cache
}  // namespace tensorops

// Where the ops' large CPU outputs (the batches) come from: a small cache of freed blocks that keep their pages.
//
// glibc serves a request of a few MB with a fresh mmap every time (its dynamic mmap threshold only rises to the
// size of the block last freed, and a request of that same size is still at or above it), so each new 19 MB
// float batch page-faults and zero-fills its 4,700 pages: measured 4-6 ms of system time per batch of 32, more
// than the normalize that fills it (0.5 ms when its pages are already there). Blocks of at least kMinBytes come
// from here instead and go back to the cache when their tensor dies; a request takes a cached block of its own
// size (in whole pages), the most recently freed first. The tensors are ordinary resizable CPU tensors.
// (Transparent huge pages were tried: a first batch then took 24 ms instead of 4, the kernel compacting memory.)
//
// What the cache holds, and when it gives it back (every rule counts events, never time, so it is deterministic):
// - Budget: at most kMaxBlocks blocks and kMaxBytes in all. A freed block that does not fit evicts the blocks
//   freed before it, oldest first, until it fits (the newest is what the next batch asks for); a block larger
//   than kMaxBytes on its own goes straight back to the system.
// - Idle trim: a cached block that kIdleRequests requests in a row (allocations through the cache, of any size)
//   passed over goes back to the system at the last of them. In a training loop the batch's block is taken again
//   within a request or two; the blocks of a size nobody asks for any more (a validation pass's, a last partial
//   batch's) leave after kIdleRequests batches. A process that stops allocating batches keeps what it cached until
//   empty_cache() (tensorops.empty_cache()).
// - Each block is its own mmap, given back with munmap: the pages leave the process at once, whatever glibc's
//   dynamic mmap threshold has risen to (through malloc, a freed block under it would stay in the heap).
// - fork(): the child unmaps the free list it inherited (never writing it) and starts with an empty budget, so a
//   DataLoader worker neither counts its parent's blocks nor keeps copy-on-write duplicates of them alive while
//   the parent reuses them. A parent's block still alive in the child (a tensor) goes back to the system when it
//   dies (each block remembers the process that mapped it).
// - A DataPtr's context is its data pointer (the block's bookkeeping is in a page of the mapping just before the
//   data), which is what torch's copy-on-write storage (torch._lazy_clone) requires.
#pragma once
#include <cstddef>
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace tensorops {
namespace batch_cache {

constexpr std::size_t kMinBytes = std::size_t{4} << 20;   // smaller requests: at::empty, as before
constexpr std::size_t kMaxBlocks = 4;                     // freed blocks kept
constexpr std::size_t kMaxBytes = std::size_t{256} << 20; // and their bytes in all
constexpr int64_t kIdleRequests = 16;                     // requests that pass a cached block over before it leaves

// at::empty(sizes, options.memory_format(format)), from the cache when on the CPU and at least kMinBytes.
at::Tensor empty(c10::IntArrayRef sizes, const at::TensorOptions& options, at::MemoryFormat format);
// at::empty_like(like, options, format) likewise (strides as empty_like gives them).
at::Tensor empty_like(const at::Tensor& like, const at::TensorOptions& options, at::MemoryFormat format);

struct Stats {
  int64_t hits, misses;               // requests served from the cache / by a fresh mapping
  int64_t cached_blocks, cached_bytes;  // what the free list holds now
  int64_t evicted, trimmed;           // blocks given back to the system by the budget / by the idle trim
};
Stats stats();   // this process's (a fork child starts from zero)
void release();  // gives every cached block back to the system (tensorops.empty_cache())

}  // namespace batch_cache
}  // namespace tensorops

// The emulated CUDA device: runs tensorops' CUDA kernel source (csrc/include/tensorops/kernels/*.cuh) as plain
// C++ on the host, so every kernel executes on every CI run, on a machine without a GPU, and under
// AddressSanitizer + UBSan or ThreadSanitizer. Included instead of the CUDA runtime when TENSOROPS_EMULATED is
// defined (cuda_utils.cuh); nothing here is compiled into the shipped extension.
//
// The model, chosen so that the sanitizers see what a GPU would do wrong:
//  * One fiber per CUDA thread of a block (emu/fiber.h), all on the launching OS thread: a thread runs until it
//    waits at a barrier or leaves the kernel, then the next; the blocks of a launch run one after another. A launch
//    runs every block, or the subset set with set_block_filter() (first, last, the blocks whose
//    grid-stride counters pass 2^31 or 2^32 ...), so the index-width paths run on multi-GB tensors in seconds.
//  * `__shared__` is a static object per kernel instantiation (blocks never overlap, so one copy serves all);
//    dynamic shared memory (TENSOROPS_DYNAMIC_SHARED) is a heap block of exactly the launch's size, filled with
//    0xCD at the start of every block (shared memory starts undefined on a GPU): ASan reports a read or write
//    one past its end.
//  * __syncthreads is a barrier over the block's live threads (a thread that returned drops out, as on sm_70+).
//    Threads that meet at different __syncthreads calls are reported with both source lines.
//  * Warp collectives (__shfl_*_sync, __all/__any/__ballot_sync, __syncwarp) are an exchange among the 32 lanes of
//    a warp: only the full mask is emulated, and a lane that left before its warp's collective, or lanes that
//    meet at different call sites, are reported with the source line.
//  * Atomics are std::atomic_ref; everything else (memory, vector types with their alignment, c10::Half) is the
//    host's. ThreadSanitizer sees each fiber as a thread, ordered with the others only by barriers, atomics and
//    the block's start and end: a missing __syncthreads between a shared-memory write and another thread's read
//    is reported as a data race.
// What it cannot see: races between blocks (they run in turn), code under #ifdef __CUDA_ARCH__ (the host branch
// compiles instead), inline PTX, partial-mask collectives, FMA contraction (nvcc contracts a*b+c; g++ does not
// unless told), launch limits (registers, the 4 KB / 32 KB parameter limit), and speed. A thread that spins on
// another thread's write, with no barrier between, would wait forever (fibers switch only at barriers and exits;
// no kernel of csrc/ does so).
//
// Host side: kernels are launched through tensorops::cuda::launch (cuda_utils.cuh), which calls emu::launch here.
// The launch records its kernel's name (dladdr: the emulated build exports the kernels), its grid and the blocks
// it ran; the stand-ins for the CUDA runtime calls of the launch code (pinned blocks, host-to-device copies,
// capture status) record events too. The emulated extension (csrc/emulated/module.cpp) hands both to the tests.
#pragma once
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(16) float4 {
  float x, y, z, w;
};

inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};
constexpr int warpSize = 32;

// The device math library's min/max overloads (CUDA declares them at global scope).
#define TENSOROPS_EMU_MINMAX(T)                                    \
  inline T min(T a, T b) { return b < a ? b : a; }                \
  inline T max(T a, T b) { return a < b ? b : a; }
TENSOROPS_EMU_MINMAX(int)
TENSOROPS_EMU_MINMAX(unsigned int)
TENSOROPS_EMU_MINMAX(long)
TENSOROPS_EMU_MINMAX(unsigned long)
TENSOROPS_EMU_MINMAX(long long)
TENSOROPS_EMU_MINMAX(unsigned long long)
TENSOROPS_EMU_MINMAX(float)
TENSOROPS_EMU_MINMAX(double)
#undef TENSOROPS_EMU_MINMAX

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}

#include "tensorops/emu/launch.h"

namespace tensorops {
namespace emu {

// The calling kernel thread's place: its launch and its linear thread index in the block.
struct ThreadPlace {
  Launch* launch = nullptr;
  int thread = 0;
};
inline thread_local ThreadPlace place;

inline Launch& current_launch() {
  if (place.launch == nullptr) {
    std::fprintf(stderr, "tensorops emulator: a device intrinsic was called outside a kernel launch\n");
    std::abort();
  }
  return *place.launch;
}

// ---- what the launches and the runtime stand-ins did (read by the tests through the emulated module) -----------
struct Record {
  std::mutex m;
  std::vector<std::string> events;  // "launch <kernel> grid=G block=B smem=S ran=R entered=E", "pinned_alloc", ...
  // (R: blocks run, after the block filter; E: kernel threads that entered the body, over all those blocks)
  std::vector<int64_t> block_filter;  // blocks to run (negative: from the end); empty: all
  bool capturing = false;             // what stream_capturing() answers
};
inline Record& record() {
  static Record r;
  return r;
}
inline void add_event(std::string e) {
  Record& r = record();
  std::lock_guard<std::mutex> lock(r.m);
  r.events.push_back(std::move(e));
}

// The kernel's name from its address: the emulated build exports its kernels (namespace tensorops::kernels).
inline std::string kernel_name(const void* fn) {
  Dl_info info;
  if (dladdr(fn, &info) != 0 && info.dli_sname != nullptr && info.dli_saddr == fn) {
    int status = 0;
    char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = status == 0 && d != nullptr ? d : info.dli_sname;
    std::free(d);
    return name;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "<unnamed kernel at %p>", fn);
  return buf;
}

// Runs `body` (the kernel called with its arguments) as a launch of grid x block threads with `smem` bytes of
// dynamic shared memory. Launches never overlap (one device, one stream). Throws std::runtime_error naming the
// kernel when a thread failed (an emulator report, or an exception from the kernel body).
inline void launch(const void* kernel, dim3 grid, dim3 block, size_t smem, const std::function<void()>& body) {
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> serial(one_at_a_time);
  const std::string name = kernel_name(kernel);
  const int64_t nblocks = int64_t{grid.x} * grid.y * grid.z;
  const int threads = static_cast<int>(block.x * block.y * block.z);
  if (nblocks < 1 || threads < 1 || threads > 1024 || grid.y > 65535 || grid.z > 65535 ||
      grid.x > 2147483647u) {
    throw std::runtime_error("tensorops emulator: invalid launch configuration of " + name + ": grid (" +
                             std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " + std::to_string(grid.z) +
                             "), block of " + std::to_string(threads) + " threads");
  }
  std::vector<int64_t> run;
  {
    Record& r = record();
    std::lock_guard<std::mutex> lock(r.m);
    if (r.block_filter.empty()) {
      run.resize(static_cast<size_t>(nblocks));
      for (int64_t b = 0; b < nblocks; ++b) run[static_cast<size_t>(b)] = b;
    } else {
      for (int64_t b : r.block_filter) {
        const int64_t k = b < 0 ? nblocks + b : b;
        if (k >= 0 && k < nblocks) run.push_back(k);
      }
      std::sort(run.begin(), run.end());
      run.erase(std::unique(run.begin(), run.end()), run.end());
    }
  }
  Launch L(threads, smem);
  // One fiber per CUDA thread (emu/fiber.h), on this OS thread; the blocks run in turn.
  int64_t entered = 0;  // (block, thread) pairs that called the kernel body
  uint3 block_index{0, 0, 0};
  int64_t block_no = 0;
  const std::function<void(int)> enter = [&](int t) {  // restores the thread-locals of fiber t
    place = ThreadPlace{&L, t};
    blockDim = block;
    gridDim = grid;
    blockIdx = block_index;
    threadIdx = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
  };
  const std::function<void(int)> task = [&](int t) {
    {
      Quiet q;
      ++entered;
    }
    try {
      body();
    } catch (const Abort&) {
    } catch (const std::exception& e) {
      L.fail(std::string("exception in thread ") + std::to_string(t) + " of block " + std::to_string(block_no) + ": " +
             e.what());
    } catch (...) {
      L.fail(std::string("an exception that is not a std::exception in thread ") + std::to_string(t) + " of block " +
             std::to_string(block_no));
    }
    L.thread_exited(t);
  };
  for (const int64_t b : run) {
    L.begin_block();
    block_no = b;
    block_index = uint3{static_cast<unsigned>(b % grid.x), static_cast<unsigned>((b / grid.x) % grid.y),
                        static_cast<unsigned>(b / (int64_t{grid.x} * grid.y))};
    FiberPool::get().run_block(threads, task, enter);
    if (L.aborted()) break;
  }
  place = ThreadPlace{};
  add_event("launch " + name + " grid=" + std::to_string(nblocks) + " block=" + std::to_string(threads) +
            " smem=" + std::to_string(smem) + " ran=" + std::to_string(run.size()) +
            " entered=" + std::to_string(entered));
  if (L.aborted()) throw std::runtime_error("tensorops emulator: " + name + ": " + L.error());
}

inline unsigned char* dynamic_shared() { return current_launch().dynamic_shared(); }

template <typename T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp collectives move up to 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
inline int lane() { return place.thread % 32; }
inline void exchange(unsigned mask, uint64_t v, const char* what, const Site& site, uint64_t* all) {
  current_launch().warp_exchange(place.thread, mask, v, what, site, all);
}

}  // namespace emu
}  // namespace tensorops

// ---- device intrinsics --------------------------------------------------------------------------------------
inline void __syncthreads(std::source_location site = std::source_location::current()) {
  tensorops::emu::current_launch().syncthreads(site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, std::source_location site = std::source_location::current()) {
  uint64_t all[32];
  tensorops::emu::exchange(mask, 0, "__syncwarp", site, all);
}
namespace tensorops {
namespace emu {
// A shuffle: every lane deposits v; lane l reads the value of lane src_of(l % width) of its width-wide segment,
// or keeps its own where that is outside the segment.
template <typename T, typename Src>
inline T shuffle(unsigned mask, T v, int width, const char* what, const Site& site, Src src_of) {
  uint64_t all[32];
  exchange(mask, to_bits(v), what, site, all);
  const int l = lane();
  const int src = src_of(l % width);
  return src >= 0 && src < width ? from_bits<T>(all[(l / width) * width + src]) : v;
}
}  // namespace emu
}  // namespace tensorops

template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32,
                     std::source_location site = std::source_location::current()) {
  return tensorops::emu::shuffle(mask, v, width, "__shfl_sync", site,
                                 [&](int) { return (src % width + width) % width; });
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                          std::source_location site = std::source_location::current()) {
  return tensorops::emu::shuffle(mask, v, width, "__shfl_down_sync", site, [&](int l) { return l + int(delta); });
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                        std::source_location site = std::source_location::current()) {
  return tensorops::emu::shuffle(mask, v, width, "__shfl_up_sync", site, [&](int l) { return l - int(delta); });
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                         std::source_location site = std::source_location::current()) {
  return tensorops::emu::shuffle(mask, v, width, "__shfl_xor_sync", site, [&](int l) { return l ^ lane_mask; });
}
inline unsigned __ballot_sync(unsigned mask, int pred, std::source_location site = std::source_location::current()) {
  uint64_t all[32];
  tensorops::emu::exchange(mask, pred != 0, "__ballot_sync", site, all);
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= static_cast<unsigned>(all[i] != 0) << i;
  return r;
}
inline int __all_sync(unsigned mask, int pred, std::source_location site = std::source_location::current()) {
  uint64_t all[32];
  tensorops::emu::exchange(mask, pred != 0, "__all_sync", site, all);
  for (int i = 0; i < 32; ++i)
    if (all[i] == 0) return 0;
  return 1;
}
inline int __any_sync(unsigned mask, int pred, std::source_location site = std::source_location::current()) {
  uint64_t all[32];
  tensorops::emu::exchange(mask, pred != 0, "__any_sync", site, all);
  for (int i = 0; i < 32; ++i)
    if (all[i] != 0) return 1;
  return 0;
}

// ---- atomics ------------------------------------------------------------------------------------------------
template <typename T>
inline T atomicAdd(T* address, T v) {
  return std::atomic_ref<T>(*address).fetch_add(v);
}
template <typename T>
inline T atomicExch(T* address, T v) {
  return std::atomic_ref<T>(*address).exchange(v);
}
template <typename T>
inline T atomicCAS(T* address, T expected, T desired) {
  std::atomic_ref<T>(*address).compare_exchange_strong(expected, desired);
  return expected;
}

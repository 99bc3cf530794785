// When tensorops' CPU kernels use threads: one policy, written once, used by every CPU kernel.
//
// Waking torch's intra-op (OpenMP) threads has a price the caller pays at the end of the parallel region: it
// waits there until every woken thread has been scheduled and has finished its share. On an idle machine that
// wait is a few microseconds; on a machine whose cores are busy (a training loop, DataLoader workers, other
// jobs) a woken thread waits for a core, and the caller waits with it: milliseconds, for any amount of work.
// Measured on the 2-core build machine (AMD EPYC, 2 vCPUs, torch 2.14.1, torch's default 2 threads) with
// `python -m benchmarks.parallel_policy --load 2` (benchmarks/results/parallel_policy_load2.json; the
// machine's own load average was 5-9 from other jobs on top): a memory-bound pass (torch.clamp, reading and
// writing each byte once) of 0.5 to 64 MB took 7-64 ms with 2 threads and 0.09-2.3 ms on one thread; a clamp
// of a (32, 3, 224, 224) float32 batch took 12 ms vs 1.7 ms with two compilers running. Quiet, the same clamp
// takes 0.7 ms on 2 threads (README table). No fixed amount of work is right for both, so the policy has two
// parts:
//
// 1. kParallelMinBytes: below this many bytes of memory traffic (reads + writes) nothing is parallel, ever.
//    Below torch's own grain (at::internal::GRAIN_SIZE, 32768 elements: 256 KB of float32 traffic) threads
//    never paid in the sweep. 1 MB takes ~60 us on one thread at the rate below, so halving it saves several
//    times the few-us wait of a quiet machine's region. The machine was never quiet while this was written
//    (other sessions' builds), so this bound is not yet confirmed by the quiet sweep of parallel_policy.py
//    (2 threads vs 1 from 64 KB to 64 MB; the smallest size from which threads win by 10% or more), which
//    re-measures it. In bytes, not elements, so that it means the same for uint8 and float64.
// 2. Above it, threads are used only while they have recently paid off: each parallel region measures how
//    long the caller waited at its end for the other threads (the price above), and a pass goes parallel only
//    when its estimated single-thread time (bytes / kSerialBytesPerNs, the measured single-thread rate) is at
//    least kWaitFactor times the recent wait: the median of the last three, so that it takes two long waits
//    out of three to send passes to one thread (one hiccup of a quiet machine does not) and two short ones to
//    bring threads back (one lucky probe of a loaded machine, a worker still spinning, does not). While the
//    recent wait is long, passes run on the caller's thread, and one goes parallel now and then (a probe, at
//    most once per kProbeMinGapNs, backing off to kProbeMaxGapNs while the waits stay long) to notice that the
//    machine is quiet again.
//    Tried instead and measured worse (2026-12-02, `--load 2`): a team of tensorops' own helper threads that
//    claim 128 KB chunks from a shared counter, so that the caller never waits for a helper that has not
//    started. Under load it was slower than one thread (clamp (1,3,1,1) 1.57 vs 1.00 ms, normalize 1.71 vs
//    1.29 ms, stack of 8 images 0.36 vs 0.14 ms): a woken helper shares the caller's core or makes it wait for
//    its last chunk, and when quiet it was slower than torch's spinning OpenMP threads.
//
// With one intra-op thread (torch.set_num_threads(1), which DataLoader workers set) or inside another
// parallel region nothing is parallel and no thread is woken. Work that runs on one thread gets one slot
// (threads_for() == 1), so per-thread buffers are sized by the decision, not by the thread count.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include <ATen/Parallel.h>

namespace tensorops {

// (1) see above.
constexpr int64_t kParallelMinBytes = int64_t{1} << 20;
// Single-thread memory traffic rate of a simple pass, bytes per ns: parallel_policy.py measured 8 and 30
// (64 MB on one thread, two loaded runs); the middle, so the estimate errs neither way by more than 2x.
constexpr int64_t kSerialBytesPerNs = 16;
// A pass goes parallel when its single-thread time is at least this many times the recent wait.
constexpr int64_t kWaitFactor = 4;
constexpr int64_t kProbeMinGapNs = 100'000'000;   // 100 ms
constexpr int64_t kProbeMaxGapNs = 2'000'000'000;  // 2 s

namespace parallel_detail {
// A wait longer than this counts against threads; shorter ones count for them.
constexpr int64_t kQuietWaitNs = 200'000;
// The policy reads the median of the last kRecentWaits waits: one hiccup on a quiet machine (a page fault
// storm, a thread that slept) does not send passes to one thread, and one lucky probe on a loaded machine (a
// worker still spinning from the last region) does not bring threads back.
constexpr int kRecentWaits = 3;
struct State {
  std::atomic<int64_t> recent[kRecentWaits] = {};  // the last waits at the end of a parallel region, in ns
  std::atomic<uint32_t> next_slot{0};
  std::atomic<int64_t> next_probe_ns{0};  // no probe before this time
  std::atomic<int64_t> probe_gap_ns{kProbeMinGapNs};
  // what the policy decided, for benchmarks and tests (parallel_stats() in py_entry.cpp)
  std::atomic<int64_t> parallel_passes{0}, serial_by_wait{0}, probes{0}, long_waits{0};
};
inline State& state() {
  static State s;
  return s;
}
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// The median of the recent waits.
inline int64_t recent_wait() {
  State& s = state();
  int64_t a = s.recent[0].load(std::memory_order_relaxed), b = s.recent[1].load(std::memory_order_relaxed),
          c = s.recent[2].load(std::memory_order_relaxed);
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}
inline void record_wait(int64_t waited) {
  State& s = state();
  const uint32_t k = s.next_slot.fetch_add(1, std::memory_order_relaxed) % kRecentWaits;
  s.recent[k].store(waited, std::memory_order_relaxed);
  const int64_t gap = s.probe_gap_ns.load(std::memory_order_relaxed);
  if (waited > kQuietWaitNs) {  // the next probe comes later
    s.long_waits.fetch_add(1, std::memory_order_relaxed);
    s.probe_gap_ns.store(gap * 2 < kProbeMaxGapNs ? gap * 2 : kProbeMaxGapNs, std::memory_order_relaxed);
  } else if (recent_wait() <= kQuietWaitNs) {
    s.probe_gap_ns.store(kProbeMinGapNs, std::memory_order_relaxed);
  }
}
}  // namespace parallel_detail

// How many threads a pass moving `bytes` should use: 1 (the caller's thread alone) or torch's thread count.
inline int threads_for(int64_t bytes) {
  if (bytes < kParallelMinBytes) return 1;
  const int n = at::get_num_threads();
  if (n <= 1 || at::in_parallel_region()) return 1;
  using namespace parallel_detail;
  State& s = state();
  if (bytes / kSerialBytesPerNs >= kWaitFactor * recent_wait()) {
    s.parallel_passes.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  // recent waits cost more than threads would save: one thread, except for an occasional probe
  const int64_t t = now_ns();
  int64_t next = s.next_probe_ns.load(std::memory_order_relaxed);
  const int64_t gap = s.probe_gap_ns.load(std::memory_order_relaxed);
  if (t < next || !s.next_probe_ns.compare_exchange_strong(next, t + gap, std::memory_order_relaxed)) {
    s.serial_by_wait.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  s.probes.fetch_add(1, std::memory_order_relaxed);
  return n;
}

// f(begin, end) over [begin, end): on the caller's thread when threads == 1, else split evenly over torch's
// threads with at::parallel_for, timing the caller's wait at the end for the policy.
template <typename F>
void run_on(int threads, int64_t begin, int64_t end, const F& f) {
  if (begin >= end) return;
  if (threads <= 1) {
    f(begin, end);
    return;
  }
  using namespace parallel_detail;
  std::atomic<int64_t> caller_done{0};
  const int64_t grain = (end - begin + threads - 1) / threads;
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    f(b, e);
    if (at::get_thread_num() == 0) caller_done.store(now_ns(), std::memory_order_relaxed);
  });
  const int64_t done = caller_done.load(std::memory_order_relaxed);
  if (done > 0) record_wait(now_ns() - done);
}

// The slot of per-thread buffers for the current task of run_on(threads, ...): 0 when it runs on one thread.
inline int thread_slot(int threads) { return threads <= 1 ? 0 : at::get_thread_num(); }

// The policy and the run in one: f(begin, end) over [begin, end), a pass that moves `bytes` in all.
template <typename F>
void parallel_for_bytes(int64_t begin, int64_t end, int64_t bytes, const F& f) {
  run_on(threads_for(bytes), begin, end, f);
}

}  // namespace tensorops

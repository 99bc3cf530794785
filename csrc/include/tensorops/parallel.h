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
// 2. Above it, threads are used only while they have recently paid off. Each parallel region measures the
//    caller's own share (from the start until thread 0 finished its part) and how long it then waited for the
//    other threads (the price above), and records their ratio. With n threads a region beats one thread when
//    the wait is under (n - 1) times the caller's share (the caller did 1/n of the work in its share); a pass
//    goes parallel while the recent ratio (the median of the last three, so that one hiccup of a quiet
//    machine or one lucky probe of a busy one changes nothing) is at most 3/4 of that: threads then save an
//    eighth of the time or more. (At half of it, to 2026-12-03, a quiet machine's stack of 8 images, whose
//    woken thread starts about 0.6 of the caller's share late, stayed on one thread at 0.81x torch; at 3/4 it
//    runs parallel at 1.18x. A busy machine's ratios are 1.3 to 37 in `--load 2` runs.) The ratio does not
//    depend on the pass's size or op: a quiet machine's waits grow with the pass (one thread's share runs into
//    page faults or starts late), a busy machine's waits are milliseconds whatever the work. While the ratio
//    is high, passes run on the caller's thread, and one goes parallel now and then (a probe, at most once per
//    kProbeMinGapNs, backing off to kProbeMaxGapNs while the ratios stay high) to notice that the machine is
//    quiet again. A probe whose threads paid is followed by another on the next pass, so that two good
//    regions in a row turn threads back on: with only the backed-off probes, a process whose DataLoader
//    workers had just stopped (2-worker epochs, then the same collate with 0 workers) ran about a second of
//    passes on one thread at half speed (eval, 1,385 vs 2,560 images/s) before the median came round.
//    The caller's share is timed twice: by the wall clock and by the CPU time its thread got. When the
//    machine is busy the scheduler takes the caller's core away in the middle of its share (the woken
//    threads, spinning at the end of the region, compete for the same cores), and the share's wall time grows
//    while the region's wait may not: a cat of 10,000 small tensors under `--load 2` stayed parallel (56
//    passes, a recorded ratio of 0, 223 ms descheduled in all) at 16 ms a call, 0.17x torch; it takes 0.2 ms
//    on one thread. So the time lost is the wait plus the share's wall time beyond its CPU time (the thread's
//    CPU clock, one system call at each end of the share), and the ratio is that over the share's CPU time:
//    the same cat now goes to one thread after the first costly region, 5.2-5.6x torch under `--load 2`.
//    Under load torch's own parallel passes come in runs of good (0.35-0.5 ms for a (32, 3, 224, 224) clamp,
//    faster than quiet) and bad (about 8 ms) calls. Measured 2026-12-03 (two busy processes, six rounds of 40
//    calls, torch's mean time / tensorops' mean time, median of the rounds): clamp with number bounds 2.9x,
//    with (1, 3, 1, 1) bounds 4.4x, cat of 10,000 (64,) 2.2x under this policy; 0.91x, 0.91x, 0.50x with
//    threads forced on every pass; 1.5x, 2.2x, 2.1x with one thread forced. The probes catch the good runs.
//    Before (to 2026-12-02) the policy compared the absolute wait with an estimate of the pass's one-thread
//    time: a large pass's proportional wait on a quiet machine (clip_grad_value_'s 47 MB: 0.5 ms) then kept
//    every smaller pass after it (a stack of 8 images) on one thread at half torch's speed.
//    Tried instead and measured worse (2026-12-02, `--load 2`): a team of tensorops' own helper threads that
//    claim 128 KB chunks from a shared counter, so that the caller never waits for a helper that has not
//    started. Under load it was slower than one thread (clamp (1,3,1,1) 1.57 vs 1.00 ms, normalize 1.71 vs
//    1.29 ms, stack of 8 images 0.36 vs 0.14 ms): a woken helper shares the caller's core or makes it wait for
//    its last chunk, and when quiet it was slower than torch's spinning OpenMP threads.
//
// With one intra-op thread (torch.set_num_threads(1), which DataLoader workers set) or inside another
// parallel region nothing is parallel and no thread is woken. A region whose range makes one task (at most one
// grain: a one-image decode on 2 threads, a one-chunk reduction) runs inline on the caller's thread and is not
// recorded: at::parallel_for would run it serially too, and its "wait" says nothing about threads (three
// one-image decodes once moved the recent ratio from 58 to 535 and turned threads off). Reductions keep no
// per-thread buffers: their partial sums follow fixed chunks of the index range (cpu_loop.h, cpu_for_each_chunk),
// so that their bits depend neither on the thread count nor on this policy's decisions.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include <ATen/Parallel.h>

namespace tensorops {

// (1) see above.
constexpr int64_t kParallelMinBytes = int64_t{1} << 20;
constexpr int64_t kProbeMinGapNs = 100'000'000;   // 100 ms
constexpr int64_t kProbeMaxGapNs = 2'000'000'000;  // 2 s

namespace parallel_detail {
// Ratios (wait / caller's share) are kept in 1/1024ths.
constexpr int64_t kRatioOne = 1024;
constexpr int kRecentRatios = 3;
struct State {
  std::atomic<int64_t> recent[kRecentRatios] = {};  // the last regions' wait / caller's share, in 1/1024ths
  std::atomic<uint32_t> next_slot{0};
  std::atomic<int64_t> next_probe_ns{0};  // no probe before this time
  std::atomic<int64_t> probe_gap_ns{kProbeMinGapNs};
  // what the policy decided, for benchmarks and tests (parallel_stats() in py_entry.cpp)
  std::atomic<int64_t> parallel_passes{0}, serial_passes{0}, probes{0}, costly_regions{0};
  std::atomic<int64_t> descheduled_ns{0};  // the callers' shares' wall time beyond their CPU time, in all
  std::atomic<int64_t> recorded_regions{0};  // regions whose timings were recorded (record_region)
  // Test hook (tensorops._C._force_thread_policy): 0 the policy decides (2), 1 one thread, 2 all of torch's
  // threads. Part (1) and the one-thread cases still apply.
  std::atomic<int> forced{0};
};
inline State& state() {
  static State s;
  return s;
}
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// CPU time the calling thread has had (user + system), in ns; -1 where the clock is not available.
inline int64_t thread_cpu_ns() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
#endif
  return -1;
}
// The median of the recent ratios.
inline int64_t recent_ratio() {
  State& s = state();
  int64_t a = s.recent[0].load(std::memory_order_relaxed), b = s.recent[1].load(std::memory_order_relaxed),
          c = s.recent[2].load(std::memory_order_relaxed);
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}
// The highest recent ratio at which threads still pay well with n threads: 3/4 of the break-even n - 1.
inline int64_t paying_ratio(int n) { return (n - 1) * kRatioOne * 3 / 4; }
// A region that ran on n threads: the caller's share took share_ns by the wall clock, of which its thread ran
// share_cpu_ns (-1: unknown), then it waited waited_ns for the other threads.
inline void record_region(int n, int64_t share_ns, int64_t share_cpu_ns, int64_t waited_ns) {
  State& s = state();
  int64_t lost = waited_ns, ran = share_ns;
  if (share_cpu_ns >= 0 && share_cpu_ns < share_ns) {  // descheduled during its share
    s.descheduled_ns.fetch_add(share_ns - share_cpu_ns, std::memory_order_relaxed);
    lost += share_ns - share_cpu_ns;
    ran = share_cpu_ns;
  }
  const int64_t ratio = lost * kRatioOne / (ran > 1000 ? ran : 1000);
  s.recorded_regions.fetch_add(1, std::memory_order_relaxed);
  const uint32_t k = s.next_slot.fetch_add(1, std::memory_order_relaxed) % kRecentRatios;
  s.recent[k].store(ratio, std::memory_order_relaxed);
  const int64_t gap = s.probe_gap_ns.load(std::memory_order_relaxed);
  if (ratio > paying_ratio(n)) {  // the next probe comes later
    s.costly_regions.fetch_add(1, std::memory_order_relaxed);
    s.probe_gap_ns.store(gap * 2 < kProbeMaxGapNs ? gap * 2 : kProbeMaxGapNs, std::memory_order_relaxed);
  } else if (recent_ratio() <= paying_ratio(n)) {
    s.probe_gap_ns.store(kProbeMinGapNs, std::memory_order_relaxed);
  } else {  // threads paid, the older ratios still say no: the next pass probes at once (see (2) above)
    s.next_probe_ns.store(0, std::memory_order_relaxed);
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
  const int forced = s.forced.load(std::memory_order_relaxed);
  if (forced == 1 || forced == 2) {  // the test hook
    (forced == 1 ? s.serial_passes : s.parallel_passes).fetch_add(1, std::memory_order_relaxed);
    return forced == 1 ? 1 : n;
  }
  if (recent_ratio() <= paying_ratio(n)) {
    s.parallel_passes.fetch_add(1, std::memory_order_relaxed);
    return n;
  }
  // recent waits cost more than threads would save: one thread, except for an occasional probe
  const int64_t t = now_ns();
  int64_t next = s.next_probe_ns.load(std::memory_order_relaxed);
  const int64_t gap = s.probe_gap_ns.load(std::memory_order_relaxed);
  if (t < next || !s.next_probe_ns.compare_exchange_strong(next, t + gap, std::memory_order_relaxed)) {
    s.serial_passes.fetch_add(1, std::memory_order_relaxed);
    return 1;
  }
  s.probes.fetch_add(1, std::memory_order_relaxed);
  return n;
}

// f(begin, end) over [begin, end): on the caller's thread when threads == 1 or when the range makes only one
// task (at most one grain), else split evenly over torch's threads with at::parallel_for, timing the caller's
// share and its wait at the end for the policy. Only regions that ran on threads are recorded.
template <typename F>
void run_on(int threads, int64_t begin, int64_t end, const F& f) {
  if (begin >= end) return;
  const int64_t grain = threads <= 1 ? end - begin : (end - begin + threads - 1) / threads;
  if (end - begin <= grain) {  // one task: nothing to wait for, nothing to learn about threads
    f(begin, end);
    return;
  }
  using namespace parallel_detail;
  std::atomic<int64_t> caller_done{0}, caller_cpu_done{-1};
  const int64_t start = now_ns(), start_cpu = thread_cpu_ns();
  at::parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    f(b, e);
    if (at::get_thread_num() == 0) {  // the caller's thread
      caller_cpu_done.store(thread_cpu_ns(), std::memory_order_relaxed);
      caller_done.store(now_ns(), std::memory_order_relaxed);
    }
  });
  const int64_t done = caller_done.load(std::memory_order_relaxed);
  const int64_t cpu_done = caller_cpu_done.load(std::memory_order_relaxed);
  if (done > 0)
    record_region(threads, done - start, start_cpu >= 0 && cpu_done >= 0 ? cpu_done - start_cpu : -1, now_ns() - done);
}

// The policy and the run in one: f(begin, end) over [begin, end), a pass that moves `bytes` in all.
template <typename F>
void parallel_for_bytes(int64_t begin, int64_t end, int64_t bytes, const F& f) {
  run_on(threads_for(bytes), begin, end, f);
}

}  // namespace tensorops

// The emulated device's launch state (included by emu/device.h, nothing else): one running launch's block
// barriers, warp exchanges and failure, shared by the fibers that run its CUDA threads (emu/fiber.h). What a
// divergent barrier or collective reports is decided here, and where the threads of a block are ordered: a
// barrier that opens orders what every thread did before it before what any does after (for ThreadSanitizer,
// a release and an acquire per barrier), as on a GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "tensorops/emu/fiber.h"

namespace tensorops {
namespace emu {

using Site = std::source_location;

inline std::string where(const Site& s) { return std::string(s.file_name()) + ":" + std::to_string(s.line()); }
inline bool same_site(const Site& a, const Site& b) {
  return a.line() == b.line() && a.column() == b.column() && std::strcmp(a.file_name(), b.file_name()) == 0;
}

// Thrown inside a kernel thread to leave the kernel once the launch has failed (caught by the launch).
struct Abort {};

// The state of one running launch, shared by its fibers (touched in Quiet scopes only: its own accesses are no
// ordering between CUDA threads). A waiting thread yields to the others until its barrier opens.
class Launch {
 public:
  Launch(int threads, size_t smem) : threads_(threads), smem_bytes_(smem), warps_((threads + 31) / 32) {}

  // ---- block lifecycle (called by emu::launch on the launching thread) ----
  void begin_block() {  // by the launcher, before the threads start a block
    Quiet q;
    live_ = threads_;
    sync_arrived_ = 0;
    waiting_ = 0;
    for (size_t w = 0; w < warps_.size(); ++w) {
      Warp& wp = warps_[w];
      wp.size = std::min(32, threads_ - static_cast<int>(w) * 32);
      wp.live = wp.size;
      wp.arrived = 0;
    }
    smem_.reset(new unsigned char[smem_bytes_]);
    if (smem_bytes_) std::memset(smem_.get(), 0xCD, smem_bytes_);
  }
  unsigned char* dynamic_shared() { return smem_.get(); }

  // A thread left the kernel body (returned, or aborted): it drops out of the block's and its warp's barriers.
  void thread_exited(int t) {
    Quiet q;
    --live_;
    if (sync_arrived_ > 0 && sync_arrived_ == live_) release_sync(sync_arrived_);
    Warp& w = warps_[t / 32];
    --w.live;
    if (w.arrived > 0 && w.arrived == w.live) {
      fail_quiet("lane " + std::to_string(t % 32) + " of warp " + std::to_string(t / 32) +
                  " left the kernel while the other lanes wait at the full-mask warp collective at " +
                  where(w.site));
      release_warp(w, w.arrived);
    }
    check_deadlock();
  }

  // ---- __syncthreads ----
  void syncthreads(const Site& site) {
    uint64_t gen = 0;
    bool wait = false;
    {
      Quiet q;
      check_abort();
      if (sync_arrived_ == 0) {
        sync_site_ = site;
      } else if (!same_site(site, sync_site_)) {
        fail_quiet("threads of one block wait at different __syncthreads: " + where(sync_site_) + " and " +
                    where(site));
        throw Abort{};
      }
      gen = sync_gen_;
      release(&sync_hb_[gen & 1]);
      ++sync_arrived_;
      if (sync_arrived_ == live_) {
        release_sync(sync_arrived_ - 1);
      } else {
        park();
        wait = true;
      }
    }
    if (wait) wait_until([&] { return sync_gen_ != gen || aborted_; });
    acquire(&sync_hb_[gen & 1]);
  }

  // ---- warp collectives: every live lane deposits 8 bytes, all see every lane's ----
  void warp_exchange(int t, unsigned mask, uint64_t value, const char* what, const Site& site, uint64_t* all) {
    Warp& w = warps_[t / 32];
    uint64_t gen = 0;
    bool wait = false;
    {
      Quiet q;
      check_abort();
      if (mask != 0xffffffffu) {
        fail_quiet(std::string(what) + " with mask " + std::to_string(mask) + " at " + where(site) +
                    ": only the full mask is emulated");
        throw Abort{};
      }
      if (w.size != 32) {
        fail_quiet(std::string(what) + " at " + where(site) + " in a warp of " + std::to_string(w.size) +
                    " threads (the block size is not a multiple of 32)");
        throw Abort{};
      }
      if (w.arrived == 0) {
        w.site = site;
      } else if (!same_site(site, w.site)) {
        fail_quiet("lanes of warp " + std::to_string(t / 32) + " meet at different warp collectives: " +
                    where(w.site) + " and " + std::string(what) + " at " + where(site));
        throw Abort{};
      }
      gen = w.gen;
      release(&w.hb[gen & 1]);
      w.slot[t % 32] = value;
      ++w.arrived;
      if (w.arrived == w.live) {
        if (w.live != 32) {
          fail_quiet(std::string(what) + " at " + where(site) + ": " + std::to_string(32 - w.live) +
                      " lane(s) of warp " + std::to_string(t / 32) + " already left the kernel (full mask)");
          release_warp(w, w.arrived - 1);
          throw Abort{};
        }
        std::memcpy(w.result, w.slot, sizeof(w.slot));
        release_warp(w, w.arrived - 1);
      } else {
        park();
        wait = true;
      }
    }
    if (wait) wait_until([&] { return w.gen != gen || aborted_; });
    acquire(&w.hb[gen & 1]);
    Quiet q;
    std::memcpy(all, w.result, sizeof(w.result));
  }

  // ---- failures ----
  void fail(const std::string& msg) {
    Quiet q;
    fail_quiet(msg);
  }
  bool aborted() {
    Quiet q;
    return aborted_;
  }
  std::string error() {
    Quiet q;
    return error_;
  }

 private:
  struct Warp {
    int size = 32, live = 32, arrived = 0;
    uint64_t gen = 0;
    Site site;
    uint64_t slot[32] = {}, result[32] = {};
    char hb[2] = {};  // the release / acquire of exchanges of even and odd generations
  };
  // Yields to the other fibers until pred() (read in a Quiet scope) holds; then throws Abort if the launch failed.
  template <typename P>
  void wait_until(const P& pred) {
    for (;;) {
      {
        Quiet q;
        if (pred()) {
          check_abort();
          return;
        }
      }
      FiberPool::get().yield();
    }
  }
  // `parked`: the threads waiting at the barrier being released (the releasing thread is not one of them).
  void release_sync(int parked) {
    sync_arrived_ = 0;
    ++sync_gen_;
    waiting_ -= parked;
  }
  void release_warp(Warp& w, int parked) {
    w.arrived = 0;
    ++w.gen;
    waiting_ -= parked;
  }
  // A thread is about to wait at a barrier. When every live thread of the block waits and none of the barriers can
  // open (threads split between __syncthreads and a warp collective, or between two warp collectives), a GPU
  // hangs: report it instead.
  void park() {
    ++waiting_;
    check_deadlock();
  }
  void check_deadlock() {
    if (live_ > 0 && waiting_ == live_ && !aborted_) {
      fail_quiet("deadlock: all " + std::to_string(live_) +
                  " live threads of the block wait at barriers that cannot open (" + std::to_string(sync_arrived_) +
                  " at __syncthreads " + (sync_arrived_ ? where(sync_site_) : std::string("-")) +
                  ", the rest at warp collectives)");
    }
  }
  void check_abort() {
    if (aborted_) throw Abort{};
  }
  // (callers are in a Quiet scope)
  void fail_quiet(const std::string& msg) {
    if (!aborted_) error_ = msg;
    aborted_ = true;  // the waiting threads see it when next resumed
  }

  const int threads_;
  const size_t smem_bytes_;
  std::unique_ptr<unsigned char[]> smem_;
  int live_ = 0, sync_arrived_ = 0, waiting_ = 0;
  uint64_t sync_gen_ = 0;
  Site sync_site_;
  char sync_hb_[2] = {};  // the release / acquire of __syncthreads of even and odd generations
  std::vector<Warp> warps_;
  bool aborted_ = false;
  std::string error_;
};

}  // namespace emu
}  // namespace tensorops

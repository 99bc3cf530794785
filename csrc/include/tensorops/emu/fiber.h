// The emulated device's CUDA threads as fibers (included by emu/launch.h, nothing else).
//
// Every CUDA thread of a block is a fiber with a stack of its own (ucontext), and every fiber runs on the OS
// thread that launched the kernel: a fiber runs until it waits at a barrier or leaves the kernel, then the next
// runs. Measured on the 2-core CI machine, one OS thread per CUDA thread (created per launch, woken per block)
// spent four fifths of the emulated tier in the kernel (thread creation, futexes): 62 s for the plain build's
// tests, 17 s of them user time.
//
// What the sanitizers see is unchanged by running the threads in turn:
//  * ThreadSanitizer decides races by happens-before, not by timing. Every fiber is a TSan fiber, switched to and
//    from without synchronisation (__tsan_switch_to_fiber_no_sync); ordering between CUDA threads comes only from
//    where a GPU orders them - a barrier's release and acquire (Launch), atomics, the start and end of a block -
//    so a shared-memory write and another thread's read with no __syncthreads between them is still a data race.
//    The emulator's own bookkeeping, which every fiber touches, runs in a Quiet scope (accesses not recorded).
//  * AddressSanitizer is told of every stack switch (__sanitizer_start/finish_switch_fiber), so its reports and
//    its handling of exceptions see the fiber's stack.
#pragma once
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define TENSOROPS_EMU_TSAN 1
// exported by the TSan runtime (tsan_interface.cpp), not declared in its public header: accesses of the calling
// thread or fiber are not recorded between the two
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#else
#define TENSOROPS_EMU_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define TENSOROPS_EMU_ASAN 1
#else
#define TENSOROPS_EMU_ASAN 0
#endif

namespace tensorops {
namespace emu {

// A scope whose memory accesses ThreadSanitizer does not record: the emulator's state shared by every fiber. It
// must not span a fiber switch (the ignore is per fiber).
struct Quiet {
#if TENSOROPS_EMU_TSAN
  Quiet() { __tsan_ignore_thread_begin(); }
  ~Quiet() { __tsan_ignore_thread_end(); }
#else
  Quiet() {}
#endif
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;
};

// Happens-before edges for ThreadSanitizer (no-ops in the other builds): what a fiber did before release(a) is
// ordered before what any fiber does after a later acquire(a).
inline void release(void* a) {
#if TENSOROPS_EMU_TSAN
  __tsan_release(a);
#else
  (void)a;
#endif
}
inline void acquire(void* a) {
#if TENSOROPS_EMU_TSAN
  __tsan_acquire(a);
#else
  (void)a;
#endif
}

// The fibers of the running block. One launch at a time (emu::launch holds a lock), so one pool serves the
// process; fibers are made on first need (up to the largest block seen) and kept.
class FiberPool {
 public:
  static FiberPool& get() {
    static FiberPool pool;
    return pool;
  }

  // Runs task(t) for t in [0, threads), each in fiber t, until every one has returned; enter(t) is called on the
  // launching thread before each switch into fiber t (it restores the thread-local threadIdx and the like).
  // Neither may throw out.
  void run_block(int threads, const std::function<void(int)>& task, const std::function<void(int)>& enter) {
    {
      Quiet q;
      while (static_cast<int>(fibers_.size()) < threads) fibers_.push_back(make(static_cast<int>(fibers_.size())));
      task_ = &task;
      for (int t = 0; t < threads; ++t) fibers_[t]->state = State::ready;
    }
    release(&start_);
    for (int live = threads; live > 0;) {
      for (int t = 0; t < threads; ++t) {
        Fiber* f;
        {
          Quiet q;
          f = fibers_[t];
          if (f->state == State::done) continue;
          current_ = f;
          enter(t);
        }
        resume(f);
        Quiet q;
        if (f->state == State::done) --live;
      }
    }
    acquire(&end_);
  }

  // Called by a fiber waiting at a barrier: lets the others run; returns when the launching thread resumes it.
  void yield() {
    Fiber* f;
    {
      Quiet q;
      f = current_;
      f->state = State::waiting;
    }
    to_launcher(f);
  }

 private:
  enum class State { ready, waiting, done };
  struct Fiber {
    ucontext_t ctx;
    void* stack = nullptr;
    void* tsan = nullptr;        // TSan's fiber
    void* fake_stack = nullptr;  // ASan's, saved across a switch out of the fiber
    int index = 0;
    State state = State::done;
  };
  static constexpr size_t kStack = size_t(256) << 10;

  FiberPool() = default;

  static void entry() {
    FiberPool& p = get();
    Fiber* f;
    {
      Quiet q;
      f = p.current_;
    }
#if TENSOROPS_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &p.launcher_bottom_, &p.launcher_size_);
#endif
    for (;;) {
      const std::function<void(int)>* task;
      {
        Quiet q;
        task = p.task_;
      }
      acquire(&p.start_);
      (*task)(f->index);
      release(&p.end_);
      {
        Quiet q;
        f->state = State::done;
      }
      p.to_launcher(f);
    }
  }

  Fiber* make(int index) {
    Fiber* f = new Fiber;
    f->index = index;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* mem = mmap(nullptr, kStack + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (mem == MAP_FAILED || mprotect(mem, page, PROT_NONE) != 0) {  // a guard page below the stack
      std::fprintf(stderr, "tensorops emulator: cannot map a fiber stack\n");
      std::abort();
    }
    f->stack = static_cast<char*>(mem) + page;
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = kStack;
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, &FiberPool::entry, 0);
    // The stack is known from here on (makecontext set it up); with no size recorded, ASan's swapcontext
    // interceptor leaves the shadow of the fiber's suspended frames (their redzones) as it is.
    f->ctx.uc_stack.ss_size = 0;
#if TENSOROPS_EMU_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    return f;
  }

  // launching thread -> fiber f, back when f yields or finishes its task
  void resume(Fiber* f) {
#if TENSOROPS_EMU_TSAN
    void* self = __tsan_get_current_fiber();
    {
      Quiet q;
      launcher_tsan_ = self;
    }
    __tsan_switch_to_fiber(f->tsan, __tsan_switch_to_fiber_no_sync);
#endif
#if TENSOROPS_EMU_ASAN
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f->stack, kStack);
#endif
    swapcontext(&launcher_, &f->ctx);
#if TENSOROPS_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }

  // fiber f -> the launching thread; returns when f is resumed
  void to_launcher(Fiber* f) {
#if TENSOROPS_EMU_TSAN
    void* to;
    {
      Quiet q;
      to = launcher_tsan_;
    }
    __tsan_switch_to_fiber(to, __tsan_switch_to_fiber_no_sync);
#endif
#if TENSOROPS_EMU_ASAN
    __sanitizer_start_switch_fiber(&f->fake_stack, launcher_bottom_, launcher_size_);
#endif
    swapcontext(&f->ctx, &launcher_);
#if TENSOROPS_EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake_stack, &launcher_bottom_, &launcher_size_);
#endif
  }

  std::vector<Fiber*> fibers_;
  const std::function<void(int)>* task_ = nullptr;
  Fiber* current_ = nullptr;
  ucontext_t launcher_{};  // the launching thread's context while a fiber runs (uc_stack left empty, as above)
  void* launcher_tsan_ = nullptr;
  const void* launcher_bottom_ = nullptr;
  size_t launcher_size_ = 0;
  char start_ = 0, end_ = 0;  // happens-before: the launching thread -> a block's fibers -> the launching thread
};

}  // namespace emu
}  // namespace tensorops

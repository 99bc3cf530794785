// The cache of large CPU output blocks (batch_cache.h).
#include "tensorops/batch_cache.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <new>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

namespace tensorops {
namespace batch_cache {
namespace {

constexpr std::size_t kPage = 4096;  // blocks are whole pages, and a size matches its own

// The first page of each mapping; the data starts on the next one. Read (never written) in a fork child.
struct Block {
  std::size_t bytes;  // of data, a multiple of kPage
  pid_t pid;          // the process that mapped it
  int64_t freed_at;   // the request count when it entered the free list (the idle trim's clock)
};

void* data_of(Block* b) { return reinterpret_cast<char*>(b) + kPage; }
Block* block_of(void* data) { return reinterpret_cast<Block*>(static_cast<char*>(data) - kPage); }

Block* map_block(std::size_t bytes, pid_t pid) {
  void* p = mmap(nullptr, kPage + bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return new (p) Block{bytes, pid, 0};
}

void unmap_block(Block* b) {
  const std::size_t length = kPage + b->bytes;
  munmap(b, length);
}

class Cache final : public c10::Allocator {
 public:
  Cache() {
    free_.reserve(kMaxBlocks + 1);  // give_back and the fork child handler never allocate
    pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
  }

  c10::DataPtr allocate(std::size_t n) override {
    if (n == 0) return {nullptr, c10::Device(c10::DeviceType::CPU)};  // a storage resized to nothing
    const std::size_t bytes = (n + kPage - 1) / kPage * kPage;
    const pid_t pid = getpid();
    Block* b = take(bytes, pid);
    if (b == nullptr) {
      b = map_block(bytes, pid);
      TORCH_CHECK_WITH(OutOfMemoryError, b != nullptr, "tensorops: could not allocate ", bytes,
                       " bytes for a batch");
    }
    void* data = data_of(b);
    // context == data: the only DataPtr torch's copy-on-write (torch._lazy_clone) wraps and later unwraps
    return {data, data, &Cache::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  Stats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return {hits_, misses_, static_cast<int64_t>(free_.size()), static_cast<int64_t>(cached_bytes_), evicted_,
            trimmed_};
  }

  void release() {
    std::vector<Block*> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      drop.assign(free_.begin(), free_.end());
      free_.clear();
      cached_bytes_ = 0;
    }
    for (Block* b : drop) unmap_block(b);
  }

  static Cache& get() {
    static Cache* cache = new Cache();  // never destroyed: tensors may die after static destructors ran
    return *cache;
  }

 private:
  // At most kMaxBlocks + 1 blocks leave at once: held on the stack, unmapped outside the lock.
  struct Drops {
    Block* blocks[kMaxBlocks + 1];
    std::size_t n = 0;
    void add(Block* b) { blocks[n++] = b; }
    ~Drops() {
      for (std::size_t i = 0; i < n; ++i) unmap_block(blocks[i]);
    }
  };

  // Under mu_: removes free_[i] from the free list.
  Block* remove(std::size_t i) {
    Block* b = free_[i];
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    cached_bytes_ -= b->bytes;
    return b;
  }

  Block* take(std::size_t bytes, pid_t pid) {
    Drops drops;  // unmapped after the lock is released (declared first: destroyed last)
    std::lock_guard<std::mutex> g(mu_);
    ++requests_;
    Block* found = nullptr;
    for (std::size_t i = free_.size(); i-- > 0;) {  // the most recently freed first
      if (free_[i]->bytes == bytes && free_[i]->pid == pid) {
        found = remove(i);
        break;
      }
    }
    ++(found != nullptr ? hits_ : misses_);
    for (std::size_t i = 0; i < free_.size();) {  // the idle trim (batch_cache.h)
      if (requests_ - free_[i]->freed_at >= kIdleRequests) {
        drops.add(remove(i));
        ++trimmed_;
      } else {
        ++i;
      }
    }
    return found;
  }

  static void give_back(void* data) {
    Block* b = block_of(data);
    Cache& c = get();
    Drops drops;
    if (b->pid != getpid() || b->bytes > kMaxBytes) {  // a parent's block dying in a child; one over the budget
      drops.add(b);
      return;
    }
    std::lock_guard<std::mutex> g(c.mu_);
    b->freed_at = c.requests_;
    c.free_.push_back(b);  // newest last
    c.cached_bytes_ += b->bytes;
    while (c.free_.size() > kMaxBlocks || c.cached_bytes_ > kMaxBytes) {  // never b itself: it fits alone
      drops.add(c.remove(0));
      ++c.evicted_;
    }
  }

  // fork() while another thread holds the lock would leave it held in the child forever
  static void before_fork() { get().mu_.lock(); }
  static void after_fork_in_parent() { get().mu_.unlock(); }
  // The child gives back the free list it inherited without writing a page of it (munmap only drops its
  // references to the parent's pages), and counts from zero.
  static void after_fork_in_child() {
    Cache& c = get();
    for (Block* b : c.free_) unmap_block(b);
    c.free_.clear();  // keeps its capacity: no allocation here
    c.cached_bytes_ = 0;
    c.requests_ = c.hits_ = c.misses_ = c.evicted_ = c.trimmed_ = 0;
    c.mu_.unlock();
  }

  std::mutex mu_;
  std::vector<Block*> free_;  // oldest first
  std::size_t cached_bytes_ = 0;
  int64_t requests_ = 0, hits_ = 0, misses_ = 0, evicted_ = 0, trimmed_ = 0;
};

bool cached(const at::TensorOptions& options, std::size_t bytes) {
  return options.device().is_cpu() && !options.pinned_memory() && options.layout() == at::kStrided &&
         bytes >= kMinBytes && !(at::globalContext().deterministicAlgorithms() &&
                                 at::globalContext().deterministicFillUninitializedMemory());  // at::empty's NaN fill
}

}  // namespace

at::Tensor empty(c10::IntArrayRef sizes, const at::TensorOptions& options, at::MemoryFormat format) {
  const at::ScalarType dtype = c10::typeMetaToScalarType(options.dtype());
  const std::size_t bytes = c10::multiply_integers(sizes) * c10::elementSize(dtype);
  if (!cached(options, bytes)) return at::empty(sizes, options, format);
  return at::detail::empty_generic(sizes, &Cache::get(), c10::DispatchKeySet(c10::DispatchKey::CPU), dtype,
                                   format);
}

at::Tensor empty_like(const at::Tensor& like, const at::TensorOptions& options, at::MemoryFormat format) {
  const at::ScalarType dtype = c10::typeMetaToScalarType(options.dtype());
  const std::size_t bytes = static_cast<std::size_t>(like.numel()) * c10::elementSize(dtype);
  if (!cached(options, bytes)) return at::empty_like(like, options, format);
  const at::Tensor shape = at::empty_like(like, options.device(at::kMeta), format);  // empty_like's strides
  return at::detail::empty_strided_generic(shape.sizes(), shape.strides(), &Cache::get(),
                                           c10::DispatchKeySet(c10::DispatchKey::CPU), dtype);
}

Stats stats() { return Cache::get().stats(); }

void release() { Cache::get().release(); }

}  // namespace batch_cache
}  // namespace tensorops

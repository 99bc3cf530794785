// The cache of large CPU output blocks (batch_cache.h).
#include "tensorops/batch_cache.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
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

constexpr std::size_t kAlign = 4096;  // a page: blocks are whole pages, and a size matches its own

struct Block {
  void* ptr;
  std::size_t bytes;  // a multiple of kAlign
  pid_t pid;          // the process that allocated it
};

class Cache final : public c10::Allocator {
 public:
  Cache() { pthread_atfork(&lock_all, &unlock_all, &unlock_all); }

  c10::DataPtr allocate(std::size_t n) override {
    if (n == 0) return {nullptr, c10::Device(c10::DeviceType::CPU)};  // a storage resized to nothing
    const std::size_t bytes = (n + kAlign - 1) / kAlign * kAlign;
    const pid_t pid = getpid();
    Block* b = take(bytes, pid);
    if (b == nullptr) {
      void* p = std::aligned_alloc(kAlign, bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, p != nullptr, "tensorops: could not allocate ", bytes,
                       " bytes for a batch");
      b = new Block{p, bytes, pid};
    }
    return {b->ptr, b, &Cache::give_back, c10::Device(c10::DeviceType::CPU)};
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  Stats stats() {
    std::lock_guard<std::mutex> g(mu_);
    int64_t bytes = 0;
    for (const Block* b : free_) bytes += static_cast<int64_t>(b->bytes);
    return {hits_, misses_, static_cast<int64_t>(free_.size()), bytes};
  }

  void release() {
    std::vector<Block*> drop;
    {
      std::lock_guard<std::mutex> g(mu_);
      drop.swap(free_);
    }
    for (Block* b : drop) destroy(b);
  }

  static Cache& get() {
    static Cache* cache = new Cache();  // never destroyed: tensors may die after static destructors ran
    return *cache;
  }

 private:
  Block* take(std::size_t bytes, pid_t pid) {
    std::lock_guard<std::mutex> g(mu_);
    for (std::size_t i = 0; i < free_.size(); ++i) {
      if (free_[i]->bytes == bytes && free_[i]->pid == pid) {
        Block* b = free_[i];
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        ++hits_;
        return b;
      }
    }
    ++misses_;
    return nullptr;
  }

  static void give_back(void* ctx) {
    Block* b = static_cast<Block*>(ctx);
    Cache& c = get();
    Block* drop = b;
    if (b->pid == getpid()) {  // a parent's block dying in a child goes back to the system
      std::lock_guard<std::mutex> g(c.mu_);
      std::size_t bytes = b->bytes;
      for (const Block* f : c.free_) bytes += f->bytes;
      if (bytes <= kMaxBytes) {
        c.free_.push_back(b);  // newest last: the oldest leaves first when the cache is full
        drop = nullptr;
        if (c.free_.size() > kMaxBlocks) {
          drop = c.free_.front();
          c.free_.erase(c.free_.begin());
        }
      }
    }
    if (drop != nullptr) destroy(drop);
  }

  static void destroy(Block* b) {
    std::free(b->ptr);
    delete b;
  }

  // fork() while another thread holds the lock would leave it held in the child forever
  static void lock_all() { get().mu_.lock(); }
  static void unlock_all() { get().mu_.unlock(); }

  std::mutex mu_;
  std::vector<Block*> free_;
  int64_t hits_ = 0, misses_ = 0;
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

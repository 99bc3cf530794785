// The CUDA side of every family, in one place: the launch helper, the grid and index-width choice, and the few
// CUDA runtime calls the launch code makes (device guard, current stream, capture status, pinned host blocks,
// host-to-device copies, the SM count). Family .cu files include this header and no CUDA runtime header, and
// launch every kernel through cuda::launch (no <<<...>>> in them), so the same launch code also compiles against
// the emulated device (TENSOROPS_EMULATED: emu/device.h, csrc/emulated/), which runs the kernels on CPU tensors.
// Only c10/cuda headers (ATen/cuda/CUDAContext.h pulls cuSPARSE headers that not every toolkit ships).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include <ATen/ATen.h>
#include <torch/library.h>

#ifdef TENSOROPS_EMULATED
#include "tensorops/emu/device.h"
#else
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "tensorops/index_width.h"
#include "tensorops/plan.h"

// Dynamic shared memory of a kernel: `TENSOROPS_DYNAMIC_SHARED(unsigned char, smem);` declares `smem`, sized by
// the launch (16-byte aligned).
#ifdef TENSOROPS_EMULATED
#define TENSOROPS_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(::tensorops::emu::dynamic_shared())
#else
#define TENSOROPS_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

// The family's TORCH_LIBRARY_IMPL block for CUDA tensors; in the emulated build, for the CPU tensors of the
// emulated library (tensorops_emu), whose "CUDA" kernels then run on the emulated device.
#ifdef TENSOROPS_EMULATED
#define TENSOROPS_CUDA_LIBRARY_IMPL(m) TORCH_LIBRARY_IMPL(tensorops_emu, CPU, m)
#else
#define TENSOROPS_CUDA_LIBRARY_IMPL(m) TORCH_LIBRARY_IMPL(tensorops, CUDA, m)
#endif

// Kernel parameters read with run-time indices (the plan, by-value coefficient tables) stay in the parameter
// space instead of being copied to each thread's local memory (CUDA 11.7+, sm_70+).
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define TENSOROPS_GRID_CONSTANT __grid_constant__
#else
#define TENSOROPS_GRID_CONSTANT
#endif

namespace tensorops {
namespace cuda {

constexpr int kThreads = 256;  // threads per block for elementwise kernels
constexpr int kVec = 4;        // elements per thread per step

// Elements per thread for a dense, aligned loop over T: kVec, or as many as fill 16 bytes (one vector load and
// store per thread) for 1- and 2-byte dtypes.
template <typename T>
constexpr int vec_elems() {
  return sizeof(T) * kVec >= 16 ? kVec : static_cast<int>(16 / sizeof(T));
}

// A naturally aligned bundle of N elements, for one vector load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for `work` items of `per_block` each, for loops with 64-bit counters (or none that can wrap).
inline unsigned int blocks_for(int64_t work, int64_t per_block) {
  return static_cast<unsigned int>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(work, per_block), 1 << 24)));
}

// Calls f(index_t{}) with int32_t or int64_t.
template <typename F>
void with_index_type(bool use_int32, const F& f) {
  if (use_int32)
    f(int32_t{});
  else
    f(int64_t{});
}

// Every grid-stride launch over a plan goes through here: the grid and the index width (index_width.h: 32-bit
// only when every index the loop forms fits, grid-stride steps included) are picked by indexed_grid, and
// launch_with calls f(index_t{}, blocks) with index_t int32_t or int64_t. `items_per_block` = threads *
// elements per thread per step; `max_blocks` caps the grid (a few blocks per SM for per-block partials, ...).
template <int N>
IndexedLaunch indexed_grid(const Plan<N>& p, int64_t items_per_block, int64_t max_blocks = int64_t{1} << 24) {
  return pick_indexed_launch(p.numel, p.max_offset(), items_per_block, max_blocks);
}

template <typename F>
void launch_with(const IndexedLaunch& l, const F& f) {
  with_index_type(l.use_int32, [&](auto index_tag) { f(index_tag, static_cast<unsigned int>(l.blocks)); });
}

// Both steps at once, for a launch whose buffers do not depend on the grid.
template <int N, typename F>
IndexedLaunch launch_indexed(const Plan<N>& p, int64_t items_per_block, const F& f,
                             int64_t max_blocks = int64_t{1} << 24) {
  const IndexedLaunch l = indexed_grid(p, items_per_block, max_blocks);
  launch_with(l, f);
  return l;
}

// The same for a flat loop over n elements (offsets are the indices themselves).
template <typename F>
IndexedLaunch launch_indexed(int64_t n, int64_t items_per_block, const F& f, int64_t max_blocks = int64_t{1} << 24) {
  const IndexedLaunch l = pick_indexed_launch(n, n, items_per_block, max_blocks);
  launch_with(l, f);
  return l;
}

// ---- the CUDA runtime calls of the launch code, and their emulated stand-ins ---------------------------------
#ifdef TENSOROPS_EMULATED
struct StreamStandIn {};
using stream_t = const StreamStandIn*;
inline stream_t current_stream() { return nullptr; }
inline stream_t current_stream(c10::Device) { return nullptr; }
// The device guards: nothing to switch on the emulated device.
struct DeviceGuard {
  explicit DeviceGuard(c10::Device) {}
};
struct OptionalDeviceGuard {
  void set_device(c10::Device) {}
};
inline bool stream_capturing() {
  std::lock_guard<std::mutex> lock(emu::record().m);
  return emu::record().capturing;
}
inline int sm_count(c10::Device) { return 132; }  // an H200's
// A pinned host block: an ordinary one, recorded (the tests check that none is taken while capturing).
inline at::Tensor pinned_empty(c10::IntArrayRef sizes, at::ScalarType dtype) {
  emu::add_event(stream_capturing() ? "pinned_alloc capturing" : "pinned_alloc");
  return at::empty(sizes, at::TensorOptions().dtype(dtype));
}
// Copies a host tensor to "device" memory: a separate buffer, as on a GPU. `blocking` copies synchronize the
// stream; the tests count them (what torch.cuda.set_sync_debug_mode("error") would refuse).
inline at::Tensor to_device(const at::Tensor& host, c10::Device, bool non_blocking) {
  emu::add_event(non_blocking ? "copy_to_device async" : "copy_to_device blocking");
  return host.clone();
}
#else
using stream_t = cudaStream_t;
inline stream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }
inline stream_t current_stream(c10::Device d) { return c10::cuda::getCurrentCUDAStream(d.index()).stream(); }
using DeviceGuard = c10::cuda::CUDAGuard;
using OptionalDeviceGuard = c10::cuda::OptionalCUDAGuard;
// Whether the current stream is being captured into a CUDA graph (host-to-device copies from host memory
// would then be replayed from whatever that memory holds at replay time).
inline bool stream_capturing() {
  return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None;
}
inline int sm_count(c10::Device d) {
  int sms = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.index()));
  return sms > 0 ? sms : 1;
}
inline at::Tensor pinned_empty(c10::IntArrayRef sizes, at::ScalarType dtype) {
  return at::empty(sizes, at::TensorOptions().dtype(dtype).pinned_memory(true));
}
inline at::Tensor to_device(const at::Tensor& host, c10::Device device, bool non_blocking) {
  return host.to(at::TensorOptions().device(device), non_blocking);
}
#endif

// Every kernel launch: kernel<<<grid, block, smem, stream>>>(args...) and the launch check, or the same kernel
// run on the emulated device. The arguments are converted to the kernel's parameter types first.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, stream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "cuda::launch: wrong number of kernel arguments");
#ifdef TENSOROPS_EMULATED
  (void)stream;
  emu::launch(reinterpret_cast<const void*>(kernel), grid, block, smem,
              [&] { kernel(static_cast<Params>(args)...); });
#else
  kernel<<<grid, block, smem, stream>>>(static_cast<Params>(args)...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
#endif
}

}  // namespace cuda
}  // namespace tensorops

// Host tables (per-piece addresses, per-sample crop tables, many statistics) put on the device without a stream
// synchronization and safely under CUDA graph capture, written once for every family that needs it (cat/split,
// the many-tensor clamp, crop_mirror_normalize, normalize with many number statistics).
//  * Outside capture: a pinned host block and an asynchronous copy on the current stream. The caching host
//    allocator keeps the block until the copy has run, so nothing waits.
//  * While capturing: small fill kernels that carry the table in their own parameters, so that a replay writes
//    the values of capture time (a captured copy from host memory would replay whatever that memory holds then).
//    No pinned block is taken.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>

#include "tensorops/cuda_utils.cuh"
#include "tensorops/kernels/device_table.cuh"

namespace tensorops {
namespace cuda {

// A new int64 device tensor of `words` words, written on the host by fill(int64_t* dst) (dst[0, words) starts
// undefined): straight into the pinned block outside capture, into a host buffer that fill kernels then carry
// while capturing. The table is written once, where it is sent from.
template <typename Fill>
at::Tensor upload_table(int64_t words, c10::Device device, const Fill& fill) {
  if (!stream_capturing()) {
    at::Tensor host = pinned_empty({words}, at::kLong);
    fill(host.mutable_data_ptr<int64_t>());
    return to_device(host, device, /*non_blocking=*/true);
  }
  std::vector<int64_t> data(static_cast<size_t>(words));
  fill(data.data());
  at::Tensor table = at::empty({words}, at::TensorOptions().dtype(at::kLong).device(device));
  const stream_t stream = current_stream(device);
  constexpr int64_t kChunk = kernels::kFillWords;
  for (int64_t first = 0; first < words; first += kChunk) {
    const int64_t count = std::min(kChunk, words - first);
    kernels::WordChunk<kChunk> chunk;
    std::copy(data.data() + first, data.data() + first + count, chunk.w);
    launch(kernels::fill_words_kernel<kChunk>, 1, kThreads, 0, stream, chunk,
           table.mutable_data_ptr<int64_t>() + first, count);
  }
  return table;
}

// The same for a table of n trivially copyable records (padded to whole words).
template <typename T>
at::Tensor upload_records(const T* records, int64_t n, c10::Device device) {
  static_assert(std::is_trivially_copyable_v<T>, "upload_records copies bytes");
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  const int64_t words = static_cast<int64_t>((bytes + 7) / 8);
  return upload_table(words, device, [&](int64_t* dst) {
    dst[words - 1] = 0;  // the padding of the last word
    std::memcpy(dst, records, bytes);
  });
}

}  // namespace cuda
}  // namespace tensorops

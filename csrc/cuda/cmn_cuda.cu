// crop_mirror_normalize on CUDA: one launch for the whole batch, one thread per output element (grid-stride,
// 64-bit indices, split into (n, c, i, j) with fast divisors). The per-sample table (cmn::Sample: address,
// strides, size, crop origin, mirror flag) travels as a kernel parameter for batches up to kParamSamples images
// (no copy at all); a larger batch's table is copied to a device buffer with an ordinary blocking copy from
// pageable host memory, so nothing depends on when a pinned host block is reused. The value of every element
// comes from cmn::value (crop_mirror_normalize.h), the same function the CPU kernel's fallback path calls.
#include <cstring>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/cmn_entries.h"
#include "tensorops/crop_mirror_normalize_host.h"
#include "tensorops/cuda_utils.cuh"
#include "tensorops/dispatch.h"
#include "tensorops/fast_divide.h"

namespace tensorops {
namespace {

using cmn::Sample;

// 48 samples * 72 bytes plus the other parameters stay under the classic 4 KiB kernel-parameter limit.
constexpr int kParamSamples = 48;

struct ParamTable {
  Sample s[kParamSamples];
  __device__ const Sample& operator[](int64_t n) const { return s[n]; }
};
struct DeviceTable {
  const Sample* s;
  __device__ const Sample& operator[](int64_t n) const { return s[n]; }
};

template <typename acc_t>
struct Params {
  int64_t N, C, Cp, h, w, numel;
  IntDivider<int64_t> div_cp, div_h, div_w;  // Cp, h and w as fast divisors (fast_divide.h)
  const acc_t* mean;
  const acc_t* std;
  int64_t mean_sn, mean_sc, std_sn, std_sc;
  acc_t scale, fill;
  bool channels_last;
};

template <typename in_t, typename out_t, typename acc_t, typename Table>
__global__ void crop_mirror_normalize_kernel(out_t* __restrict__ out, const TENSOROPS_GRID_CONSTANT Params<acc_t> p,
                                             const TENSOROPS_GRID_CONSTANT Table table) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < p.numel; idx += stride) {
    int64_t c, i, j, r = idx;  // r ends as the sample index
    if (p.channels_last) {
      c = p.div_cp.divmod(r);
      j = p.div_w.divmod(r);
      i = p.div_h.divmod(r);
    } else {
      j = p.div_w.divmod(r);
      i = p.div_h.divmod(r);
      c = p.div_cp.divmod(r);
    }
    const int64_t n = r;
    const Sample& s = table[n];
    const int64_t y = s.y0 + i, x = cmn::source_x(s, j, p.w);
    const bool real = c < p.C && cmn::inside(s, y, x);
    acc_t v = acc_t(0), mean = acc_t(0), sd = acc_t(1);
    if (real) {
      const in_t* src = reinterpret_cast<const in_t*>(s.src);
      v = static_cast<acc_t>(src[c * s.sc + y * s.sy + x * s.sx]);
      mean = p.mean[n * p.mean_sn + c * p.mean_sc];
      sd = p.std[n * p.std_sn + c * p.std_sc];
    }
    out[idx] = static_cast<out_t>(cmn::value(real, v, p.scale, mean, sd, p.fill));
  }
}

void run(cmn_host::Setup& s, double scale, double fill) {
  if (s.out.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(s.out.device());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(s.out.device().index()).stream();
  const int64_t numel = s.out.numel();
  const unsigned int blocks = cuda::blocks_for(numel, cuda::kThreads);
  at::Tensor device_table;  // kept alive until the launch is queued (the stream orders the kernel after the copy)
  if (s.N > kParamSamples) {
    const int64_t bytes = s.N * static_cast<int64_t>(sizeof(Sample));
    at::Tensor host = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
    std::memcpy(host.mutable_data_ptr(), s.samples.data(), bytes);
    device_table = host.to(s.out.device());  // blocking copy from pageable memory
  }
  TENSOROPS_DISPATCH_CMN_INPUT(s.in_dtype, "crop_mirror_normalize_cuda", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_FLOATING(s.out.scalar_type(), "crop_mirror_normalize_out", [&] {
      using out_t = scalar_t;
      {
        using acc_t = float_acc_t<out_t>;  // as s.acc
        Params<acc_t> p;
        p.N = s.N; p.C = s.C; p.Cp = s.Cp; p.h = s.h; p.w = s.w; p.numel = numel;
        p.div_cp = IntDivider<int64_t>(s.Cp);
        p.div_h = IntDivider<int64_t>(s.h);
        p.div_w = IntDivider<int64_t>(s.w);
        p.mean = s.mean.const_data_ptr<acc_t>();
        p.std = s.std.const_data_ptr<acc_t>();
        p.mean_sn = s.mean_sn; p.mean_sc = s.mean_sc; p.std_sn = s.std_sn; p.std_sc = s.std_sc;
        p.scale = static_cast<acc_t>(scale);
        p.fill = static_cast<acc_t>(fill);
        p.channels_last = s.out.is_contiguous(at::MemoryFormat::ChannelsLast) && !s.out.is_contiguous();
        out_t* out = s.out.mutable_data_ptr<out_t>();
        if (s.N <= kParamSamples) {
          ParamTable t;
          for (int64_t n = 0; n < s.N; ++n) t.s[n] = s.samples[n];
          crop_mirror_normalize_kernel<in_t, out_t, acc_t, ParamTable><<<blocks, cuda::kThreads, 0, stream>>>(out, p, t);
        } else {
          DeviceTable t{reinterpret_cast<const Sample*>(device_table.const_data_ptr())};
          crop_mirror_normalize_kernel<in_t, out_t, acc_t, DeviceTable><<<blocks, cuda::kThreads, 0, stream>>>(out, p, t);
        }
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CUDA, m) {
  cmn_entries::register_ops<&run>(m);
}

}  // namespace tensorops

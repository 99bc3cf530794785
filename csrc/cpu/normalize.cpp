// normalize on the CPU, forward, and the registration of the family's CPU ops (the backward is normalize_backward.cpp,
// a translation unit of its own so that a parallel build compiles the two at once): one pass over the input (threads
// as tensorops/parallel.h decides); per statistics entry the coefficients a = scale / std and b = -mean / std are
// computed once (math.h), and the inner loops are plain multiply-adds over contiguous runs that the compiler
// vectorizes (compiled for AVX-512, AVX2+FMA and baseline x86-64).
#include <type_traits>  // the loop headers
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "normalize_cpu.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/cpu_loop.h"
#include "tensorops/dispatch.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/normalize.h"
#include "tensorops/normalize_entries.h"
#include "tensorops/normalize_host.h"

namespace tensorops {
namespace {

using namespace normalize_host;
using cpu_normalize::coefficients;
using cpu_normalize::stat_buffers;

// ---- inner loops, built for AVX-512, for AVX2+FMA and for baseline x86-64 (cpu_isa.h) --------------------
TENSOROPS_AVX512_BUILD
#include "normalize_loops.h"
TENSOROPS_AVX2_BUILD
#include "normalize_loops.h"
TENSOROPS_BASE_BUILD
#include "normalize_loops.h"
TENSOROPS_END_BUILDS

// ---- channels-last input to channels-first output -----------------------------------------------------------
// Plan shape: dim 0 pixels (input stride C), dim 1 channels (input stride 1, C <= 4), output planes. Each task
// takes a block of pixels of one image and writes all C planes, reading its input bytes once.
template <typename in_t, typename out_t, typename acc_t>
bool deinterleave_pass(const Plan<3>& p, at::Tensor& out, const at::Tensor& in, const acc_t* A, const acc_t* B) {
  if (p.ndim < 2 || p.sizes[1] > 4 || p.strides[1][1] != 1 || p.strides[1][0] != p.sizes[1] ||
      p.strides[2][0] != 0)
    return false;
  const int64_t pixels = p.sizes[0], C = p.sizes[1];
  // the outer dims (images) as their own plan
  Plan<3> outer;
  outer.ndim = std::max(1, p.ndim - 2);
  outer.numel = p.numel / (pixels * C);
  outer.sizes[0] = 1;
  for (int k = 0; k < 3; ++k) outer.strides[k][0] = 0;
  for (int d = 2; d < p.ndim; ++d) {
    outer.sizes[d - 2] = p.sizes[d];
    for (int k = 0; k < 3; ++k) outer.strides[k][d - 2] = p.strides[k][d];
  }
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (pixels + kBlock - 1) / kBlock;
  const in_t* x = in.const_data_ptr<in_t>();
  out_t* y = out.mutable_data_ptr<out_t>();
  const int64_t bytes = p.numel * static_cast<int64_t>(sizeof(in_t) + sizeof(out_t));
  parallel_for_bytes(0, outer.numel * blocks, bytes, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t off[3];
      outer.offsets<int64_t>(task / blocks, off);
      const int64_t p0 = (task % blocks) * kBlock, n = std::min(kBlock, pixels - p0);
      acc_t a[4], b[4];
      for (int64_t c = 0; c < C; ++c) {
        a[c] = A[off[2] + c * p.strides[2][1]];
        b[c] = B[off[2] + c * p.strides[2][1]];
      }
      const in_t* xs = x + off[1] + p0 * C;
      out_t* ys = y + off[0] + p0;
      const int64_t plane = p.strides[0][1];
      switch (C) {
        case 2: TENSOROPS_CPU_DISPATCH(affine_deinterleave<2, in_t, out_t, acc_t>)(xs, ys, plane, n, a, b); break;
        case 3: TENSOROPS_CPU_DISPATCH(affine_deinterleave<3, in_t, out_t, acc_t>)(xs, ys, plane, n, a, b); break;
        default: TENSOROPS_CPU_DISPATCH(affine_deinterleave<4, in_t, out_t, acc_t>)(xs, ys, plane, n, a, b); break;
      }
    }
  });
  return true;
}

// ---- the pass over the data --------------------------------------------------------------------------------
// Operands: 0 output (dense), 1 input, 2 coefficient index into A/B (0 on broadcast dims).
template <typename in_t, typename out_t, typename acc_t>
void normalize_pass(at::Tensor& out, const at::Tensor& in, const acc_t* A, const acc_t* B,
                    c10::IntArrayRef coef_strides) {
  Plan<3> p = make_plan<3>(out.sizes(), {out.strides(), in.strides(), coef_strides});
  if (deinterleave_pass<in_t, out_t, acc_t>(p, out, in, A, B)) return;
  // channels-last input, channels innermost: long runs with a periodic coefficient pattern
  int64_t pattern[3] = {};
  const int64_t period = fold_pattern<3>(p, {false, false, true}, pattern);
  const int64_t period_stride = pattern[2];
  const in_t* x = in.const_data_ptr<in_t>();
  out_t* y = out.mutable_data_ptr<out_t>();
  const int64_t sx = p.strides[1][0], sc = p.strides[2][0];
  const int threads = threads_for(p.numel * static_cast<int64_t>(sizeof(in_t) + sizeof(out_t)));
  cpu_for_each_segment(p, threads, [&](const int64_t* off, int64_t n) {
    const in_t* xs = x + off[1];
    out_t* ys = y + off[0];  // the output's innermost stride is 1
    if (period > 0) {
      const PeriodicPattern pat(period, off[0]);
      acc_t pa[kPatternCapacity], pb[kPatternCapacity];
      pat.for_each([&](int64_t t, int64_t c) {
        pa[t] = A[off[2] + c * period_stride];
        pb[t] = B[off[2] + c * period_stride];
      });
      TENSOROPS_CPU_DISPATCH(affine_pattern<in_t, out_t, acc_t>)(xs, ys, n, pa, pb, pat.len);
    } else if (sc == 0 && sx == 1) {
      TENSOROPS_CPU_DISPATCH(affine_contiguous<in_t, out_t, acc_t>)(xs, ys, n, A[off[2]], B[off[2]]);
    } else {
      base::affine_strided<in_t, out_t, acc_t>(xs, sx, ys, n, A + off[2], B + off[2], sc);
    }
  });
}

template <typename acc_t>
void run(at::Tensor& out, const at::Tensor& input, const std::vector<acc_t>& A, const std::vector<acc_t>& B,
         c10::IntArrayRef coef_strides) {
  TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize", [&] {
    using in_t = scalar_t;
    TENSOROPS_DISPATCH_FLOATING(out.scalar_type(), "normalize_out", [&] {
      normalize_pass<in_t, scalar_t, acc_t>(out, input, A.data(), B.data(), coef_strides);
    });
  });
}

// ---- ops ---------------------------------------------------------------------------------------------------
// out: nullptr (a fresh output) or out= (normalize_entries.h)
at::Tensor normalize_cpu(const at::Tensor& input, c10::ArrayRef<double> mean, c10::ArrayRef<double> std,
                         int64_t dim, double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                         const at::Tensor* out_arg) {
  int64_t channels = 0;
  const auto coef_strides = list_stat_strides(input, dtype, mean, std, dim, channels);
  at::Tensor out = output(input, dtype, memory_format, out_arg, {input});
  if (out.numel() == 0) return out_arg == nullptr ? out : out_host::finish(*out_arg, out);
  AT_DISPATCH_FLOATING_TYPES(acc_dtype(dtype), "normalize_coefs", [&] {
    std::vector<scalar_t> A(channels), B(channels);
    list_coefs<scalar_t>(mean, std, scale, channels, A.data(), B.data());
    run<scalar_t>(out, input, A, B, coef_strides);
  });
  return out_arg == nullptr ? out : out_host::finish(*out_arg, out);
}

at::Tensor normalize_tensor_cpu(const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std,
                                double scale, at::ScalarType dtype, at::MemoryFormat memory_format,
                                const at::Tensor* out_arg) {
  return normalize_entries::normalize_tensor_with(input, mean, std, dtype, memory_format, out_arg, [&](at::Tensor& out,
                                                                                              c10::IntArrayRef shape) {
    AT_DISPATCH_FLOATING_TYPES(acc_dtype(dtype), "normalize_coefs", [&] {
      at::Tensor m, s;
      stat_buffers<scalar_t>(mean, std, shape, m, s);
      std::vector<scalar_t> A, B;
      if (coefficients<scalar_t>(m, s, scale, A, B)) {
        run<scalar_t>(out, input, A, B, broadcast_strides(shape));
      } else {  // a zero or tiny std: the formula itself, as torch evaluates it (+-inf, not NaN)
        out.copy_((input.to(m.scalar_type()) * scale - m) / s);
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  normalize_entries::register_ops<&normalize_cpu, &normalize_tensor_cpu,
                                  &cpu_normalize::normalize_tensor_backward_cpu>(m);
}

}  // namespace tensorops

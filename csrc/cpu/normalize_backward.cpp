// normalize on the CPU, backward (the forward passes and the registration of the family's CPU ops are in
// normalize.cpp; two translation units, so that a parallel build compiles them at once): one pass over grad and
// input writes grad_input and sums, per statistics entry, grad and grad * y (y recomputed with math.h's formula),
// in double and in fixed chunks (cpu_loop.h's cpu_for_each_chunk), so that the statistics' gradients have the
// same bits on any number of threads.
#include <array>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>

#include "normalize_cpu.h"
#include "tensorops/cpu_loop.h"
#include "tensorops/dispatch.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/normalize.h"
#include "tensorops/normalize_host.h"

namespace tensorops {
namespace cpu_normalize {

using namespace normalize_host;

namespace {

// The sums of g and of g * y are kept in double (sum_t), in chunk partials (cpu_for_each_chunk), with y recomputed
// in double from double coefficients: their bits do not depend on the threads, and they come out correctly
// rounded or nearly (float coefficients and a float y, as before 2026-12-06, put grad_std off by up to an ulp
// of systematic error per channel; float sums, by a hundred).
using sum_t = double;

// One run whose statistics entry is fixed (per-channel statistics along a row or a plane), grad and input
// contiguous: grad_input = g * a (WantGi: a in the accumulation type, as the forward's), and the run's sums of g
// and g * y, y = x * ad + bd in double, added to *sum_g and *sum_gy (WantSums). kLanes independent double sums
// (vectorizable without reassociating one sum), added up in lane order at the end of the run. grad_input is a
// fresh tensor (restrict), and its stores sit in a loop of their own: GCC (x86-64 baseline, -fopt-info-vec)
// vectorized nothing of one loop doing both, and without restrict not the stores. Float32, (32, 3, 224, 224),
// one thread: 3.0 ms as scalar code (main: 13.5 ms, one float sum per thread scattered by entry), 3.0 ms
// vectorized with SSE2 (throughput-bound on the conversions and double arithmetic; 16 lanes: 2.9 ms).
template <typename g_t, typename in_t, typename acc_t, bool WantGi, bool WantSums>
void backward_run_fixed(const g_t* __restrict__ g, const in_t* __restrict__ x, in_t* __restrict__ gi, int64_t n,
                        acc_t a, sum_t ad, sum_t bd, sum_t* sum_g, sum_t* sum_gy) {
  constexpr int64_t kLanes = 8;
  sum_t lg[kLanes] = {}, lgy[kLanes] = {};
  int64_t t = 0;
  if (WantSums) {
    for (; t + kLanes <= n; t += kLanes) {
      if (WantGi) {
        for (int64_t j = 0; j < kLanes; ++j) gi[t + j] = static_cast<in_t>(static_cast<acc_t>(g[t + j]) * a);
      }
      for (int64_t j = 0; j < kLanes; ++j) {
        const sum_t gv = static_cast<sum_t>(static_cast<acc_t>(g[t + j]));
        lg[j] += gv;
        lgy[j] += gv * math::normalize_apply(static_cast<sum_t>(x[t + j]), ad, bd);
      }
    }
  }
  sum_t tg = 0, tgy = 0;
  for (int64_t j = 0; j < kLanes; ++j) {
    tg += lg[j];
    tgy += lgy[j];
  }
  for (; t < n; ++t) {
    const acc_t gv = static_cast<acc_t>(g[t]);
    if (WantGi) gi[t] = static_cast<in_t>(gv * a);
    if (WantSums) {
      tg += static_cast<sum_t>(gv);
      tgy += static_cast<sum_t>(gv) * math::normalize_apply(static_cast<sum_t>(x[t]), ad, bd);
    }
  }
  if (WantSums) {
    *sum_g += tg;
    *sum_gy += tgy;
  }
}

}  // namespace

// One pass over grad and input: grad_input = grad * a, and per statistics entry the sums of grad and grad * y
// (y recomputed), in double, in one partial buffer per fixed chunk of the elements (cpu_loop.h: the same bits on
// any number of threads), added up in chunk order at the end.
std::tuple<at::Tensor, at::Tensor, at::Tensor> normalize_tensor_backward_cpu(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& std, double scale,
    std::array<bool, 3> mask) {
  Backward bw = backward_setup(grad, input, mean, std, mask);
  at::Tensor& grad_input = bw.grad_input;
  if (input.numel() == 0) return {bw.grad_input, bw.grad_mean, bw.grad_std};
  const bool stats = bw.stats;
  // operands: 0 the dense layout walked, 1 grad, 2 input, 3 statistics entry
  const Plan<4> p =
      make_plan<4>(input.sizes(), {bw.dense.strides(), grad.strides(), input.strides(), broadcast_strides(bw.shape)});
  AT_DISPATCH_FLOATING_TYPES(bw.acc, "normalize_backward", [&] {
    using acc_t = scalar_t;
    at::Tensor m, s;
    stat_buffers<acc_t>(mean, std, bw.shape, m, s);
    const int64_t K = m.numel();
    const acc_t* mp = m.const_data_ptr<acc_t>();
    const acc_t* sp = s.const_data_ptr<acc_t>();
    std::vector<acc_t> A, B;  // grad_input's coefficient, as the forward's
    coefficients<acc_t>(m, s, scale, A, B);
    std::vector<sum_t> Ad(static_cast<size_t>(K)), Bd(static_cast<size_t>(K));  // y's, for the sums
    for (int64_t k = 0; k < K; ++k) {
      Ad[k] = math::normalize_coef_a<sum_t>(scale, static_cast<sum_t>(sp[k]));
      Bd[k] = math::normalize_coef_b<sum_t>(static_cast<sum_t>(mp[k]), static_cast<sum_t>(sp[k]));
    }
    const int64_t bytes = input.numel() * (grad.element_size() + input.element_size() * (mask[0] ? 2 : 1));
    const int threads = threads_for(bytes);
    // Statistics as large as the input (every entry receives exactly one element) need no partials: one buffer.
    const bool one_buffer = K == p.numel;
    const int64_t chunks = reduction_chunks(p.numel, stats && !one_buffer ? 2 * K : 0);
    const int64_t partials = stats ? (one_buffer ? 1 : chunks) : 0;
    std::vector<sum_t> sums(static_cast<size_t>(partials * 2 * K), sum_t(0));
    const int64_t sk = p.strides[3][0];
    const bool dense = p.strides[1][0] == 1 && p.strides[2][0] == 1;  // grad and input contiguous along a run
    TENSOROPS_DISPATCH_FLOATING(grad.scalar_type(), "normalize_backward_grad", [&] {
      using g_t = scalar_t;
      const g_t* g = grad.const_data_ptr<g_t>();
      TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_backward_input", [&] {
        using in_t = scalar_t;
        const in_t* x = input.const_data_ptr<in_t>();
        in_t* gi = mask[0] ? grad_input.mutable_data_ptr<in_t>() : nullptr;
        cpu_for_each_chunk(p, chunks, threads, [&](int64_t c, const int64_t* off, int64_t n) {
          sum_t* sg = stats ? sums.data() + static_cast<size_t>(one_buffer ? 0 : c) * 2 * K : nullptr;
          const int64_t k0 = off[3];
          if (dense && sk == 0 && math::normalize_coefs_finite(Ad[k0], Bd[k0])) {  // one entry for the run
            either_switch(gi != nullptr, sg != nullptr, [&]<bool WantGi, bool WantSums>() {
              backward_run_fixed<g_t, in_t, acc_t, WantGi, WantSums>(
                  g + off[1], x + off[2], WantGi ? gi + off[0] : nullptr, n, A[k0], Ad[k0], Bd[k0],
                  WantSums ? sg + k0 : nullptr, WantSums ? sg + K + k0 : nullptr);
            });
            return;
          }
          // any other run (channels_last with per-channel statistics, strided, a zero std): entry by entry
          for (int64_t t = 0; t < n; ++t) {
            const int64_t k = k0 + t * sk;
            const acc_t gv = static_cast<acc_t>(g[off[1] + t * p.strides[1][0]]);
            if (gi) gi[off[0] + t] = static_cast<in_t>(gv * A[k]);
            if (sg) {
              const sum_t y = math::normalize_value(static_cast<sum_t>(x[off[2] + t * p.strides[2][0]]), Ad[k],
                                                    Bd[k], static_cast<sum_t>(scale), static_cast<sum_t>(mp[k]),
                                                    static_cast<sum_t>(sp[k]));
              sg[k] += static_cast<sum_t>(gv);
              sg[K + k] += static_cast<sum_t>(gv) * y;
            }
          }
        });
      });
    });
    if (stats) {
      acc_t* gm = bw.grad_mean.mutable_data_ptr<acc_t>();
      acc_t* gs = bw.grad_std.mutable_data_ptr<acc_t>();
      for (int64_t k = 0; k < K; ++k) {
        sum_t sum_g = 0, sum_gy = 0;
        for (int64_t c = 0; c < partials; ++c) {  // in chunk order
          sum_g += sums[static_cast<size_t>(c * 2 * K + k)];
          sum_gy += sums[static_cast<size_t>(c * 2 * K + K + k)];
        }
        gm[k] = static_cast<acc_t>(math::normalize_grad_mean<sum_t>(sum_g, static_cast<sum_t>(sp[k])));
        gs[k] = static_cast<acc_t>(math::normalize_grad_std<sum_t>(sum_gy, static_cast<sum_t>(sp[k])));
      }
    }
  });
  return {bw.grad_input, bw.grad_mean, bw.grad_std};
}

}  // namespace cpu_normalize
}  // namespace tensorops

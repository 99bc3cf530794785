// normalize on the CPU, backward (the forward passes and the registration of the family's CPU ops are in
// normalize.cpp; two translation units, so that a parallel build compiles them at once): one pass over grad and
// input writes grad_input and sums, per statistics entry, grad and grad * y (y recomputed with math.h's formula).
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

// One pass over grad and input: grad_input = grad * a, and per statistics entry the sums of grad and
// grad * y (y recomputed) in one buffer per thread used (one when the pass runs on one thread), reduced at the end.
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
    std::vector<acc_t> A, B;
    coefficients<acc_t>(m, s, scale, A, B);  // non-finite ones are handled per element by normalize_value
    const int64_t bytes = input.numel() * (grad.element_size() + input.element_size() * (mask[0] ? 2 : 1));
    const int nthreads = threads_for(bytes);
    std::vector<acc_t> sums(stats ? static_cast<size_t>(nthreads) * 2 * K : 0, acc_t(0));
    TENSOROPS_DISPATCH_FLOATING(grad.scalar_type(), "normalize_backward_grad", [&] {
      using g_t = scalar_t;
      const g_t* g = grad.const_data_ptr<g_t>();
      TENSOROPS_DISPATCH_NORMALIZE_INPUT(input.scalar_type(), "normalize_backward_input", [&] {
        using in_t = scalar_t;
        const in_t* x = input.const_data_ptr<in_t>();
        in_t* gi = mask[0] ? grad_input.mutable_data_ptr<in_t>() : nullptr;
        cpu_for_each_segment(p, nthreads, [&](const int64_t* off, int64_t n) {
          acc_t* sg = stats ? sums.data() + static_cast<size_t>(thread_slot(nthreads)) * 2 * K : nullptr;
          for (int64_t t = 0; t < n; ++t) {
            const int64_t k = off[3] + t * p.strides[3][0];
            const acc_t gv = static_cast<acc_t>(g[off[1] + t * p.strides[1][0]]);
            if (gi) gi[off[0] + t] = static_cast<in_t>(gv * A[k]);
            if (sg) {
              const acc_t y = math::normalize_value(static_cast<acc_t>(x[off[2] + t * p.strides[2][0]]), A[k], B[k],
                                                    static_cast<acc_t>(scale), mp[k], sp[k]);
              sg[k] += gv;
              sg[K + k] += gv * y;
            }
          }
        });
      });
    });
    if (stats) {
      acc_t* gm = bw.grad_mean.mutable_data_ptr<acc_t>();
      acc_t* gs = bw.grad_std.mutable_data_ptr<acc_t>();
      for (int64_t k = 0; k < K; ++k) {
        acc_t sum_g = 0, sum_gy = 0;
        for (int th = 0; th < nthreads; ++th) {
          sum_g += sums[static_cast<size_t>(th) * 2 * K + k];
          sum_gy += sums[static_cast<size_t>(th) * 2 * K + K + k];
        }
        gm[k] = math::normalize_grad_mean(sum_g, sp[k]);
        gs[k] = math::normalize_grad_std(sum_gy, sp[k]);
      }
    }
  });
  return {bw.grad_input, bw.grad_mean, bw.grad_std};
}

}  // namespace cpu_normalize
}  // namespace tensorops

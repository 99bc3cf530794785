// tensorops.augment on the CPU: one task per sample (its op read from the table), over threads where parallel.h's
// policy says they pay. Each op's loops (augment_loops.h) are built for AVX-512, AVX2+FMA and baseline x86-64
// (cpu_isa.h). fp-contract off: torch rounds every op of these compositions on its own (math/augment.h), so g++
// must not fuse a multiply and an add that torch rounds twice; the fused ones are explicit std::fma.
#pragma GCC optimize("fp-contract=off")
#include <cmath>
#include <cstring>
#include <type_traits>  // the loop headers

#include <ATen/ATen.h>
#include <torch/library.h>

#include "tensorops/augment_entries.h"
#include "tensorops/augment_host.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/math/augment.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

// one sample's image: its first element and its channel, row and column strides
struct View {
  const uint8_t* p;
  int64_t sc, sh, sw;
};
struct Dest {
  uint8_t* p;
  int64_t sc, sh, sw;
};

TENSOROPS_AVX512_BUILD
#include "augment_loops.h"
TENSOROPS_AVX2_BUILD
#include "augment_loops.h"
TENSOROPS_BASE_BUILD
#include "augment_loops.h"
TENSOROPS_END_BUILDS

template <typename V, typename T>
V view_of(T* base, const at::Tensor& t, int64_t n) {
  return V{base + n * t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

void run_apply(augment_host::Setup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const int64_t bytes = 2 * s.out.numel();
  parallel_for_bytes(0, s.N, bytes, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      TENSOROPS_CPU_DISPATCH(apply_sample)(s.samples[n], view_of<View>(x, s.in, n),
                                           view_of<Dest>(y, s.out, n), s.C, s.H, s.W, s.has_fill, s.fill);
  });
}

void run_erase(augment_host::EraseSetup& s) {
  const uint8_t* x = s.in.const_data_ptr<uint8_t>();
  uint8_t* y = s.out.mutable_data_ptr<uint8_t>();
  const uint8_t* v = s.value.const_data_ptr<uint8_t>();
  parallel_for_bytes(0, s.N, 2 * s.out.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const View src = s.per_pixel ? view_of<View>(v, s.value, n) : View{nullptr, 0, 0, 0};
      TENSOROPS_CPU_DISPATCH(erase_sample)(view_of<View>(x, s.in, n), view_of<Dest>(y, s.out, n), s.C, s.H, s.W,
                         s.boxes.data() + 4 * n, s.per_pixel ? nullptr : v + n * s.value.stride(0),
                         s.per_pixel ? &src : nullptr);
    }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  augment_entries::register_ops<&run_apply, &run_erase>(m);
}

}  // namespace tensorops

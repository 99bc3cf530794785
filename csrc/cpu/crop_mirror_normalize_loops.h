// crop_mirror_normalize's CPU inner loops, next to normalize's (normalize_loops.h, whose `emit` and
// `affine_contiguous` they build on). Included once per build by crop_mirror_normalize.cpp (AVX-512, AVX2+FMA,
// baseline; see tensorops/cpu_isa.h), after normalize_loops.h, so no #pragma once and no includes.
// NOLINTBEGIN

// A mirrored crop row: y[t] from x[-t] (x points at the source element of y[0]); vectorizes to a reversed load.
template <typename in_t, typename out_t, typename acc_t>
void affine_reversed(const in_t* __restrict x, out_t* __restrict y, int64_t n, acc_t a, acc_t b) {
  emit<out_t, acc_t>(y, n, [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(x[-t]), a, b); });
}

// Any source step (HWC images: the channel count; mirrored: negative) into a contiguous output row.
template <typename in_t, typename out_t, typename acc_t>
void affine_step(const in_t* x, int64_t step, out_t* __restrict y, int64_t n, acc_t a, acc_t b) {
  emit<out_t, acc_t>(y, n, [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(x[t * step]), a, b); });
}

// A mirrored crop row of an HWC image written to kC channel planes `ys` apart: pixel t of the row is read
// from x[-t * kC + c] (x points at the source pixel of output column 0). The unmirrored row is normalize's
// affine_deinterleave.
template <int kC, typename in_t, typename out_t, typename acc_t>
void affine_deinterleave_reversed(const in_t* __restrict x, out_t* __restrict y, int64_t ys, int64_t n,
                                  const acc_t* __restrict a, const acc_t* __restrict b) {
  for (int c = 0; c < kC; ++c) {
    const acc_t ac = a[c], bc = b[c];
    emit<out_t, acc_t>(y + c * ys, n,
                       [&](int64_t t) { return math::normalize_apply(static_cast<acc_t>(x[c - t * kC]), ac, bc); });
  }
}

// NOLINTEND

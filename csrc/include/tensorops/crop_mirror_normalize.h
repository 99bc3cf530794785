// crop_mirror_normalize: what one output element of the batch is, shared by the CPU and CUDA kernels.
//
// Output element (n, c, i, j) of an (N, C', h, w) batch comes from sample n's image at
//   row y = y0 + i,   column x = x0 + (mirror ? w - 1 - j : j)            (crop, then mirror)
// and is normalize's value (math.h) for a real channel c < C inside the image, else `fill` (padded channels
// and crop areas outside the image). Each sample is described by one entry of a per-sample table: where its
// image is, its strides, its size and its crop; images of a list may all differ in size and strides.
#pragma once
#include <cstdint>

#include "tensorops/macros.h"
#include "tensorops/math/normalize.h"

namespace tensorops {
namespace cmn {

// One sample of the batch. Strides are in elements; `src` is the address of element (c=0, y=0, x=0).
struct Sample {
  int64_t src;
  int64_t sc, sy, sx;  // channel, row and column strides of the image
  int64_t H, W;        // image height and width
  int64_t y0, x0;      // crop origin (may lie outside the image when out_of_bounds="pad")
  int64_t mirror;      // 1: the crop is flipped horizontally
};

// Image column read by output column j of a crop of width w.
TENSOROPS_HD int64_t source_x(const Sample& s, int64_t j, int64_t w) { return s.x0 + (s.mirror ? w - 1 - j : j); }

TENSOROPS_HD bool inside(const Sample& s, int64_t y, int64_t x) { return y >= 0 && y < s.H && x >= 0 && x < s.W; }

// The output columns [lo, hi) of a crop row of width w whose source column lies inside the image.
TENSOROPS_HD void inside_columns(const Sample& s, int64_t w, int64_t& lo, int64_t& hi) {
  // unmirrored: x = x0 + j in [0, W)  ->  j in [-x0, W - x0);  mirrored: x = x0 + w - 1 - j  ->  j in
  // (x0 + w - 1 - W, x0 + w - 1]
  const int64_t a = s.mirror ? s.x0 + w - s.W : -s.x0;
  lo = a < 0 ? 0 : a;
  hi = a + s.W < w ? a + s.W : w;
  if (hi < lo) hi = lo;
}

// Does the crop leave the image anywhere (what out_of_bounds="error" rejects)?
TENSOROPS_HD bool crop_in_bounds(const Sample& s, int64_t h, int64_t w) {
  return s.y0 >= 0 && s.x0 >= 0 && s.y0 + h <= s.H && s.x0 + w <= s.W;
}

// The value of one output element from its source value x (ignored when not `real`): normalize's formula with
// the coefficients of math.h, or the fill value.
template <typename acc_t>
TENSOROPS_HD acc_t value(bool real, acc_t x, acc_t scale, acc_t mean, acc_t std, acc_t fill) {
  const acc_t a = math::normalize_coef_a(scale, std), b = math::normalize_coef_b(mean, std);
  return real ? math::normalize_value(x, a, b, scale, mean, std) : fill;
}

}  // namespace cmn
}  // namespace tensorops

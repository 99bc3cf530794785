// resized_crop_mirror_normalize: which source pixels, with which weights, make one output pixel. Shared by the
// CPU kernel (which turns it into per-sample weight tables) and the CUDA kernel (which evaluates it per thread).
//
// One axis of one sample maps output index i (of `out` outputs) to the source interval of its box
// [start, start + length): output i is centred at  center(i) = start + (i + 0.5) * scale,  scale = length / out,
// as torch's interpolate with align_corners=False. Its taps are the source pixels x in [first, first + count):
//   bilinear, antialias: torch's _upsample_bilinear2d_aa (PIL's filter): a triangle of half-width
//     support = max(scale, 1) (1 when not antialiased), weights tri((x + 0.5 - center) / max(scale, 1)), the
//     window cut to the readable range [lo, hi) and the weights divided by their sum;
//   bilinear, no antialias: torch's upsample_bilinear2d: src = max(center - 0.5, lo), the two pixels floor(src)
//     and floor(src) + 1 (the last readable pixel at the end) with weights 1 - frac, frac;
//   bicubic, antialias: torch's _upsample_bicubic2d_aa (PIL's): as bilinear's but the Keys cubic (a = -0.5) of
//     half-width support = 2 max(scale, 1) (2 when not antialiased);
//   bicubic, no antialias: torch's upsample_bicubic2d: src = center - 0.5 (not clamped), the four pixels
//     floor(src) - 1 .. floor(src) + 2 with the cubic convolution weights of a = -0.75, each index clamped to
//     [lo, hi) (edge pixels repeat: a clamped tap's weight goes to the edge pixel);
//   nearest: torch's "nearest": floor(start + i * scale) (the product in float, as torch), inside [lo, hi).
// The readable range [lo, hi) is the box's pixels when `crop_first` (resized_crop: crop, then resize) and the
// whole image otherwise (Resize then crop: taps near the box's edges read the image beyond it).
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorops/macros.h"
#include "tensorops/math/cast.h"
#include "tensorops/math/normalize.h"

namespace tensorops {
namespace resize {

constexpr int64_t kNearest = 0, kBilinear = 1, kBicubic = 2;  // the schema's interpolation

// Axis::mode
constexpr int64_t kModeNearest = 0, kModeBilinear = 1, kModeBilinearAA = 2, kModeBicubic = 3, kModeBicubicAA = 4;

struct Axis {
  double start, scale, support, invscale;
  int64_t lo, hi;   // readable source range
  int64_t extent;   // the image's length along the axis
  int64_t mode;     // kMode*
};

TENSOROPS_HD bool filtered(const Axis& a) { return a.mode == kModeBilinearAA || a.mode == kModeBicubicAA; }

TENSOROPS_HD Axis make_axis(double start, double length, int64_t out, int64_t extent, int64_t interpolation,
                            bool antialias, bool crop_first) {
  Axis a{};
  a.start = start;
  a.scale = out > 0 ? length / static_cast<double>(out) : 1.0;
  a.mode = interpolation == kNearest    ? kModeNearest
           : interpolation == kBilinear ? (antialias ? kModeBilinearAA : kModeBilinear)
                                        : (antialias ? kModeBicubicAA : kModeBicubic);
  const double half = a.mode == kModeBicubicAA ? 2.0 : 1.0;  // the filter's half-width at scale 1
  const bool wide = filtered(a) && a.scale >= 1.0;
  a.support = wide ? half * a.scale : half;
  a.invscale = wide ? 1.0 / a.scale : 1.0;
  int64_t lo = 0, hi = extent;
  if (crop_first) {
    lo = static_cast<int64_t>(floor(start));
    hi = static_cast<int64_t>(ceil(start + length));
    lo = lo < 0 ? 0 : lo;
    hi = hi > extent ? extent : hi;
  }
  a.lo = lo;
  a.hi = hi;
  a.extent = extent;
  return a;
}

// The source position output i samples (for out_of_bounds="pad": outside [0, extent) it is `fill`).
// Nearest multiplies in float, as torch's nearest_idx does (so that an integer box picks torch's pixels).
TENSOROPS_HD double position(const Axis& a, int64_t i) {
  if (a.mode == kModeNearest) return a.start + static_cast<double>(static_cast<float>(i) * static_cast<float>(a.scale));
  return a.start + (static_cast<double>(i) + 0.5) * a.scale;
}

TENSOROPS_HD bool outside(const Axis& a, int64_t i) {
  const double p = position(a, i);
  return !(p >= 0.0 && p < static_cast<double>(a.extent)) || a.hi <= a.lo;
}

// x clamped to the readable range [lo, hi) (not empty).
TENSOROPS_HD int64_t clamp_index(const Axis& a, int64_t x) { return x < a.lo ? a.lo : (x >= a.hi ? a.hi - 1 : x); }

// The cubic convolution kernel of parameter A at distance t >= 0 (Keys): A = -0.5 is PIL's and torch's
// antialiased filter, A = -0.75 torch's (and OpenCV's) plain bicubic.
TENSOROPS_HD double cubic(double t, double A) {
  if (t < 1.0) return ((A + 2.0) * t - (A + 3.0)) * t * t + 1.0;
  if (t < 2.0) return ((A * t - 5.0 * A) * t + 8.0 * A) * t - 4.0 * A;
  return 0.0;
}

// Output i's taps: source pixels [first, first + count); count is 0 when nothing is readable.
TENSOROPS_HD void window(const Axis& a, int64_t i, int64_t& first, int64_t& count) {
  if (a.hi <= a.lo) {
    first = a.lo;
    count = 0;
    return;
  }
  if (a.mode == kModeNearest) {
    first = clamp_index(a, static_cast<int64_t>(floor(position(a, i))));
    count = 1;
  } else if (a.mode == kModeBicubic) {
    const int64_t x = static_cast<int64_t>(floor(position(a, i) - 0.5));
    first = clamp_index(a, x - 1);
    count = clamp_index(a, x + 2) - first + 1;
  } else if (a.mode == kModeBilinear) {
    double src = position(a, i) - 0.5;
    src = src < static_cast<double>(a.lo) ? static_cast<double>(a.lo) : src;
    int64_t x = static_cast<int64_t>(floor(src));
    x = x >= a.hi ? a.hi - 1 : x;
    first = x;
    count = x + 1 < a.hi ? 2 : 1;
  } else {
    const double c = position(a, i);
    int64_t x0 = static_cast<int64_t>(floor(c - a.support + 0.5));
    int64_t x1 = static_cast<int64_t>(floor(c + a.support + 0.5));
    x0 = x0 < a.lo ? a.lo : x0;
    x1 = x1 > a.hi ? a.hi : x1;
    first = x0;
    count = x1 > x0 ? x1 - x0 : 0;
  }
}

// The (not yet normalized) weight of source pixel x in output i's window; divide by the window's sum.
TENSOROPS_HD double weight(const Axis& a, int64_t i, int64_t x) {
  if (a.mode == kModeNearest) return 1.0;
  if (a.mode == kModeBicubic) {  // the four taps' weights, summed where clamping makes taps one pixel
    const double src = position(a, i) - 0.5;
    const double f = floor(src);
    const int64_t x0 = static_cast<int64_t>(f);
    double w = 0.0;
    for (int64_t k = -1; k <= 2; ++k) {
      const double d = src - f - static_cast<double>(k);
      if (clamp_index(a, x0 + k) == x) w += cubic(d < 0.0 ? -d : d, -0.75);
    }
    return w;
  }
  if (a.mode == kModeBilinear) {
    double src = position(a, i) - 0.5;
    src = src < static_cast<double>(a.lo) ? static_cast<double>(a.lo) : src;
    const double f = floor(src);
    const double frac = src - f;
    const int64_t x0 = static_cast<int64_t>(f);
    if (x0 + 1 >= a.hi) return 1.0;  // one tap (the window's count is 1)
    return x == x0 ? 1.0 - frac : frac;
  }
  double t = (static_cast<double>(x) + 0.5 - position(a, i)) * a.invscale;
  t = t < 0.0 ? -t : t;
  if (a.mode == kModeBicubicAA) return cubic(t, -0.5);
  return t < 1.0 ? 1.0 - t : 0.0;
}

// One sample: its image (as crop_mirror_normalize's: address of element (0, 0, 0), element strides, size), its
// two axes and whether the output is mirrored.
struct Sample {
  int64_t src;
  int64_t sc, sy, sx;
  int64_t H, W;
  Axis y, x;
  int64_t mirror;
};

// Stores a resampled, normalized value: floating outputs as math::cast_out, uint8 rounded half up and
// saturated (torchvision's uint8 resize rounds so; NaN becomes 0).
template <typename out_t, typename acc_t>
TENSOROPS_HD out_t store(acc_t v) {
  if constexpr (sizeof(out_t) == 1) {
    acc_t r = v + acc_t(0.5);
    r = r > acc_t(0) ? r : acc_t(0);
    r = r < acc_t(255) ? r : acc_t(255);
    return static_cast<out_t>(static_cast<int>(r));
  } else {
    return math::cast_out<out_t>(v);
  }
}

}  // namespace resize
}  // namespace tensorops

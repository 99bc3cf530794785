// The per-value math of tensorops.augment, called by the CPU loops (cpu/augment_loops.h) and the CUDA kernels
// (kernels/augment.cuh). Every function mirrors the float32 operations torchvision 0.29's v2 functional ops run
// on a uint8 image, one torch op per rounding, in torch's order, so that the result is the same bits:
//  - torch rounds each elementwise op once; `a.add_(b, alpha=k)` is one fused multiply-add (ATen's vectorized
//    add is fmadd(b, alpha, a), CUDA's a + alpha * b contracted by nvcc), everything else rounds separately.
//    Hence the explicit mul_rn / add_rn / fma_rn below: nvcc must not contract them (the __f*_rn intrinsics)
//    and neither may g++ (cpu/augment.cpp is compiled with fp-contract off).
//  - Python float constants reach torch as doubles and are cast to float32 by the kernel: k() below, never a
//    float literal (a decimal literal rounded straight to float can differ from the double rounded to float).
//  - float -> uint8 is a truncation (torch's .to(torch.uint8) of values already clamped to [0, 255]).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensorops/macros.h"

namespace tensorops {
namespace augment {

// The kernel's op codes (tensorops/augment/functional.py maps its OPS names onto them).
enum Op : int32_t {
  kIdentity = 0,
  kBrightness = 1,    // f0 = factor
  kContrast = 2,      // f0 = factor, f1 = 1 - factor (both rounded from the double, as _blend does)
  kSaturation = 3,    // f0, f1 as contrast
  kHue = 4,           // f0 = hue_factor
  kSharpness = 5,     // f1 = 1 - factor
  kPosterize = 6,     // ival = the bit mask
  kSolarize = 7,      // f0 = threshold
  kAutocontrast = 8,
  kEqualize = 9,
  kInvert = 10,
  kGrayscale = 11,    // every output channel the luma
  kAffine = 12,       // theta, ival = interpolation (0 nearest, 1 bilinear), fill in the call
  kRot90 = 13,        // torch.rot90(k=1) of a square image (rotate's fast path), as exact index maps
  kRot180 = 14,
  kRot270 = 15,
  kSolarizeAdd = 16,  // ival = the addend (timm's SolarizeAdd: below 128, x + addend saturated at 255)
  kAffinePil = 17,    // a = Pillow's affine data, ival = Pillow's filter (1 bilinear, 2 bicubic), fill in the call
  kNumOps = 18,
};

// One sample's arguments, made on the host (csrc/host/augment_host.cpp) for both devices.
struct Sample {
  int32_t op;
  int32_t ival;
  float f0, f1;
  // affine: torchvision's grid for output pixel (x, y) of the centred base grid: gx = x * t[0] + y * t[1] + t[2],
  // gy = x * t[3] + y * t[4] + t[5] (theta transposed and divided by half the size: _affine_grid's rescaled theta)
  float t[6];
  // affine_pil: Pillow's data (a, b, c, d, e, f): output pixel (x, y) reads the input at
  // (a * (x + 0.5) + b * (y + 0.5) + c, d * (x + 0.5) + e * (y + 0.5) + f)
  double a[6];
};

// The ops whose value depends on one channel value only: a table of 256 per (sample, channel), built from the
// sample's statistics (contrast's mean, autocontrast's extremes, equalize's histogram).
TENSOROPS_HD bool is_lut_op(int32_t op) {
  return op == kBrightness || op == kContrast || op == kPosterize || op == kSolarize || op == kAutocontrast ||
         op == kEqualize || op == kInvert || op == kSolarizeAdd;
}

// ---- one rounding per op ----------------------------------------------------------------------------------
// Always inlined on the host: the CPU's colour row loops are built with other optimize options (no trapping math,
// cpu/augment_loops.h), and GCC inlines a function with other options only where it must.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define TENSOROPS_AUGMENT_INLINE inline __attribute__((always_inline))
#else
#define TENSOROPS_AUGMENT_INLINE TENSOROPS_HD
#endif
// One rounding per operation: nvcc's __f*_rn / __d*_rn intrinsics on the device (never contracted), the plain
// operator on the host (fp-contract off where these are used).
#ifdef __CUDA_ARCH__
#define TENSOROPS_RN(name, type, op, intrinsic) \
  TENSOROPS_AUGMENT_INLINE type name(type a, type b) { return intrinsic(a, b); }
#else
#define TENSOROPS_RN(name, type, op, intrinsic) \
  TENSOROPS_AUGMENT_INLINE type name(type a, type b) { return a op b; }
#endif
TENSOROPS_RN(mul_rn, float, *, __fmul_rn)
TENSOROPS_RN(add_rn, float, +, __fadd_rn)
TENSOROPS_RN(sub_rn, float, -, __fsub_rn)
TENSOROPS_RN(div_rn, float, /, __fdiv_rn)
TENSOROPS_RN(dmul_rn, double, *, __dmul_rn)  // Pillow's double arithmetic (pil_affine_pixel)
TENSOROPS_RN(dadd_rn, double, +, __dadd_rn)
TENSOROPS_RN(dsub_rn, double, -, __dsub_rn)
#undef TENSOROPS_RN
// a * b + c rounded once, exactly, in double arithmetic: for x86 CPUs without the FMA instruction (the baseline
// build there), where __builtin_fmaf is a call to glibc's software fmaf, about 110 ns a value (measured on this
// project's Xeon with glibc's FMA paths switched off), against 2.4 ns for this in a loop (SSE2, vectorized).
// The product of two floats is exact in double; the sum s rounds once, and TwoSum gives its exact error e. f, s
// rounded to float, is then the fused result unless the double rounding made a tie: s lies exactly halfway between
// f and the float t = f + 2 (s - f), and the exact sum lies beyond s, away from f (e on the side of s - f); then t
// is. (A float halfway point is a double, so s can only be one where the exact sum is within half a double step.)
// Checked against std::fma on 200 M triples, 12 M of them double-rounding ties. NaN stays NaN.
TENSOROPS_AUGMENT_INLINE float fma_soft(float a, float b, float c) {
  const double p = static_cast<double>(a) * static_cast<double>(b), z = static_cast<double>(c);
  const double s = p + z;
  const double bz = s - p, bp = s - bz;
  const double e = (p - bp) + (z - bz);
  const float f = static_cast<float>(s);
  const double d = s - static_cast<double>(f);
  const double t = static_cast<double>(f) + 2.0 * d;
  const float tf = static_cast<float>(t);
  const bool beyond = (static_cast<double>(tf) == t) & (d != 0.0) & (e != 0.0) & ((e > 0.0) == (d > 0.0));
  return beyond ? tf : f;
}
// a * b + c rounded once (torch's add_ with alpha: c.add_(a, alpha=b)). kHardFma: the build has the instruction
// (the CPU loops' kHardFma, tensorops/cpu_isa.h: false only in x86's baseline build, which uses fma_soft).
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE float fma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  if constexpr (!kHardFma) {
    return fma_soft(a, b, c);
  } else {
#if defined(__GNUC__) && !defined(__CUDACC__)
    // the builtin, expanded in the caller's target (one vfmadd in the AVX2 and AVX-512 builds): std::fma is an
    // inline function of <cmath>, which a caller with other optimize options (augment.cpp's) may not inline, and
    // its out-of-line copy, built for baseline x86-64, calls libm's software fma
    return __builtin_fmaf(a, b, c);
#else
    return std::fma(a, b, c);
#endif
  }
#endif
}
// the Python double constant as torch's float32 kernel sees it
TENSOROPS_AUGMENT_INLINE float k(double v) { return static_cast<float>(v); }

// floor of a float of magnitude below 2^31 through the integer conversion (exact; vectorizes where floorf may not).
// The correction is in integers: a conditional float subtraction stops GCC's vectorizer where the vectors have no
// masks and floating-point operations may trap (the baseline build, SSE2 and NEON).
TENSOROPS_AUGMENT_INLINE float floor_small(float v) {
  const int32_t i = static_cast<int32_t>(v);  // truncation toward zero
  return static_cast<float>(i - static_cast<int32_t>(static_cast<float>(i) > v));
}

// k ? v : +0, with v computed either way. On the host as a mask of v's bits: GCC sinks a product that only one arm
// of a select uses into a branch, which its vectorizer then cannot take where the vectors have no masks and
// floating-point operations may trap (floor_small above).
TENSOROPS_AUGMENT_INLINE float keep_if(bool k, float v) {
#ifdef __CUDA_ARCH__
  return k ? v : 0.f;
#else
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u &= 0u - static_cast<uint32_t>(k);
  std::memcpy(&v, &u, sizeof v);
  return v;
#endif
}

TENSOROPS_AUGMENT_INLINE float clamp_to(float v, float lo, float hi) {
  v = v < lo ? lo : v;  // one select at a time (vectorizes); NaN stays NaN
  return v > hi ? hi : v;
}
TENSOROPS_AUGMENT_INLINE uint8_t to_u8(float v) { return static_cast<uint8_t>(static_cast<int>(v)); }  // v in [0, 255]

// ---- colour ------------------------------------------------------------------------------------------------
// _rgb_to_grayscale_image: r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114)
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE float luma(float r, float g, float b) {
  return fma_rn<kHardFma>(b, k(0.114), fma_rn<kHardFma>(g, k(0.587), mul_rn(r, k(0.2989))));
}

// _blend(image1, image2, ratio): image1.mul(ratio).add_(image2, alpha=1 - ratio).clamp_(0, 255).to(uint8)
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE uint8_t blend(float x, float other, float ratio, float alpha) {
  return to_u8(clamp_to(fma_rn<kHardFma>(other, alpha, mul_rn(x, ratio)), 0.f, 255.f));
}

// adjust_brightness_image: image.mul(factor).clamp_(0, 255).to(uint8)
TENSOROPS_AUGMENT_INLINE uint8_t brightness(float x, float factor) {
  const float v = mul_rn(x, factor);
  return to_u8(v > 255.f ? 255.f : v);
}

// solarize_image: where(image >= threshold, 255 - image, image), the comparison in float32
TENSOROPS_AUGMENT_INLINE uint8_t solarize(int x, float threshold) {
  return static_cast<float>(x) >= threshold ? static_cast<uint8_t>(255 - x) : static_cast<uint8_t>(x);
}

// timm's solarize_add (Pillow's table): values below 128 raised by the addend, saturated at 255 (addend in [0, 255])
TENSOROPS_AUGMENT_INLINE uint8_t solarize_add(int x, int addend) {
  const int v = x + addend;
  return static_cast<uint8_t>(x < 128 ? (v > 255 ? 255 : v) : x);
}

// autocontrast_image for one channel of extremes lo, hi (as floats)
TENSOROPS_AUGMENT_INLINE uint8_t autocontrast(float x, float lo, float hi) {
  float minimum = lo, inv_scale = mul_rn(sub_rn(hi, lo), k(1.0 / 255.0));
  if (hi == lo) {
    minimum = 0.f;
    inv_scale = 1.f;
  }
  return to_u8(clamp_to(div_rn(sub_rn(x, minimum), inv_scale), 0.f, 255.f));
}

// adjust_hue_image on one pixel: to_dtype(float32, scale=True), _rgb_to_hsv, h.add_(hue).remainder_(1.0),
// _hsv_to_rgb, to_dtype(uint8, scale=True) (mul(255.999), truncation).
TENSOROPS_AUGMENT_INLINE void hue(uint8_t ri, uint8_t gi, uint8_t bi, float hue_factor, uint8_t& ro, uint8_t& go,
                      uint8_t& bo) {
  const float s255 = k(1.0 / 255.0);
  const float r = mul_rn(static_cast<float>(ri), s255), g = mul_rn(static_cast<float>(gi), s255),
              b = mul_rn(static_cast<float>(bi), s255);
  const float mrg = r > g ? r : g, nrg = r < g ? r : g;
  const float maxc = mrg > b ? mrg : b;  // aminmax: the exact extreme, whichever order
  const float minc = nrg < b ? nrg : b;
  const bool eqc = maxc == minc;
  const float range = sub_rn(maxc, minc);
  const float s = div_rn(range, eqc ? 1.f : maxc);
  const float divisor = eqc ? 1.f : range;
  const float rc = div_rn(sub_rn(maxc, r), divisor), gc = div_rn(sub_rn(maxc, g), divisor),
              bc = div_rn(sub_rn(maxc, b), divisor);
  const bool neq_r = maxc != r, eq_g = maxc == g;
  const float hg = mul_rn(sub_rn(add_rn(rc, 2.f), bc), (eq_g & neq_r) ? 1.f : 0.f);
  const float hr = mul_rn(sub_rn(bc, gc), neq_r ? 0.f : 1.f);
  const float hb = mul_rn(sub_rn(add_rn(gc, 4.f), rc), (neq_r & !eq_g) ? 1.f : 0.f);
  float h = add_rn(mul_rn(add_rn(add_rn(hr, hg), hb), k(1.0 / 6.0)), 1.f);
  h = sub_rn(h, floor_small(h));  // fmod_(1.0) of a positive value: exact either way
  // remainder_(1.0): fmod, plus 1 where negative; for |h| < 2 that is h - floor(h), one rounding where h < 0
  h = add_rn(h, hue_factor);
  h = sub_rn(h, floor_small(h));
  // _hsv_to_rgb
  const float h6 = mul_rn(h, 6.f);
  const float fi = floor_small(h6);
  const float f = sub_rn(h6, fi);
  const float i = fi >= 6.f ? fi - 6.f : fi;  // h in [0, 1]: i in 0..6, remainder_(6); compared as floats (vectorizes)
  const float sxf = mul_rn(s, f);
  const float one_minus_s = sub_rn(1.f, s);
  const float v = maxc;
  const float q = clamp_to(mul_rn(sub_rn(1.f, sxf), v), 0.f, 1.f);
  const float t = clamp_to(mul_rn(add_rn(sxf, one_minus_s), v), 0.f, 1.f);
  const float p = clamp_to(mul_rn(one_minus_s, v), 0.f, 1.f);
  // torchvision's select table [[0,2,1,1,3,0],[3,0,0,2,1,1],[1,1,3,0,0,2]] over (v, p, q, t), as selects
  float R = t, G = p, B = p;  // one select at a time (vectorizes)
  R = ((i == 2.f) | (i == 3.f)) ? p : R;
  R = i == 1.f ? q : R;
  R = ((i == 0.f) | (i == 5.f)) ? v : R;
  G = i == 3.f ? q : G;
  G = i == 0.f ? t : G;
  G = ((i == 1.f) | (i == 2.f)) ? v : G;
  B = i == 2.f ? t : B;
  B = i == 5.f ? q : B;
  B = ((i == 3.f) | (i == 4.f)) ? v : B;
  const float up = k(255.0 + 1.0 - 1e-3);
  ro = to_u8(mul_rn(R, up));
  go = to_u8(mul_rn(G, up));
  bo = to_u8(mul_rn(B, up));
}

// adjust_sharpness_image at an inner pixel: the 3x3 blur (1/13 around, 5/13 in the middle) rounded, then
// x + (1 - factor) * (blurred - x). The blur's float32 sum is (sum8 + 5 * centre) / 13 within a few ulps and an
// integer over 13 is never within 1/26 of a half, so its rounding is exact from integers: whatever order the
// convolution sums in, round() gives floor((2 * S + 13) / 26).
// S is at most 13 * 255 and 2 * S + 13 at most 6,643: 16-bit arithmetic (GCC's loops then divide 8 at a time,
// by a multiply-high).
TENSOROPS_AUGMENT_INLINE uint16_t sharpen_blur(int centre, int sum8) {
  const uint16_t s = static_cast<uint16_t>(sum8 + 5 * centre);
  const uint16_t v = static_cast<uint16_t>(2 * s + 13);
  return static_cast<uint16_t>(v / 26);
}
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE uint8_t sharpen_apply(int centre, int blurred, float alpha) {
  const float x = static_cast<float>(centre);
  return to_u8(clamp_to(fma_rn<kHardFma>(sub_rn(static_cast<float>(blurred), x), alpha, x), 0.f, 255.f));
}
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE uint8_t sharpen(int centre, int sum8, float alpha) {
  return sharpen_apply<kHardFma>(centre, sharpen_blur(centre, sum8), alpha);
}

// ---- the table ops -----------------------------------------------------------------------------------------
// contrast's mean of the (floored) luma: torch's float32 sum of integers, exact below 2^24 (a 224 x 224 image sums
// to at most 12.8 M), then torch.mean's division: by the count on the CPU, times the count's reciprocal on CUDA
// (ATen's MeanOps). Above 2^24 torch's own float sum rounds in its own order: then the mean may differ in the last
// place (documented).
TENSOROPS_HD float contrast_mean(int64_t sum, int64_t count, bool reciprocal) {
  const float s = static_cast<float>(sum), n = static_cast<float>(count);
  return reciprocal ? mul_rn(s, div_rn(1.f, n)) : div_rn(s, n);
}

// Entry v of a table op's table, given the channel's statistics (contrast: the mean; autocontrast: extremes).
template <bool kHardFma = true>
TENSOROPS_HD uint8_t lut_entry(const Sample& sm, int v, float mean, float lo, float hi) {
  const float x = static_cast<float>(v);
  switch (sm.op) {
    case kBrightness: return brightness(x, sm.f0);
    case kContrast: return blend<kHardFma>(x, mean, sm.f0, sm.f1);
    case kPosterize: return static_cast<uint8_t>(v & sm.ival);
    case kSolarize: return solarize(v, sm.f0);
    case kSolarizeAdd: return solarize_add(v, sm.ival);
    case kAutocontrast: return autocontrast(x, lo, hi);
    case kInvert: return static_cast<uint8_t>(255 - v);
    default: return static_cast<uint8_t>(v);
  }
}

// equalize_image's table for one channel from its 256-bin histogram (total pixels): PIL's scheme as torchvision
// writes it, in integers. Returns false where torchvision leaves the channel as it is (step == 0).
template <typename Count>
TENSOROPS_HD bool equalize_lut(const Count* hist, int64_t total, uint8_t* lut) {
  int64_t last = 0;  // the last non-empty bin (cum_hist.argmax: the first bin where the sum reaches the total)
  for (int v = 0; v < 256; ++v)
    if (hist[v] != 0) last = v;
  const int64_t step = (total - static_cast<int64_t>(hist[last])) / 255;
  if (step == 0) return false;
  int64_t cum = 0;
  lut[0] = 0;
  for (int v = 1; v < 256; ++v) {
    cum += static_cast<int64_t>(hist[v - 1]);
    const int64_t e = (cum + step / 2) / step;
    lut[v] = static_cast<uint8_t>(e > 255 ? 255 : e);
  }
  return true;
}

// ---- affine (_affine_grid + grid_sample(align_corners=False) + round) --------------------------------------
// The source coordinate (in input pixels) of output pixel (i, j) of an h x w image: torchvision's grid
// (base grid (j - (w - 1) / 2, i - (h - 1) / 2, 1) times the rescaled theta, by bmm: (x * t0 + y * t1) + t2, each
// rounded, matched torch 2.14's CPU bmm on every grid point of 24 test maps), then grid_sample's unnormalisation
// (coord + 1) * (size / 2) - 0.5 as ATen's vectorized CPU kernel computes it: the multiply and the subtraction
// fused (with separate roundings, bilinear translations by half pixels missed 0.07% of torchvision's values).
// fused_grid: torch's CPU bmm rounds the grid as fma(y, t1, x * t0) + t2 instead, which MKL does on some CPUs for
// some grid sizes (measured on an Intel Xeon, torch 2.14: from a few hundred grid points up; an AMD EPYC: never):
// the CPU kernel asks torch's bmm which it does for the image's size (augment.cpp's grid_fuses).
// The grid point (gx, gy) of output pixel (i, j): the base grid times theta, rounded as torch's bmm rounds it.
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE void affine_grid_point(const float* t, int64_t i, int64_t j, int64_t h, int64_t w,
                                                bool fused_grid, float& gx, float& gy) {
  // (through int32: exact for any image size, and AVX2 has no vector conversion from int64)
  const float bx = static_cast<float>(static_cast<int32_t>(j)) - static_cast<float>(w - 1) * 0.5f;
  const float by = static_cast<float>(static_cast<int32_t>(i)) - static_cast<float>(h - 1) * 0.5f;
  const float px = mul_rn(bx, t[0]), py = mul_rn(bx, t[3]);
  const float sx = fused_grid ? fma_rn<kHardFma>(by, t[1], px) : add_rn(px, mul_rn(by, t[1]));  // (a select: vectorizes)
  const float sy = fused_grid ? fma_rn<kHardFma>(by, t[4], py) : add_rn(py, mul_rn(by, t[4]));
  gx = add_rn(sx, t[2]);
  gy = add_rn(sy, t[5]);
}
template <bool kHardFma = true>
TENSOROPS_AUGMENT_INLINE void affine_source(const float* t, int64_t i, int64_t j, int64_t h, int64_t w, float& ix,
                                            float& iy, bool fused_grid = false) {
  float gx, gy;
  affine_grid_point<kHardFma>(t, i, j, h, w, fused_grid, gx, gy);
  ix = fma_rn<kHardFma>(add_rn(gx, 1.f), static_cast<float>(w) * 0.5f, -0.5f);
  iy = fma_rn<kHardFma>(add_rn(gy, 1.f), static_cast<float>(h) * 0.5f, -0.5f);
}

// round half to even (torch.round_ and grid_sample's nearest: std::nearbyint). On the host by adding and
// subtracting 1.5 * 2^23 (exact for |v| < 2^22, and vectorizes); larger magnitudes only occur for coordinates far
// outside the image, which stay outside.
TENSOROPS_AUGMENT_INLINE float round_even(float v) {
#ifdef __CUDA_ARCH__
  return rintf(v);
#else
  constexpr float kMagic = 12582912.f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
#endif
}

// grid_sample's bilinear taps at source (ix, iy) (ATen's CPU grid sampler: floor, distances w = x - floor(x),
// e = 1 - w, n, s likewise, weights nw = s * e, ne = s * w, sw = n * e, se = n * w): the four weights, the
// north-west tap (x0, y0) and whether each tap lies inside the image (zeros padding), all compared as floats
// (exact: small integers), so that the caller's loop vectorizes; returned by value (no arrays for nvcc to spill).
struct Taps {
  float w0, w1, w2, w3;  // nw, ne, sw, se, zeroed where the tap lies outside the image
  float x0, y0;          // the north-west tap
  bool k0, k1, k2, k3;   // whether each tap lies inside
};
TENSOROPS_AUGMENT_INLINE Taps bilinear_taps(float ix, float iy, int64_t h, int64_t w) {
  // coordinates beyond a pixel outside the image read only zeros (their weights then only matter for the fill mask,
  // which is 0 there either way): clamped so that the integer floor stays in range
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  ix = clamp_to(ix, -2.f, fw + 1.f);
  iy = clamp_to(iy, -2.f, fh + 1.f);
  Taps t;
  t.x0 = floor_small(ix);
  t.y0 = floor_small(iy);
  const float we = sub_rn(ix, t.x0), ea = sub_rn(1.f, we), no = sub_rn(iy, t.y0), so = sub_rn(1.f, no);
  const bool xw_in = (t.x0 > -1.f) & (t.x0 < fw), xe_in = (t.x0 + 1.f > -1.f) & (t.x0 + 1.f < fw);
  const bool yn_in = (t.y0 > -1.f) & (t.y0 < fh), ys_in = (t.y0 + 1.f > -1.f) & (t.y0 + 1.f < fh);
  t.k0 = yn_in & xw_in;
  t.k1 = yn_in & xe_in;
  t.k2 = ys_in & xw_in;
  t.k3 = ys_in & xe_in;
  // a tap outside reads 0 in torch (0 * w); its weight is zeroed here instead (v * 0): the same +0 for the finite,
  // non-negative values and weights of an image
  t.w0 = keep_if(t.k0, mul_rn(so, ea));
  t.w1 = keep_if(t.k1, mul_rn(so, we));
  t.w2 = keep_if(t.k2, mul_rn(no, ea));
  t.w3 = keep_if(t.k3, mul_rn(no, we));
  return t;
}

// The bilinear sum of the taps' values and weights as torch 2.14's CPU grid_sample rounds it: the first product,
// then a fused multiply-add per tap (matched its output on every pixel of a test image whose sample points sit
// near half pixels, where the rounded-product sum missed 433 of 4096).
template <bool kHardFma = true>
TENSOROPS_HD float bilinear_sum(float v0, float v1, float v2, float v3, float w0, float w1, float w2, float w3) {
  return fma_rn<kHardFma>(v3, w3, fma_rn<kHardFma>(v2, w2, fma_rn<kHardFma>(v1, w1, mul_rn(v0, w0))));
}

// With a fill, _apply_grid_transform's mask blend (img - fill) * mask + fill (mask: the interpolated ones, i.e.
// the inside taps' weights summed), then round_() and .to(uint8).
TENSOROPS_HD uint8_t bilinear_finish(float out, float mask, bool has_fill, float fill) {
  if (has_fill) out = add_rn(mul_rn(sub_rn(out, fill), mask), fill);
  return to_u8(clamp_to(round_even(out), 0.f, 255.f));
}

// ---- Pillow's affine (Image.transform(AFFINE), Image.rotate) with its BILINEAR or BICUBIC filter -------------
// timm's geometric ops resample with Pillow (libImaging/Geometry.c: affine_transform, the bilinear and bicubic
// filters). Its arithmetic, in double with each operation rounded on its own (Pillow's x86-64 builds have no
// fused multiply-add): the source point of output pixel (i, j) is (a0 * (j + 0.5) + a1 * (i + 0.5)) + a2 (and
// a3, a4, a5 for y); a point outside [0, w) x [0, h) gives the fill; else the taps around (x - 0.5, y - 0.5),
// columns and rows clamped to the image. Bilinear: a + (b - a) * d along x, then along y, truncated to uint8.
// Bicubic: Pillow's cubic (a = -1) as p1 + d * (p2 + d * (p3 + d * p4)), along x then y, clipped to [0, 255]
// and truncated.
TENSOROPS_AUGMENT_INLINE double pil_linear(double a, double b, double d) {
  return dadd_rn(a, dmul_rn(dsub_rn(b, a), d));
}
TENSOROPS_AUGMENT_INLINE double pil_cubic(double v1, double v2, double v3, double v4, double d) {
  const double p2 = dadd_rn(-v1, v3);
  const double p3 = dsub_rn(dadd_rn(dmul_rn(2.0, dsub_rn(v1, v2)), v3), v4);
  const double p4 = dadd_rn(dsub_rn(dadd_rn(-v1, v2), v3), v4);
  return dadd_rn(v2, dmul_rn(d, dadd_rn(p2, dmul_rn(d, dadd_rn(p3, dmul_rn(d, p4))))));
}
// The first pass over four pixel values: Pillow's p2, p3, p4 of uint8 values are integer sums (its macro
// computes them in int), exact, then the same double polynomial.
TENSOROPS_AUGMENT_INLINE double pil_cubic_u8(int32_t v1, int32_t v2, int32_t v3, int32_t v4, double d) {
  const double p2 = static_cast<double>(v3 - v1), p3 = static_cast<double>(2 * (v1 - v2) + v3 - v4);
  const double p4 = static_cast<double>(-v1 + v2 - v3 + v4);
  return dadd_rn(static_cast<double>(v2), dmul_rn(d, dadd_rn(p2, dmul_rn(d, dadd_rn(p3, dmul_rn(d, p4))))));
}
TENSOROPS_AUGMENT_INLINE int64_t clamp_index(int64_t v, int64_t n) { return v < 0 ? 0 : (v < n ? v : n - 1); }

// One output pixel (i, j) of sample sm: its C channels written to y (channel stride oc), read from x (strides sc,
// sh, sw), channel c's fill (byte c of `fill`: no array, which CUDA would keep in local memory) where the source
// point lies outside.
TENSOROPS_AUGMENT_INLINE void pil_affine_pixel(const Sample& sm, const uint8_t* x, int64_t sc, int64_t sh, int64_t sw,
                                               int64_t C, int64_t h, int64_t w, int64_t i, int64_t j, uint32_t fill,
                                               uint8_t* y, int64_t oc) {
  const double xi = static_cast<double>(j) + 0.5, yi = static_cast<double>(i) + 0.5;
  const double xs = dadd_rn(dadd_rn(dmul_rn(sm.a[0], xi), dmul_rn(sm.a[1], yi)), sm.a[2]);
  const double ys = dadd_rn(dadd_rn(dmul_rn(sm.a[3], xi), dmul_rn(sm.a[4], yi)), sm.a[5]);
  if (!(xs >= 0.0 && xs < static_cast<double>(w) && ys >= 0.0 && ys < static_cast<double>(h))) {
    for (int64_t c = 0; c < C; ++c) y[c * oc] = static_cast<uint8_t>(fill >> (8 * c));
    return;
  }
  const double xm = dsub_rn(xs, 0.5), ym = dsub_rn(ys, 0.5);  // >= -0.5: floor is -1 or more
  using std::floor;  // (std::floor on the host, the device's floor under nvcc)
  const int64_t x0 = static_cast<int64_t>(floor(xm)), y0 = static_cast<int64_t>(floor(ym));
  const double dx = dsub_rn(xm, static_cast<double>(x0)), dy = dsub_rn(ym, static_cast<double>(y0));
  if (sm.ival == 1) {
    const int64_t c0 = clamp_index(x0, w) * sw, c1 = clamp_index(x0 + 1, w) * sw;
    const int64_t r0 = clamp_index(y0, h) * sh, r1 = clamp_index(y0 + 1, h) * sh;
    for (int64_t c = 0; c < C; ++c) {
      const uint8_t* q = x + c * sc;
      const double top = pil_linear(q[r0 + c0], q[r0 + c1], dx), bottom = pil_linear(q[r1 + c0], q[r1 + c1], dx);
      y[c * oc] = static_cast<uint8_t>(static_cast<int>(pil_linear(top, bottom, dy)));
    }
    return;
  }
  int64_t col[4], row[4];
  for (int k = 0; k < 4; ++k) {
    col[k] = clamp_index(x0 - 1 + k, w) * sw;
    row[k] = clamp_index(y0 - 1 + k, h) * sh;
  }
  for (int64_t c = 0; c < C; ++c) {
    const uint8_t* q = x + c * sc;
    double v[4];
    for (int k = 0; k < 4; ++k) {
      const uint8_t* r = q + row[k];
      v[k] = pil_cubic_u8(r[col[0]], r[col[1]], r[col[2]], r[col[3]], dx);
    }
    const double out = pil_cubic(v[0], v[1], v[2], v[3], dy);
    y[c * oc] = out <= 0.0 ? uint8_t{0} : (out >= 255.0 ? uint8_t{255} : static_cast<uint8_t>(static_cast<int>(out)));
  }
}

// AugMix's mix of one element: w[0] * x, then + w[k] * a_k for each chain, each product and sum rounded (v2:
// `mix = m0 * batch; mix.add_(w_i * aug_i)`), then .to(uint8).
constexpr int kMaxMix = 8;  // chains per call
TENSOROPS_HD float mix_first(float w0, float x) { return mul_rn(w0, x); }
TENSOROPS_HD float mix_add(float acc, float w, float a) { return add_rn(acc, mul_rn(w, a)); }
TENSOROPS_HD uint8_t mix_end(float acc) { return to_u8(clamp_to(acc, 0.f, 255.f)); }

// torch.rot90(k, dims=(-2, -1)) as an index map: output (i, j) reads input (si, sj).
TENSOROPS_HD void rot_source(int32_t op, int64_t i, int64_t j, int64_t h, int64_t w, int64_t& si, int64_t& sj) {
  if (op == kRot90) {  // flip(-1).transpose
    si = j;
    sj = w - 1 - i;
  } else if (op == kRot180) {
    si = h - 1 - i;
    sj = w - 1 - j;
  } else {  // kRot270: flip(-2).transpose
    si = h - 1 - j;
    sj = i;
  }
}

}  // namespace augment
}  // namespace tensorops

// Division by a run-time divisor that is fixed for a whole launch (a plan dimension's size), as a multiply-high,
// an add and a shift instead of an integer division (a long instruction sequence on GPUs, worse for 64 bits).
//
// The method (Granlund & Montgomery, "Division by invariant integers using multiplication", 1994; ATen's
// IntDivider does the same for 32 bits): for a divisor d >= 1 with s = ceil(log2 d) and a W-bit word
// (W = 32 or 64), magic = floor(2^W * (2^s - d) / d) + 1 fits in W bits and
//     n / d == (mulhi(n, magic) + n) >> s      for every 0 <= n < 2^W.
// The sum is formed in W bits, so it must not wrap: n < 2^(W-1), which holds for every non-negative int32_t or
// int64_t dividend. Divisors are positive int32_t / int64_t values (a non-positive size is taken as 1: such a
// plan is never launched).
//
// Dependency-free (macros.h only) on purpose: tests/test_fast_divide.py compiles it with the host compiler and
// checks every quotient against the plain division.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tensorops/macros.h"

namespace tensorops {

// High W bits of the 2W-bit product.
TENSOROPS_HD uint32_t mulhi(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

TENSOROPS_HD uint64_t mulhi(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__) && !defined(TENSOROPS_NO_INT128)
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#else  // portable (MSVC, ...): four 32 x 32-bit products (TENSOROPS_NO_INT128 selects it for the tests)
  const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32, b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
  const uint64_t mid = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return hi_hi + (hi_lo >> 32) + (mid >> 32);
#endif
}

// Divides non-negative index_t values (int32_t or int64_t) by one positive divisor.
template <typename index_t>
struct IntDivider {
  static_assert(std::is_same<index_t, int32_t>::value || std::is_same<index_t, int64_t>::value,
                "IntDivider: index_t is int32_t or int64_t");
  using word_t = typename std::make_unsigned<index_t>::type;
  static constexpr int kBits = 8 * sizeof(word_t);

  index_t divisor = 1;
  word_t magic = 1;
  int shift = 0;

  IntDivider() = default;

  // Host side, once per launch.
  explicit IntDivider(index_t d) : divisor(d > 0 ? d : 1) {
    const word_t dw = static_cast<word_t>(divisor);
    while (shift < kBits - 1 && (word_t{1} << shift) < dw) ++shift;
    // magic - 1 = floor(2^W * r / d) with r = 2^s - d < d: W steps of long division (exact, no wider type)
    word_t r = (word_t{1} << shift) - dw, q = 0;
    for (int b = 0; b < kBits; ++b) {
      r <<= 1;  // r < d <= 2^(W-1) - 1, so this does not wrap
      q <<= 1;
      if (r >= dw) {
        r -= dw;
        q |= 1;
      }
    }
    magic = q + 1;
  }

  // n / divisor, for 0 <= n.
  TENSOROPS_HD index_t div(index_t n) const {
    const word_t nw = static_cast<word_t>(n);
    return static_cast<index_t>((mulhi(nw, magic) + nw) >> shift);
  }

  // n % divisor, leaving n / divisor in n: one digit of a mixed-radix index.
  TENSOROPS_HD index_t divmod(index_t& n) const {
    const index_t q = div(n);
    const index_t r = n - q * divisor;
    n = q;
    return r;
  }
};

}  // namespace tensorops

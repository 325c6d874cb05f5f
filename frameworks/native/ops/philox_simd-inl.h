// Philox4x32-10 over a block of consecutive counters, vectorised with
// Highway and compiled once per SIMD target (creation.cpp includes it
// through foreach_target). It expands math.h's rounds (XY_PHILOX_ROUNDS) on
// Highway vectors, so it computes xy_philox word for word and the random
// kernels stay bit-identical to the other frameworks;
// only the four output words come from here, the conversion to numbers is
// math.h's own.

#ifndef XYLEM_NATIVE_PHILOX_BLOCK_
#define XYLEM_NATIVE_PHILOX_BLOCK_
#include <cstddef>
namespace xylem::native {
// Counters per call: a multiple of every target's lane count.
inline constexpr std::size_t kPhiloxBlock = 256;
}  // namespace xylem::native
#endif

#if defined(XYLEM_NATIVE_PHILOX_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_PHILOX_SIMD_INL_H_
#undef XYLEM_NATIVE_PHILOX_SIMD_INL_H_
#else
#define XYLEM_NATIVE_PHILOX_SIMD_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "xylem/plugin/math.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// words[w][k] = word w of xy_philox(seed, counter + k), k < kPhiloxBlock.
// Each 32-bit word lives in the low half of a 64-bit lane, so MulEven gives
// the full 32x32->64 products Philox needs on every target.
// inline: dropout.cpp includes this file as well as creation.cpp.
inline HWY_NOINLINE void PhiloxBlock(std::uint64_t seed, std::uint64_t counter, std::uint64_t* HWY_RESTRICT w0,
                              std::uint64_t* HWY_RESTRICT w1, std::uint64_t* HWY_RESTRICT w2,
                              std::uint64_t* HWY_RESTRICT w3) {
#if HWY_TARGET == HWY_SCALAR
  // One-lane vectors cannot be split into 32-bit halves: plain math.h.
  for (std::size_t i = 0; i < kPhiloxBlock; ++i) {
    const xy_philox_out r = xy_philox(seed, counter + i);
    w0[i] = r.v[0], w1[i] = r.v[1], w2[i] = r.v[2], w3[i] = r.v[3];
  }
#else
  const hn::ScalableTag<std::uint64_t> d;
  const hn::Repartition<std::uint32_t, decltype(d)> d32;
  const std::size_t lanes = hn::Lanes(d);
  const auto low = hn::Set(d, 0xFFFFFFFFull);
  // math.h's rounds on 64-bit lanes: MulEven multiplies the low 32 bits of
  // each lane (the word) by the multiplier into the full 64-bit product.
  // The keys are vectors too, carried from round to round: measured 7%
  // faster on AVX2 (3% on AVX-512) than a scalar key broadcast each round,
  // whose xor the compiler put after the multiply's. They wrap past 32
  // bits, which only reaches the high halves of c0 and c2: MulEven never
  // reads those, and the stores mask them.
#define XYLEM_PHILOX_MUL(m, c) hn::MulEven(hn::BitCast(d32, hn::Set(d, m)), hn::BitCast(d32, c))
#define XYLEM_PHILOX_HI(m, p) hn::ShiftRight<32>(p)
#define XYLEM_PHILOX_LO(m, p) hn::And(p, low)
#define XYLEM_PHILOX_XOR3(a, b, k) hn::Xor(hn::Xor(a, b), k)
#define XYLEM_PHILOX_KEY_ADD(k, w) hn::Add(k, hn::Set(d, w))
  for (std::size_t i = 0; i < kPhiloxBlock; i += lanes) {
    const auto ctr = hn::Add(hn::Set(d, counter + i), hn::Iota(d, 0));
    auto c0 = hn::And(ctr, low), c1 = hn::ShiftRight<32>(ctr), c2 = hn::Zero(d), c3 = hn::Zero(d);
    auto k0 = hn::And(hn::Set(d, seed), low), k1 = hn::Set(d, seed >> 32);
    XY_PHILOX_ROUNDS(decltype(c0), XYLEM_PHILOX_MUL, XYLEM_PHILOX_HI, XYLEM_PHILOX_LO, XYLEM_PHILOX_XOR3,
                     XYLEM_PHILOX_KEY_ADD, c0, c1, c2, c3, k0, k1)
    hn::Store(hn::And(c0, low), d, w0 + i);
    hn::Store(c1, d, w1 + i);
    hn::Store(hn::And(c2, low), d, w2 + i);
    hn::Store(c3, d, w3 + i);
  }
#undef XYLEM_PHILOX_MUL
#undef XYLEM_PHILOX_HI
#undef XYLEM_PHILOX_LO
#undef XYLEM_PHILOX_XOR3
#undef XYLEM_PHILOX_KEY_ADD
#endif
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

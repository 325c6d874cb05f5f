// Philox4x32-10 over a block of consecutive counters, vectorised with
// Highway and compiled once per SIMD target (creation.cpp includes it
// through foreach_target). It computes exactly math.h's xy_philox, word for
// word, so the random kernels stay bit-identical to the other frameworks;
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
  const auto m0 = hn::BitCast(d32, hn::Set(d, 0xD2511F53ull));
  const auto m1 = hn::BitCast(d32, hn::Set(d, 0xCD9E8D57ull));
  for (std::size_t i = 0; i < kPhiloxBlock; i += lanes) {
    const auto ctr = hn::Add(hn::Set(d, counter + i), hn::Iota(d, 0));
    auto c0 = hn::And(ctr, low), c1 = hn::ShiftRight<32>(ctr), c2 = hn::Zero(d), c3 = hn::Zero(d);
    std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      const auto p0 = hn::MulEven(m0, hn::BitCast(d32, c0));
      const auto p1 = hn::MulEven(m1, hn::BitCast(d32, c2));
      c0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d, k0));
      c1 = hn::And(p1, low);
      c2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d, k1));
      c3 = hn::And(p0, low);
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    hn::Store(c0, d, w0 + i);
    hn::Store(c1, d, w1 + i);
    hn::Store(c2, d, w2 + i);
    hn::Store(c3, d, w3 + i);
  }
#endif
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

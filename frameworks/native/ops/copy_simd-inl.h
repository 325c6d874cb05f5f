// The transposing tile of copy.cpp's copy_tiled: a block of 4-byte words
// (8-byte: 2 x 2) turned in registers, so both sides move whole vectors.
// Element by element through a buffer, a tile cost a load and a store per
// word with the strides in registers (measured on [16, 64, 64, 64] f32
// NCHW -> NHWC: the element loop ran at a third of NumPy's rate).

#if defined(XYLEM_NATIVE_COPY_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_COPY_SIMD_INL_H_
#undef XYLEM_NATIVE_COPY_SIMD_INL_H_
#else
#define XYLEM_NATIVE_COPY_SIMD_INL_H_
#endif

#include <cstdint>
#include <cstdlib>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Calls block(r, c) for each block of `step` x `step` of a rows x cols
// tile. The side with the larger stride (power-of-two strides map its
// lines onto one cache set) finishes its lines before going on: only
// `step` of them are live at a time.
template <class Block>
HWY_INLINE void ForBlocks(std::int64_t rows, std::int64_t cols, std::int64_t step, bool rows_outer, Block&& block) {
  if (rows_outer) {
    for (std::int64_t r = 0; r < rows; r += step)
      for (std::int64_t c = 0; c < cols; c += step) block(r, c);
  } else {
    for (std::int64_t c = 0; c < cols; c += step)
      for (std::int64_t r = 0; r < rows; r += step) block(r, c);
  }
}

#if HWY_TARGET == HWY_SCALAR
// One lane: no vector to turn (a target only the oldest CPUs take).
template <class W>
inline void TransposeScalar(const W* src, std::int64_t ld_src, W* dst, std::int64_t ld_dst, std::int64_t rows,
                            std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}
inline void TransposeU32(const std::uint32_t* src, std::int64_t ld_src, std::uint32_t* dst, std::int64_t ld_dst,
                         std::int64_t rows, std::int64_t cols) {
  TransposeScalar(src, ld_src, dst, ld_dst, rows, cols);
}
inline void TransposeU64(const std::uint64_t* src, std::int64_t ld_src, std::uint64_t* dst, std::int64_t ld_dst,
                         std::int64_t rows, std::int64_t cols) {
  TransposeScalar(src, ld_src, dst, ld_dst, rows, cols);
}
#else
// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols, both
// multiples of 4.
inline void TransposeU32(const std::uint32_t* src, std::int64_t ld_src, std::uint32_t* dst, std::int64_t ld_dst,
                         std::int64_t rows, std::int64_t cols) {
  const hn::FixedTag<std::uint32_t, 4> d;
  const hn::FixedTag<std::uint64_t, 2> d64;
  ForBlocks(rows, cols, 4, std::abs(ld_src) >= std::abs(ld_dst), [&](std::int64_t r, std::int64_t c) HWY_ATTR {
    const std::uint32_t* s = src + r * ld_src + c;
    const auto a = hn::LoadU(d, s), b = hn::LoadU(d, s + ld_src);
    const auto e = hn::LoadU(d, s + 2 * ld_src), f = hn::LoadU(d, s + 3 * ld_src);
    // (a0 b0 a1 b1), (a2 b2 a3 b3), (e0 f0 e1 f1), (e2 f2 e3 f3); then
    // pairs of them as 8-byte lanes: (a0 b0 e0 f0), ...
    const auto ab_lo = hn::BitCast(d64, hn::InterleaveLower(d, a, b));
    const auto ab_hi = hn::BitCast(d64, hn::InterleaveUpper(d, a, b));
    const auto ef_lo = hn::BitCast(d64, hn::InterleaveLower(d, e, f));
    const auto ef_hi = hn::BitCast(d64, hn::InterleaveUpper(d, e, f));
    std::uint32_t* t = dst + c * ld_dst + r;
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, ab_lo, ef_lo)), d, t);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, ab_lo, ef_lo)), d, t + ld_dst);
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d64, ab_hi, ef_hi)), d, t + 2 * ld_dst);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d64, ab_hi, ef_hi)), d, t + 3 * ld_dst);
  });
}

// The same for 8-byte words, rows and cols multiples of 2.
inline void TransposeU64(const std::uint64_t* src, std::int64_t ld_src, std::uint64_t* dst, std::int64_t ld_dst,
                         std::int64_t rows, std::int64_t cols) {
  const hn::FixedTag<std::uint64_t, 2> d;
  ForBlocks(rows, cols, 2, std::abs(ld_src) >= std::abs(ld_dst), [&](std::int64_t r, std::int64_t c) HWY_ATTR {
    const std::uint64_t* s = src + r * ld_src + c;
    const auto a = hn::LoadU(d, s), b = hn::LoadU(d, s + ld_src);
    std::uint64_t* t = dst + c * ld_dst + r;
    hn::StoreU(hn::InterleaveLower(d, a, b), d, t);
    hn::StoreU(hn::InterleaveUpper(d, a, b), d, t + ld_dst);
  });
}

#endif  // HWY_TARGET == HWY_SCALAR

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

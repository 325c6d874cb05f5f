// The vector loops of math::reduce (reduce.cpp includes this through
// foreach_target): reductions of one dense row, and accumulation of dense
// rows into per-column accumulators. reduce.cpp splits the work, combines
// partial results and handles strides.
//
// Accuracy: f16/bf16/f32 accumulate in f32 vectors over blocks of
// kSumBlock elements, and the block totals in f64, so the error of a sum
// grows with the block size, not with the row length (1e7-element sums
// stay within a few f32 ulp). f64 accumulates in f64 the same way.

#ifndef XYLEM_NATIVE_REDUCE_KINDS_
#define XYLEM_NATIVE_REDUCE_KINDS_
#include <cstddef>
#include <cstdint>
namespace xylem::native {
inline constexpr std::size_t kSumBlock = 1024;
// How far ahead of its loads RowExtreme prefetches (one line per 8
// vectors): a page, so the next page, or the next row, is on its way before
// the loads cross into it; the hardware prefetchers stop at page boundaries.
// Over 4096 x 4096 f32 on one core: 4-7% faster than none (2 KiB: 3%,
// 8 KiB: 2%, 16 KiB: 1% slower).
inline constexpr std::uintptr_t kExtremePrefetch = 4096;
}  // namespace xylem::native
#endif

#if defined(XYLEM_NATIVE_REDUCE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_REDUCE_SIMD_INL_H_
#undef XYLEM_NATIVE_REDUCE_SIMD_INL_H_
#else
#define XYLEM_NATIVE_REDUCE_SIMD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "frameworks/native/ops/convert_simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sum of x[i] - shift over a dense row (shift = 0: the plain sum; the
// mean: with squares, the sum of squared deviations). kShift false: shift
// is 0 and not applied: on one core this load-bound loop runs about as
// fast as the core retires its instructions, and the extra subtraction per
// vector measured 25% slower over 64 MiB.
template <bool kSquare, bool kShift, class T>
HWY_INLINE double RowSumShifted(const T* HWY_RESTRICT x, std::size_t n, double shift) {
  using C = ComputeOf<T>;
  const ComputeTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, C(shift));
  double total = 0;
  for (std::size_t b = 0; b < n; b += kSumBlock) {
    const std::size_t m = std::min(kSumBlock, n - b);
    const T* p = x + b;
    // Eight independent sums: fewer instructions per vector keep more
    // loads in flight (measured 1.2x over four on one core, at Eigen's speed).
    auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    const auto term = [&](std::size_t i) HWY_ATTR {
      const auto v = kShift ? hn::Sub(LoadC(d, p + i), s) : LoadC(d, p + i);
      return kSquare ? hn::Mul(v, v) : v;
    };
    std::size_t i = 0;
    for (; i + 8 * lanes <= m; i += 8 * lanes) {
      a0 = hn::Add(a0, term(i));
      a1 = hn::Add(a1, term(i + lanes));
      a2 = hn::Add(a2, term(i + 2 * lanes));
      a3 = hn::Add(a3, term(i + 3 * lanes));
      a4 = hn::Add(a4, term(i + 4 * lanes));
      a5 = hn::Add(a5, term(i + 5 * lanes));
      a6 = hn::Add(a6, term(i + 6 * lanes));
      a7 = hn::Add(a7, term(i + 7 * lanes));
    }
    for (; i + lanes <= m; i += lanes) a0 = hn::Add(a0, term(i));
    a0 = hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), hn::Add(hn::Add(a4, a5), hn::Add(a6, a7)));
    C block = hn::GetLane(hn::SumOfLanes(d, a0));
    for (; i < m; ++i) {
      const C v = to_compute(p[i]) - C(shift);
      block += kSquare ? v * v : v;
    }
    total += double(block);
  }
  return total;
}

template <bool kSquare, class T>
HWY_INLINE double RowSum(const T* HWY_RESTRICT x, std::size_t n, double shift) {
  if (shift == 0) return RowSumShifted<kSquare, false>(x, n, 0.0);
  return RowSumShifted<kSquare, true>(x, n, shift);
}

// Whether a dense row holds a NaN (the exact check behind RowExtreme's
// cheap one).
template <class T>
HWY_INLINE bool RowHasNaN(const T* HWY_RESTRICT x, std::size_t n) {
  const ComputeTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    if (!hn::AllFalse(d, hn::IsNaN(LoadC(d, x + i)))) return true;
  for (; i < n; ++i) {
    const auto v = to_compute(x[i]);
    if (v != v) return true;
  }
  return false;
}

// Whether hn::Max(a, b) and hn::Min(a, b) return b in every lane where a or
// b is NaN: x86's maxps/minps do, as Highway documents; other targets may
// drop the NaN whichever operand holds it.
#undef XYLEM_NATIVE_MAX_TAKES_NAN
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSSE3
#define XYLEM_NATIVE_MAX_TAKES_NAN 1
#else
#define XYLEM_NATIVE_MAX_TAKES_NAN 0
#endif

// max (kMax) or min of a dense row, n >= 1; NaN if any element is NaN.
// Eight independent extremes keep loads in flight (as in RowSumShifted); a
// row that is not a whole number of vectors ends with one more vector that
// overlaps the previous (an extreme does not mind a lane seen twice).
//
// NaN: hn::Max/Min do not keep it, an IsNaN mask per vector made this
// memory-bound loop 1.3x slower on one core (AMD EPYC, AVX-512), and
// AVX-512's VRANGEPS keeps only signalling NaNs. So NaN is tracked by
// arithmetic that a NaN turns NaN for good. Where Max takes NaN (x86),
// a = Max(a, v) is NaN right after a NaN v, and an FMA of each pair of
// extremes per 8 vectors catches it: each vector is loaded once, folded
// into its Max. Adding every vector into a sum instead (still the way
// elsewhere) had the compiler load each vector twice, once per use: rows
// of 4096 f32 ran 14-16% behind Eigen's loop, against 1-5% now. The check
// can also turn NaN without one, from +-Inf (Inf - Inf, Inf * 0) or, with
// the FMA, |x| above ~1e19 (f32), so RowHasNaN then decides.
template <bool kMax, class T>
HWY_INLINE ComputeOf<T> RowExtreme(const T* HWY_RESTRICT x, std::size_t n) {
  using C = ComputeOf<T>;
  const ComputeTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  if (n < lanes) {
    C best = to_compute(x[0]);
    bool nan = best != best;
    for (std::size_t i = 1; i < n; ++i) {
      const C v = to_compute(x[i]);
      nan = nan || v != v;
      best = kMax ? std::max(best, v) : std::min(best, v);
    }
    return nan ? std::numeric_limits<C>::quiet_NaN() : best;
  }
  constexpr bool kTakesNaN = XYLEM_NATIVE_MAX_TAKES_NAN;
  const auto ext = [](auto a, auto b) HWY_ATTR { return kMax ? hn::Max(a, b) : hn::Min(a, b); };
  auto a0 = LoadC(d, x), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  auto s0 = a0, s1 = hn::Zero(d), s2 = s1, s3 = s1;  // the NaN checks
  std::size_t i = lanes;
  for (; i + 8 * lanes <= n; i += 8 * lanes) {
    // An address past the row is fine: a prefetch never faults.
    hwy::Prefetch(reinterpret_cast<const T*>(reinterpret_cast<std::uintptr_t>(x + i) + kExtremePrefetch));
    const auto v0 = LoadC(d, x + i), v1 = LoadC(d, x + i + lanes);
    const auto v2 = LoadC(d, x + i + 2 * lanes), v3 = LoadC(d, x + i + 3 * lanes);
    const auto v4 = LoadC(d, x + i + 4 * lanes), v5 = LoadC(d, x + i + 5 * lanes);
    const auto v6 = LoadC(d, x + i + 6 * lanes), v7 = LoadC(d, x + i + 7 * lanes);
    a0 = ext(a0, v0), a1 = ext(a1, v1), a2 = ext(a2, v2), a3 = ext(a3, v3);
    a4 = ext(a4, v4), a5 = ext(a5, v5), a6 = ext(a6, v6), a7 = ext(a7, v7);
    if constexpr (kTakesNaN) {
      s0 = hn::MulAdd(a0, a1, s0), s1 = hn::MulAdd(a2, a3, s1);
      s2 = hn::MulAdd(a4, a5, s2), s3 = hn::MulAdd(a6, a7, s3);
    } else {
      s0 = hn::Add(s0, hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)));
      s1 = hn::Add(s1, hn::Add(hn::Add(v4, v5), hn::Add(v6, v7)));
    }
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = LoadC(d, x + i);
    a0 = ext(a0, v);
    s0 = hn::Add(s0, kTakesNaN ? a0 : v);
  }
  if (i < n) {
    const auto v = LoadC(d, x + n - lanes);
    a1 = ext(a1, v);
    s1 = hn::Add(s1, kTakesNaN ? a1 : v);
  }
  const auto s = hn::Add(hn::Add(s0, s1), hn::Add(s2, s3));
  if (!hn::AllFalse(d, hn::IsNaN(s)) && RowHasNaN(x, n)) return std::numeric_limits<C>::quiet_NaN();
  const auto a = ext(ext(ext(a0, a1), ext(a2, a3)), ext(ext(a4, a5), ext(a6, a7)));
  return hn::GetLane(kMax ? hn::MaxOfLanes(d, a) : hn::MinOfLanes(d, a));
}

// Index of the first element equal to `value` (the first NaN for NaN), in
// a dense row known to hold one.
template <class T>
HWY_INLINE std::size_t RowFind(const T* HWY_RESTRICT x, std::size_t n, ComputeOf<T> value) {
  const ComputeTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  const bool nan = value != value;
  const auto target = hn::Set(d, value);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = LoadC(d, x + i);
    const auto hit = nan ? hn::IsNaN(v) : hn::Eq(v, target);
    if (!hn::AllFalse(d, hit)) return i + std::size_t(hn::FindFirstTrue(d, hit));
  }
  for (; i < n; ++i) {
    const auto v = to_compute(x[i]);
    if (nan ? v != v : v == value) return i;
  }
  return n;  // not reached for a value taken from the row
}

// Column accumulation over `rows` dense rows of width w (row j at
// x + j*row_stride): kind 0: acc[i] += x - shift[i] (shift may be null),
// 1: acc += (x - shift[i])^2, 2: acc = max, 3: acc = min (NaN sticks).
template <int kKind, class T>
HWY_INLINE void ColumnAccumulate(const T* HWY_RESTRICT x, std::int64_t row_stride, std::size_t rows,
                                 std::size_t w, const ComputeOf<T>* HWY_RESTRICT shift, ComputeOf<T>* HWY_RESTRICT acc) {
  using C = ComputeOf<T>;
  const ComputeTag<T> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto step = [&](auto a, auto v, auto sh) HWY_ATTR {
    if constexpr (kKind == 0) return hn::Add(a, hn::Sub(v, sh));
    if constexpr (kKind == 1) {
      const auto dv = hn::Sub(v, sh);
      return hn::MulAdd(dv, dv, a);
    }
#if XYLEM_NATIVE_MAX_TAKES_NAN
    // Max(a, v) is NaN where v is, and the select keeps a NaN a: one op
    // fewer than below, 1.4x faster over 4096 x 4096 f32 on one core.
    if constexpr (kKind == 2) return hn::IfThenElse(hn::IsNaN(a), a, hn::Max(a, v));
    if constexpr (kKind == 3) return hn::IfThenElse(hn::IsNaN(a), a, hn::Min(a, v));
#else
    if constexpr (kKind == 2) return hn::IfThenElse(hn::Or(hn::Gt(v, a), hn::IsNaN(v)), v, a);
    if constexpr (kKind == 3) return hn::IfThenElse(hn::Or(hn::Lt(v, a), hn::IsNaN(v)), v, a);
#endif
  };
  // Row by row, each row read once front to back (the accumulators stay in
  // L1): walking down one column strip at a time would touch one line per
  // row at a large stride, which the prefetchers and the TLB handle badly.
  const std::size_t whole = w - w % lanes;
  for (std::size_t j = 0; j < rows; ++j) {
    const T* row = x + std::int64_t(j) * row_stride;
    for (std::size_t i = 0; i < whole; i += lanes) {
      const auto sh = shift ? hn::LoadU(d, shift + i) : hn::Zero(d);
      hn::StoreU(step(hn::LoadU(d, acc + i), LoadC(d, row + i), sh), d, acc + i);
    }
  }
  for (std::size_t i = whole; i < w; ++i) {
    C a = acc[i];
    const C sh = shift ? shift[i] : C(0);
    for (std::size_t j = 0; j < rows; ++j) {
      const C v = to_compute(x[std::int64_t(j) * row_stride + i]);
      if constexpr (kKind == 0) a += v - sh;
      if constexpr (kKind == 1) a += (v - sh) * (v - sh);
      if constexpr (kKind == 2) a = (v > a || v != v) ? v : a;
      if constexpr (kKind == 3) a = (v < a || v != v) ? v : a;
    }
    acc[i] = a;
  }
}

// The exported entry points, per storage type.
#define XYLEM_NATIVE_REDUCE_ENTRIES(Suffix, T)                                                                 \
  HWY_NOINLINE double RowSum##Suffix(const T* x, std::size_t n, double shift) { return RowSum<false>(x, n, shift); } \
  HWY_NOINLINE double RowSumSq##Suffix(const T* x, std::size_t n, double shift) { return RowSum<true>(x, n, shift); } \
  HWY_NOINLINE ComputeOf<T> RowMax##Suffix(const T* x, std::size_t n) { return RowExtreme<true>(x, n); }     \
  HWY_NOINLINE ComputeOf<T> RowMin##Suffix(const T* x, std::size_t n) { return RowExtreme<false>(x, n); }    \
  HWY_NOINLINE std::size_t RowFind##Suffix(const T* x, std::size_t n, ComputeOf<T> v) { return RowFind(x, n, v); } \
  HWY_NOINLINE void ColumnAccumulate##Suffix(int kind, const T* x, std::int64_t row_stride, std::size_t rows,   \
                                             std::size_t w, const ComputeOf<T>* shift, ComputeOf<T>* acc) {    \
    switch (kind) {                                                                                            \
      case 0: return ColumnAccumulate<0>(x, row_stride, rows, w, shift, acc);                                  \
      case 1: return ColumnAccumulate<1>(x, row_stride, rows, w, shift, acc);                                  \
      case 2: return ColumnAccumulate<2>(x, row_stride, rows, w, shift, acc);                                  \
      default: return ColumnAccumulate<3>(x, row_stride, rows, w, shift, acc);                                 \
    }                                                                                                          \
  }
XYLEM_NATIVE_REDUCE_ENTRIES(F16, hwy::float16_t)
XYLEM_NATIVE_REDUCE_ENTRIES(BF16, hwy::bfloat16_t)
XYLEM_NATIVE_REDUCE_ENTRIES(F32, float)
XYLEM_NATIVE_REDUCE_ENTRIES(F64, double)
#undef XYLEM_NATIVE_REDUCE_ENTRIES

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

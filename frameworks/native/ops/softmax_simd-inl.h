// The row loops of softmax, log_softmax, their gradients and cross-entropy
// (softmax.cpp includes this through foreach_target; cross_entropy.cpp
// reaches them through softmax_rows.hpp). A row is dense, in the compute
// type; callers gather strided or half-precision rows into a buffer first.
//
// Passes per row: the maximum, then exp(x - max) stored while summing,
// then one scaling in place. The row stays in cache between passes, so
// memory sees one read and one write per element.
//
// Sums accumulate in vectors over blocks of kRowBlock elements whose totals
// are added in f64: the error grows with the block, not the row.

#if defined(XYLEM_NATIVE_SOFTMAX_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_SOFTMAX_SIMD_INL_H_
#undef XYLEM_NATIVE_SOFTMAX_SIMD_INL_H_
#else
#define XYLEM_NATIVE_SOFTMAX_SIMD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "frameworks/native/ops/elementwise_math_simd-inl.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr std::size_t kRowBlock = 1024;

// exp(t) for t <= 0 (or NaN). Far below exp's range the result is 0 as for
// std::exp (up to subnormals); clamping first keeps Highway's Exp in its
// valid range, and the comparison form keeps NaN a NaN. f32 vectors whose
// lanes all have normal results (the usual case) take LeanExp, about half
// the work (elementwise_math_simd-inl.h); others Highway's Exp, lane by
// lane the same result whatever the neighbours.
template <class D>
HWY_INLINE hn::Vec<D> ExpNonPositive(D d, hn::Vec<D> t) {
  using T = hn::TFromD<D>;
  const auto low = hn::Set(d, T(sizeof(T) == 4 ? -104.0 : -745.0));
  if constexpr (sizeof(T) == 4) {
    const auto lean_ok = hn::Ge(t, hn::Set(d, kLeanExpLow));
    const auto lean = LeanExp(d, t);
    if (HWY_LIKELY(hn::AllTrue(d, lean_ok))) return lean;
    return hn::IfThenElse(lean_ok, lean, hn::Exp(d, hn::IfThenElse(hn::Lt(t, low), low, t)));
  }
  return hn::Exp(d, hn::IfThenElse(hn::Lt(t, low), low, t));
}

// Applies f(i) -> vector over n elements: whole vectors, then the tail
// through a zero-padded buffer (so every element sees the vector formula).
// `load` reads a possibly partial vector: the tail lanes are filled with
// `pad` for inputs.
template <class D, class Body>
HWY_INLINE void ForVectors(D d, std::size_t n, Body body) {
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) body(i, lanes);
  if (i < n) body(i, n - i);
}

// Loads count (<= lanes) elements from p, the rest of the lanes `pad`.
template <class D>
HWY_INLINE hn::Vec<D> LoadPart(D d, const hn::TFromD<D>* p, std::size_t count, hn::TFromD<D> pad) {
  if (count == hn::Lanes(d)) return hn::LoadU(d, p);
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf[HWY_MAX_BYTES / sizeof(C)];
  for (std::size_t k = 0; k < hn::Lanes(d); ++k) buf[k] = k < count ? p[k] : pad;
  return hn::Load(d, buf);
}

template <class D>
HWY_INLINE void StorePart(D d, hn::Vec<D> v, hn::TFromD<D>* p, std::size_t count) {
  if (count == hn::Lanes(d)) return hn::StoreU(v, d, p);
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf[HWY_MAX_BYTES / sizeof(C)];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, count * sizeof(C));
}

template <class C>
HWY_INLINE C Max(const C* HWY_RESTRICT x, std::size_t n) {
  const hn::ScalableTag<C> d;
  auto m = hn::Set(d, C(-HUGE_VAL));
  auto nan = hn::Zero(d);
  ForVectors(d, n, [&](std::size_t i, std::size_t count) HWY_ATTR {
    const auto v = LoadPart(d, x + i, count, C(-HUGE_VAL));
    m = hn::Max(m, v);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
  });
  if (!hn::AllFalse(d, hn::MaskFromVec(nan))) return C(NAN);
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

// sum of exp(x - shift); stores the terms to y when y is not null (y may be x).
template <class C>
HWY_INLINE double ExpSum(const C* x, C* y, std::size_t n, C shift) {
  const hn::ScalableTag<C> d;
  const auto s = hn::Set(d, shift);
  double total = 0;
  for (std::size_t b = 0; b < n; b += kRowBlock) {
    const std::size_t m = std::min(kRowBlock, n - b);
    auto acc = hn::Zero(d);
    ForVectors(d, m, [&](std::size_t i, std::size_t count) HWY_ATTR {
      // Padding lanes get -inf: exp gives 0 and the sum is unchanged.
      const auto e = ExpNonPositive(d, hn::Sub(LoadPart(d, x + b + i, count, C(-HUGE_VAL)), s));
      acc = hn::Add(acc, e);
      if (y) StorePart(d, e, y + b + i, count);
    });
    total += double(hn::GetLane(hn::SumOfLanes(d, acc)));
  }
  return total;
}

// sum of a*b (b null: sum of a).
template <class C>
HWY_INLINE double Dot(const C* HWY_RESTRICT a, const C* HWY_RESTRICT b, std::size_t n) {
  const hn::ScalableTag<C> d;
  double total = 0;
  for (std::size_t blk = 0; blk < n; blk += kRowBlock) {
    const std::size_t m = std::min(kRowBlock, n - blk);
    auto acc = hn::Zero(d);
    ForVectors(d, m, [&](std::size_t i, std::size_t count) HWY_ATTR {
      const auto va = LoadPart(d, a + blk + i, count, C(0));
      acc = b ? hn::MulAdd(va, LoadPart(d, b + blk + i, count, C(0)), acc) : hn::Add(acc, va);
    });
    total += double(hn::GetLane(hn::SumOfLanes(d, acc)));
  }
  return total;
}

// softmax (log_softmax with `log`) of a dense row; y may be x.
template <class C>
HWY_INLINE void SoftmaxRow(const C* x, C* y, std::size_t n, bool log) {
  const hn::ScalableTag<C> d;
  const C m = Max(x, n);
  if (log) {
    const C ls = C(std::log(ExpSum<C>(x, nullptr, n, m)));
    const auto vm = hn::Set(d, m), vls = hn::Set(d, ls);
    ForVectors(d, n, [&](std::size_t i, std::size_t count) HWY_ATTR {
      StorePart(d, hn::Sub(hn::Sub(LoadPart(d, x + i, count, C(0)), vm), vls), y + i, count);
    });
    return;
  }
  const auto inv = hn::Set(d, C(1.0 / ExpSum<C>(x, y, n, m)));
  ForVectors(d, n, [&](std::size_t i, std::size_t count) HWY_ATTR {
    StorePart(d, hn::Mul(LoadPart(d, y + i, count, C(0)), inv), y + i, count);
  });
}

// softmax: dx = y*(dy - sum(dy*y)); log: dx = dy - exp(y)*sum(dy). dx may
// alias y or dy.
template <class C>
HWY_INLINE void SoftmaxGradRow(const C* y, const C* dy, C* dx, std::size_t n, bool log) {
  const hn::ScalableTag<C> d;
  const auto s = hn::Set(d, C(Dot<C>(dy, log ? nullptr : y, n)));
  ForVectors(d, n, [&](std::size_t i, std::size_t count) HWY_ATTR {
    const auto vy = LoadPart(d, y + i, count, C(0)), vdy = LoadPart(d, dy + i, count, C(0));
    const auto r = log ? hn::Sub(vdy, hn::Mul(ExpNonPositive(d, vy), s)) : hn::Mul(vy, hn::Sub(vdy, s));
    StorePart(d, r, dx + i, count);
  });
}

// log(sum(exp(x))), stably: max + log(sum(exp(x - max))).
template <class C>
HWY_INLINE C LogSumExp(const C* x, std::size_t n) {
  const C m = Max(x, n);
  return m + C(std::log(ExpSum<C>(x, nullptr, n, m)));
}

HWY_NOINLINE void SoftmaxRowF32(const float* x, float* y, std::size_t n, bool log) { SoftmaxRow(x, y, n, log); }
HWY_NOINLINE void SoftmaxRowF64(const double* x, double* y, std::size_t n, bool log) { SoftmaxRow(x, y, n, log); }
HWY_NOINLINE void SoftmaxGradRowF32(const float* y, const float* dy, float* dx, std::size_t n, bool log) {
  SoftmaxGradRow(y, dy, dx, n, log);
}
HWY_NOINLINE void SoftmaxGradRowF64(const double* y, const double* dy, double* dx, std::size_t n, bool log) {
  SoftmaxGradRow(y, dy, dx, n, log);
}
HWY_NOINLINE float LogSumExpF32(const float* x, std::size_t n) { return LogSumExp(x, n); }
HWY_NOINLINE double LogSumExpF64(const double* x, std::size_t n) { return LogSumExp(x, n); }

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

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
#include "frameworks/native/ops/row_max_simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr std::size_t kRowBlock = 1024;

// exp(t) for t <= 0, and NaN for NaN. Far below exp's range the result is
// 0 as for std::exp (up to subnormals); clamping first keeps Highway's Exp
// in its valid range. Highway's Exp returns 0 for NaN, so NaN lanes are
// put back: softmax relies on a NaN term making the row's sum NaN (Max
// does not look for NaN). f32 vectors whose lanes all have normal results
// (the usual case; NaN lanes fail the test) take LeanExp, about half the
// work (elementwise_math_simd-inl.h); others Highway's Exp, lane by lane
// the same result whatever the neighbours.
template <class D>
HWY_INLINE hn::Vec<D> ExpNonPositive(D d, hn::Vec<D> t) {
  using T = hn::TFromD<D>;
  const auto low = hn::Set(d, T(sizeof(T) == 4 ? -104.0 : -745.0));
  const auto full = [&]() HWY_ATTR {
    return hn::IfThenElse(hn::IsNaN(t), t, hn::Exp(d, hn::IfThenElse(hn::Lt(t, low), low, t)));
  };
  if constexpr (sizeof(T) == 4) {
    const auto lean_ok = hn::Ge(t, hn::Set(d, kLeanExpLow));
    const auto lean = LeanExp(d, t);
    if (HWY_LIKELY(hn::AllTrue(d, lean_ok))) return lean;
    return hn::IfThenElse(lean_ok, lean, full());
  }
  return full();
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

template <class D>
HWY_INLINE void StorePart(D d, hn::Vec<D> v, hn::TFromD<D>* p, std::size_t count) {
  if (count == hn::Lanes(d)) return hn::StoreU(v, d, p);
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf[HWY_MAX_BYTES / sizeof(C)];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, count * sizeof(C));
}

// ExpNonPositive of two vectors, with one check that LeanExp serves all
// lanes of both.
template <class D>
HWY_INLINE void ExpNonPositive2(D d, hn::Vec<D> t0, hn::Vec<D> t1, hn::Vec<D>& e0, hn::Vec<D>& e1) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    const auto low = hn::Set(d, kLeanExpLow);
    e0 = LeanExp(d, t0);
    e1 = LeanExp(d, t1);
    if (HWY_LIKELY(hn::AllTrue(d, hn::And(hn::Ge(t0, low), hn::Ge(t1, low))))) return;
  }
  e0 = ExpNonPositive(d, t0);
  e1 = ExpNonPositive(d, t1);
}

// sum of exp(x - shift); stores the terms to y when y is not null (y may be x).
// Two vectors a step with two sums: on one core (row in L1) 1.2x faster
// than one, as the exps of both overlap and the lane check is shared.
//
// The row was just read by Max and sits in L1, so memory would idle while
// the exps run. Rows usually lie end to end (dense tensors, and the
// gather buffers of softmax.cpp), so the n elements after the row are
// prefetched meanwhile: 1.07x for softmax of 4096-element rows on one core
// (AMD EPYC). A prefetch never faults; where no row follows it only costs
// bandwidth. (x + n + k may pass the buffer's end: GCC 12 dropped these
// prefetches when the address was built from an integer instead.)
template <class C>
HWY_INLINE double ExpSum(const C* x, C* y, std::size_t n, C shift) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, shift);
  double total = 0;
  for (std::size_t b = 0; b < n; b += kRowBlock) {
    const std::size_t m = std::min(kRowBlock, n - b);
    const C* xb = x + b;
    C* yb = y ? y + b : nullptr;
    auto acc0 = hn::Zero(d), acc1 = acc0;
    std::size_t i = 0;
    for (; i + 2 * lanes <= m; i += 2 * lanes) {
      hwy::Prefetch(x + n + b + i);
      hwy::Prefetch(x + n + b + i + lanes);
      hn::Vec<decltype(d)> e0, e1;
      ExpNonPositive2(d, hn::Sub(hn::LoadU(d, xb + i), s), hn::Sub(hn::LoadU(d, xb + i + lanes), s), e0, e1);
      acc0 = hn::Add(acc0, e0);
      acc1 = hn::Add(acc1, e1);
      if (yb) {
        hn::StoreU(e0, d, yb + i);
        hn::StoreU(e1, d, yb + i + lanes);
      }
    }
    for (; i < m; i += lanes) {
      // Padding lanes get -inf: exp gives 0 and the sum is unchanged.
      const std::size_t count = std::min(lanes, m - i);
      const auto e = ExpNonPositive(d, hn::Sub(LoadPart(d, xb + i, count, C(-HUGE_VAL)), s));
      acc0 = hn::Add(acc0, e);
      if (yb) StorePart(d, e, yb + i, count);
    }
    total += double(hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1))));
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

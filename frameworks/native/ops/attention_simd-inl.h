// The row loops of the native attention kernels over a tile of scores
// (attention_rows.cpp includes this through foreach_target; the kernels
// reach them through attention_tile.hpp). Each row of a tile sits in L1
// between the gemm that wrote it and the one that reads it back, so these
// loops are bound by the exps: f32 takes LeanExp (elementwise_math_simd-inl.h)
// where every lane of a vector is in its range, Highway's Exp otherwise.
//
// Columns [nk, ld) of a score row hold -Inf (attention::scores pads them),
// so the loops run over whole vectors past nk as far as ld allows, and the
// padding's weights come out 0 (the gemms never read them); a tail that ld
// leaves (ld not a multiple of two vectors) is done one element at a time.
//
// A key left out is a -Inf score. Its weight must be exactly 0 (a kept 1e-45
// would add to the sums, and times an Inf in V make NaN), so those lanes
// are zeroed rather than left to exp's underflow.

#if defined(XYLEM_NATIVE_ATTENTION_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_ATTENTION_SIMD_INL_H_
#undef XYLEM_NATIVE_ATTENTION_SIMD_INL_H_
#else
#define XYLEM_NATIVE_ATTENTION_SIMD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "frameworks/native/ops/elementwise_math_simd-inl.h"
#include "frameworks/native/ops/row_max_simd-inl.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// exp(x - shift) for scores x <= shift (give or take rounding), 0 where x
// is -Inf, NaN where x is NaN. Highway's Exp (the exact path) is only valid
// above its floor, hence the clamp: below it the result is 0 all the same.
template <class D>
HWY_INLINE hn::Vec<D> ExactWeight(D d, hn::Vec<D> x, hn::Vec<D> shift) {
  using T = hn::TFromD<D>;
  const auto t = hn::Sub(x, shift);
  const auto e = hn::Exp(d, hn::Max(t, hn::Set(d, T(sizeof(T) == 4 ? -104.0 : -745.0))));
  return hn::IfThenZeroElse(hn::Eq(x, hn::Set(d, T(-HUGE_VAL))), hn::IfThenElse(hn::IsNaN(t), t, e));
}

// The weights of two vectors of scores: LeanExp when both are in its range
// (the usual case; -Inf and NaN lanes fail the test), else ExactWeight.
template <class D>
HWY_INLINE void Weights2(D d, hn::Vec<D> x0, hn::Vec<D> x1, hn::Vec<D> shift, hn::Vec<D>& e0, hn::Vec<D>& e1) {
  if constexpr (sizeof(hn::TFromD<D>) == 4) {
    const auto t0 = hn::Sub(x0, shift), t1 = hn::Sub(x1, shift), low = hn::Set(d, kLeanExpLow);
    e0 = LeanExp(d, t0);
    e1 = LeanExp(d, t1);
    if (HWY_LIKELY(hn::AllTrue(d, hn::And(hn::Ge(t0, low), hn::Ge(t1, low))))) return;
  }
  e0 = ExactWeight(d, x0, shift);
  e1 = ExactWeight(d, x1, shift);
}

// Where the vector loops over columns [0, n) of a row of ld stop: n rounded
// up to whole pairs of vectors, within ld.
template <class D>
HWY_INLINE std::size_t VectorEnd(D d, std::int64_t n, std::int64_t ld) {
  const std::size_t step = 2 * hn::Lanes(d);
  return std::min((std::size_t(n) + step - 1) / step, std::size_t(ld) / step) * step;
}

// row = exp(row - shift), 0 for -Inf; returns the sum.
template <class C>
HWY_INLINE C WeighRow(C* HWY_RESTRICT row, std::int64_t n, std::int64_t ld, C shift) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d), end = VectorEnd(d, n, ld);
  const auto vs = hn::Set(d, shift);
  auto sum0 = hn::Zero(d), sum1 = sum0;
  for (std::size_t c = 0; c < end; c += 2 * lanes) {
    hn::Vec<decltype(d)> e0, e1;
    Weights2(d, hn::LoadU(d, row + c), hn::LoadU(d, row + c + lanes), vs, e0, e1);
    sum0 = hn::Add(sum0, e0);
    sum1 = hn::Add(sum1, e1);
    hn::StoreU(e0, d, row + c);
    hn::StoreU(e1, d, row + c + lanes);
  }
  C sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(sum0, sum1)));
  for (std::size_t c = end; c < std::size_t(n); ++c) {
    row[c] = row[c] == C(-HUGE_VAL) ? C(0) : std::exp(row[c] - shift);
    sum += row[c];
  }
  return sum;
}

// row[c] *= f, c < n (an accumulator row: not padded).
template <class C>
HWY_INLINE void ScaleRow(C* HWY_RESTRICT row, std::int64_t n, C f) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto vf = hn::Set(d, f);
  std::size_t c = 0;
  for (; c + lanes <= std::size_t(n); c += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, row + c), vf), d, row + c);
  for (; c < std::size_t(n); ++c) row[c] *= f;
}

template <class C>
HWY_INLINE void OnlineSoftmax(C* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, C* m, C* l, C* acc,
                              std::int64_t ld_acc, std::int64_t dv) {
  for (std::int64_t r = 0; r < nq; ++r) {
    C* row = s + r * ld;
    const C top = std::max(m[r], Max(row, std::size_t(nk)));  // -Inf for none
    if (top == C(-HUGE_VAL)) {  // no key of the row counted yet: nothing to weigh
      std::fill(row, row + nk, C(0));
      continue;
    }
    // The first tile that counts finds acc and l at 0: exp(-Inf) = 0 is right.
    const C shrink = std::exp(m[r] - top);
    l[r] = l[r] * shrink + WeighRow(row, nk, ld, top);
    m[r] = top;
    if (shrink != C(1)) ScaleRow(acc + r * ld_acc, dv, shrink);
  }
}

template <class C>
HWY_INLINE void Probabilities(C* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const C* lse) {
  for (std::int64_t r = 0; r < nq; ++r) {
    C* row = s + r * ld;
    if (lse[r] == C(-HUGE_VAL)) {
      std::fill(row, row + nk, C(0));
    } else {
      (void)WeighRow(row, nk, ld, lse[r]);
    }
  }
}

template <class C>
HWY_INLINE void ScoreGrads(const C* p, C* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk, const C* delta) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d), end = VectorEnd(d, nk, ld);
  for (std::int64_t r = 0; r < nq; ++r) {
    const C* HWY_RESTRICT pr = p + r * ld;
    C* HWY_RESTRICT g = dp + r * ld;
    const auto vd = hn::Set(d, delta[r]);
    for (std::size_t c = 0; c < end; c += lanes)
      hn::StoreU(hn::Mul(hn::LoadU(d, pr + c), hn::Sub(hn::LoadU(d, g + c), vd)), d, g + c);
    for (std::size_t c = end; c < std::size_t(nk); ++c) g[c] = pr[c] * (g[c] - delta[r]);
  }
}

HWY_NOINLINE void OnlineSoftmaxF32(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, float* m, float* l,
                                   float* acc, std::int64_t ld_acc, std::int64_t dv) {
  OnlineSoftmax(s, ld, nq, nk, m, l, acc, ld_acc, dv);
}
HWY_NOINLINE void OnlineSoftmaxF64(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, double* m, double* l,
                                   double* acc, std::int64_t ld_acc, std::int64_t dv) {
  OnlineSoftmax(s, ld, nq, nk, m, l, acc, ld_acc, dv);
}
HWY_NOINLINE void ProbabilitiesF32(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const float* lse) {
  Probabilities(s, ld, nq, nk, lse);
}
HWY_NOINLINE void ProbabilitiesF64(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const double* lse) {
  Probabilities(s, ld, nq, nk, lse);
}
HWY_NOINLINE void ScoreGradsF32(const float* p, float* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk,
                                const float* delta) {
  ScoreGrads(p, dp, ld, nq, nk, delta);
}
HWY_NOINLINE void ScoreGradsF64(const double* p, double* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk,
                                const double* delta) {
  ScoreGrads(p, dp, ld, nq, nk, delta);
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

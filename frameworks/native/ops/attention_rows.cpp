// The vector row loops of the native attention kernels (attention_simd-inl.h,
// best SIMD target chosen at run time), declared in attention_tile.hpp.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in elementwise.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/attention_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/attention_simd-inl.h"

#if HWY_ONCE
#include "frameworks/native/ops/attention_tile.hpp"

namespace xylem::native {

HWY_EXPORT(OnlineSoftmaxF32);
HWY_EXPORT(OnlineSoftmaxF64);
HWY_EXPORT(ProbabilitiesF32);
HWY_EXPORT(ProbabilitiesF64);
HWY_EXPORT(ScoreGradsF32);
HWY_EXPORT(ScoreGradsF64);

namespace attention {

void online_softmax(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, float* m, float* l, float* acc,
                    std::int64_t ld_acc, std::int64_t dv) {
  HWY_DYNAMIC_DISPATCH(OnlineSoftmaxF32)(s, ld, nq, nk, m, l, acc, ld_acc, dv);
}
void online_softmax(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, double* m, double* l, double* acc,
                    std::int64_t ld_acc, std::int64_t dv) {
  HWY_DYNAMIC_DISPATCH(OnlineSoftmaxF64)(s, ld, nq, nk, m, l, acc, ld_acc, dv);
}
void probabilities(float* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const float* lse) {
  HWY_DYNAMIC_DISPATCH(ProbabilitiesF32)(s, ld, nq, nk, lse);
}
void probabilities(double* s, std::int64_t ld, std::int64_t nq, std::int64_t nk, const double* lse) {
  HWY_DYNAMIC_DISPATCH(ProbabilitiesF64)(s, ld, nq, nk, lse);
}
void score_grads(const float* p, float* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk, const float* delta) {
  HWY_DYNAMIC_DISPATCH(ScoreGradsF32)(p, dp, ld, nq, nk, delta);
}
void score_grads(const double* p, double* dp, std::int64_t ld, std::int64_t nq, std::int64_t nk,
                 const double* delta) {
  HWY_DYNAMIC_DISPATCH(ScoreGradsF64)(p, dp, ld, nq, nk, delta);
}

}  // namespace attention
}  // namespace xylem::native
#endif  // HWY_ONCE

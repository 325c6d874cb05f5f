// The entry points of math::unary, binary and compare for each float dtype,
// compiled once per SIMD target by Highway's foreach_target (elementwise.cpp
// includes it that way) from the ops of elementwise_ops_simd-inl.h.

#include "frameworks/native/ops/elementwise_ops_simd-inl.h"

#if defined(XYLEM_NATIVE_ELEMENTWISE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_ELEMENTWISE_SIMD_INL_H_
#undef XYLEM_NATIVE_ELEMENTWISE_SIMD_INL_H_
#else
#define XYLEM_NATIVE_ELEMENTWISE_SIMD_INL_H_
#endif

#include <cstdint>
#include <utility>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {

// Code -> kernel specialised on it: one switch per chunk, none per element.
template <class T, int... K>
HWY_INLINE void UnaryByCode(const ElementwiseChunk<1>& c, std::integer_sequence<int, K...>) {
  using C = ComputeOf<T>;
  const C p0 = C(c.p0), p1 = C(c.p1);
  (void)((c.code == K && (RunChunk<T, T, 1>(c, UnaryOp<K, C>{p0, p1}), true)) || ...);
}
template <class T, int... K>
HWY_INLINE void BinaryByCode(const ElementwiseChunk<2>& c, std::integer_sequence<int, K...>) {
  using C = ComputeOf<T>;
  const C p0 = C(c.p0), p1 = C(c.p1);
  (void)((c.code == K && (RunChunk<T, T, 2>(c, BinaryOp<K, C>{p0, p1}), true)) || ...);
}
template <class T, int... K>
HWY_INLINE void CompareByCode(const ElementwiseChunk<2>& c, std::integer_sequence<int, K...>) {
  (void)((c.code == K && (RunChunk<T, std::uint8_t, 2>(c, CompareOp<K, ComputeOf<T>>{}), true)) || ...);
}

// The exported entry points (HWY_EXPORT needs plain functions), per dtype.
#define XYLEM_NATIVE_ELEMENTWISE_ENTRIES(Suffix, T)                                    \
  HWY_NOINLINE void Unary##Suffix(const ElementwiseChunk<1>& c) {                      \
    UnaryByCode<T>(c, std::make_integer_sequence<int, XY_UN_COUNT>());                 \
  }                                                                                    \
  HWY_NOINLINE void Binary##Suffix(const ElementwiseChunk<2>& c) {                     \
    BinaryByCode<T>(c, std::make_integer_sequence<int, XY_BIN_COUNT>());               \
  }                                                                                    \
  HWY_NOINLINE void Compare##Suffix(const ElementwiseChunk<2>& c) {                    \
    CompareByCode<T>(c, std::make_integer_sequence<int, XY_CMP_COUNT>());              \
  }
XYLEM_NATIVE_ELEMENTWISE_ENTRIES(F16, hwy::float16_t)
XYLEM_NATIVE_ELEMENTWISE_ENTRIES(BF16, hwy::bfloat16_t)
XYLEM_NATIVE_ELEMENTWISE_ENTRIES(F32, float)
XYLEM_NATIVE_ELEMENTWISE_ENTRIES(F64, double)
#undef XYLEM_NATIVE_ELEMENTWISE_ENTRIES

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

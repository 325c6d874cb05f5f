// The dense f16/bf16 <-> f32 conversions of math::cast as exported
// per-target functions (cast.cpp includes this through foreach_target).
// The conversions themselves are convert_simd-inl.h's, shared with the
// other kernels.
#if defined(XYLEM_NATIVE_CAST_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_CAST_SIMD_INL_H_
#undef XYLEM_NATIVE_CAST_SIMD_INL_H_
#else
#define XYLEM_NATIVE_CAST_SIMD_INL_H_
#endif

#include <cstddef>

#include "frameworks/native/ops/convert_simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {

HWY_NOINLINE void WidenF16(const hwy::float16_t* in, float* out, std::size_t n) { Widen(in, out, n); }
HWY_NOINLINE void WidenBF16(const hwy::bfloat16_t* in, float* out, std::size_t n) { Widen(in, out, n); }
HWY_NOINLINE void NarrowF16(const float* in, hwy::float16_t* out, std::size_t n) { Narrow(in, out, n); }
HWY_NOINLINE void NarrowBF16(const float* in, hwy::bfloat16_t* out, std::size_t n) { Narrow(in, out, n); }

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

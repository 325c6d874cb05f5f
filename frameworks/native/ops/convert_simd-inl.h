// Loading and storing the float dtypes as vectors of their compute type
// (f32 for f16, bf16 and f32; f64 for f64), for the Highway kernels of
// elementwise.cpp, reduce.cpp and softmax.cpp. Per-target, re-included by
// each of those through foreach_target; everything here is HWY_INLINE, so
// the copies in different files do not clash.
//
// Rounding: stores round to nearest even, as the dtype convention asks.
// Highway 1.0's bf16 DemoteTo truncates, so bf16 is rounded here on the
// bits (the formula of math.h's xy_f32_bits_to_bf16). f16 uses the F16C
// instructions (round to nearest even, exact widening); targets without
// them convert each element with the scalar helpers (xylem/plugin/half.hpp):
// Highway's software fallback mishandles Inf and NaN.

#include "frameworks/native/ops/convert.hpp"

#if defined(XYLEM_NATIVE_CONVERT_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_CONVERT_SIMD_INL_H_
#undef XYLEM_NATIVE_CONVERT_SIMD_INL_H_
#else
#define XYLEM_NATIVE_CONVERT_SIMD_INL_H_
#endif

#include <cstddef>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether this target converts f16 in hardware (F16C on x86).
#undef XYLEM_NATIVE_HW_F16
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define XYLEM_NATIVE_HW_F16 1
#else
#define XYLEM_NATIVE_HW_F16 0
#endif

template <class T>
using ComputeTag = hn::ScalableTag<ComputeOf<T>>;

// One vector of compute-type lanes from Lanes(d) consecutive elements at p.
template <class T, class D>
HWY_INLINE hn::Vec<D> LoadC(D d, const T* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    const hn::Rebind<std::uint16_t, D> d16;
    const hn::RebindToUnsigned<D> du;
    const auto bits = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p)));
    return hn::BitCast(d, hn::ShiftLeft<16>(bits));
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
#if XYLEM_NATIVE_HW_F16
    const hn::Rebind<hwy::float16_t, D> d16;
    return hn::PromoteTo(d, hn::LoadU(d16, p));
#else
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    for (std::size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = to_compute(p[i]);
    return hn::Load(d, buf);
#endif
  } else {
    return hn::LoadU(d, p);
  }
}

// Stores the Lanes(d) lanes of v at p, rounded to T (nearest even).
template <class T, class D>
HWY_INLINE void StoreC(D d, hn::Vec<D> v, T* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    const hn::Rebind<std::uint16_t, D> d16;
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const auto bits = hn::BitCast(du, v);
    const auto rounded =
        hn::ShiftRight<16>(hn::Add(hn::Add(bits, hn::Set(du, 0x7fffu)), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u))));
    const auto quiet_nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
    const auto out = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet_nan, rounded);
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, out)), d16, reinterpret_cast<std::uint16_t*>(p));
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
#if XYLEM_NATIVE_HW_F16
    const hn::Rebind<hwy::float16_t, D> d16;
    hn::StoreU(hn::DemoteTo(d16, v), d16, p);
#else
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(v, d, buf);
    for (std::size_t i = 0; i < hn::Lanes(d); ++i) p[i] = from_compute<T>(buf[i]);
#endif
  } else {
    hn::StoreU(v, d, p);
  }
}

// Dense conversions of n elements (any n) between storage and compute type.
template <class T>
HWY_INLINE void Widen(const T* HWY_RESTRICT in, ComputeOf<T>* HWY_RESTRICT out, std::size_t n) {
  if constexpr (std::is_same_v<T, ComputeOf<T>>) {
    std::memcpy(out, in, n * sizeof(T));
  } else {
    const ComputeTag<T> d;
    const std::size_t lanes = hn::Lanes(d);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) hn::StoreU(LoadC(d, in + i), d, out + i);
    for (; i < n; ++i) out[i] = to_compute(in[i]);
  }
}

template <class T>
HWY_INLINE void Narrow(const ComputeOf<T>* HWY_RESTRICT in, T* HWY_RESTRICT out, std::size_t n) {
  if constexpr (std::is_same_v<T, ComputeOf<T>>) {
    std::memcpy(out, in, n * sizeof(T));
  } else {
    const ComputeTag<T> d;
    const std::size_t lanes = hn::Lanes(d);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) StoreC(d, hn::LoadU(d, in + i), out + i);
    for (; i < n; ++i) out[i] = from_compute<T>(in[i]);
  }
}

// Strided versions (stride in elements, any value); dense runs vectorise.
template <class T>
HWY_INLINE void WidenStrided(const T* in, std::int64_t stride, ComputeOf<T>* HWY_RESTRICT out, std::size_t n) {
  if (stride == 1) return Widen(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = to_compute(in[std::int64_t(i) * stride]);
}

template <class T>
HWY_INLINE void NarrowStrided(const ComputeOf<T>* HWY_RESTRICT in, T* out, std::int64_t stride, std::size_t n) {
  if (stride == 1) return Narrow(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[std::int64_t(i) * stride] = from_compute<T>(in[i]);
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle

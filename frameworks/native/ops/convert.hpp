#pragma once
// The float dtypes' storage and compute types on the host, and conversions
// of whole rows between them. f16 and bf16 travel as hwy::float16_t /
// hwy::bfloat16_t (16-bit words) and compute in f32; f32 and f64 compute in
// themselves. Scalar conversions use libxylem's (xylem/plugin/half.hpp,
// round to nearest even); the dense row conversions are vectorised
// (convert_simd-inl.h, exported from cast.cpp).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/base.h"
#include "xylem/dtype.hpp"
#include "xylem/plugin/half.hpp"

namespace xylem::native {

template <class T>
using ComputeOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls f(std::type_identity<T>{}, dtype) for each float dtype and its
// storage type here, so a family registers its kernel templates once (the
// DType-keyed twin for float_rows.hpp's types is for_float_dtypes).
template <class F>
void for_float_types(F&& f) {
  f(std::type_identity<hwy::float16_t>{}, DType::f16);
  f(std::type_identity<hwy::bfloat16_t>{}, DType::bf16);
  f(std::type_identity<float>{}, DType::f32);
  f(std::type_identity<double>{}, DType::f64);
}

template <class T>
inline ComputeOf<T> to_compute(T v) noexcept {
  if constexpr (std::is_same_v<T, hwy::float16_t>) {
    std::uint16_t bits;
    __builtin_memcpy(&bits, &v, 2);
    return detail::half_to_float(bits);
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    std::uint16_t bits;
    __builtin_memcpy(&bits, &v, 2);
    return detail::bf16_to_float(bits);
  } else {
    return v;
  }
}

template <class T>
inline T from_compute(ComputeOf<T> v) noexcept {
  if constexpr (std::is_same_v<T, hwy::float16_t> || std::is_same_v<T, hwy::bfloat16_t>) {
    const std::uint16_t bits =
        std::is_same_v<T, hwy::float16_t> ? detail::float_to_half(v) : detail::float_to_bf16(v);
    T out;
    __builtin_memcpy(&out, &bits, 2);
    return out;
  } else {
    return v;
  }
}

// Dense rows, vectorised on the best SIMD target.
void widen(const hwy::float16_t* in, float* out, std::size_t n);
void widen(const hwy::bfloat16_t* in, float* out, std::size_t n);
void narrow(const float* in, hwy::float16_t* out, std::size_t n);
void narrow(const float* in, hwy::bfloat16_t* out, std::size_t n);

// n elements at stride `stride` (in elements) into a dense compute-type row.
template <class T>
void load_row(const T* in, std::int64_t stride, ComputeOf<T>* out, std::size_t n) {
  if constexpr (!std::is_same_v<T, ComputeOf<T>>) {
    if (stride == 1) return widen(in, out, n);
  }
  for (std::size_t i = 0; i < n; ++i) out[i] = to_compute(in[std::int64_t(i) * stride]);
}

// A dense compute-type row to n elements at stride `stride`, rounded.
template <class T>
void store_row(const ComputeOf<T>* in, T* out, std::int64_t stride, std::size_t n) {
  if constexpr (!std::is_same_v<T, ComputeOf<T>>) {
    if (stride == 1) return narrow(in, out, n);
  }
  for (std::size_t i = 0; i < n; ++i) out[std::int64_t(i) * stride] = from_compute<T>(in[i]);
}

}  // namespace xylem::native

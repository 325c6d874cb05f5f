#pragma once
/// @file
/// Element types. One table (XYLEM_DTYPES) drives names, sizes and traits so
/// that adding a dtype is a one-line change.
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xylem {

/// The dtype table: X(enumerator, printed name, bytes, is_floating).
/// f16 and bf16 are storage types: operations compute them in f32.
/// XYLEM_REAL_DTYPES is every dtype whose element is one number (the ones
/// cast, arange and the arithmetic take); XYLEM_COMPLEX_DTYPES the complex
/// ones, stored as (real, imaginary) pairs like std::complex.
#define XYLEM_REAL_DTYPES(X)   \
  X(f16, "f16", 2, true)       \
  X(bf16, "bf16", 2, true)     \
  X(f32, "f32", 4, true)       \
  X(f64, "f64", 8, true)       \
  X(i32, "i32", 4, false)      \
  X(i64, "i64", 8, false)      \
  X(u8, "u8", 1, false)        \
  X(boolean, "bool", 1, false)
/// The complex dtypes: c64 holds two f32, c128 two f64.
#define XYLEM_COMPLEX_DTYPES(X) \
  X(c64, "c64", 8, false)       \
  X(c128, "c128", 16, false)
/// Every dtype, in DType order.
#define XYLEM_DTYPES(X) XYLEM_REAL_DTYPES(X) XYLEM_COMPLEX_DTYPES(X)

/// The element type of a tensor.
enum class DType : std::uint8_t {
/// @cond
#define XYLEM_DTYPE_ENUM(e, n, b, f) e,
/// @endcond
  XYLEM_DTYPES(XYLEM_DTYPE_ENUM)
#undef XYLEM_DTYPE_ENUM
};

/// How many dtypes there are.
inline constexpr std::size_t kDTypeCount = 10;
/// How many of them are real (XYLEM_REAL_DTYPES): they come first in DType.
inline constexpr std::size_t kRealDTypeCount = 8;

/// @name Short spellings, so users write xylem::f32
/// @{

inline constexpr DType f16 = DType::f16;          ///< IEEE half precision
inline constexpr DType bf16 = DType::bf16;        ///< bfloat16
inline constexpr DType f32 = DType::f32;          ///< single precision
inline constexpr DType f64 = DType::f64;          ///< double precision
inline constexpr DType i32 = DType::i32;          ///< 32-bit signed integer
inline constexpr DType i64 = DType::i64;          ///< 64-bit signed integer
inline constexpr DType u8 = DType::u8;            ///< 8-bit unsigned integer
inline constexpr DType boolean = DType::boolean;  ///< one byte, 0 or 1
inline constexpr DType c64 = DType::c64;          ///< complex of two f32 (std::complex<float>)
inline constexpr DType c128 = DType::c128;        ///< complex of two f64 (std::complex<double>)
/// @}

/// Bytes per element.
[[nodiscard]] constexpr std::size_t size_of(DType t) noexcept {
  switch (t) {
#define XYLEM_DTYPE_SIZE(e, n, b, f) \
  case DType::e:                     \
    return b;
    XYLEM_DTYPES(XYLEM_DTYPE_SIZE)
#undef XYLEM_DTYPE_SIZE
  }
  return 0;
}

/// The printed name: "f32", "bool"...
[[nodiscard]] constexpr std::string_view name(DType t) noexcept {
  switch (t) {
#define XYLEM_DTYPE_NAME(e, n, b, f) \
  case DType::e:                     \
    return n;
    XYLEM_DTYPES(XYLEM_DTYPE_NAME)
#undef XYLEM_DTYPE_NAME
  }
  return "?";
}

/// True for f16, bf16, f32 and f64.
[[nodiscard]] constexpr bool is_floating(DType t) noexcept {
  switch (t) {
#define XYLEM_DTYPE_FLOAT(e, n, b, f) \
  case DType::e:                      \
    return f;
    XYLEM_DTYPES(XYLEM_DTYPE_FLOAT)
#undef XYLEM_DTYPE_FLOAT
  }
  return false;
}

/// True for c64 and c128.
[[nodiscard]] constexpr bool is_complex(DType t) noexcept { return t == DType::c64 || t == DType::c128; }

/// The complex dtype whose parts are `real` (f32 -> c64, f64 -> c128); the
/// dtype itself for any other.
[[nodiscard]] constexpr DType complex_of(DType real) noexcept {
  return real == DType::f32 ? DType::c64 : real == DType::f64 ? DType::c128 : real;
}
/// The dtype of a complex dtype's parts (c64 -> f32, c128 -> f64); the
/// dtype itself for any other.
[[nodiscard]] constexpr DType real_of(DType complex) noexcept {
  return complex == DType::c64 ? DType::f32 : complex == DType::c128 ? DType::f64 : complex;
}

/// The dtype of a C++ element type, for Tensor::from and to_vector.
template <class T>
struct dtype_of;
/// @cond specializations
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::c64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::c128; };
/// @endcond
/// dtype_of<T>::value.
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace xylem

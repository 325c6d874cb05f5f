#pragma once
/// @file
/// Element types. One table (XYLEM_DTYPES) drives names, sizes and traits so
/// that adding a dtype is a one-line change.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xylem {

/// The dtype table: X(enumerator, printed name, bytes, is_floating).
/// f16 and bf16 are storage types: operations compute them in f32.
#define XYLEM_DTYPES(X)        \
  X(f16, "f16", 2, true)       \
  X(bf16, "bf16", 2, true)     \
  X(f32, "f32", 4, true)       \
  X(f64, "f64", 8, true)       \
  X(i32, "i32", 4, false)      \
  X(i64, "i64", 8, false)      \
  X(u8, "u8", 1, false)        \
  X(boolean, "bool", 1, false)

/// The element type of a tensor.
enum class DType : std::uint8_t {
/// @cond
#define XYLEM_DTYPE_ENUM(e, n, b, f) e,
/// @endcond
  XYLEM_DTYPES(XYLEM_DTYPE_ENUM)
#undef XYLEM_DTYPE_ENUM
};

/// How many dtypes there are.
inline constexpr std::size_t kDTypeCount = 8;

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
/// @endcond
/// dtype_of<T>::value.
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace xylem

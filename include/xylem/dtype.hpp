#pragma once
// Element types. One table (XYLEM_DTYPES) drives names, sizes and traits so
// that adding a dtype is a one-line change.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xylem {

// X(enumerator, printed name, bytes, is_floating)
#define XYLEM_DTYPES(X)        \
  X(f16, "f16", 2, true)       \
  X(bf16, "bf16", 2, true)     \
  X(f32, "f32", 4, true)       \
  X(f64, "f64", 8, true)       \
  X(i32, "i32", 4, false)      \
  X(i64, "i64", 8, false)      \
  X(u8, "u8", 1, false)        \
  X(boolean, "bool", 1, false)

enum class DType : std::uint8_t {
#define XYLEM_DTYPE_ENUM(e, n, b, f) e,
  XYLEM_DTYPES(XYLEM_DTYPE_ENUM)
#undef XYLEM_DTYPE_ENUM
};

inline constexpr std::size_t kDTypeCount = 8;

// Short spellings, so users write xylem::f32 as in the design.
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType u8 = DType::u8;
inline constexpr DType boolean = DType::boolean;

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

// The dtype of a C++ element type, for Tensor::from and to_vector.
template <class T>
struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::boolean; };
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace xylem

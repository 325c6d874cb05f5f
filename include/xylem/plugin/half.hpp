#pragma once
// f16 and bf16 bit conversions on the host, one definition for the core
// (printing, reading back) and every framework's host code; libxylem
// defines them (src/core/dtype.cpp).
#include <cstdint>

namespace xylem::detail {

[[nodiscard]] float half_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] float bf16_to_float(std::uint16_t bits) noexcept;
// Round to nearest even; NaN stays NaN, overflow becomes Inf.
[[nodiscard]] std::uint16_t float_to_half(float value) noexcept;
[[nodiscard]] std::uint16_t float_to_bf16(float value) noexcept;

}  // namespace xylem::detail

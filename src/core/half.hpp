#pragma once
// f16 and bf16 bit conversions for host code (printing, reading back).
#include <cstdint>

namespace xylem::detail {

[[nodiscard]] float half_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] float bf16_to_float(std::uint16_t bits) noexcept;
// Round to nearest even; NaN stays NaN, overflow becomes Inf.
[[nodiscard]] std::uint16_t float_to_half(float value) noexcept;
[[nodiscard]] std::uint16_t float_to_bf16(float value) noexcept;

}  // namespace xylem::detail

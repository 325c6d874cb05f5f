// Conversions between f16/bf16 bits and float, for host code.
#include <bit>
#include <cmath>
#include <cstring>

#include "xylem/plugin/half.hpp"
#include "xylem/plugin/math.h"

namespace xylem::detail {

float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  const std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0) {  // zero or subnormal: exact in float
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float bf16_to_float(std::uint16_t b) noexcept { return std::bit_cast<float>(std::uint32_t(b) << 16); }

// math.h's rounding, the one every framework's kernels use.
std::uint16_t float_to_bf16(float value) noexcept {
  return static_cast<std::uint16_t>(xy_f32_bits_to_bf16(std::bit_cast<std::uint32_t>(value)));
}

std::uint16_t float_to_half(float value) noexcept {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7E00u;
  if (magnitude >= 65520.0f) return sign | 0x7C00u;  // rounds to Inf
  if (magnitude < 6.103515625e-05f) {                // subnormal half: multiples of 2^-24
    return sign | static_cast<std::uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  std::uint32_t m = std::bit_cast<std::uint32_t>(magnitude);
  m += 0x0FFFu + ((m >> 13) & 1u);  // round the 13 dropped bits to nearest even
  return sign | static_cast<std::uint16_t>(((m >> 23) - 112) << 10 | ((m >> 13) & 0x3FFu));
}

}  // namespace xylem::detail

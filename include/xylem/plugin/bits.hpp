#pragma once
// The unsigned integer type of an element size: kernels that only move
// elements (copies, gathers, assigning scatters) move them as bits, so one
// kernel per size serves every dtype of that size.
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace xylem::plugin {

// 16 bytes (c128): two words, moved together.
struct alignas(16) Bits128 {
  std::uint64_t low, high;
};

template <std::size_t Size>
struct BitsOf {
  static_assert(Size == 1 || Size == 2 || Size == 4 || Size == 8 || Size == 16, "no dtype has this size");
  using type = std::conditional_t<
      Size == 1, std::uint8_t,
      std::conditional_t<Size == 2, std::uint16_t, std::conditional_t<Size == 4, std::uint32_t,
                                                      std::conditional_t<Size == 8, std::uint64_t, Bits128>>>>;
};

}  // namespace xylem::plugin

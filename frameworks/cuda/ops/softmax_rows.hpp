#pragma once
// How a softmax holds dense rows in registers (softmax.cu's
// softmax_rows_in_registers, and softmax_epilogue.cpp's kernel, which must
// reduce a row in the same order to give the same bits): `width` threads
// per row, each with `packs` 16-byte packs of it. Plain data, no CUDA.
#include <cstdint>

namespace xylem::cuda {

struct RowShape {
  int width = 0, packs = 0;  // 0: no shape holds the row
  [[nodiscard]] constexpr int threads() const noexcept { return width > 256 ? width : 256; }
  [[nodiscard]] constexpr bool operator==(const RowShape&) const noexcept = default;
};

// The smallest shape that holds a row of `row_bytes` (up to 128 KiB): 8 to
// 32 lanes per row up to 2 KiB, a 256-thread block up to 32 KiB, 1024
// threads beyond.
[[nodiscard]] constexpr RowShape softmax_row_shape(std::int64_t row_bytes) noexcept {
  constexpr struct {
    std::int64_t bytes;
    RowShape shape;
  } kShapes[] = {{128, {8, 1}},      {256, {16, 1}},    {512, {32, 1}},    {1024, {32, 2}},
                 {2048, {32, 4}},    {4096, {256, 1}},  {8192, {256, 2}},  {16384, {256, 4}},
                 {32768, {256, 8}},  {65536, {1024, 4}}, {131072, {1024, 8}}};
  for (const auto& s : kShapes)
    if (row_bytes <= s.bytes) return s.shape;
  return {};
}

}  // namespace xylem::cuda

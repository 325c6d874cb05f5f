#pragma once
// Shape: dimensions, strides (in elements) and an offset (in elements) into
// the underlying storage. Views (reshape, slice, transpose) only make new
// Shapes; no data moves. Fixed capacity, so passing a Shape to a kernel
// never allocates.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>

namespace xylem {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar with one element
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);

  // A view: explicit strides and offset. Throws invalid_argument for negative
  // sizes or a rank over kMaxRank.
  static Shape strided(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                       std::int64_t offset);

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] std::int64_t dim(int axis) const;     // negative axes count from the end
  [[nodiscard]] std::int64_t stride(int axis) const;
  [[nodiscard]] std::span<const std::int64_t> dims() const noexcept { return {dims_.data(), std::size_t(rank_)}; }
  [[nodiscard]] std::span<const std::int64_t> strides() const noexcept {
    return {strides_.data(), std::size_t(rank_)};
  }
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }
  [[nodiscard]] std::int64_t numel() const noexcept;
  [[nodiscard]] bool is_contiguous() const noexcept;  // row-major, dense (offset may be non-zero)
  // Elements of storage the view may touch: offset + 1 + sum((dim-1)*stride).
  [[nodiscard]] std::int64_t extent() const noexcept;

  // Views. Each returns a new Shape over the same storage.
  // One dim may be -1. A non-contiguous view reshapes without a copy where
  // its strides allow (invalid_argument otherwise: use xylem::contiguous).
  [[nodiscard]] Shape reshape(std::span<const std::int64_t> dims) const;
  [[nodiscard]] Shape reshape(std::initializer_list<std::int64_t> dims) const;
  [[nodiscard]] Shape slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;
  [[nodiscard]] Shape transpose(int a, int b) const;
  [[nodiscard]] Shape permute(std::span<const int> order) const;

  // Same dimensions (strides and offset ignored).
  [[nodiscard]] bool same_dims(const Shape& other) const noexcept;
  friend bool operator==(const Shape& a, const Shape& b) noexcept;

  [[nodiscard]] std::string dims_string() const;     // "[2, 3]"
  [[nodiscard]] std::string strides_string() const;  // "[3, 1]"

 private:
  int normalize_axis(int axis) const;
  bool reshape_strides_from(const Shape& from) noexcept;
  void set_contiguous_strides() noexcept;

  std::array<std::int64_t, kMaxRank> dims_{};
  std::array<std::int64_t, kMaxRank> strides_{};
  std::int64_t offset_ = 0;
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);  // "[2, 3]"

}  // namespace xylem

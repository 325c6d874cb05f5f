#pragma once
// Layout: dimensions, strides (in elements) and an offset (in elements) into
// the underlying storage. Views (reshape, slice, transpose) only make new
// Layouts; no data moves. Fixed capacity, so passing a Layout to a kernel
// never allocates.
//
// Sizes are checked where a Layout is made (the constructors and every view):
// at most kMaxNumel elements, and every index the view can reach, offset +
// sum(index * stride), representable in int64 with room for the extent. So
// numel(), extent(), lowest() and the kernels' index arithmetic never
// overflow, and a Layout that would is an invalid_argument naming it.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>

namespace xylem {

inline constexpr int kMaxRank = 8;
// The most elements a shape may hold (counting only its non-zero
// dimensions, as NumPy does, so [0, 2^62, 4] is refused too). Times the
// largest element size (8 bytes) it still fits in a 64-bit size_t.
inline constexpr std::int64_t kMaxNumel = std::int64_t{1} << 62;

class Layout {
 public:
  Layout() = default;  // rank 0: a scalar with one element
  Layout(std::initializer_list<std::int64_t> dims);
  explicit Layout(std::span<const std::int64_t> dims);

  // A view: explicit strides (any sign) and offset. Throws invalid_argument
  // for negative sizes, a rank over kMaxRank, more than kMaxNumel elements,
  // or an element index the view reaches that int64 cannot hold.
  static Layout strided(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
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
  // One past the highest element of storage the view may touch:
  // offset + 1 + sum((dim-1)*stride) over positive strides (offset if empty).
  [[nodiscard]] std::int64_t extent() const noexcept;
  // The lowest element it may touch: offset + sum((dim-1)*stride) over
  // negative strides (offset if empty).
  [[nodiscard]] std::int64_t lowest() const noexcept;

  // Views. Each returns a new Layout over the same storage.
  // One dim may be -1. A non-contiguous view reshapes without a copy where
  // its strides allow (invalid_argument otherwise: use xylem::contiguous).
  [[nodiscard]] Layout reshape(std::span<const std::int64_t> dims) const;
  [[nodiscard]] Layout reshape(std::initializer_list<std::int64_t> dims) const;
  [[nodiscard]] Layout slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;
  [[nodiscard]] Layout transpose(int a, int b) const;
  [[nodiscard]] Layout permute(std::span<const int> order) const;

  // Same dimensions (strides and offset ignored).
  [[nodiscard]] bool same_dims(const Layout& other) const noexcept;
  friend bool operator==(const Layout& a, const Layout& b) noexcept;

  [[nodiscard]] std::string dims_string() const;     // "[2, 3]"
  [[nodiscard]] std::string strides_string() const;  // "[3, 1]"

 private:
  int normalize_axis(int axis) const;
  void check_reach(const char* op) const;
  bool reshape_strides_from(const Layout& from) noexcept;
  void set_contiguous_strides() noexcept;

  std::array<std::int64_t, kMaxRank> dims_{};
  std::array<std::int64_t, kMaxRank> strides_{};
  std::int64_t offset_ = 0;
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Layout& s);  // "[2, 3]"

}  // namespace xylem

#pragma once
/// @file
/// Layout: dimensions, strides (in elements) and an offset (in elements) into
/// the underlying storage. Views (reshape, slice, transpose) only make new
/// Layouts; no data moves. Fixed capacity, so passing a Layout to a kernel
/// never allocates.
///
/// Sizes are checked where a Layout is made (the constructors and every view):
/// at most kMaxNumel elements, and every index the view can reach, offset +
/// sum(index * stride), representable in int64 with room for the extent. So
/// numel(), extent(), lowest() and the kernels' index arithmetic never
/// overflow, and a Layout that would is an invalid_argument naming it.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>

namespace xylem {

/// The most dimensions a Layout holds.
inline constexpr int kMaxRank = 8;
/// The most elements a shape may hold (counting only its non-zero
/// dimensions, as NumPy does, so [0, 2^62, 4] is refused too). Times the
/// largest element size (8 bytes) it still fits in a 64-bit size_t.
inline constexpr std::int64_t kMaxNumel = std::int64_t{1} << 62;

/// Dimensions, strides and offset of a tensor's view of its storage; see
/// the file's description for the size checks every Layout passes.
class Layout {
 public:
  Layout() = default;  ///< rank 0: a scalar with one element
  /// Contiguous row-major dimensions, offset 0: Layout{2, 3}.
  Layout(std::initializer_list<std::int64_t> dims);
  /// Contiguous row-major dimensions, offset 0.
  explicit Layout(std::span<const std::int64_t> dims);

  /// A view: explicit strides (any sign) and offset. Throws invalid_argument
  /// for negative sizes, a rank over kMaxRank, more than kMaxNumel elements,
  /// or an element index the view reaches that int64 cannot hold.
  static Layout strided(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                       std::int64_t offset);

  [[nodiscard]] int rank() const noexcept { return rank_; }  ///< number of dimensions
  [[nodiscard]] std::int64_t dim(int axis) const;     ///< negative axes count from the end
  [[nodiscard]] std::int64_t stride(int axis) const;  ///< in elements; negative axes count from the end
  /// The dimensions, outermost first.
  [[nodiscard]] std::span<const std::int64_t> dims() const noexcept { return {dims_.data(), std::size_t(rank_)}; }
  /// The strides in elements, one per dimension.
  [[nodiscard]] std::span<const std::int64_t> strides() const noexcept {
    return {strides_.data(), std::size_t(rank_)};
  }
  [[nodiscard]] std::int64_t offset() const noexcept { return offset_; }  ///< first element, in elements
  [[nodiscard]] std::int64_t numel() const noexcept;  ///< product of the dimensions (1 for rank 0)
  [[nodiscard]] bool is_contiguous() const noexcept;  ///< row-major, dense (offset may be non-zero)
  /// One past the highest element of storage the view may touch:
  /// offset + 1 + sum((dim-1)*stride) over positive strides (offset if empty).
  [[nodiscard]] std::int64_t extent() const noexcept;
  /// The lowest element it may touch: offset + sum((dim-1)*stride) over
  /// negative strides (offset if empty).
  [[nodiscard]] std::int64_t lowest() const noexcept;

  /// @name Views
  /// Each returns a new Layout over the same storage.
  /// @{

  /// New dimensions for the same elements. One dim may be -1. A
  /// non-contiguous view reshapes without a copy where its strides allow
  /// (invalid_argument otherwise: use xylem::contiguous).
  [[nodiscard]] Layout reshape(std::span<const std::int64_t> dims) const;
  /// The same as reshape(span): Layout::reshape({2, -1}).
  [[nodiscard]] Layout reshape(std::initializer_list<std::int64_t> dims) const;
  /// Elements begin, begin+step, ... before end along axis (step > 0).
  [[nodiscard]] Layout slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;
  /// Axes a and b swapped.
  [[nodiscard]] Layout transpose(int a, int b) const;
  /// The axes in `order`: result axis i is this layout's axis order[i].
  [[nodiscard]] Layout permute(std::span<const int> order) const;
  /// @}

  /// Same dimensions (strides and offset ignored).
  [[nodiscard]] bool same_dims(const Layout& other) const noexcept;
  /// Same dimensions, strides and offset.
  friend bool operator==(const Layout& a, const Layout& b) noexcept;

  [[nodiscard]] std::string dims_string() const;     ///< "[2, 3]"
  [[nodiscard]] std::string strides_string() const;  ///< "[3, 1]"

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

/// Prints the dimensions: "[2, 3]".
std::ostream& operator<<(std::ostream& os, const Layout& s);

}  // namespace xylem

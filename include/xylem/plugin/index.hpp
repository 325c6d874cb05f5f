#pragma once
// The views every framework's indexing kernels walk (op.hpp's index::gather
// and index::scatter), made once here so the three frameworks agree.
//
// Both ops pair each element p of `index` with a line of the other tensor
// along `axis` (the elements that differ from p only there). A walk over
// index's dims then needs, per element, the start of that line: `view`
// with index's dims and stride 0 along axis gives exactly that offset, so a
// plain multi-view walk (the frameworks' collapsing walkers) serves, and the
// line's element i sits at that offset + i * view.stride(axis).
#include <array>
#include <cstdint>
#include <span>

#include "xylem/layout.hpp"

namespace xylem::plugin {

// `view` with `like`'s dims and stride 0 along `axis`: each element is the
// start of the line along axis through the element of `like` at the same
// position. `view`'s dims other than axis are at least like's (the core
// checks), so it reaches only elements of `view`.
[[nodiscard]] inline Layout line_starts(const Layout& view, const Layout& like, int axis) {
  std::array<std::int64_t, kMaxRank> strides{};
  const auto rank = std::size_t(view.rank());
  for (std::size_t d = 0; d < rank; ++d) strides[d] = view.strides()[d];
  strides[std::size_t(axis)] = 0;
  return Layout::strided(like.dims(), std::span<const std::int64_t>(strides.data(), rank), view.offset());
}

// `view` with one element along `axis`: the columns a scatter walks one at
// a time, each along axis in order (so the last of a repeated index wins,
// with no atomics).
[[nodiscard]] inline Layout columns(const Layout& view, int axis) {
  std::array<std::int64_t, kMaxRank> dims{};
  const auto rank = std::size_t(view.rank());
  for (std::size_t d = 0; d < rank; ++d) dims[d] = view.dims()[d];
  dims[std::size_t(axis)] = 1;
  return Layout::strided(std::span<const std::int64_t>(dims.data(), rank), view.strides(), view.offset());
}

}  // namespace xylem::plugin

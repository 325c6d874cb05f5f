#pragma once
// Where two views of one storage may touch the same elements, and where one
// view reaches an element twice. Conservative: "may" answers true whenever
// the arithmetic below cannot prove the elements apart, so a caller that
// copies on true is always right and only sometimes slower.
#include "xylem/layout.hpp"

namespace xylem::detail {

// Some element of `a` may be an element of `b` (both views of one storage,
// in elements). Empty views overlap nothing.
[[nodiscard]] bool may_overlap(const Layout& a, const Layout& b) noexcept;

// Two logical positions of `view` may name the same storage element (a
// stride 0 along a dimension of size > 1, or strides that interleave).
[[nodiscard]] bool may_self_overlap(const Layout& view) noexcept;

// The same elements in the same logical order: identical dims, strides
// (where the dim is > 1) and offset.
[[nodiscard]] bool same_elements(const Layout& a, const Layout& b) noexcept;

}  // namespace xylem::detail

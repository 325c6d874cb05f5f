#pragma once
// Host-side value conversions every framework applies the same way.
#include <cmath>
#include <limits>

namespace xylem::plugin {

// A double stored into an integer dtype (fill, arange): truncated toward
// zero and saturated, NaN giving 0, so out-of-range values are defined
// rather than undefined behaviour.
template <class I>
[[nodiscard]] I saturate(double value) noexcept {
  if (std::isnan(value)) return 0;
  if (value <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (value >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(value);
}

}  // namespace xylem::plugin

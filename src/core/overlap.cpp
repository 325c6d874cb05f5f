#include "core/overlap.hpp"

#include <utility>
#include <array>
#include <cstdlib>
#include <numeric>

namespace xylem::detail {
namespace {

// The lowest and highest storage element a non-empty view reaches.
struct Range {
  std::int64_t lo, hi;
};

Range range(const Layout& v) noexcept {
  Range r{v.offset(), v.offset()};
  for (int a = 0; a < v.rank(); ++a) {
    const std::int64_t reach = (v.dims()[a] - 1) * v.strides()[a];
    (reach < 0 ? r.lo : r.hi) += reach;
  }
  return r;
}

// The gcd of the strides of the dimensions a view moves along (0 when it
// has one element).
std::int64_t stride_gcd(const Layout& v) noexcept {
  std::int64_t g = 0;
  for (int a = 0; a < v.rank(); ++a)
    if (v.dims()[a] > 1) g = std::gcd(g, std::abs(v.strides()[a]));
  return g;
}

}  // namespace

bool may_overlap(const Layout& a, const Layout& b) noexcept {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const Range ra = range(a), rb = range(b);
  if (ra.hi < rb.lo || rb.hi < ra.lo) return false;
  // Every element of a is a.offset + a multiple of g (and likewise for b):
  // offsets in different residues never meet (x[:, 0] and x[:, 1]).
  const std::int64_t g = std::gcd(stride_gcd(a), stride_gcd(b));
  if (g == 0) return a.offset() == b.offset();
  return (a.offset() - b.offset()) % g == 0;
}

bool may_self_overlap(const Layout& view) noexcept {
  if (view.is_contiguous()) return false;  // the common case, without the sort below
  if (view.numel() <= 1) return false;
  // Dimensions that move, by stride: each stride must step past everything
  // the smaller ones reach, as in any row-major layout, permuted or sliced.
  std::array<std::pair<std::int64_t, std::int64_t>, kMaxRank> moving{};  // (|stride|, dim)
  int n = 0;
  for (int a = 0; a < view.rank(); ++a)
    if (view.dims()[a] > 1) moving[n++] = {std::abs(view.strides()[a]), view.dims()[a]};
  for (int i = 1; i < n; ++i)  // insertion sort: at most kMaxRank entries
    for (int j = i; j > 0 && moving[j] < moving[j - 1]; --j) std::swap(moving[j], moving[j - 1]);
  std::int64_t reach = 0;  // the farthest element the smaller strides reach
  for (int i = 0; i < n; ++i) {
    if (moving[i].first <= reach) return true;
    reach += (moving[i].second - 1) * moving[i].first;
  }
  return false;
}

bool same_elements(const Layout& a, const Layout& b) noexcept {
  if (!a.same_dims(b)) return false;
  if (a.numel() == 0) return true;
  if (a.offset() != b.offset()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a.dims()[i] > 1 && a.strides()[i] != b.strides()[i]) return false;
  return true;
}

}  // namespace xylem::detail

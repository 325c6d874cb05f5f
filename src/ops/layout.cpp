#include "ops/layout.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "core/dispatch.hpp"
#include "xylem/creation.hpp"
#include "xylem/error.hpp"

namespace xylem::ops {
namespace {

struct Merged {
  std::int64_t size = 1;
  std::int64_t stride = 1;
};

// Axes [lo, hi) of view as one dimension, if a step along the merged
// dimension is a fixed stride (dense across every boundary).
std::optional<Merged> merge(const Layout& view, int lo, int hi) {
  Merged m;
  bool any = false;
  for (int axis = lo; axis < hi; ++axis) m.size *= view.dims()[std::size_t(axis)];
  if (m.size == 0) return m;
  for (int axis = hi - 1; axis >= lo; --axis) {
    const std::int64_t dim = view.dims()[std::size_t(axis)];
    const std::int64_t stride = view.strides()[std::size_t(axis)];
    if (dim == 1) continue;
    if (!any) {
      m.stride = stride;
      any = true;
      continue;
    }
    // The axis after this one (inward) must tile exactly into one step here.
    std::int64_t inner_span = 1;
    int inner = axis + 1;
    while (view.dims()[std::size_t(inner)] == 1) ++inner;
    inner_span = view.dims()[std::size_t(inner)] * view.strides()[std::size_t(inner)];
    if (stride != inner_span) return std::nullopt;
  }
  return m;
}

std::optional<Layout> merge_groups(const Layout& view, std::span<const int> cuts) {
  std::array<std::int64_t, 3> dims{}, strides{};
  int lo = 0;
  std::size_t g = 0;
  for (std::size_t c = 0; c <= cuts.size(); ++c, ++g) {
    const int hi = c < cuts.size() ? cuts[c] : view.rank();
    auto m = merge(view, lo, hi);
    if (!m) return std::nullopt;
    dims[g] = m->size;
    strides[g] = m->stride;
    lo = hi;
  }
  return Layout::strided(std::span(dims.data(), g), std::span(strides.data(), g), view.offset());
}

}  // namespace

std::optional<Layout> merge3(const Layout& view, int cut0, int cut1) {
  const int cuts[] = {cut0, cut1};
  return merge_groups(view, cuts);
}

std::optional<Layout> merge2(const Layout& view, int cut) {
  const int cuts[] = {cut};
  return merge_groups(view, cuts);
}

namespace {
Tensor grouped(const Backend& b, const Tensor& t, const Layout& view, std::span<const int> cuts) {
  if (auto s = merge_groups(view, cuts)) return t.as_strided(*s);
  Tensor dense = contiguous(b, t.as_strided(view));
  return dense.as_strided(*merge_groups(dense.layout(), cuts));
}
}  // namespace

Tensor grouped3(const Backend& b, const Tensor& t, const Layout& view, int cut0, int cut1) {
  const int cuts[] = {cut0, cut1};
  return grouped(b, t, view, cuts);
}

Tensor grouped2(const Backend& b, const Tensor& t, const Layout& view, int cut) {
  const int cuts[] = {cut};
  return grouped(b, t, view, cuts);
}

GroupedOutput::GroupedOutput(const Backend& b, Tensor& out, const Layout& view, int cut0, int cut1)
    : backend_(b), out_(out), view_(view) {
  if (auto s = merge3(view, cut0, cut1)) {
    grouped_ = out.as_strided(*s);
    return;
  }
  temporary_ = true;
  Tensor dense(Layout(view.dims()), out.dtype());
  grouped_ = dense.as_strided(*merge3(dense.layout(), cut0, cut1));
}

GroupedOutput::GroupedOutput(const Backend& b, Tensor& out, const Layout& view, int cut)
    : backend_(b), out_(out), view_(view) {
  if (auto s = merge2(view, cut)) {
    grouped_ = out.as_strided(*s);
    return;
  }
  temporary_ = true;
  Tensor dense(Layout(view.dims()), out.dtype());
  grouped_ = dense.as_strided(*merge2(dense.layout(), cut));
}

void GroupedOutput::finish() {
  if (!temporary_) return;
  Tensor target = out_.as_strided(view_);
  copy_into(backend_, grouped_.reshape(view_.dims()), target);
}

Layout broadcast(std::string_view op, const Layout& a, const Layout& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::array<std::int64_t, kMaxRank> dims{};
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a.dims()[std::size_t(ia)] : 1;
    const std::int64_t db = ib >= 0 ? b.dims()[std::size_t(ib)] : 1;
    if (da != db && da != 1 && db != 1)
      throw Error(ErrorCode::shape_mismatch, std::string(op) + ": shapes " + a.dims_string() + " and " +
                                                 b.dims_string() + " do not broadcast (axis " + std::to_string(i) +
                                                 ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    dims[std::size_t(i)] = da == 1 ? db : da;
  }
  return Layout(std::span<const std::int64_t>(dims.data(), std::size_t(rank)));
}

Tensor expand(const Tensor& t, const Layout& dims) {
  const Layout& s = t.layout();
  if (s.same_dims(dims)) return t;
  const int rank = dims.rank();
  std::array<std::int64_t, kMaxRank> strides{};
  for (int i = 0; i < rank; ++i) {
    const int j = s.rank() - rank + i;
    const bool stretched = j < 0 || s.dims()[std::size_t(j)] != dims.dims()[std::size_t(i)];
    strides[std::size_t(i)] = stretched ? 0 : s.strides()[std::size_t(j)];
  }
  return t.as_strided(Layout::strided(dims.dims(), std::span<const std::int64_t>(strides.data(), std::size_t(rank)),
                                     s.offset()));
}

void copy_into(const Backend& b, const Tensor& x, Tensor& y) {
  detail::launch(b, detail::args::core_copy_view<Tensor>{.x = x, .y = y});
}

}  // namespace xylem::ops

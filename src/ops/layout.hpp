#pragma once
// Reshaping op arguments into the few ranks the kernels take (plugin.hpp's
// conventions): merging runs of axes into one where the view's strides
// allow, broadcasting, and the copies needed where they do not.
#include <optional>
#include <span>

#include "xylem/backend.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

namespace xylem::ops {

// The view with axes [0, cut0), [cut0, cut1), [cut1, rank) each merged into
// one (empty groups become size 1), when the strides allow it.
[[nodiscard]] std::optional<Layout> merge3(const Layout& view, int cut0, int cut1);
// Same, in two groups [0, cut) and [cut, rank).
[[nodiscard]] std::optional<Layout> merge2(const Layout& view, int cut);

// t viewed as merge3/merge2 of `view` (a view of t's storage): t's own
// storage when the strides allow, else a contiguous copy of that view on b.
[[nodiscard]] Tensor grouped3(const Backend& b, const Tensor& t, const Layout& view, int cut0, int cut1);
[[nodiscard]] Tensor grouped2(const Backend& b, const Tensor& t, const Layout& view, int cut);

// An output argument in groups: either a view of `out` itself, or a fresh
// contiguous tensor that `finish()` copies into out afterwards.
class GroupedOutput {
 public:
  GroupedOutput(const Backend& b, Tensor& out, const Layout& view, int cut0, int cut1);  // three groups
  GroupedOutput(const Backend& b, Tensor& out, const Layout& view, int cut);              // two groups
  [[nodiscard]] const Tensor& tensor() const noexcept { return grouped_; }
  void finish();  // after the op: copies a temporary into out

 private:
  const Backend& backend_;
  Tensor& out_;
  Layout view_;
  Tensor grouped_;
  bool temporary_ = false;
};

// The NumPy broadcast of two shapes (shape_mismatch naming `op` otherwise).
[[nodiscard]] Layout broadcast(std::string_view op, const Layout& a, const Layout& b);
// t's view stretched to `dims` (stride 0 along broadcast axes).
[[nodiscard]] Tensor expand(const Tensor& t, const Layout& dims);

// y = x element by element (any views of the same dims and dtype).
void copy_into(const Backend& b, const Tensor& x, Tensor& y);

}  // namespace xylem::ops

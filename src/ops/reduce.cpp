// xylem reductions: sum, mean, max, min, argmax, argmin, var along any
// axes. The kernels reduce the middle axis of an [outer, r, inner] view
// (plugin.hpp); this file maps any set of axes onto that: a run of adjacent
// axes keeps its place (so a column reduction stays a column reduction),
// scattered axes are moved last; views whose strides cannot merge are
// copied first.
#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "core/dispatch.hpp"
#include "core/fusion.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/math.hpp"
#include "xylem/plugin/math.h"

namespace xylem {
namespace {

using plugin::OpId;

// Sorted, unique, non-negative axes; all of them when r.axes is empty.
std::vector<int> normalise_axes(std::string_view name, const Layout& x, const Reduction& r) {
  std::vector<int> axes;
  if (r.axes.empty()) {
    for (int a = 0; a < x.rank(); ++a) axes.push_back(a);
    return axes;
  }
  for (int a : r.axes) {
    const int n = a < 0 ? a + x.rank() : a;
    ops::require_argument(n >= 0 && n < x.rank(), name, [&] {
      return "axis " + std::to_string(a) + " is out of range for shape " + x.dims_string();
    });
    ops::require_argument(std::find(axes.begin(), axes.end(), n) == axes.end(), name,
                          [&] { return "axis " + std::to_string(a) + " is given twice"; });
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

bool is_reduced(const std::vector<int>& axes, int a) { return std::find(axes.begin(), axes.end(), a) != axes.end(); }

Layout reduced_dims(const Layout& x, const std::vector<int>& axes, bool keepdim) {
  std::array<std::int64_t, kMaxRank> dims{};
  std::size_t n = 0;
  for (int a = 0; a < x.rank(); ++a) {
    if (!is_reduced(axes, a))
      dims[n++] = x.dims()[std::size_t(a)];
    else if (keepdim)
      dims[n++] = 1;
  }
  return Layout(std::span<const std::int64_t>(dims.data(), n));
}

// argmax/argmin give i64 indices; an integer or boolean sum is i64 whatever
// x's dtype (NumPy's on Linux and PyTorch's: i32 and bool sums are i64).
DType result_dtype(int code, DType x) {
  if (code == XY_RED_ARGMAX || code == XY_RED_ARGMIN) return DType::i64;
  return code == XY_RED_SUM && (ops::is_math_integer(x) || x == DType::boolean) ? DType::i64 : x;
}

// Integer tensors take sum, max, min, argmax and argmin; mean and var are
// float only. A boolean tensor takes sum (the count of trues: (argmax(y) ==
// labels).sum()).
void require_reducible(std::string_view name, int code, const Tensor& x) {
  ops::require_defined(name, "x", x);
  if (code == XY_RED_SUM && x.dtype() == DType::boolean) return;
  ops::require_arithmetic(name, "x", x);
  ops::require_integer_form(code != XY_RED_MEAN && code != XY_RED_VAR, name, "x", x,
                            "sum, max, min, argmax and argmin");
}

void reduce(const Backend& b, std::string_view name, int code, const Tensor& x, const Reduction& r, Tensor& out,
            int correction = 0) {
  require_reducible(name, code, x);
  const std::vector<int> axes = normalise_axes(name, x.layout(), r);
  ops::require_dims(name, "out", out, reduced_dims(x.layout(), axes, r.keepdim));
  ops::require_dtype(name, "out", out, result_dtype(code, x.dtype()));
  if (x.dtype() == DType::boolean) {  // a count: the i64 sum of 0s and 1s
    reduce(b, name, code, cast(b, x, DType::i64), r, out, correction);
    return;
  }

  std::int64_t count = 1;
  for (int a : axes) count *= x.layout().dims()[std::size_t(a)];
  // Over nothing (NumPy, PyTorch): a sum is 0, a mean or variance NaN (0/0);
  // max, min, argmax and argmin have no answer, even where out is empty.
  if (count == 0) {
    const bool has_identity = code == XY_RED_SUM || code == XY_RED_MEAN || code == XY_RED_VAR;
    ops::require_argument(has_identity, name, [&] {
      return "reducing along an axis of size 0 (x has shape " + x.layout().dims_string() +
             ") has no result; expected reduction axes of non-zero size";
    });
    ops::fill_output(b, name, out, code == XY_RED_SUM ? 0.0 : std::numeric_limits<double>::quiet_NaN());
    return;
  }
  if (out.numel() == 0) {  // [0, n] along axis 1, say: an empty result, written
    ops::fill_output(b, name, out);
    return;
  }

  // Where the reduced axes go: a run [lo, hi) stays; otherwise kept axes
  // first, reduced axes last.
  const int rank = x.rank();
  const bool run = axes.empty() || axes.back() - axes.front() + 1 == int(axes.size());
  std::array<int, kMaxRank> order{};
  int cut0 = 0, cut1 = 0;
  if (run) {
    for (int a = 0; a < rank; ++a) order[std::size_t(a)] = a;
    cut0 = axes.empty() ? rank : axes.front();
    cut1 = axes.empty() ? rank : axes.back() + 1;
  } else {
    int n = 0;
    for (int a = 0; a < rank; ++a)
      if (!is_reduced(axes, a)) order[std::size_t(n++)] = a;
    cut0 = n;
    for (int a : axes) order[std::size_t(n++)] = a;
    cut1 = rank;
  }
  const Layout x_view = x.layout().permute(std::span<const int>(order.data(), std::size_t(rank)));
  const Tensor x3 = ops::grouped3(b, x, x_view, cut0, cut1);

  // out's kept axes, in x's order: [before the run | after it].
  std::array<std::int64_t, kMaxRank> kept_dims{}, kept_strides{};
  int kept = 0;
  {
    int oa = 0;
    for (int a = 0; a < rank; ++a) {
      if (is_reduced(axes, a)) {
        if (r.keepdim) ++oa;
        continue;
      }
      kept_dims[std::size_t(kept)] = out.layout().dims()[std::size_t(oa)];
      kept_strides[std::size_t(kept)] = out.layout().strides()[std::size_t(oa)];
      ++kept;
      ++oa;
    }
  }
  const Layout out_view = Layout::strided(std::span<const std::int64_t>(kept_dims.data(), std::size_t(kept)),
                                        std::span<const std::int64_t>(kept_strides.data(), std::size_t(kept)),
                                        out.layout().offset());
  ops::GroupedOutput y2(b, out, out_view, cut0);
  // An elementwise tail after it may run in the reduction's own pass (core/fusion.hpp).
  if (detail::defer_reduce(b, x3, y2.tensor(), out, code, name)) return;
  detail::launch(
      b, detail::args::math_reduce<Tensor>{.x = x3, .y = y2.tensor(), .code = code, .correction = correction}, name);
  y2.finish();
}

Tensor reduce_result(std::string_view name, int code, const Tensor& x, const Reduction& r) {
  require_reducible(name, code, x);
  return Tensor(reduced_dims(x.layout(), normalise_axes(name, x.layout(), r), r.keepdim),
                result_dtype(code, x.dtype()));
}

}  // namespace

#define XYLEM_REDUCE_DEF(fn, code)                                                         \
  void fn(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out) {           \
    reduce(b, #fn, code, x, r, out);                                                       \
  }                                                                                        \
  Tensor fn(const Backend& b, const Tensor& x, const Reduction& r) {                       \
    Tensor out = reduce_result(#fn, code, x, r);                                           \
    fn(b, x, r, out);                                                                      \
    return out;                                                                            \
  }
XYLEM_REDUCE_DEF(sum, XY_RED_SUM)
XYLEM_REDUCE_DEF(mean, XY_RED_MEAN)
XYLEM_REDUCE_DEF(max, XY_RED_MAX)
XYLEM_REDUCE_DEF(min, XY_RED_MIN)
XYLEM_REDUCE_DEF(argmax, XY_RED_ARGMAX)
XYLEM_REDUCE_DEF(argmin, XY_RED_ARGMIN)
#undef XYLEM_REDUCE_DEF

void var(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out, int correction) {
  reduce(b, "var", XY_RED_VAR, x, r, out, correction);
}
Tensor var(const Backend& b, const Tensor& x, const Reduction& r, int correction) {
  Tensor out = reduce_result("var", XY_RED_VAR, x, r);
  var(b, x, r, out, correction);
  return out;
}

Layout reduced_shape(const Layout& x, const Reduction& r) {
  return reduced_dims(x, normalise_axes("reduced_shape", x, r), r.keepdim);
}

}  // namespace xylem

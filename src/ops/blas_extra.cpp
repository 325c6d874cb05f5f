// xylem::blas iamin, ger, syrk, trsm, geam and the list-batched gemm: check
// arguments, bring every matrix to a view BLAS takes (unit column stride),
// dispatch. A column-major output is handled by solving the transposed
// problem in place; any other output view goes through a dense copy.
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "core/dispatch.hpp"
#include "core/overlap.hpp"
#include "ops/blas_common.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/blas.hpp"

namespace xylem::blas {
namespace {

using common::blas_input;
using common::blas_layout;
using common::require_vector;
using plugin::OpId;

std::string dims(std::int64_t rows, std::int64_t cols) {
  std::string text = "[";
  text += std::to_string(rows);
  text += ", ";
  text += std::to_string(cols);
  text += "]";
  return text;
}

void require_matrix(OpId op, const char* arg, const Tensor& t) {
  ops::require_real(plugin::op_name(op), arg, t);
  ops::require_rank(plugin::op_name(op), arg, t, 2);
}

// An input matrix as the kernels take it: `flipped` says whether the view
// given is the transpose of `m` (its rows are m's columns). An empty matrix
// gets the strides BLAS checks for, as it is never read (and offset 0: its
// storage may hold nothing at all).
Tensor input_matrix(const Backend& b, const Tensor& m, bool& flipped) {
  flipped = false;
  if (m.numel() == 0) {
    const std::int64_t cols = m.layout().dims()[1];
    const std::int64_t strides[] = {std::max<std::int64_t>(cols, 1), 1};
    return m.as_strided(Layout::strided(m.layout().dims(), strides, 0));
  }
  bool t = false;
  Tensor view = common::normalise(b, m, t);
  flipped = t;
  return view;
}

// Runs `run(view, flipped)` on an output matrix c: c's own storage where a
// BLAS view of c or of c^T exists (flipped: the view is c^T), else a dense
// temporary copied back into c afterwards (holding c's values when `read`).
template <class Run>
void with_output(const Backend& b, Tensor& c, bool read, Run run) {
  if (auto layout = blas_layout(c.layout())) {
    run(c.as_strided(*layout), false);
  } else if (auto layout_t = blas_layout(c.layout().transpose(0, 1))) {
    run(c.as_strided(*layout_t), true);
  } else {
    Tensor dense = read ? contiguous(b, c) : Tensor(Layout(c.layout().dims()), c.dtype());
    run(dense, false);
    ops::copy_into(b, dense, c);
  }
}

void require_nonempty(OpId op, const Tensor& x) {
  // BLAS answers "no index" (0 in its 1-based count); any index we gave
  // could be used as one, so an empty vector is an error, as argmin's is.
  if (x.numel() == 0)
    throw Error(ErrorCode::invalid_argument, std::string(plugin::op_name(op)) + ": x has shape " +
                                                 x.layout().dims_string() + ": an empty vector has no extreme element");
}

// The list as one rank-3 view [count, rows, cols] when its matrices are
// views of one storage with one layout, `step` elements apart (slices of a
// batch): the products then run as one strided batched gemm. `least_step`
// is the smallest step taken (an output's must keep its matrices apart).
std::optional<Tensor> as_batch(std::span<const Tensor> list, std::int64_t least_step) {
  const Tensor& first = list[0];
  const Layout& l0 = first.layout();
  const std::int64_t step = list.size() > 1 ? list[1].layout().offset() - l0.offset() : 0;
  if (step < least_step) return std::nullopt;
  for (std::size_t i = 1; i < list.size(); ++i) {
    const Layout& li = list[i].layout();
    if (!list[i].shares_data_with(first) || li.strides()[0] != l0.strides()[0] ||
        li.strides()[1] != l0.strides()[1] || li.offset() != l0.offset() + std::int64_t(i) * step)
      return std::nullopt;
  }
  const std::int64_t dims[] = {std::int64_t(list.size()), l0.dims()[0], l0.dims()[1]};
  const std::int64_t strides[] = {step, l0.strides()[0], l0.strides()[1]};
  return first.as_strided(Layout::strided(dims, strides, l0.offset()));
}

}  // namespace

void iamin(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_iamin, "x", x);
  require_nonempty(OpId::blas_iamin, x);
  common::require_result(OpId::blas_iamin, result, DType::i64);
  detail::launch(b, detail::args::blas_iamin<Tensor>{.x = blas_input(b, x), .result = result});
}

Future<std::int64_t> iamin(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_iamin, "x", x);
  Tensor result(Layout{1}, DType::i64);
  iamin(b, x, result);
  return result.read<std::int64_t>().then([](const std::vector<std::int64_t>& v) { return v.at(0); });
}

void ger(const Backend& b, double alpha, const Tensor& x, const Tensor& y, Tensor& a) {
  constexpr auto op = OpId::blas_ger;
  const auto name = plugin::op_name(op);
  require_vector(op, "x", x);
  require_vector(op, "y", y);
  require_matrix(op, "a", a);
  ops::require_same_dtype(name, "x", x, "y", y);
  ops::require_same_dtype(name, "x", x, "a", a);
  const std::int64_t m = a.layout().dims()[0], n = a.layout().dims()[1];
  if (x.numel() != m || y.numel() != n)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": a is " + a.layout().dims_string() + ", x " +
                                               x.layout().dims_string() + " and y " + y.layout().dims_string() +
                                               "; need x [" + std::to_string(m) + "] and y [" + std::to_string(n) +
                                               "]");
  if (m == 0 || n == 0 || alpha == 0) return;  // a is left as it is, as BLAS does
  const Tensor xv = blas_input(b, x), yv = blas_input(b, y);
  with_output(b, a, true, [&](Tensor view, bool flipped) {
    // a^T += alpha y x^T
    detail::launch(b, detail::args::blas_ger<Tensor>{.x = flipped ? yv : xv, .y = flipped ? xv : yv, .a = view,
                                                      .alpha = alpha});
  });
}

void syrk(const Backend& b, Uplo uplo, Transpose trans, double alpha, const Tensor& a, double beta, Tensor& c) {
  constexpr auto op = OpId::blas_syrk;
  const auto name = plugin::op_name(op);
  require_matrix(op, "a", a);
  require_matrix(op, "c", c);
  ops::require_same_dtype(name, "a", a, "c", c);
  bool t = trans == Transpose::yes;
  const std::int64_t n = a.layout().dims()[t ? 1 : 0], k = a.layout().dims()[t ? 0 : 1];
  if (c.layout().dims()[0] != n || c.layout().dims()[1] != n)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": op(a) is " + dims(n, k) + " and c " +
                                               c.layout().dims_string() + "; need c " + dims(n, n));
  if (n == 0) return;
  bool flipped = false;
  const Tensor a_view = input_matrix(b, a, flipped);
  t = t != flipped;
  bool upper = uplo == Uplo::upper;
  with_output(b, c, true, [&](Tensor view, bool c_flipped) {
    // c^T holds the same values with its triangles exchanged.
    detail::launch(b, detail::args::blas_syrk<Tensor>{.a = a_view,
                                                       .c = view,
                                                       .upper = (upper != c_flipped) ? 1 : 0,
                                                       .transpose = t ? 1 : 0,
                                                       .alpha = alpha,
                                                       .beta = beta});
  });
}

void trsm(const Backend& b, Side side, Uplo uplo, Transpose trans, Diag diag, double alpha, const Tensor& a,
          Tensor& bm) {
  constexpr auto op = OpId::blas_trsm;
  const auto name = plugin::op_name(op);
  require_matrix(op, "a", a);
  require_matrix(op, "b", bm);
  ops::require_same_dtype(name, "a", a, "b", bm);
  const std::int64_t m = bm.layout().dims()[0], n = bm.layout().dims()[1];
  const std::int64_t k = side == Side::left ? m : n;
  if (a.layout().dims()[0] != k || a.layout().dims()[1] != k)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": a is " + a.layout().dims_string() + " and b " +
                                               bm.layout().dims_string() + "; with a on the " +
                                               (side == Side::left ? "left" : "right") + " a must be " + dims(k, k));
  if (m == 0 || n == 0) return;
  if (alpha == 0) {  // x = 0, as BLAS writes it, reading neither matrix
    fill(b, bm, 0.0);
    return;
  }
  bool a_flipped = false;
  const Tensor a_view = input_matrix(b, a, a_flipped);
  // a given as a^T: op(a) is op'(a^T) with the flag flipped, and the
  // triangle read is the other one.
  const bool t = (trans == Transpose::yes) != a_flipped;
  const bool upper = (uplo == Uplo::upper) != a_flipped;
  with_output(b, bm, true, [&](Tensor view, bool b_flipped) {
    // Solving for x^T: op(a) x = alpha b is x^T op(a)^T = alpha b^T, and
    // the other way round: the side and the transpose flag both flip.
    const bool left = (side == Side::left) != b_flipped;
    detail::launch(b, detail::args::blas_trsm<Tensor>{.a = a_view,
                                                       .b = view,
                                                       .left = left ? 1 : 0,
                                                       .upper = upper ? 1 : 0,
                                                       .transpose = (t != b_flipped) ? 1 : 0,
                                                       .unit_diagonal = diag == Diag::unit ? 1 : 0,
                                                       .alpha = alpha});
  });
}

void geam(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, double beta, const Tensor& bm,
          Tensor& c) {
  constexpr auto op = OpId::blas_geam;
  const auto name = plugin::op_name(op);
  require_matrix(op, "a", a);
  require_matrix(op, "b", bm);
  require_matrix(op, "c", c);
  ops::require_same_dtype(name, "a", a, "b", bm);
  ops::require_same_dtype(name, "a", a, "c", c);
  const bool t_a = ta == Transpose::yes, t_b = tb == Transpose::yes;
  const auto ad = a.layout().dims(), bd = bm.layout().dims(), cd = c.layout().dims();
  const std::int64_t m = cd[0], n = cd[1];
  if (ad[t_a ? 1 : 0] != m || ad[t_a ? 0 : 1] != n || bd[t_b ? 1 : 0] != m || bd[t_b ? 0 : 1] != n)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": op(a) is " + dims(ad[t_a ? 1 : 0], ad[t_a ? 0 : 1]) +
                                               ", op(b) " + dims(bd[t_b ? 1 : 0], bd[t_b ? 0 : 1]) + " and c " +
                                               c.layout().dims_string() + "; all three must be " + dims(m, n));
  if (m == 0 || n == 0) {
    ops::fill_output(b, name, c);
    return;
  }
  bool fa = false, fb = false;
  const Tensor a_view = input_matrix(b, a, fa), b_view = input_matrix(b, bm, fb);
  with_output(b, c, false, [&](Tensor view, bool c_flipped) {
    // c^T = alpha op(a)^T + beta op(b)^T: every flag flips.
    detail::launch(b, detail::args::blas_geam<Tensor>{.a = a_view,
                                                       .b = b_view,
                                                       .c = view,
                                                       .transpose_a = (t_a != fa) != c_flipped ? 1 : 0,
                                                       .transpose_b = (t_b != fb) != c_flipped ? 1 : 0,
                                                       .alpha = alpha,
                                                       .beta = beta});
  });
}

void gemm_batched(const Backend& b, Transpose ta, Transpose tb, double alpha, std::span<const Tensor> a,
                  std::span<const Tensor> bm, double beta, std::span<Tensor> c) {
  constexpr std::string_view name = "blas::gemm_batched";
  if (a.size() != bm.size() || a.size() != c.size())
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": lists of " + std::to_string(a.size()) + " a, " +
                                               std::to_string(bm.size()) + " b and " + std::to_string(c.size()) +
                                               " c; they must have one length");
  if (a.empty()) return;
  const auto same_as_first = [&](const char* arg, std::span<const Tensor> list) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item = std::string(arg) + "[" + std::to_string(i) + "]";
      ops::require_gemm_dtype(name, item, list[i]);
      ops::require_rank(name, item, list[i], 2);
      ops::require_same_dtype(name, std::string(arg) + "[0]", list[0], item, list[i]);
      ops::require_same_dims(name, std::string(arg) + "[0]", list[0], item, list[i]);
    }
  };
  same_as_first("a", a);
  same_as_first("b", bm);
  same_as_first("c", std::span<const Tensor>(c.data(), c.size()));
  ops::require_same_dtype(name, "a[0]", a[0], "b[0]", bm[0]);
  ops::require_same_dtype(name, "a[0]", a[0], "c[0]", c[0]);
  const bool t_a = ta == Transpose::yes, t_b = tb == Transpose::yes;
  const auto ad = a[0].layout().dims(), bd = bm[0].layout().dims(), cd = c[0].layout().dims();
  const std::int64_t m = ad[t_a ? 1 : 0], k = ad[t_a ? 0 : 1], kb = bd[t_b ? 1 : 0], n = bd[t_b ? 0 : 1];
  if (k != kb || cd[0] != m || cd[1] != n)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": op(a) is " + dims(m, k) + ", op(b) " +
                                               dims(kb, n) + " and c " + c[0].layout().dims_string() +
                                               "; need op(a) [m, k], op(b) [k, n], c [m, n]");
  for (std::size_t i = 0; i < c.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (c[i].shares_data_with(c[j]) && detail::may_overlap(c[i].layout(), c[j].layout()))
        throw Error(ErrorCode::invalid_argument, std::string(name) + ": c[" + std::to_string(j) + "] and c[" +
                                                     std::to_string(i) +
                                                     "] share memory; give each product a tensor of its own");
  // Slices of batches run as one strided batched gemm; c's step must pass
  // the extent of a matrix, so that its matrices stay apart.
  const Layout& c0 = c[0].layout();
  const std::int64_t c_extent = std::max<std::int64_t>(
      1, (m - 1) * std::abs(c0.strides()[0]) + (n - 1) * std::abs(c0.strides()[1]) + 1);
  const std::span<const Tensor> c_list(c.data(), c.size());
  if (c.size() > 1 && m > 0 && n > 0) {
    auto a3 = as_batch(a, 0), b3 = as_batch(bm, 0), c3 = as_batch(c_list, c_extent);
    if (a3 && b3 && c3) {
      gemm(b, ta, tb, alpha, *a3, *b3, beta, *c3);
      return;
    }
  }
  // Otherwise each product is one gemm launch: the checks above are every
  // check gemm makes, so none of these raises an argument error part-way.
  for (std::size_t i = 0; i < c.size(); ++i) gemm(b, ta, tb, alpha, a[i], bm[i], beta, c[i]);
}

}  // namespace xylem::blas

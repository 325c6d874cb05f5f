// xylem::blas wrappers: check arguments, normalise matrix layouts, dispatch.
#include "xylem/blas.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>

#include "core/dispatch.hpp"
#include "ops/blas_common.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"

namespace xylem::blas {
namespace {

using plugin::OpId;
using common::blas_input;
using common::blas_layout;
using common::normalise;
using common::require_result;
using common::require_vector;
using common::scale_in_place;

void require_pair(OpId op, const Tensor& x, const Tensor& y) {
  require_vector(op, "x", x);
  require_vector(op, "y", y);
  ops::require_like(plugin::op_name(op), "x", x, "y", y);
}

// asum, nrm2 and iamax: x into a one-element result.
template <template <class> class Reduce>
void reduce(const Backend& b, const Tensor& x, Tensor& result, DType result_dtype) {
  require_result(Reduce<Tensor>::id, result, result_dtype);
  detail::launch(b, Reduce<Tensor>{.x = blas_input(b, x), .result = result});
}

template <class T>
Future<double> read_scalar(const Tensor& result) {
  return result.read<T>().then([](const std::vector<T>& v) { return static_cast<double>(v.at(0)); });
}

Future<double> read_real(const Tensor& result) {
  return result.dtype() == DType::f32 ? read_scalar<float>(result) : read_scalar<double>(result);
}

// gemm's operands: one dtype, f32, f64, f16 or bf16.
void require_gemm_dtypes(std::string_view name, const Tensor& a, const Tensor& bm, const Tensor& c) {
  ops::require_gemm_dtype(name, "a", a);
  ops::require_gemm_dtype(name, "b", bm);
  ops::require_gemm_dtype(name, "c", c);
  ops::require_same_dtype(name, "a", a, "b", bm);
  ops::require_same_dtype(name, "a", a, "c", c);
}

// gemm and gemm_batched (one argument layout) on views the kernels take as
// they are.
template <template <class> class Gemm>
void launch_gemm(const Backend& b, std::string_view name, const Tensor& a, const Tensor& bm, const Tensor& c,
                 bool trans_a, bool trans_b, double alpha, double beta) {
  detail::launch(b,
                 Gemm<Tensor>{.a = a,
                              .b = bm,
                              .c = c,
                              .transpose_a = trans_a,
                              .transpose_b = trans_b,
                              .alpha = alpha,
                              .beta = beta},
                 name);
}

}  // namespace

void asum(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_asum, "x", x);
  reduce<detail::args::blas_asum>(b, x, result, x.dtype());
}
void nrm2(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_nrm2, "x", x);
  reduce<detail::args::blas_nrm2>(b, x, result, x.dtype());
}
void iamax(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_iamax, "x", x);
  // BLAS answers "no index" (0 in its 1-based count); any index we gave
  // could be used as one, so an empty vector is an error, as argmax's is.
  if (x.numel() == 0)
    throw Error(ErrorCode::invalid_argument, std::string(plugin::op_name(OpId::blas_iamax)) + ": x has shape " +
                                                 x.layout().dims_string() + ": an empty vector has no largest element");
  reduce<detail::args::blas_iamax>(b, x, result, DType::i64);
}
void dot(const Backend& b, const Tensor& x, const Tensor& y, Tensor& result) {
  require_pair(OpId::blas_dot, x, y);
  require_result(OpId::blas_dot, result, x.dtype());
  detail::launch(b, detail::args::blas_dot<Tensor>{.x = blas_input(b, x), .y = blas_input(b, y), .result = result});
}

Future<double> asum(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_asum, "x", x);
  Tensor result(Layout{1}, x.dtype());
  asum(b, x, result);
  return read_real(result);
}
Future<double> nrm2(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_nrm2, "x", x);
  Tensor result(Layout{1}, x.dtype());
  nrm2(b, x, result);
  return read_real(result);
}
Future<double> dot(const Backend& b, const Tensor& x, const Tensor& y) {
  require_pair(OpId::blas_dot, x, y);
  Tensor result(Layout{1}, x.dtype());
  dot(b, x, y, result);
  return read_real(result);
}
Future<std::int64_t> iamax(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_iamax, "x", x);
  Tensor result(Layout{1}, DType::i64);
  iamax(b, x, result);
  return result.read<std::int64_t>().then([](const std::vector<std::int64_t>& v) { return v.at(0); });
}

void axpy(const Backend& b, double alpha, const Tensor& x, Tensor& y) {
  require_pair(OpId::blas_axpy, x, y);
  detail::launch(b, detail::args::blas_axpy<Tensor>{.x = blas_input(b, x), .y = y, .alpha = alpha});
}
void copy(const Backend& b, const Tensor& x, Tensor& y) {
  require_pair(OpId::blas_copy, x, y);
  detail::launch(b, detail::args::blas_copy<Tensor>{.x = blas_input(b, x), .y = y});
}
void scal(const Backend& b, double alpha, Tensor& x) {
  require_vector(OpId::blas_scal, "x", x);
  detail::launch(b, detail::args::blas_scal<Tensor>{.x = x, .alpha = alpha});
}
void swap(const Backend& b, Tensor& x, Tensor& y) {
  require_pair(OpId::blas_swap, x, y);
  detail::launch(b, detail::args::blas_swap<Tensor>{.x = x, .y = y});
}

void rot(const Backend& b, Tensor& x, Tensor& y, double c, double s) {
  require_pair(OpId::blas_rot, x, y);
  detail::launch(b, detail::args::blas_rot<Tensor>{.x = x, .y = y, .c = c, .s = s});
}

void gemv(const Backend& b, Transpose ta, double alpha, const Tensor& a, const Tensor& x, double beta, Tensor& y) {
  constexpr auto op = OpId::blas_gemv;
  const auto name = plugin::op_name(op);
  ops::require_real(name, "a", a);
  ops::require_rank(name, "a", a, 2);
  require_vector(op, "x", x);
  require_vector(op, "y", y);
  ops::require_same_dtype(name, "a", a, "x", x);
  ops::require_same_dtype(name, "a", a, "y", y);
  bool trans = ta == Transpose::yes;
  const std::int64_t rows = a.layout().dims()[trans ? 1 : 0], cols = a.layout().dims()[trans ? 0 : 1];
  if (x.numel() != cols || y.numel() != rows)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": op(a) is [" + std::to_string(rows) + ", " +
                                               std::to_string(cols) + "], x " + x.layout().dims_string() + " and y " +
                                               y.layout().dims_string() + "; need x [" + std::to_string(cols) +
                                               "] and y [" + std::to_string(rows) + "]");
  if (rows == 0) {  // y is empty
    ops::fill_output(b, name, y);
    return;
  }
  if (cols == 0) {  // y = beta y
    if (beta == 0) {
      fill(b, y, 0.0);
    } else if (beta != 1) {
      scal(b, beta, y);
    }
    return;
  }
  const Tensor a_view = normalise(b, a, trans);
  detail::launch(b, detail::args::blas_gemv<Tensor>{.a = a_view,
                                                    .x = blas_input(b, x),
                                                    .y = y,
                                                    .transpose_a = trans,
                                                    .alpha = alpha,
                                                    .beta = beta});
}

namespace {
void gemm_batched(const Backend& b, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& bm,
                  double beta, Tensor& c);
}  // namespace

void gemm(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, const Tensor& bm, double beta,
          Tensor& c) {
  constexpr auto op = OpId::blas_gemm;
  const auto name = plugin::op_name(op);
  if (a.defined() && bm.defined() && c.defined() && c.rank() == 3) {
    gemm_batched(b, ta == Transpose::yes, tb == Transpose::yes, alpha, a, bm, beta, c);
    return;
  }
  require_gemm_dtypes(name, a, bm, c);
  ops::require_rank(name, "a", a, 2);
  ops::require_rank(name, "b", bm, 2);
  ops::require_rank(name, "c", c, 2);
  bool trans_a = ta == Transpose::yes, trans_b = tb == Transpose::yes;
  const std::int64_t m = a.layout().dims()[trans_a ? 1 : 0], k = a.layout().dims()[trans_a ? 0 : 1];
  const std::int64_t kb = bm.layout().dims()[trans_b ? 1 : 0], n = bm.layout().dims()[trans_b ? 0 : 1];
  if (k != kb || c.layout().dims()[0] != m || c.layout().dims()[1] != n)
    throw Error(ErrorCode::shape_mismatch,
                std::string(name) + ": op(a) is [" + std::to_string(m) + ", " + std::to_string(k) + "], op(b) is [" +
                    std::to_string(kb) + ", " + std::to_string(n) + "] and c is " + c.layout().dims_string() +
                    "; need op(a) [m, k], op(b) [k, n], c [m, n]");
  if (m == 0 || n == 0) {  // c is empty
    ops::fill_output(b, name, c);
    return;
  }
  if (k == 0) {  // c = beta c; BLAS would reject the empty operands' leading dimensions
    scale_in_place(b, beta, c);
    return;
  }

  // A column-major c: compute c^T = op(b)^T op(a)^T instead.
  const Tensor* first = &a;
  const Tensor* second = &bm;
  Tensor c_view;
  if (auto layout = blas_layout(c.layout())) {
    c_view = c.as_strided(*layout);
  } else if (auto layout_t = blas_layout(c.layout().transpose(0, 1))) {
    c_view = c.as_strided(*layout_t);
    std::swap(first, second);
    std::swap(trans_a, trans_b);
    trans_a = !trans_a;
    trans_b = !trans_b;
  } else {
    // No unit stride in c (a strided view): compute into a dense copy.
    Tensor dense = beta == 0 ? Tensor(Layout(c.layout().dims()), c.dtype()) : contiguous(b, c);
    gemm(b, ta, tb, alpha, a, bm, beta, dense);
    ops::copy_into(b, dense, c);
    return;
  }
  // op(x)^T of a transposed view: flipping the flag and the view are the same.
  const Tensor a_view = normalise(b, *first, trans_a);
  const Tensor b_view = normalise(b, *second, trans_b);

  launch_gemm<detail::args::blas_gemm>(b, name, a_view, b_view, c_view, trans_a, trans_b, alpha, beta);
}

namespace {

// A rank-3 view [batch, rows, cols] as gemm takes it: each matrix with unit
// column stride (transposed if need be); `batch` stretches a batch-1 operand.
Tensor batched_operand(const Backend& b, const Tensor& input, std::int64_t batch, bool& transposed) {
  // Matrices with no unit stride are copied dense first.
  const Tensor m = [&] {
    const Layout& s = input.layout();
    const std::int64_t dims[] = {s.dims()[1], s.dims()[2]}, strides[] = {s.strides()[1], s.strides()[2]};
    const Layout matrix = Layout::strided(dims, strides, 0);
    return blas_layout(matrix) || blas_layout(matrix.transpose(0, 1)) ? input : contiguous(b, input);
  }();
  const Layout& s = m.layout();
  const std::int64_t matrix_dims[] = {s.dims()[1], s.dims()[2]};
  const std::int64_t matrix_strides[] = {s.strides()[1], s.strides()[2]};
  const Layout matrix = Layout::strided(matrix_dims, matrix_strides, s.offset());
  bool flip = false;
  auto layout = blas_layout(matrix);
  if (!layout) {
    layout = blas_layout(matrix.transpose(0, 1));
    flip = true;
  }
  transposed = transposed != flip;
  const std::int64_t batch_stride = s.dims()[0] == 1 ? 0 : s.strides()[0];
  const std::int64_t dims[] = {batch, layout->dims()[0], layout->dims()[1]};
  const std::int64_t strides[] = {batch_stride, layout->strides()[0], 1};
  return m.as_strided(Layout::strided(dims, strides, s.offset()));
}

void gemm_batched(const Backend& b, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& bm,
                  double beta, Tensor& c) {
  constexpr std::string_view name = "blas::gemm";
  require_gemm_dtypes(name, a, bm, c);
  ops::require_rank(name, "a", a, 3);
  ops::require_rank(name, "b", bm, 3);
  const std::int64_t batch = c.layout().dims()[0];
  const auto ad = a.layout().dims(), bd = bm.layout().dims(), cd = c.layout().dims();
  const std::int64_t m = ad[trans_a ? 2 : 1], k = ad[trans_a ? 1 : 2];
  const std::int64_t kb = bd[trans_b ? 2 : 1], n = bd[trans_b ? 1 : 2];
  const bool batches_fit = (ad[0] == batch || ad[0] == 1) && (bd[0] == batch || bd[0] == 1);
  if (!batches_fit || k != kb || cd[1] != m || cd[2] != n)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": a " + a.layout().dims_string() + ", b " +
                                               bm.layout().dims_string() + " and c " + c.layout().dims_string() +
                                               " do not make a batched product: need op(a) [batch or 1, m, k], "
                                               "op(b) [batch or 1, k, n], c [batch, m, n]");
  if (batch == 0 || m == 0 || n == 0) {  // c is empty
    ops::fill_output(b, name, c);
    return;
  }
  if (k == 0) {  // c = beta c
    scale_in_place(b, beta, c);
    return;
  }
  // c's matrices must be row-major with unit column stride (no swap trick
  // per batch): copy through a temporary otherwise.
  const Layout& cs = c.layout();
  const bool c_ok = (n == 1 || cs.strides()[2] == 1) && (m == 1 || cs.strides()[1] >= n);
  if (!c_ok) {
    Tensor tmp = beta == 0 ? Tensor(Layout{batch, m, n}, c.dtype()) : contiguous(b, c);
    gemm_batched(b, trans_a, trans_b, alpha, a, bm, beta, tmp);
    ops::copy_into(b, tmp, c);
    return;
  }
  const std::int64_t c_dims[] = {batch, m, n};
  const std::int64_t c_strides[] = {cs.strides()[0], m == 1 ? n : cs.strides()[1], 1};
  const Tensor c_view = c.as_strided(Layout::strided(c_dims, c_strides, cs.offset()));
  const Tensor a_view = batched_operand(b, a, batch, trans_a);
  const Tensor b_view = batched_operand(b, bm, batch, trans_b);
  launch_gemm<detail::args::blas_gemm_batched>(b, name, a_view, b_view, c_view, trans_a, trans_b, alpha, beta);
}

}  // namespace

Tensor matmul(const Backend& b, const Tensor& a, const Tensor& bm) {
  constexpr std::string_view name = "blas::matmul";
  ops::require_defined(name, "a", a);
  ops::require_defined(name, "b", bm);
  const int ra = a.rank(), rb = bm.rank();
  if (ra < 1 || rb < 1)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": takes ranks 1 and up, not " +
                                               a.layout().dims_string() + " @ " + bm.layout().dims_string());
  // Vectors and matrices alone: a dot product, a matrix-vector product
  // either way round, one gemm.
  if (ra == 1 && rb == 1) {
    Tensor r(Layout{}, a.dtype());
    dot(b, a, bm, r);
    return r;
  }
  if (ra == 2 && rb == 1) {
    Tensor r(Layout{a.layout().dims()[0]}, a.dtype());
    gemv(b, Transpose::no, 1.0, a, bm, 0.0, r);
    return r;
  }
  if (ra == 1 && rb == 2) {
    Tensor r(Layout{bm.layout().dims()[1]}, a.dtype());
    gemv(b, Transpose::yes, 1.0, bm, a, 0.0, r);
    return r;
  }
  const auto rows = [](const Tensor& t) { return t.layout().dims()[std::size_t(t.rank() - 2)]; };
  const auto cols = [](const Tensor& t) { return t.layout().dims()[std::size_t(t.rank() - 1)]; };
  if (ra == 2 && rb == 2) {
    Tensor c(Layout{rows(a), cols(bm)}, a.dtype());
    gemm(b, Transpose::no, Transpose::no, 1.0, a, bm, 0.0, c);
    return c;
  }
  // Stacks of matrices, as NumPy takes them: a vector is a matrix of one row
  // (a) or one column (b), that axis dropped from the result again; the
  // axes before the last two are batch axes and broadcast against each
  // other. Each operand's batch axes are merged into one where its strides
  // allow (a broadcast operand keeps stride 0, so one matrix serves every
  // product), else its stretched view is copied dense first.
  const std::string shapes = a.layout().dims_string() + " @ " + bm.layout().dims_string();
  const Tensor am = ra == 1 ? a.reshape({1, a.layout().dims()[0]}) : a;
  const Tensor bv = rb == 1 ? bm.reshape({bm.layout().dims()[0], 1}) : bm;
  const std::int64_t m = rows(am), k = cols(am), n = cols(bv);
  if (rows(bv) != k)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": " + shapes + ": inner sizes " + std::to_string(k) +
                                               " and " + std::to_string(rows(bv)) + " differ");
  const auto batch_of = [](const Tensor& t) {
    return Layout(std::span<const std::int64_t>(t.layout().dims().data(), std::size_t(t.rank() - 2)));
  };
  const Layout batch = ops::broadcast(std::string(name) + " (the batch axes of " + shapes + ")", batch_of(am), batch_of(bv));
  const int nb = batch.rank();
  const auto stacked = [&](const Tensor& t, std::int64_t r, std::int64_t c) {
    std::array<std::int64_t, kMaxRank> dims{};
    std::copy(batch.dims().begin(), batch.dims().end(), dims.begin());
    dims[std::size_t(nb)] = r;
    dims[std::size_t(nb + 1)] = c;
    const Tensor stretched = ops::expand(t, Layout(std::span<const std::int64_t>(dims.data(), std::size_t(nb + 2))));
    return ops::grouped3(b, stretched, stretched.layout(), nb, nb + 1);
  };
  const Tensor a3 = stacked(am, m, k), b3 = stacked(bv, k, n);
  Tensor c(Layout{batch.numel(), m, n}, a.dtype());
  gemm(b, Transpose::no, Transpose::no, 1.0, a3, b3, 0.0, c);
  std::array<std::int64_t, kMaxRank> out{};
  std::copy(batch.dims().begin(), batch.dims().end(), out.begin());
  std::size_t rank = std::size_t(nb);
  if (ra > 1) out[rank++] = m;
  if (rb > 1) out[rank++] = n;
  return c.reshape(std::span<const std::int64_t>(out.data(), rank));
}

}  // namespace xylem::blas

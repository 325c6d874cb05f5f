// xylem::blas wrappers: check arguments, normalise matrix layouts, dispatch.
#include "xylem/blas.hpp"

#include <algorithm>
#include <optional>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/creation.hpp"

namespace xylem::blas {
namespace {

using plugin::OpId;

void require_vector(OpId op, const char* arg, const Tensor& t) {
  ops::require_real(plugin::op_name(op), arg, t);
  ops::require_rank(plugin::op_name(op), arg, t, 1);
}

void require_pair(OpId op, const Tensor& x, const Tensor& y) {
  require_vector(op, "x", x);
  require_vector(op, "y", y);
  ops::require_same_dtype(plugin::op_name(op), "x", x, "y", y);
  ops::require_same_dims(plugin::op_name(op), "x", x, "y", y);
}

void require_result(OpId op, const Tensor& result, DType dtype) {
  const auto name = plugin::op_name(op);
  ops::require_defined(name, "result", result);
  if (result.numel() != 1)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": 'result' has shape " +
                                               result.shape().dims_string() + "; it must hold one element");
  if (result.dtype() != dtype)
    throw Error(ErrorCode::dtype_mismatch, std::string(name) + ": 'result' is " + std::string(xylem::name(result.dtype())) +
                                               "; expected " + std::string(xylem::name(dtype)));
}

void reduce(const Backend& b, OpId op, const Tensor& x, const Tensor* y, Tensor& result, DType result_dtype) {
  require_result(op, result, result_dtype);
  detail::OpLaunch launch(b, op);
  launch.read(x);
  if (y) launch.read(*y);
  launch.write(result).launch();
}

template <class T>
Future<double> read_scalar(const Tensor& result) {
  return result.read<T>().then([](const std::vector<T>& v) { return static_cast<double>(v.at(0)); });
}

Future<double> read_real(const Tensor& result) {
  return result.dtype() == DType::f32 ? read_scalar<float>(result) : read_scalar<double>(result);
}

// A matrix view BLAS can take as is: unit column stride, row stride at
// least the row length. Strides of size-1 dimensions do not matter, so they
// are set to what BLAS expects.
std::optional<Shape> blas_layout(const Shape& s) {
  const std::int64_t rows = s.dims()[0], cols = s.dims()[1];
  const std::int64_t row_stride = rows <= 1 ? std::max<std::int64_t>(cols, 1) : s.strides()[0];
  const std::int64_t col_stride = cols <= 1 ? 1 : s.strides()[1];
  if (col_stride != 1 || row_stride < std::max<std::int64_t>(cols, 1)) return std::nullopt;
  const std::int64_t strides[] = {row_stride, 1};
  return Shape::strided(s.dims(), strides, s.offset());
}

// The view and transpose flag the kernel gets for one input matrix.
Tensor normalise(const Tensor& m, bool& transposed, const char* arg) {
  if (auto layout = blas_layout(m.shape())) return m.as_strided(*layout);
  if (auto layout = blas_layout(m.shape().transpose(0, 1))) {
    transposed = !transposed;
    return m.as_strided(*layout);
  }
  throw Error(ErrorCode::invalid_argument, std::string("blas::gemm: '") + arg + "' (shape " + m.shape().dims_string() +
                                               ", strides " + m.shape().strides_string() +
                                               ") has no unit stride; make it contiguous first (xylem::contiguous)");
}

}  // namespace

void asum(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_asum, "x", x);
  reduce(b, OpId::blas_asum, x, nullptr, result, x.dtype());
}
void nrm2(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_nrm2, "x", x);
  reduce(b, OpId::blas_nrm2, x, nullptr, result, x.dtype());
}
void iamax(const Backend& b, const Tensor& x, Tensor& result) {
  require_vector(OpId::blas_iamax, "x", x);
  reduce(b, OpId::blas_iamax, x, nullptr, result, DType::i64);
}
void dot(const Backend& b, const Tensor& x, const Tensor& y, Tensor& result) {
  require_pair(OpId::blas_dot, x, y);
  reduce(b, OpId::blas_dot, x, &y, result, x.dtype());
}

Future<double> asum(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_asum, "x", x);
  Tensor result(Shape{1}, x.dtype());
  asum(b, x, result);
  return read_real(result);
}
Future<double> nrm2(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_nrm2, "x", x);
  Tensor result(Shape{1}, x.dtype());
  nrm2(b, x, result);
  return read_real(result);
}
Future<double> dot(const Backend& b, const Tensor& x, const Tensor& y) {
  require_pair(OpId::blas_dot, x, y);
  Tensor result(Shape{1}, x.dtype());
  dot(b, x, y, result);
  return read_real(result);
}
Future<std::int64_t> iamax(const Backend& b, const Tensor& x) {
  require_vector(OpId::blas_iamax, "x", x);
  Tensor result(Shape{1}, DType::i64);
  iamax(b, x, result);
  return result.read<std::int64_t>().then([](const std::vector<std::int64_t>& v) { return v.at(0); });
}

void axpy(const Backend& b, double alpha, const Tensor& x, Tensor& y) {
  require_pair(OpId::blas_axpy, x, y);
  detail::OpLaunch(b, OpId::blas_axpy).read(x).read_write(y).scalar(alpha).launch();
}
void copy(const Backend& b, const Tensor& x, Tensor& y) {
  require_pair(OpId::blas_copy, x, y);
  detail::OpLaunch(b, OpId::blas_copy).read(x).write(y).launch();
}
void scal(const Backend& b, double alpha, Tensor& x) {
  require_vector(OpId::blas_scal, "x", x);
  detail::OpLaunch(b, OpId::blas_scal).read_write(x).scalar(alpha).launch();
}
void swap(const Backend& b, Tensor& x, Tensor& y) {
  require_pair(OpId::blas_swap, x, y);
  detail::OpLaunch(b, OpId::blas_swap).read_write(x).read_write(y).launch();
}

void gemm(const Backend& b, Transpose ta, Transpose tb, double alpha, const Tensor& a, const Tensor& bm, double beta,
          Tensor& c) {
  constexpr auto op = OpId::blas_gemm;
  const auto name = plugin::op_name(op);
  ops::require_gemm_dtype(name, "a", a);
  ops::require_gemm_dtype(name, "b", bm);
  ops::require_gemm_dtype(name, "c", c);
  ops::require_same_dtype(name, "a", a, "b", bm);
  ops::require_same_dtype(name, "a", a, "c", c);
  ops::require_rank(name, "a", a, 2);
  ops::require_rank(name, "b", bm, 2);
  ops::require_rank(name, "c", c, 2);
  bool trans_a = ta == Transpose::yes, trans_b = tb == Transpose::yes;
  const std::int64_t m = a.shape().dims()[trans_a ? 1 : 0], k = a.shape().dims()[trans_a ? 0 : 1];
  const std::int64_t kb = bm.shape().dims()[trans_b ? 1 : 0], n = bm.shape().dims()[trans_b ? 0 : 1];
  if (k != kb || c.shape().dims()[0] != m || c.shape().dims()[1] != n)
    throw Error(ErrorCode::shape_mismatch,
                std::string(name) + ": op(a) is [" + std::to_string(m) + ", " + std::to_string(k) + "], op(b) is [" +
                    std::to_string(kb) + ", " + std::to_string(n) + "] and c is " + c.shape().dims_string() +
                    "; need op(a) [m, k], op(b) [k, n], c [m, n]");
  if (m == 0 || n == 0) return;
  if (k == 0) {  // c = beta c; BLAS would reject the empty operands' leading dimensions
    if (beta == 0) {
      fill(b, c, 0.0);
    } else if (beta != 1) {
      if (c.dtype() != DType::f32 && c.dtype() != DType::f64)
        throw Error(ErrorCode::unsupported, std::string(name) + ": k = 0 with beta " + std::to_string(beta) +
                                                " on " + std::string(xylem::name(c.dtype())) +
                                                " (scaling c needs blas::scal, f32/f64 only)");
      for (std::int64_t row = 0; row < m; ++row) {
        const std::int64_t dims[] = {n}, strides[] = {c.shape().strides()[1]};
        Tensor line = c.as_strided(Shape::strided(dims, strides, c.shape().offset() + row * c.shape().strides()[0]));
        scal(b, beta, line);
      }
    }
    return;
  }

  // A column-major c: compute c^T = op(b)^T op(a)^T instead.
  const Tensor* first = &a;
  const Tensor* second = &bm;
  Tensor c_view;
  if (auto layout = blas_layout(c.shape())) {
    c_view = c.as_strided(*layout);
  } else if (auto layout_t = blas_layout(c.shape().transpose(0, 1))) {
    c_view = c.as_strided(*layout_t);
    std::swap(first, second);
    std::swap(trans_a, trans_b);
    trans_a = !trans_a;
    trans_b = !trans_b;
  } else {
    throw Error(ErrorCode::invalid_argument, std::string(name) + ": 'c' (shape " + c.shape().dims_string() +
                                                 ", strides " + c.shape().strides_string() + ") has no unit stride");
  }
  // op(x)^T of a transposed view: flipping the flag and the view are the same.
  const Tensor a_view = normalise(*first, trans_a, "a");
  const Tensor b_view = normalise(*second, trans_b, "b");

  detail::OpLaunch launch(b, op);
  launch.read(a_view).read(b_view);
  if (beta == 0) {
    launch.write(c_view);
  } else {
    launch.read_write(c_view);
  }
  launch.integer(trans_a).integer(trans_b).scalar(alpha).scalar(beta).launch();
}

}  // namespace xylem::blas

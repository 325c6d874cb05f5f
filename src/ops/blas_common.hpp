#pragma once
// What the blas wrappers (blas.cpp, blas_extra.cpp) share: vector and
// result checks, and the matrix views BLAS libraries take as they are.
#include <algorithm>
#include <optional>
#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"
#include "xylem/tensor.hpp"

namespace xylem::blas::common {

inline void require_vector(plugin::OpId op, const char* arg, const Tensor& t) {
  ops::require_real(plugin::op_name(op), arg, t);
  ops::require_rank(plugin::op_name(op), arg, t, 1);
}

inline void require_result(plugin::OpId op, const Tensor& result, DType dtype) {
  const auto name = plugin::op_name(op);
  ops::require_defined(name, "result", result);
  if (result.numel() != 1)
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": 'result' has shape " +
                                               result.layout().dims_string() + "; it must hold one element");
  if (result.dtype() != dtype)
    throw Error(ErrorCode::dtype_mismatch, std::string(name) + ": 'result' is " +
                                               std::string(xylem::name(result.dtype())) + "; expected " +
                                               std::string(xylem::name(dtype)));
}

// BLAS takes an increment of 0 to mean "no elements" (OpenBLAS returns 0
// for asum and nrm2): an input broadcast along its one axis is made dense.
inline Tensor blas_input(const Backend& b, const Tensor& x) {
  return x.numel() > 1 && x.layout().strides()[0] == 0 ? contiguous(b, x) : x;
}

// A matrix view BLAS can take as is: unit column stride, row stride at
// least the row length. Strides of size-1 dimensions do not matter, so they
// are set to what BLAS expects.
inline std::optional<Layout> blas_layout(const Layout& s) {
  const std::int64_t rows = s.dims()[0], cols = s.dims()[1];
  const std::int64_t row_stride = rows <= 1 ? std::max<std::int64_t>(cols, 1) : s.strides()[0];
  const std::int64_t col_stride = cols <= 1 ? 1 : s.strides()[1];
  if (col_stride != 1 || row_stride < std::max<std::int64_t>(cols, 1)) return std::nullopt;
  const std::int64_t strides[] = {row_stride, 1};
  return Layout::strided(s.dims(), strides, s.offset());
}

// The view and transpose flag the kernel gets for one input matrix; a view
// with no unit stride (every other column, say) is copied dense first.
inline Tensor normalise(const Backend& b, const Tensor& m, bool& transposed) {
  if (auto layout = blas_layout(m.layout())) return m.as_strided(*layout);
  if (auto layout = blas_layout(m.layout().transpose(0, 1))) {
    transposed = !transposed;
    return m.as_strided(*layout);
  }
  return contiguous(b, m);
}

// c = beta c, for products with nothing to multiply, any float dtype.
inline void scale_in_place(const Backend& b, double beta, Tensor& c) {
  if (beta == 0) {
    fill(b, c, 0.0);
  } else if (beta != 1) {
    mul(b, c, full(b, Layout{}, c.dtype(), beta), c);
  }
}

}  // namespace xylem::blas::common

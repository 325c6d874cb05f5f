#pragma once
// Argument checks shared by the op wrappers. Each throws xylem::Error with
// a message that names the op, the argument and its shape and dtype.
#include <string>
#include <string_view>
#include <type_traits>

#include "xylem/error.hpp"
#include "xylem/tensor.hpp"

namespace xylem::ops {

inline std::string describe(const Tensor& t) {
  return t.layout().dims_string() + " " + std::string(name(t.dtype()));
}

inline void require_defined(std::string_view op, std::string_view arg, const Tensor& t) {
  if (!t.defined())
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": argument '" + std::string(arg) + "' is an empty Tensor handle");
}

// A new tensor with t's dims and dtype: the output of a returning form.
inline Tensor new_like(std::string_view op, std::string_view arg, const Tensor& t) {
  require_defined(op, arg, t);
  return Tensor(Layout(t.layout().dims()), t.dtype());
}

// f32 or f64: the dtypes every framework implements for math ops.
inline void require_real(std::string_view op, std::string_view arg, const Tensor& t) {
  require_defined(op, arg, t);
  if (t.dtype() != DType::f32 && t.dtype() != DType::f64)
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               describe(t) + "; expected f32 or f64");
}

// f16, bf16, f32 or f64: the dtypes of elementwise math, reductions and nn.
inline void require_float(std::string_view op, std::string_view arg, const Tensor& t) {
  require_defined(op, arg, t);
  if (!is_floating(t.dtype()))
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               describe(t) + "; expected a float dtype (f16, bf16, f32 or f64)");
}

// i32 or i64: the integer dtypes of arithmetic (add, sub, mul, maximum,
// minimum, neg, abs), comparisons, where and sum/max/min/argmax/argmin.
[[nodiscard]] constexpr bool is_math_integer(DType d) noexcept { return d == DType::i32 || d == DType::i64; }

// A float dtype, or i32/i64 (is_math_integer).
inline void require_arithmetic(std::string_view op, std::string_view arg, const Tensor& t) {
  require_defined(op, arg, t);
  if (!is_floating(t.dtype()) && !is_math_integer(t.dtype()))
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               describe(t) + "; expected f16, bf16, f32, f64, i32 or i64");
}

// An integer `t` given to an op that has no integer form (`has_form`
// false): integer tensors take only `takes`.
inline void require_integer_form(bool has_form, std::string_view op, std::string_view arg, const Tensor& t,
                                 std::string_view takes) {
  if (has_form || !is_math_integer(t.dtype())) return;
  throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " + describe(t) +
                                             "; " + std::string(op) + " takes float dtypes only (integer tensors take " +
                                             std::string(takes) + "; cast to a float dtype first)");
}

inline void require_dtype(std::string_view op, std::string_view arg, const Tensor& t, DType dtype) {
  require_defined(op, arg, t);
  if (t.dtype() != dtype)
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               describe(t) + "; expected " + std::string(name(dtype)));
}

// An output's shape must be exactly `dims`.
inline void require_dims(std::string_view op, std::string_view arg, const Tensor& t, const Layout& dims) {
  require_defined(op, arg, t);
  if (!t.layout().same_dims(dims))
    throw Error(ErrorCode::shape_mismatch, std::string(op) + ": '" + std::string(arg) + "' has shape " +
                                               t.layout().dims_string() + "; expected " + dims.dims_string());
}

// `what` says what is wrong: a string, or a function returning one, called
// only on failure, so that a check on a hot path (every optimizer step)
// builds no message when it passes.
template <class What>
void require_argument(bool ok, std::string_view op, What&& what) {
  if (ok) [[likely]]
    return;
  if constexpr (std::is_invocable_v<What>) {
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": " + std::string(what()));
  } else {
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": " + std::string(what));
  }
}

// gemm also takes f16 and bf16 storage (accumulating in f32).
inline void require_gemm_dtype(std::string_view op, std::string_view arg, const Tensor& t) {
  require_defined(op, arg, t);
  const DType d = t.dtype();
  if (d != DType::f32 && d != DType::f64 && d != DType::f16 && d != DType::bf16)
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' is " +
                                               describe(t) + "; expected f32, f64, f16 or bf16");
}

inline void require_same_dtype(std::string_view op, std::string_view a_name, const Tensor& a, std::string_view b_name,
                               const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw Error(ErrorCode::dtype_mismatch, std::string(op) + ": '" + std::string(b_name) + "' is " + describe(b) +
                                               " but '" + std::string(a_name) + "' is " + describe(a) +
                                               "; they must have the same dtype");
}

inline void require_same_dims(std::string_view op, std::string_view a_name, const Tensor& a, std::string_view b_name,
                              const Tensor& b) {
  if (!a.layout().same_dims(b.layout()))
    throw Error(ErrorCode::shape_mismatch, std::string(op) + ": '" + std::string(b_name) + "' has shape " +
                                               b.layout().dims_string() + " but '" + std::string(a_name) +
                                               "' has shape " + a.layout().dims_string() + "; they must match");
}

// `arg` (an output or a gradient) must be a tensor of `a_name`'s dtype and
// dims.
inline void require_like(std::string_view op, std::string_view a_name, const Tensor& a, std::string_view arg,
                         const Tensor& t) {
  require_defined(op, arg, t);
  require_same_dtype(op, a_name, a, arg, t);
  require_same_dims(op, a_name, a, arg, t);
}

inline void require_rank(std::string_view op, std::string_view arg, const Tensor& t, int rank) {
  if (t.rank() != rank)
    throw Error(ErrorCode::shape_mismatch, std::string(op) + ": argument '" + std::string(arg) + "' has shape " +
                                               t.layout().dims_string() + "; expected rank " + std::to_string(rank));
}

// axis in [-rank, rank), negative counting from the end, as [0, rank).
inline int normalise_axis(std::string_view op, const Tensor& x, int axis) {
  const int rank = x.rank();
  const int a = axis < 0 ? axis + rank : axis;
  require_argument(a >= 0 && a < rank, op, [&] {
    return "axis " + std::to_string(axis) + " is out of range for shape " + x.layout().dims_string();
  });
  return a;
}

}  // namespace xylem::ops

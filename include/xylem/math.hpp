#pragma once
/// @file
/// xylem math: elementwise operations with broadcasting, casts and
/// reductions, on any backend.
///
/// Dtypes: the float dtypes f16, bf16, f32 and f64 (f16 and bf16 are storage
/// types: the math runs in f32 and results are rounded to the storage type).
/// cast takes all eight dtypes. i32 and i64 take add, sub, mul (wrapping as
/// two's complement), maximum, minimum, the comparisons, neg, abs, where and
/// sum (an i64 result), max, min, argmax, argmin; booleans take sum (the
/// count of trues, i64). Any other op on them raises dtype_mismatch.
///
/// Each op has two forms: one writing into `out` (which must have the result's
/// shape and dtype; it may be an input, or a view), and one returning a new
/// tensor on the backend. Broadcasting follows NumPy: shapes are aligned at
/// their last axis, and an axis of size 1 (or a missing one) stretches to the
/// other operand's size.
///
/// Every op checks its arguments, enqueues its work on the backend's device
/// and returns without waiting; read the result (Tensor::read, to_vector) or
/// call Backend::synchronize() to wait. Errors are thrown before any tensor
/// changes: dtype_mismatch (an input of another dtype, inputs of different
/// dtypes, or `out` not of the result's dtype), shape_mismatch (shapes that do
/// not broadcast, or `out` not of the result's shape), invalid_argument (an
/// empty Tensor handle, a bad axis or parameter), uninitialized_read (an input
/// never written), unsupported (the device lacks the op for the dtype, with
/// Fallback::raise), out_of_memory.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

// ---- unary: y = f(x), same shape and dtype --------------------------------
// Each XYLEM_UNARY_DECL(fn) declares both forms of fn: its documentation
// (one member group) describes the pair.
#define XYLEM_UNARY_DECL(fn)                                 \
  void fn(const Backend& b, const Tensor& x, Tensor& out);   \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x);
/// e^x, elementwise, into `out` (x's shape and dtype) or a new tensor.
/// @{
XYLEM_UNARY_DECL(exp)
/// @}
/// The natural logarithm ln x, elementwise (NaN below 0, -Inf at 0), into
/// `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(log)
/// @}
/// sqrt(x), elementwise (NaN below 0), into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(sqrt)
/// @}
/// 1/sqrt(x), elementwise (Inf at 0), into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(rsqrt)
/// @}
/// |x|, elementwise, into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(abs)
/// @}
/// -x, elementwise, into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(neg)
/// @}
/// sin x (x in radians), elementwise, into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(sin)
/// @}
/// cos x (x in radians), elementwise, into `out` or a new tensor.
/// @{
XYLEM_UNARY_DECL(cos)
/// @}
#undef XYLEM_UNARY_DECL

/// min(max(x, low), high); NaN stays NaN. Into `out` (x's shape and dtype) or
/// a new tensor; low > high raises invalid_argument.
/// @{
void clamp(const Backend& b, const Tensor& x, double low, double high, Tensor& out);
[[nodiscard]] Tensor clamp(const Backend& b, const Tensor& x, double low, double high);
/// @}

// ---- binary, broadcasting: the result has the broadcast shape -------------
// maximum and minimum propagate NaN. pow(a, b) follows std::pow.
// Each XYLEM_BINARY_DECL(fn) declares both forms of fn, documented together.
#define XYLEM_BINARY_DECL(fn)                                               \
  void fn(const Backend& b, const Tensor& x, const Tensor& y, Tensor& out); \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x, const Tensor& y);
/// x + y, broadcasting; x and y of one float dtype, the result of that dtype
/// and the broadcast shape, into `out` or a new tensor.
/// @{
XYLEM_BINARY_DECL(add)
/// @}
/// x - y, broadcasting (as add).
/// @{
XYLEM_BINARY_DECL(sub)
/// @}
/// x * y, broadcasting (as add).
/// @{
XYLEM_BINARY_DECL(mul)
/// @}
/// x / y, broadcasting (as add); IEEE division (x/0 is +-Inf or NaN).
/// @{
XYLEM_BINARY_DECL(div)
/// @}
/// x^y, broadcasting (as add); follows std::pow (NaN for a negative x and a
/// non-integer y).
/// @{
XYLEM_BINARY_DECL(pow)
/// @}
/// The larger of x and y, broadcasting (as add); a NaN in either gives NaN.
/// @{
XYLEM_BINARY_DECL(maximum)
/// @}
/// The smaller of x and y, broadcasting (as add); a NaN in either gives NaN.
/// @{
XYLEM_BINARY_DECL(minimum)
/// @}
// Comparisons: the result is boolean (NaN compares unequal to everything).
/// x == y, broadcasting: a boolean result of the broadcast shape (x and y of
/// one float dtype; NaN compares unequal to everything), into `out` or a new
/// tensor.
/// @{
XYLEM_BINARY_DECL(eq)
/// @}
/// x != y, broadcasting (as eq; true where either is NaN).
/// @{
XYLEM_BINARY_DECL(ne)
/// @}
/// x < y, broadcasting (as eq).
/// @{
XYLEM_BINARY_DECL(lt)
/// @}
/// x <= y, broadcasting (as eq).
/// @{
XYLEM_BINARY_DECL(le)
/// @}
/// x > y, broadcasting (as eq).
/// @{
XYLEM_BINARY_DECL(gt)
/// @}
/// x >= y, broadcasting (as eq).
/// @{
XYLEM_BINARY_DECL(ge)
/// @}
#undef XYLEM_BINARY_DECL

/// out = cond ? x : y, broadcasting all three; cond is boolean. x and y of one
/// float dtype, the result of that dtype and the shape the three broadcast
/// to; into `out` or a new tensor.
/// @{
void where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out);
[[nodiscard]] Tensor where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y);
/// @}

// ---- casts: any dtype to any dtype ----------------------------------------
/// x converted to another dtype: any of the eight to any of the eight.
/// Float to integer truncates toward zero and saturates (NaN -> 0); to
/// boolean is x != 0; narrowing floats round to nearest even.
///
/// The first form writes `out` (x's shape; out's dtype is the target), the
/// second returns a new tensor of dtype `to`. The same dtype copies. A device
/// without one of the two dtypes (fp64, say) raises unsupported.
/// @{
void cast(const Backend& b, const Tensor& x, Tensor& out);  // out's dtype is the target
[[nodiscard]] Tensor cast(const Backend& b, const Tensor& x, DType to);
/// @}

// ---- reductions -----------------------------------------------------------
/// Which axes a reduction (sum, mean, var, max, min, argmax, argmin) reduces.
///
/// Along `axes` (any set, negative counting from the end; empty: all axes).
/// With keepdim the reduced axes stay as size 1, otherwise they are removed.
/// Over an axis of size 0 (NumPy's and PyTorch's rules): a sum is 0, mean and
/// var NaN; max, min, argmax and argmin raise invalid_argument, even where the
/// result has no elements. A result with no elements (a [0, n] tensor reduced
/// along axis 1) is written, so the next op can read it. max and min
/// propagate NaN.
/// argmax/argmin give i64 indices into the reduced axes taken together in
/// row-major order (for one axis: the index along it); the first extreme
/// wins, a NaN counting as the extreme. var divides by n - correction.
/// An axis out of range or given twice raises invalid_argument.
struct Reduction {
  std::vector<int> axes;  ///< empty: every axis
  bool keepdim = false;   ///< keep the reduced axes as size 1
};
// Each XYLEM_REDUCE_DECL(fn) declares both forms of fn, documented together.
#define XYLEM_REDUCE_DECL(fn)                                                   \
  void fn(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out);  \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x, const Reduction& r = {});
/// The sum of x along r's axes (0 over nothing), of x's float dtype and
/// reduced_shape(x, r), into `out` or a new tensor. Accumulates in f32 for
/// f16/bf16/f32 and in f64 for f64.
/// @{
XYLEM_REDUCE_DECL(sum)
/// @}
/// The mean along r's axes (NaN over nothing), as sum.
/// @{
XYLEM_REDUCE_DECL(mean)
/// @}
/// The maximum along r's axes (NaN if any is NaN), as sum; an axis of size 0
/// raises invalid_argument.
/// @{
XYLEM_REDUCE_DECL(max)
/// @}
/// The minimum along r's axes (NaN if any is NaN), as sum; an axis of size 0
/// raises invalid_argument.
/// @{
XYLEM_REDUCE_DECL(min)
/// @}
/// The i64 index of the first maximum along r's axes (a NaN counts as the
/// maximum), of shape reduced_shape(x, r); an axis of size 0 raises
/// invalid_argument.
/// @{
XYLEM_REDUCE_DECL(argmax)
/// @}
/// The i64 index of the first minimum along r's axes (a NaN counts as the
/// minimum), as argmax.
/// @{
XYLEM_REDUCE_DECL(argmin)
/// @}
#undef XYLEM_REDUCE_DECL
/// The variance along r's axes: sum((x - mean)^2) / (n - correction), n the
/// number of values reduced (correction 1: unbiased, 0: biased; n <=
/// correction gives Inf or NaN). As sum otherwise (NaN over nothing).
/// @{
void var(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out, int correction = 1);
[[nodiscard]] Tensor var(const Backend& b, const Tensor& x, const Reduction& r = {}, int correction = 1);
/// @}

/// The shape of a reduction's result; throws invalid_argument for an axis out
/// of range or given twice. Computes on the host, enqueues nothing.
[[nodiscard]] Layout reduced_shape(const Layout& x, const Reduction& r);
/// The shape a and b broadcast to (NumPy's rules); throws shape_mismatch where
/// they do not. Computes on the host, enqueues nothing.
[[nodiscard]] Layout broadcast_shape(const Layout& a, const Layout& b);

}  // namespace xylem

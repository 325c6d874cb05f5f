#pragma once
// xylem math: elementwise operations with broadcasting, casts and
// reductions, on any backend.
//
// Dtypes: the float dtypes f16, bf16, f32 and f64 (f16 and bf16 are storage
// types: the math runs in f32 and results are rounded to the storage type).
// cast takes all eight dtypes.
//
// Each op has two forms: one writing into `out` (which must have the result's
// shape and dtype; it may be an input, or a view), and one returning a new
// tensor on the backend. Broadcasting follows NumPy: shapes are aligned at
// their last axis, and an axis of size 1 (or a missing one) stretches to the
// other operand's size.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

// ---- unary: y = f(x), same shape and dtype --------------------------------
#define XYLEM_UNARY_DECL(fn)                                 \
  void fn(const Backend& b, const Tensor& x, Tensor& out);   \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x);
XYLEM_UNARY_DECL(exp)
XYLEM_UNARY_DECL(log)
XYLEM_UNARY_DECL(sqrt)
XYLEM_UNARY_DECL(rsqrt)
XYLEM_UNARY_DECL(abs)
XYLEM_UNARY_DECL(neg)
XYLEM_UNARY_DECL(sin)
XYLEM_UNARY_DECL(cos)
#undef XYLEM_UNARY_DECL

// min(max(x, low), high); NaN stays NaN.
void clamp(const Backend& b, const Tensor& x, double low, double high, Tensor& out);
[[nodiscard]] Tensor clamp(const Backend& b, const Tensor& x, double low, double high);

// ---- binary, broadcasting: the result has the broadcast shape -------------
// maximum and minimum propagate NaN. pow(a, b) follows std::pow.
#define XYLEM_BINARY_DECL(fn)                                               \
  void fn(const Backend& b, const Tensor& x, const Tensor& y, Tensor& out); \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x, const Tensor& y);
XYLEM_BINARY_DECL(add)
XYLEM_BINARY_DECL(sub)
XYLEM_BINARY_DECL(mul)
XYLEM_BINARY_DECL(div)
XYLEM_BINARY_DECL(pow)
XYLEM_BINARY_DECL(maximum)
XYLEM_BINARY_DECL(minimum)
// Comparisons: the result is boolean (NaN compares unequal to everything).
XYLEM_BINARY_DECL(eq)
XYLEM_BINARY_DECL(ne)
XYLEM_BINARY_DECL(lt)
XYLEM_BINARY_DECL(le)
XYLEM_BINARY_DECL(gt)
XYLEM_BINARY_DECL(ge)
#undef XYLEM_BINARY_DECL

// out = cond ? x : y, broadcasting all three; cond is boolean.
void where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out);
[[nodiscard]] Tensor where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y);

// ---- casts: any dtype to any dtype ----------------------------------------
// Float to integer truncates toward zero and saturates (NaN -> 0); to
// boolean is x != 0; narrowing floats round to nearest even.
void cast(const Backend& b, const Tensor& x, Tensor& out);  // out's dtype is the target
[[nodiscard]] Tensor cast(const Backend& b, const Tensor& x, DType to);

// ---- reductions -----------------------------------------------------------
// Along `axes` (any set, negative counting from the end; empty: all axes).
// With keepdim the reduced axes stay as size 1, otherwise they are removed.
// Over an axis of size 0 (NumPy's and PyTorch's rules): a sum is 0, mean and
// var NaN; max, min, argmax and argmin raise invalid_argument, even where the
// result has no elements. A result with no elements (a [0, n] tensor reduced
// along axis 1) is written, so the next op can read it. max and min
// propagate NaN.
// argmax/argmin give i64 indices into the reduced axes taken together in
// row-major order (for one axis: the index along it); the first extreme
// wins, a NaN counting as the extreme. var divides by n - correction.
struct Reduction {
  std::vector<int> axes;  // empty: every axis
  bool keepdim = false;
};
#define XYLEM_REDUCE_DECL(fn)                                                   \
  void fn(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out);  \
  [[nodiscard]] Tensor fn(const Backend& b, const Tensor& x, const Reduction& r = {});
XYLEM_REDUCE_DECL(sum)
XYLEM_REDUCE_DECL(mean)
XYLEM_REDUCE_DECL(max)
XYLEM_REDUCE_DECL(min)
XYLEM_REDUCE_DECL(argmax)
XYLEM_REDUCE_DECL(argmin)
#undef XYLEM_REDUCE_DECL
void var(const Backend& b, const Tensor& x, const Reduction& r, Tensor& out, int correction = 1);
[[nodiscard]] Tensor var(const Backend& b, const Tensor& x, const Reduction& r = {}, int correction = 1);

// The shape of a reduction's result, and of a broadcast.
[[nodiscard]] Layout reduced_shape(const Layout& x, const Reduction& r);
[[nodiscard]] Layout broadcast_shape(const Layout& a, const Layout& b);

}  // namespace xylem

// xylem math wrappers: elementwise ops with broadcasting, comparisons,
// where and casts. Each checks its arguments, stretches broadcast inputs to
// the result's shape (stride 0) and launches one kernel op with its code.
#include "xylem/math.hpp"

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/layout.hpp"
#include "ops/unary.hpp"
#include "xylem/plugin/math.h"

namespace xylem {
namespace {

using plugin::OpId;

void unary(const Backend& b, std::string_view name, int code, const Tensor& x, Tensor& out, double p0 = 0,
           double p1 = 0) {
  ops::launch_unary(b, name, code, x, "out", out, p0, p1);
}

// a (op) b into out, broadcasting; `op` is math::binary or math::compare.
void binary(const Backend& b, std::string_view name, OpId op, int code, const Tensor& x, const Tensor& y,
            Tensor& out) {
  ops::require_arithmetic(name, "x", x);
  ops::require_arithmetic(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  // Integer tensors: every comparison; of the arithmetic, what math.h gives
  // an integer formula (wrapping add, sub, mul; maximum, minimum).
  ops::require_integer_form(op == OpId::math_compare || xy_int_binary_code(code) != 0, name, "x", x,
                            "add, sub, mul, maximum, minimum and the comparisons");
  const Layout dims = ops::broadcast(name, x.layout(), y.layout());
  ops::require_dims(name, "out", out, dims);
  ops::require_dtype(name, "out", out, op == OpId::math_compare ? DType::boolean : x.dtype());
  const Tensor a = ops::expand(x, dims);
  const Tensor bm = ops::expand(y, dims);
  if (op == OpId::math_compare) {
    detail::launch(b, detail::args::math_compare<detail::TensorRef>{.a = a, .b = bm, .y = out, .code = code}, name);
  } else {
    detail::launch(b, detail::args::math_binary<detail::TensorRef>{.a = a, .b = bm, .y = out, .code = code}, name);
  }
}

Tensor binary_result(std::string_view name, OpId op, const Tensor& x, const Tensor& y) {
  ops::require_defined(name, "x", x);
  ops::require_defined(name, "y", y);
  return Tensor(ops::broadcast(name, x.layout(), y.layout()), op == OpId::math_compare ? DType::boolean : x.dtype());
}

}  // namespace

#define XYLEM_UNARY_DEF(fn, code)                                                                      \
  void fn(const Backend& b, const Tensor& x, Tensor& out) { unary(b, #fn, code, x, out); }           \
  Tensor fn(const Backend& b, const Tensor& x) {                                                      \
    ops::require_arithmetic(#fn, "x", x);                                                             \
    Tensor out(Layout(x.layout().dims()), x.dtype());                                                   \
    fn(b, x, out);                                                                                    \
    return out;                                                                                       \
  }
XYLEM_UNARY_DEF(exp, XY_UN_EXP)
XYLEM_UNARY_DEF(log, XY_UN_LOG)
XYLEM_UNARY_DEF(sqrt, XY_UN_SQRT)
XYLEM_UNARY_DEF(rsqrt, XY_UN_RSQRT)
XYLEM_UNARY_DEF(abs, XY_UN_ABS)
XYLEM_UNARY_DEF(neg, XY_UN_NEG)
XYLEM_UNARY_DEF(sin, XY_UN_SIN)
XYLEM_UNARY_DEF(cos, XY_UN_COS)
#undef XYLEM_UNARY_DEF

void clamp(const Backend& b, const Tensor& x, double low, double high, Tensor& out) {
  ops::require_argument(!(low > high), "clamp",
                        [&] { return "low " + std::to_string(low) + " > high " + std::to_string(high); });
  unary(b, "clamp", XY_UN_CLAMP, x, out, low, high);
}
Tensor clamp(const Backend& b, const Tensor& x, double low, double high) {
  ops::require_float("clamp", "x", x);
  Tensor out(Layout(x.layout().dims()), x.dtype());
  clamp(b, x, low, high, out);
  return out;
}

#define XYLEM_BINARY_DEF(fn, op, code)                                                                    \
  void fn(const Backend& b, const Tensor& x, const Tensor& y, Tensor& out) {                              \
    binary(b, #fn, op, code, x, y, out);                                                                  \
  }                                                                                                       \
  Tensor fn(const Backend& b, const Tensor& x, const Tensor& y) {                                         \
    Tensor out = binary_result(#fn, op, x, y);                                                            \
    fn(b, x, y, out);                                                                                     \
    return out;                                                                                           \
  }
XYLEM_BINARY_DEF(add, OpId::math_binary, XY_BIN_ADD)
XYLEM_BINARY_DEF(sub, OpId::math_binary, XY_BIN_SUB)
XYLEM_BINARY_DEF(mul, OpId::math_binary, XY_BIN_MUL)
XYLEM_BINARY_DEF(div, OpId::math_binary, XY_BIN_DIV)
XYLEM_BINARY_DEF(pow, OpId::math_binary, XY_BIN_POW)
XYLEM_BINARY_DEF(maximum, OpId::math_binary, XY_BIN_MAXIMUM)
XYLEM_BINARY_DEF(minimum, OpId::math_binary, XY_BIN_MINIMUM)
XYLEM_BINARY_DEF(eq, OpId::math_compare, XY_CMP_EQ)
XYLEM_BINARY_DEF(ne, OpId::math_compare, XY_CMP_NE)
XYLEM_BINARY_DEF(lt, OpId::math_compare, XY_CMP_LT)
XYLEM_BINARY_DEF(le, OpId::math_compare, XY_CMP_LE)
XYLEM_BINARY_DEF(gt, OpId::math_compare, XY_CMP_GT)
XYLEM_BINARY_DEF(ge, OpId::math_compare, XY_CMP_GE)
#undef XYLEM_BINARY_DEF

void where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  constexpr std::string_view name = "where";
  ops::require_dtype(name, "cond", cond, DType::boolean);
  ops::require_arithmetic(name, "x", x);
  ops::require_arithmetic(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  const Layout dims = ops::broadcast(name, ops::broadcast(name, cond.layout(), x.layout()), y.layout());
  ops::require_dims(name, "out", out, dims);
  ops::require_dtype(name, "out", out, x.dtype());
  detail::launch(b,
                 detail::args::math_where<Tensor>{
                     .a = ops::expand(x, dims), .b = ops::expand(y, dims), .cond = ops::expand(cond, dims), .y = out},
                 name);
}
Tensor where(const Backend& b, const Tensor& cond, const Tensor& x, const Tensor& y) {
  ops::require_defined("where", "cond", cond);
  ops::require_arithmetic("where", "x", x);
  ops::require_defined("where", "y", y);
  Tensor out(ops::broadcast("where", ops::broadcast("where", cond.layout(), x.layout()), y.layout()), x.dtype());
  where(b, cond, x, y, out);
  return out;
}

void cast(const Backend& b, const Tensor& x, Tensor& out) {
  ops::require_defined("cast", "x", x);
  ops::require_defined("cast", "out", out);
  ops::require_same_dims("cast", "x", x, "out", out);
  if (x.dtype() == out.dtype()) {
    ops::copy_into(b, x, out);
    return;
  }
  detail::launch(b, detail::args::math_cast<Tensor>{.x = x, .y = out}, "cast");
}
Tensor cast(const Backend& b, const Tensor& x, DType to) {
  ops::require_defined("cast", "x", x);
  Tensor out(Layout(x.layout().dims()), to);
  cast(b, x, out);
  return out;
}

Layout broadcast_shape(const Layout& a, const Layout& b) { return ops::broadcast("broadcast_shape", a, b); }

}  // namespace xylem

#pragma once
// One elementwise unary op: out = f(x) through math::unary with its code
// (math.h). Shared by xylem math (exp, clamp, ...) and the nn activations.
#include <string_view>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/plugin/math.h"

namespace xylem::ops {

inline void launch_unary(const Backend& b, std::string_view name, int code, const Tensor& x, std::string_view out_name,
                         Tensor& out, double p0 = 0, double p1 = 0) {
  // Integer tensors take the codes with an integer formula (math.h): neg and abs.
  require_arithmetic(name, "x", x);
  require_integer_form(xy_int_unary_code(code) != 0, name, "x", x, "neg and abs");
  require_defined(name, out_name, out);
  require_same_dtype(name, "x", x, out_name, out);
  require_same_dims(name, "x", x, out_name, out);
  detail::launch(
      b, detail::args::math_unary<detail::TensorRef>{.x = x, .y = out, .code = code, .param0 = p0, .param1 = p1}, name);
}

}  // namespace xylem::ops

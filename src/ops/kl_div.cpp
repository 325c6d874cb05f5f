// xylem::nn::kl_div and its gradient: the pointwise divergence is one
// math::binary pass (XY_BIN_KL_DIV, math.h), then xylem's reductions; the
// gradient with respect to the input is -target times a constant.
#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"
#include "xylem/plugin/math.h"

namespace xylem::nn {
namespace {

void require_pair(std::string_view name, const Tensor& input, const Tensor& target) {
  ops::require_float(name, "input", input);
  ops::require_like(name, "input", input, "target", target);
}

// What the summed values are divided by: 1 for sum and none (none's
// gradient is that of the sum), the count for mean, axis 0 for batchmean.
double divisor(const Tensor& input, LossReduction r) {
  switch (r) {
    case LossReduction::mean: return double(input.numel());
    case LossReduction::batchmean: return input.rank() > 0 ? double(input.layout().dims()[0]) : double(input.numel());
    case LossReduction::none:
    case LossReduction::sum: break;
  }
  return 1.0;
}

void require_reduction(std::string_view name, LossReduction r) {
  ops::require_argument(r == LossReduction::none || r == LossReduction::mean || r == LossReduction::sum ||
                            r == LossReduction::batchmean,
                        name, "unknown reduction");
}

}  // namespace

Tensor kl_div(const Backend& b, const Tensor& input, const Tensor& target, LossReduction r) {
  constexpr std::string_view name = "nn::kl_div";
  require_pair(name, input, target);
  require_reduction(name, r);
  Tensor pointwise = ops::new_like(name, "input", input);
  if (input.numel() == 0) {
    ops::fill_output(b, name, pointwise);
  } else {
    detail::launch(b,
                   detail::args::math_binary<Tensor>{.a = input, .b = target, .y = pointwise, .code = XY_BIN_KL_DIV},
                   name);
  }
  switch (r) {
    case LossReduction::none: return pointwise;
    case LossReduction::mean: return mean(b, pointwise);
    case LossReduction::sum: return sum(b, pointwise);
    case LossReduction::batchmean: break;
  }
  // 0/0 = NaN for an empty batch, as the mean over nothing.
  return mul(b, sum(b, pointwise), full(b, Layout{}, input.dtype(), 1.0 / divisor(input, r)));
}

void kl_div_grad(const Backend& b, const Tensor& input, const Tensor& target, Tensor& dx, LossReduction r,
                 double dloss) {
  constexpr std::string_view name = "nn::kl_div_grad";
  require_pair(name, input, target);
  require_reduction(name, r);
  ops::require_like(name, "input", input, "dx", dx);
  if (input.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  mul(b, target, full(b, Layout{}, input.dtype(), -dloss / divisor(input, r)), dx);
}

Tensor kl_div_grad(const Backend& b, const Tensor& input, const Tensor& target, LossReduction r, double dloss) {
  Tensor dx = ops::new_like("nn::kl_div_grad", "input", input);
  kl_div_grad(b, input, target, dx, r, dloss);
  return dx;
}

}  // namespace xylem::nn

// Linear: y = x w^T + bias over the last axis (nn::linear and its gradient).
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {

Linear::Linear(const Backend& b, Generator& gen, std::int64_t in, std::int64_t out, bool with_bias,
               const ParameterOptions& options)
    : in_(in), out_(out) {
  weight = {"weight", Tensor(Layout{out, in}, options.dtype), {}};
  init_weight(b, weight.value, options.init, gen);
  if (with_bias) {
    bias = {"bias", Tensor(Layout{out}, options.dtype), {}};
    init_bias(b, this->bias.value, in, gen);
  }
}

std::string Linear::describe() const { return "Linear(" + std::to_string(in_) + ", " + std::to_string(out_) + ")"; }

std::vector<Parameter*> Linear::parameters() {
  if (bias.value.defined()) return {&weight, &bias};
  return {&weight};
}

Layout Linear::output_shape(const Layout& x) const {
  if (x.rank() < 1 || x.dim(-1) != in_) bad_input(x, "[..., " + std::to_string(in_) + "]");
  std::vector<std::int64_t> dims(x.dims().begin(), x.dims().end());
  dims.back() = out_;
  return Layout(std::span<const std::int64_t>(dims));
}

Tensor Linear::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  Tensor y = nn::linear(b, x, weight.value, bias.value);
  x_ = x;
  y_shape_ = y_shape;
  return y;
}

Tensor Linear::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, y_shape_);
  nn::LinearGrads g = nn::linear_grad(b, x_, weight.value, dy);
  accumulate(b, weight, g.dw);
  if (bias.value.defined()) accumulate(b, bias, g.dbias);
  x_ = Tensor{};
  return g.dx;
}

}  // namespace xylem::layers

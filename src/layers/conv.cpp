// Conv2d: nn::conv2d plus a per-channel bias, and their gradients.
#include <string>

#include "layers/window.hpp"
#include "xylem/layers.hpp"
#include "xylem/math.hpp"

namespace xylem::layers {

Conv2d::Conv2d(const Backend& b, Generator& gen, std::int64_t in_ch, std::int64_t out_ch, int kernel, int stride,
               int padding, bool with_bias, const ParameterOptions& options)
    : in_ch_(in_ch), out_ch_(out_ch), kernel_(kernel) {
  require_window("Conv2d", kernel, stride, padding, 1);
  geometry_.stride_h = geometry_.stride_w = stride;
  geometry_.pad_h = geometry_.pad_w = padding;
  weight = {"weight", Tensor(Layout{out_ch, in_ch, kernel, kernel}, options.dtype), {}};
  init_weight(b, weight.value, options.init, gen);
  if (with_bias) {
    bias = {"bias", Tensor(Layout{out_ch}, options.dtype), {}};
    init_bias(b, this->bias.value, in_ch * kernel * kernel, gen);
  }
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(in_ch_) + ", " + std::to_string(out_ch_) + ", kernel=" + std::to_string(kernel_) +
         ", stride=" + std::to_string(geometry_.stride_h) + ", padding=" + std::to_string(geometry_.pad_h) + ")";
}

std::vector<Parameter*> Conv2d::parameters() {
  if (bias.value.defined()) return {&weight, &bias};
  return {&weight};
}

Layout Conv2d::output_shape(const Layout& x) const {
  if (x.rank() != 4 || x.dim(1) != in_ch_) bad_input(x, "[N, " + std::to_string(in_ch_) + ", H, W]");
  try {
    return nn::conv2d_output_shape(x, weight.value.layout(), geometry_);
  } catch (const Error& e) {
    bad_input(x, "an image the kernel fits (" + e.message() + ")");
  }
}

Tensor Conv2d::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  Tensor y = nn::conv2d(b, x, weight.value, geometry_);
  // The bias broadcasts over batch and space as [1, K, 1, 1].
  if (bias.value.defined()) add(b, y, bias.value.reshape({1, out_ch_, 1, 1}), y);
  x_ = x;
  y_shape_ = y_shape;
  return y;
}

Tensor Conv2d::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, y_shape_);
  Tensor dx = nn::conv2d_grad_data(b, dy, weight.value, x_.layout(), geometry_);
  Tensor dw = nn::conv2d_grad_filter(b, x_, dy, weight.value.layout(), geometry_);
  accumulate(b, weight, dw);
  if (bias.value.defined()) accumulate(b, bias, sum(b, dy, {{0, 2, 3}}));
  x_ = Tensor{};
  return dx;
}

}  // namespace xylem::layers

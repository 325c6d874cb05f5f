// Max and average pooling (nn::max_pool2d, nn::avg_pool2d and gradients).
#include <string>

#include "layers/window.hpp"
#include "xylem/layers.hpp"

namespace xylem::layers {

Pool2d::Pool2d(Kind kind, int kernel, int stride, int padding) : kind_(kind) {
  require_window(kind == Kind::max ? "MaxPool2d" : "AvgPool2d", kernel, stride, padding, 0);
  geometry_.kernel_h = geometry_.kernel_w = kernel;
  geometry_.stride_h = geometry_.stride_w = stride;
  geometry_.pad_h = geometry_.pad_w = padding;
}

std::string Pool2d::describe() const {
  return std::string(kind_ == Kind::max ? "MaxPool2d" : "AvgPool2d") + "(kernel=" + std::to_string(geometry_.kernel_h) +
         ", stride=" + std::to_string(geometry_.stride_h) + ", padding=" + std::to_string(geometry_.pad_h) + ")";
}

Layout Pool2d::output_shape(const Layout& x) const {
  if (x.rank() != 4) bad_input(x, "[N, C, H, W]");
  try {
    return nn::pool2d_output_shape(x, geometry_);
  } catch (const Error& e) {
    bad_input(x, "an image the window fits (" + e.message() + ")");
  }
}

Tensor Pool2d::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  Tensor y = kind_ == Kind::max ? nn::max_pool2d(b, x, geometry_) : nn::avg_pool2d(b, x, geometry_);
  x_ = x;
  y_shape_ = y_shape;
  return y;
}

Tensor Pool2d::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, y_shape_);
  Tensor dx = kind_ == Kind::max ? nn::max_pool2d_grad(b, x_, dy, geometry_)
                                 : nn::avg_pool2d_grad(b, dy, x_.layout(), geometry_);
  x_ = Tensor{};
  return dx;
}

}  // namespace xylem::layers

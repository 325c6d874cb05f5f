// Flatten: a view, [N, ...] as [N, rest]; backward views dy in x's shape.
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {

std::string Flatten::describe() const { return "Flatten()"; }

Layout Flatten::output_shape(const Layout& x) const {
  if (x.rank() < 1) bad_input(x, "[N, ...]");
  const std::int64_t n = x.dim(0);
  return Layout{n, n == 0 ? 0 : x.numel() / n};
}

Tensor Flatten::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  // Views of strided data may not reshape without a copy.
  const Tensor c = x.layout().is_contiguous() ? x : contiguous(b, x);
  Tensor y = c.reshape(y_shape.dims());
  x_shape_ = x.layout();
  y_shape_ = y_shape;
  saved_ = true;
  return y;
}

Tensor Flatten::backward(const Backend& b, const Tensor& dy) {
  require_backward(saved_, dy, y_shape_);
  const Tensor c = dy.layout().is_contiguous() ? dy : contiguous(b, dy);
  saved_ = false;
  return c.reshape(x_shape_.dims());
}

}  // namespace xylem::layers

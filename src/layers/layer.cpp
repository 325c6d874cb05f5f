// The Layer base: gradient accumulation and the checks every layer shares.
#include <string>

#include "xylem/layers.hpp"
#include "xylem/math.hpp"

namespace xylem::layers {

void Layer::zero_grad() {
  for (Parameter* p : parameters()) p->grad = Tensor{};
}

void Layer::accumulate(const Backend& b, Parameter& p, const Tensor& g) {
  if (!p.grad.defined()) {
    p.grad = g;  // a fresh tensor the op returned: no one else holds it
    return;
  }
  add(b, p.grad, g, p.grad);
}

Layout Layer::require_input(const Tensor& x) const {
  if (!x.defined()) throw Error(ErrorCode::invalid_argument, describe() + ": input is an empty Tensor handle");
  return output_shape(x.layout());
}

void Layer::require_backward(bool saved, const Tensor& dy, const Layout& y_shape) const {
  if (!saved) throw Error(ErrorCode::invalid_argument, describe() + ": backward without a forward to differentiate");
  if (!dy.defined()) throw Error(ErrorCode::invalid_argument, describe() + ": dy is an empty Tensor handle");
  if (!dy.layout().same_dims(y_shape))
    throw Error(ErrorCode::shape_mismatch, describe() + ": dy is " + dy.layout().dims_string() +
                                               "; the forward's output was " + y_shape.dims_string());
}

void Layer::bad_input(const Layout& x, const std::string& expected) const {
  throw Error(ErrorCode::shape_mismatch, describe() + ": input is " + x.dims_string() + "; expected " + expected);
}

}  // namespace xylem::layers

// Residual: x + f(x). The sum's gradient reaches x twice, directly and
// through f, so backward adds the two.
#include <string>

#include "xylem/layers.hpp"
#include "xylem/math.hpp"

namespace xylem::layers {

Residual::Residual(std::unique_ptr<Layer> inner) : inner_(std::move(inner)) {
  if (!inner_) throw Error(ErrorCode::invalid_argument, "Residual: a null layer");
  inner_->train(training());
}

std::string Residual::describe() const { return "Residual(" + inner_->describe() + ")"; }

Layout Residual::output_shape(const Layout& x) const {
  const Layout y = inner_->output_shape(x);
  if (!y.same_dims(x)) bad_input(x, "an input " + inner_->describe() + " keeps the shape of (it gives " +
                                        y.dims_string() + ")");
  return x;
}

Tensor Residual::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  return add(b, x, inner_->forward(b, x));
}

Tensor Residual::backward(const Backend& b, const Tensor& dy) {
  return add(b, dy, inner_->backward(b, dy));
}

std::vector<Parameter*> Residual::parameters() { return inner_->parameters(); }

std::vector<Buffer*> Residual::buffers() { return inner_->buffers(); }

void Residual::train(bool on) {
  Layer::train(on);
  inner_->train(on);
}

}  // namespace xylem::layers

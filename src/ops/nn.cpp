// xylem::nn wrappers: check arguments, then dispatch.
#include "xylem/nn.hpp"

#include "core/dispatch.hpp"
#include "ops/checks.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

void activation(const Backend& b, OpId op, const Tensor& x, Tensor& y) {
  const auto name = plugin::op_name(op);
  ops::require_real(name, "x", x);
  ops::require_defined(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  ops::require_same_dims(name, "x", x, "y", y);
  detail::OpLaunch(b, op).read(x).write(y).launch();
}

void gradient(const Backend& b, OpId op, const char* in_name, const Tensor& in, const Tensor& dy, Tensor& dx) {
  const auto name = plugin::op_name(op);
  ops::require_real(name, in_name, in);
  ops::require_defined(name, "dy", dy);
  ops::require_defined(name, "dx", dx);
  ops::require_same_dtype(name, in_name, in, "dy", dy);
  ops::require_same_dtype(name, in_name, in, "dx", dx);
  ops::require_same_dims(name, in_name, in, "dy", dy);
  ops::require_same_dims(name, in_name, in, "dx", dx);
  detail::OpLaunch(b, op).read(in).read(dy).write(dx).launch();
}

}  // namespace

void sigmoid(const Backend& b, const Tensor& x, Tensor& y) { activation(b, OpId::nn_sigmoid, x, y); }
void relu(const Backend& b, const Tensor& x, Tensor& y) { activation(b, OpId::nn_relu, x, y); }
void tanh(const Backend& b, const Tensor& x, Tensor& y) { activation(b, OpId::nn_tanh, x, y); }

void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  gradient(b, OpId::nn_sigmoid_grad, "y", y, dy, dx);
}
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  gradient(b, OpId::nn_relu_grad, "x", x, dy, dx);
}
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  gradient(b, OpId::nn_tanh_grad, "y", y, dy, dx);
}

}  // namespace xylem::nn

// xylem::nn wrappers: check arguments, then dispatch.
#include "xylem/nn.hpp"

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/plugin/math.h"

namespace xylem::nn {
namespace {

using plugin::OpId;

void activation(const Backend& b, std::string_view name, int code, const Tensor& x, Tensor& y) {
  ops::require_real(name, "x", x);
  ops::require_defined(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  ops::require_same_dims(name, "x", x, "y", y);
  detail::OpLaunch(b, OpId::math_unary, name).read(x).write(y).integer(code).launch();
}

void gradient(const Backend& b, std::string_view name, int code, const char* in_name, const Tensor& in,
              const Tensor& dy, Tensor& dx) {
  ops::require_real(name, in_name, in);
  ops::require_defined(name, "dy", dy);
  ops::require_defined(name, "dx", dx);
  ops::require_same_dtype(name, in_name, in, "dy", dy);
  ops::require_same_dtype(name, in_name, in, "dx", dx);
  ops::require_same_dims(name, in_name, in, "dy", dy);
  ops::require_same_dims(name, in_name, in, "dx", dx);
  detail::OpLaunch(b, OpId::math_binary, name).read(in).read(dy).write(dx).integer(code).launch();
}

}  // namespace

void sigmoid(const Backend& b, const Tensor& x, Tensor& y) { activation(b, "nn::sigmoid", XY_UN_SIGMOID, x, y); }
void relu(const Backend& b, const Tensor& x, Tensor& y) { activation(b, "nn::relu", XY_UN_RELU, x, y); }
void tanh(const Backend& b, const Tensor& x, Tensor& y) { activation(b, "nn::tanh", XY_UN_TANH, x, y); }

void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  gradient(b, "nn::sigmoid_grad", XY_BIN_SIGMOID_GRAD, "y", y, dy, dx);
}
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  gradient(b, "nn::relu_grad", XY_BIN_RELU_GRAD, "x", x, dy, dx);
}
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  gradient(b, "nn::tanh_grad", XY_BIN_TANH_GRAD, "y", y, dy, dx);
}

}  // namespace xylem::nn

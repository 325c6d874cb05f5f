// xylem::nn activations and their gradients: math::unary / math::binary
// kernels with the activation's code (math.h), named as the public op.
#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/unary.hpp"
#include "xylem/nn.hpp"
#include "xylem/plugin/math.h"

namespace xylem::nn {
namespace {

using plugin::OpId;

void forward(const Backend& b, std::string_view name, int code, const Tensor& x, Tensor& y, double p0 = 0,
             double p1 = 0) {
  ops::launch_unary(b, name, code, x, "y", y, p0, p1);
}

void backward(const Backend& b, std::string_view name, int code, const char* in_name, const Tensor& in,
              const Tensor& dy, Tensor& dx, double p0 = 0, double p1 = 0) {
  ops::require_float(name, in_name, in);
  ops::require_like(name, in_name, in, "dy", dy);
  ops::require_like(name, in_name, in, "dx", dx);
  detail::launch(
      b, detail::args::math_binary<Tensor>{.a = in, .b = dy, .y = dx, .code = code, .param0 = p0, .param1 = p1}, name);
}

void require_softplus(std::string_view name, double beta) {
  ops::require_argument(beta > 0, name, [&] { return "beta must be positive, not " + std::to_string(beta); });
}

}  // namespace

void sigmoid(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::sigmoid", XY_UN_SIGMOID, x, y); }
void relu(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::relu", XY_UN_RELU, x, y); }
void tanh(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::tanh", XY_UN_TANH, x, y); }
void leaky_relu(const Backend& b, const Tensor& x, Tensor& y, double negative_slope) {
  forward(b, "nn::leaky_relu", XY_UN_LEAKY_RELU, x, y, negative_slope);
}
void elu(const Backend& b, const Tensor& x, Tensor& y, double alpha) { forward(b, "nn::elu", XY_UN_ELU, x, y, alpha); }
void gelu(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::gelu", XY_UN_GELU, x, y); }
void softplus(const Backend& b, const Tensor& x, Tensor& y, double beta, double threshold) {
  require_softplus("nn::softplus", beta);
  forward(b, "nn::softplus", XY_UN_SOFTPLUS, x, y, beta, threshold);
}
void silu(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::silu", XY_UN_SILU, x, y); }
void gelu_tanh(const Backend& b, const Tensor& x, Tensor& y) { forward(b, "nn::gelu_tanh", XY_UN_GELU_TANH, x, y); }

void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::sigmoid_grad", XY_BIN_SIGMOID_GRAD, "y", y, dy, dx);
}
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::relu_grad", XY_BIN_RELU_GRAD, "x", x, dy, dx);
}
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::tanh_grad", XY_BIN_TANH_GRAD, "y", y, dy, dx);
}
void leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double negative_slope) {
  backward(b, "nn::leaky_relu_grad", XY_BIN_LEAKY_RELU_GRAD, "x", x, dy, dx, negative_slope);
}
void elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double alpha) {
  backward(b, "nn::elu_grad", XY_BIN_ELU_GRAD, "x", x, dy, dx, alpha);
}
void gelu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::gelu_grad", XY_BIN_GELU_GRAD, "x", x, dy, dx);
}
void softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double beta, double threshold) {
  require_softplus("nn::softplus_grad", beta);
  backward(b, "nn::softplus_grad", XY_BIN_SOFTPLUS_GRAD, "x", x, dy, dx, beta, threshold);
}
void silu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::silu_grad", XY_BIN_SILU_GRAD, "x", x, dy, dx);
}
void gelu_tanh_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
  backward(b, "nn::gelu_tanh_grad", XY_BIN_GELU_TANH_GRAD, "x", x, dy, dx);
}

// The returning forms: a new y (dx) shaped as x, then the writing form.
#define XYLEM_ACTIVATION_RETURNING(fn)                            \
  Tensor fn(const Backend& b, const Tensor& x) {                 \
    Tensor y = ops::new_like("nn::" #fn, "x", x);                \
    fn(b, x, y);                                                 \
    return y;                                                    \
  }
#define XYLEM_GRAD_RETURNING(fn, in)                                        \
  Tensor fn(const Backend& b, const Tensor& in, const Tensor& dy) {        \
    Tensor dx = ops::new_like("nn::" #fn, #in, in);                        \
    fn(b, in, dy, dx);                                                     \
    return dx;                                                             \
  }
XYLEM_ACTIVATION_RETURNING(sigmoid)
XYLEM_ACTIVATION_RETURNING(relu)
XYLEM_ACTIVATION_RETURNING(tanh)
XYLEM_ACTIVATION_RETURNING(gelu)
XYLEM_ACTIVATION_RETURNING(silu)
XYLEM_ACTIVATION_RETURNING(gelu_tanh)
XYLEM_GRAD_RETURNING(sigmoid_grad, y)
XYLEM_GRAD_RETURNING(relu_grad, x)
XYLEM_GRAD_RETURNING(tanh_grad, y)
XYLEM_GRAD_RETURNING(gelu_grad, x)
XYLEM_GRAD_RETURNING(silu_grad, x)
XYLEM_GRAD_RETURNING(gelu_tanh_grad, x)
#undef XYLEM_ACTIVATION_RETURNING
#undef XYLEM_GRAD_RETURNING

Tensor leaky_relu(const Backend& b, const Tensor& x, double negative_slope) {
  Tensor y = ops::new_like("nn::leaky_relu", "x", x);
  leaky_relu(b, x, y, negative_slope);
  return y;
}
Tensor elu(const Backend& b, const Tensor& x, double alpha) {
  Tensor y = ops::new_like("nn::elu", "x", x);
  elu(b, x, y, alpha);
  return y;
}
Tensor softplus(const Backend& b, const Tensor& x, double beta, double threshold) {
  Tensor y = ops::new_like("nn::softplus", "x", x);
  softplus(b, x, y, beta, threshold);
  return y;
}
Tensor leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double negative_slope) {
  Tensor dx = ops::new_like("nn::leaky_relu_grad", "x", x);
  leaky_relu_grad(b, x, dy, dx, negative_slope);
  return dx;
}
Tensor elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double alpha) {
  Tensor dx = ops::new_like("nn::elu_grad", "x", x);
  elu_grad(b, x, dy, dx, alpha);
  return dx;
}
Tensor softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, double beta, double threshold) {
  Tensor dx = ops::new_like("nn::softplus_grad", "x", x);
  softplus_grad(b, x, dy, dx, beta, threshold);
  return dx;
}

}  // namespace xylem::nn

// ReLU, Sigmoid, Tanh, SiLU and GELU, from one table. ReLU's, sigmoid's and
// tanh's gradients take the output, the others' the input: each keeps only
// the one it needs.
//
// ReLU's gradient passes dy where x > 0, which is where relu(x) > 0, so it is
// computed from the output as PyTorch's is. The output is what the next
// layer keeps anyway; the input (a convolution's or linear layer's result)
// is then freed once the activation ran, or never stored at all when
// automatic fusion computes it in registers (bias add and ReLU in one kernel,
// or a gemm's epilogue). VGG-A at batch 64 kept every convolution's output
// twice: about 1.9 GB of f32.
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {
namespace {

using Forward = Tensor (*)(const Backend&, const Tensor&);
using Gradient = Tensor (*)(const Backend&, const Tensor&, const Tensor&);

struct Function {
  const char* name;
  Forward forward;
  Gradient gradient;  // from the saved tensor and dy
  bool keeps_output;  // saves y (else x) for the gradient
};

// In Activation::Kind's order.
constexpr Function kFunctions[] = {
    {"ReLU()", [](const Backend& b, const Tensor& x) { return nn::relu(b, x); },
     [](const Backend& b, const Tensor& y, const Tensor& dy) { return nn::relu_grad(b, y, dy); }, true},
    {"Sigmoid()", [](const Backend& b, const Tensor& x) { return nn::sigmoid(b, x); },
     [](const Backend& b, const Tensor& y, const Tensor& dy) { return nn::sigmoid_grad(b, y, dy); }, true},
    {"Tanh()", [](const Backend& b, const Tensor& x) { return nn::tanh(b, x); },
     [](const Backend& b, const Tensor& y, const Tensor& dy) { return nn::tanh_grad(b, y, dy); }, true},
    {"SiLU()", [](const Backend& b, const Tensor& x) { return nn::silu(b, x); },
     [](const Backend& b, const Tensor& x, const Tensor& dy) { return nn::silu_grad(b, x, dy); }, false},
    {"GELU(approximate='none')", [](const Backend& b, const Tensor& x) { return nn::gelu(b, x); },
     [](const Backend& b, const Tensor& x, const Tensor& dy) { return nn::gelu_grad(b, x, dy); }, false},
    {"GELU(approximate='tanh')", [](const Backend& b, const Tensor& x) { return nn::gelu_tanh(b, x); },
     [](const Backend& b, const Tensor& x, const Tensor& dy) { return nn::gelu_tanh_grad(b, x, dy); }, false},
};

const Function& function(Activation::Kind kind) { return kFunctions[static_cast<int>(kind)]; }

}  // namespace

std::string Activation::describe() const { return function(kind_).name; }

Layout Activation::output_shape(const Layout& x) const { return x; }

Tensor Activation::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  const Function& f = function(kind_);
  Tensor y = f.forward(b, x);
  saved_ = f.keeps_output ? y : x;
  return y;
}

Tensor Activation::backward(const Backend& b, const Tensor& dy) {
  require_backward(saved_.defined(), dy, saved_.layout());
  Tensor dx = function(kind_).gradient(b, saved_, dy);
  saved_ = Tensor{};
  return dx;
}

}  // namespace xylem::layers

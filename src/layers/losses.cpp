// Losses with their gradients, composed from nn's losses and xylem math.
#include "xylem/losses.hpp"

#include <string>

#include "xylem/math.hpp"
#include "xylem/nn.hpp"

namespace xylem::layers {
namespace {

// A one-element constant that broadcasts against anything.
Tensor constant(const Backend& b, DType dtype, double value) { return full(b, Layout{}, dtype, value); }

}  // namespace

Loss cross_entropy(const Backend& b, const Tensor& logits, const Tensor& target, double label_smoothing) {
  const double s = label_smoothing;
  if (!(s >= 0 && s <= 1))
    throw Error(ErrorCode::invalid_argument,
                "layers::cross_entropy: label_smoothing must be in [0, 1], got " + std::to_string(s));
  Loss loss{nn::cross_entropy(b, logits, target), nn::cross_entropy_grad(b, logits, target, 1 - s)};
  if (s == 0) return loss;
  // The uniform part of the target: s mean_{n,c}(-log_softmax(x)), whose
  // gradient is s (softmax(x) - 1/C) / N.
  const DType t = logits.dtype();
  const double n = double(logits.shape()[0]), c = double(logits.shape()[1]);
  const Tensor uniform_part = mul(b, mean(b, nn::log_softmax(b, logits, 1)), constant(b, t, -s));
  mul(b, loss.value, constant(b, t, 1 - s), loss.value);
  add(b, loss.value, uniform_part, loss.value);
  const Tensor spread = sub(b, nn::softmax(b, logits, 1), constant(b, t, 1 / c));
  add(b, loss.grad, mul(b, spread, constant(b, t, s / n)), loss.grad);
  return loss;
}

Loss mse(const Backend& b, const Tensor& x, const Tensor& target) {
  return {nn::mse_loss(b, x, target), nn::mse_loss_grad(b, x, target)};
}

}  // namespace xylem::layers

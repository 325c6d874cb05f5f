#pragma once
/// @file
/// Losses for training with xylem::layers: each returns the loss and its
/// gradient with respect to the prediction, so a training step needs one call
/// before the layers' backward. Both are means over the batch, as PyTorch's
/// defaults; the errors are those of the xylem::nn ops they run.
#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem::layers {

/// A loss and its gradient.
struct Loss {
  Tensor value;  ///< one element, of the prediction's dtype
  Tensor grad;   ///< d value / d prediction, the prediction's shape and dtype
};

/// Cross-entropy of logits [N, C] against class indices target [N] (i64),
/// with PyTorch's label smoothing: the target distribution puts
/// 1 - label_smoothing + label_smoothing / C on the class and
/// label_smoothing / C on every other, so
/// value = (1 - s) mean_n(-log_softmax(x)[n, t_n]) + s
/// mean_{n,c}(-log_softmax(x)[n, c]) and grad = (softmax(x) - target
/// distribution) / N. label_smoothing in [0, 1] (invalid_argument otherwise).
[[nodiscard]] Loss cross_entropy(const Backend& b, const Tensor& logits, const Tensor& target,
                                 double label_smoothing = 0.0);

/// Mean squared error: value = mean((x - target)^2), grad = 2 (x - target) /
/// numel.
[[nodiscard]] Loss mse(const Backend& b, const Tensor& x, const Tensor& target);

}  // namespace xylem::layers

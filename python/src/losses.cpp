// xylem.losses: the losses a training step calls before the layers'
// backward, each returning (loss, gradient with respect to the prediction).
#include "xylem/losses.hpp"

#include <nanobind/stl/pair.h>

#include <utility>

#include "bindings.hpp"

namespace xylem::python {
namespace {

std::pair<Tensor, Tensor> as_pair(layers::Loss loss) { return {std::move(loss.value), std::move(loss.grad)}; }

}  // namespace

void bind_losses(nb::module_& m) {
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& target, double label_smoothing, std::optional<Backend> b) {
        return as_pair(layers::cross_entropy(resolve(b), logits, target, label_smoothing));
      },
      "logits"_a, "target"_a, "label_smoothing"_a = 0.0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "(loss, dlogits): the mean cross-entropy of logits [N, C] against class indices target [N] (i64), with PyTorch's "
      "label smoothing (in [0, 1]); dlogits = (softmax(logits) - target distribution) / N.");
  m.def(
      "mse",
      [](const Tensor& x, const Tensor& target, std::optional<Backend> b) {
        return as_pair(layers::mse(resolve(b), x, target));
      },
      "x"_a, "target"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "(loss, dx): mean((x - target)^2) and 2 (x - target) / x.size.");
}

}  // namespace xylem::python

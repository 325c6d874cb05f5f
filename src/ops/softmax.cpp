// xylem::nn softmax and log_softmax along one axis, and their gradients:
// the kernels take [outer, r, inner] views (plugin.hpp), r the axis.
#include <string>

#include "core/dispatch.hpp"
#include "core/fusion.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/nn.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

// i0 = 0: softmax, 1: log_softmax.
void forward(const Backend& b, std::string_view name, int log, const Tensor& x, int axis, Tensor& y) {
  ops::require_float(name, "x", x);
  ops::require_like(name, "x", x, "y", y);
  const int a = ops::normalise_axis(name, x, axis);
  if (x.numel() == 0) {  // nothing to normalise: y is as empty as x
    ops::fill_output(b, name, y);
    return;
  }
  const Tensor x3 = ops::grouped3(b, x, x.layout(), a, a + 1);
  ops::GroupedOutput y3(b, y, y.layout(), a, a + 1);
  // An elementwise tail after it may run in the softmax's own pass (core/fusion.hpp).
  if (detail::defer_softmax(b, x3, y3.tensor(), y, log, name)) return;
  detail::launch(b, detail::args::nn_softmax<Tensor>{.x = x3, .y = y3.tensor(), .log = log}, name);
  y3.finish();
}

void backward(const Backend& b, std::string_view name, int log, const Tensor& y, const Tensor& dy, int axis,
              Tensor& dx) {
  ops::require_float(name, "y", y);
  ops::require_like(name, "y", y, "dy", dy);
  ops::require_like(name, "y", y, "dx", dx);
  const int a = ops::normalise_axis(name, y, axis);
  if (y.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  const Tensor y3 = ops::grouped3(b, y, y.layout(), a, a + 1);
  const Tensor dy3 = ops::grouped3(b, dy, dy.layout(), a, a + 1);
  ops::GroupedOutput dx3(b, dx, dx.layout(), a, a + 1);
  detail::launch(b, detail::args::nn_softmax_grad<Tensor>{.y = y3, .dy = dy3, .dx = dx3.tensor(), .log = log}, name);
  dx3.finish();
}

}  // namespace

void softmax(const Backend& b, const Tensor& x, int axis, Tensor& y) { forward(b, "nn::softmax", 0, x, axis, y); }
void log_softmax(const Backend& b, const Tensor& x, int axis, Tensor& y) {
  forward(b, "nn::log_softmax", 1, x, axis, y);
}
void softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx) {
  backward(b, "nn::softmax_grad", 0, y, dy, axis, dx);
}
void log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx) {
  backward(b, "nn::log_softmax_grad", 1, y, dy, axis, dx);
}

Tensor softmax(const Backend& b, const Tensor& x, int axis) {
  Tensor y = ops::new_like("nn::softmax", "x", x);
  softmax(b, x, axis, y);
  return y;
}
Tensor log_softmax(const Backend& b, const Tensor& x, int axis) {
  Tensor y = ops::new_like("nn::log_softmax", "x", x);
  log_softmax(b, x, axis, y);
  return y;
}
Tensor softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis) {
  Tensor dx = ops::new_like("nn::softmax_grad", "y", y);
  softmax_grad(b, y, dy, axis, dx);
  return dx;
}
Tensor log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis) {
  Tensor dx = ops::new_like("nn::log_softmax_grad", "y", y);
  log_softmax_grad(b, y, dy, axis, dx);
  return dx;
}

}  // namespace xylem::nn

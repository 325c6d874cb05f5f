// xylem::nn training pieces: dropout, the linear layer and the losses.
// Linear and MSE are compositions of other ops; dropout and cross-entropy
// have kernels of their own (plugin.hpp).
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "graph/recorder.hpp"
#include "ops/checks.hpp"
#include "ops/empty.hpp"
#include "ops/layout.hpp"
#include "xylem/blas.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"

namespace xylem::nn {
namespace {

using plugin::OpId;

}  // namespace

DropoutMask dropout(const Backend& b, const Tensor& x, Tensor& y, double p, Generator& gen) {
  constexpr std::string_view name = "nn::dropout";
  ops::require_float(name, "x", x);
  ops::require_like(name, "x", x, "y", y);
  ops::require_argument(p >= 0 && p < 1, name, [&] { return "p must be in [0, 1), not " + std::to_string(p); });
  const DropoutMask mask{p, gen.seed(), gen.advance(std::uint64_t(x.numel()))};
  if (x.numel() == 0) {
    ops::fill_output(b, name, y);
    return mask;
  }
  detail::launch(b,
                 detail::args::nn_dropout<Tensor>{
                     .x = x, .y = y, .seed = std::int64_t(mask.seed), .offset = std::int64_t(mask.offset), .p = p},
                 name);
  return mask;
}

void dropout_grad(const Backend& b, const Tensor& dy, Tensor& dx, const DropoutMask& mask) {
  constexpr std::string_view name = "nn::dropout_grad";
  ops::require_float(name, "dy", dy);
  ops::require_like(name, "dy", dy, "dx", dx);
  ops::require_argument(mask.p >= 0 && mask.p < 1, name, "the mask's p must be in [0, 1)");
  if (dy.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  detail::launch(b,
                 detail::args::nn_dropout_grad<Tensor>{.dy = dy,
                                                       .dx = dx,
                                                       .seed = std::int64_t(mask.seed),
                                                       .offset = std::int64_t(mask.offset),
                                                       .p = mask.p},
                 name);
}

namespace {

// x [..., in] as [M, in]; checks w [out, in].
void require_linear(std::string_view name, const Tensor& x, const Tensor& w) {
  ops::require_float(name, "x", x);
  ops::require_float(name, "w", w);
  ops::require_same_dtype(name, "x", x, "w", w);
  ops::require_argument(x.rank() >= 1, name, "x must have at least one axis");
  ops::require_rank(name, "w", w, 2);
  if (x.layout().dims()[std::size_t(x.rank() - 1)] != w.layout().dims()[1])
    throw Error(ErrorCode::shape_mismatch, std::string(name) + ": x has shape " + x.layout().dims_string() +
                                               " but w " + w.layout().dims_string() +
                                               "; x's last axis must match w's second");
}

Layout linear_output(const Tensor& x, const Tensor& w) {
  std::vector<std::int64_t> dims(x.layout().dims().begin(), x.layout().dims().end());
  dims.back() = w.layout().dims()[0];
  return Layout(dims);
}

}  // namespace

void linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  constexpr std::string_view name = "nn::linear";
  require_linear(name, x, w);
  ops::require_defined(name, "y", y);
  ops::require_same_dtype(name, "x", x, "y", y);
  ops::require_dims(name, "y", y, linear_output(x, w));
  if (bias.defined()) {
    ops::require_dims(name, "bias", bias, Layout{w.layout().dims()[0]});
    ops::require_dtype(name, "bias", bias, x.dtype());
  }
  const int cut = x.rank() - 1;
  const Tensor x2 = ops::grouped2(b, x, x.layout(), cut);
  ops::GroupedOutput y2(b, y, y.layout(), cut);
  Tensor out = y2.tensor();
  blas::gemm(b, blas::Transpose::no, blas::Transpose::yes, 1.0, x2, w, 0.0, out);
  if (bias.defined() && out.numel() > 0) add(b, out, bias, out);
  y2.finish();
}

void linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                 Tensor& dbias) {
  constexpr std::string_view name = "nn::linear_grad";
  require_linear(name, x, w);
  ops::require_float(name, "dy", dy);
  ops::require_same_dtype(name, "x", x, "dy", dy);
  ops::require_dims(name, "dy", dy, linear_output(x, w));
  if (dx.defined()) ops::require_like(name, "x", x, "dx", dx);
  if (dw.defined()) ops::require_like(name, "w", w, "dw", dw);
  if (dbias.defined()) {
    ops::require_dims(name, "dbias", dbias, Layout{w.layout().dims()[0]});
    ops::require_dtype(name, "dbias", dbias, x.dtype());
  }
  const int cut = x.rank() - 1;
  const Tensor dy2 = ops::grouped2(b, dy, dy.layout(), cut);
  if (dx.defined()) {
    ops::GroupedOutput dx2(b, dx, dx.layout(), cut);
    Tensor out = dx2.tensor();
    blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1.0, dy2, w, 0.0, out);
    dx2.finish();
  }
  if (dw.defined()) {
    const Tensor x2 = ops::grouped2(b, x, x.layout(), cut);
    blas::gemm(b, blas::Transpose::yes, blas::Transpose::no, 1.0, dy2, x2, 0.0, dw);
  }
  if (dbias.defined()) sum(b, dy2, Reduction{{0}, false}, dbias);
}

namespace {

void require_classes(std::string_view name, const Tensor& x, const Tensor& target) {
  ops::require_float(name, "x", x);
  ops::require_rank(name, "x", x, 2);
  ops::require_dtype(name, "target", target, DType::i64);
  ops::require_dims(name, "target", target, Layout{x.layout().dims()[0]});
}

// Called after the cheap checks: it reads the targets to the host and
// returns how many rows count (their target is not ignore_index). Inside a
// capture, where a host read is refused and a replay's targets are not
// there yet, it checks nothing (out-of-range targets then give NaN) and
// returns nothing: the caller counts on the device.
std::optional<std::int64_t> require_targets_in_range(std::string_view name, const Tensor& x, const Tensor& target,
                                                     std::int64_t ignore_index) {
  const std::int64_t n = x.layout().dims()[0], classes = x.layout().dims()[1];
  if (n == 0) return 0;
  if (classes == 0)
    throw Error(ErrorCode::invalid_argument,
                std::string(name) + ": x has no classes (shape " + x.layout().dims_string() + ")");
  // The kernels would give NaN for a target outside [0, C): a wrong answer
  // that looks like a diverged loss. Checking it here reads the targets to
  // the host, which waits only for target's own writer (not for x or the
  // queue), and raises before any output changes.
  if (detail::active_recorder() != nullptr) return std::nullopt;
  const std::vector<std::int64_t> targets = target.to_vector<std::int64_t>();
  std::int64_t counted = 0;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] == ignore_index) continue;
    ++counted;
    if (targets[i] < 0 || targets[i] >= classes)
      throw Error(ErrorCode::invalid_argument,
                  std::string(name) + ": target[" + std::to_string(i) + "] is " + std::to_string(targets[i]) +
                      ", outside [0, C) for C = " + std::to_string(classes) + " classes (x has shape " +
                      x.layout().dims_string() + "); targets are class indices or ignore_index " +
                      std::to_string(ignore_index));
  }
  return counted;
}

// The rows whose target is not ignore_index, counted on the device: a
// one-element tensor of x's dtype.
Tensor counted_on_device(const Backend& b, const Tensor& x, const Tensor& target, std::int64_t ignore_index) {
  const Tensor ignored = full(b, Layout{}, x.dtype(), static_cast<double>(ignore_index));
  return sum(b, cast(b, ne(b, cast(b, target, x.dtype()), ignored), x.dtype()));
}

}  // namespace

// The mean over no rows is NaN (0/0), as PyTorch's cross_entropy gives for
// an empty batch; mean() writes it without reading `rows`. Ignored rows are
// 0 in `rows` and left out of the count, so the mean is over the others (NaN
// when there are none).
Tensor cross_entropy(const Backend& b, const Tensor& x, const Tensor& target, std::int64_t ignore_index) {
  constexpr std::string_view name = "nn::cross_entropy";
  require_classes(name, x, target);
  const std::optional<std::int64_t> counted = require_targets_in_range(name, x, target, ignore_index);
  const std::int64_t n = x.layout().dims()[0];
  Tensor rows(Layout{n}, x.dtype());
  if (n > 0)
    detail::launch(
        b, detail::args::nn_cross_entropy<Tensor>{.x = x, .target = target, .loss = rows, .ignore_index = ignore_index},
        name);
  if (!counted) return div(b, sum(b, rows), counted_on_device(b, x, target, ignore_index));
  if (*counted == n) return mean(b, rows);
  return mul(b, sum(b, rows), full(b, Layout{}, x.dtype(), 1.0 / double(*counted)));
}

void cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss,
                        std::int64_t ignore_index) {
  constexpr std::string_view name = "nn::cross_entropy_grad";
  require_classes(name, x, target);
  ops::require_like(name, "x", x, "dx", dx);
  const std::optional<std::int64_t> counted = require_targets_in_range(name, x, target, ignore_index);
  const std::int64_t n = x.layout().dims()[0];
  if (n == 0) {  // dx [0, C] is empty
    ops::fill_output(b, name, dx);
    return;
  }
  // With every row ignored the kernel writes zeros and reads no dloss.
  const Tensor per_row =
      counted ? full(b, Layout{n}, x.dtype(), *counted > 0 ? dloss / double(*counted) : 0.0)
              : div(b, full(b, Layout{n}, x.dtype(), dloss), counted_on_device(b, x, target, ignore_index));
  detail::launch(b,
                 detail::args::nn_cross_entropy_grad<Tensor>{
                     .x = x, .target = target, .dloss = per_row, .dx = dx, .ignore_index = ignore_index},
                 name);
}

namespace {

void require_pair(std::string_view name, const Tensor& x, const Tensor& target) {
  ops::require_float(name, "x", x);
  ops::require_like(name, "x", x, "target", target);
}

}  // namespace

Tensor mse_loss(const Backend& b, const Tensor& x, const Tensor& target) {
  require_pair("nn::mse_loss", x, target);
  const Tensor diff = sub(b, x, target);
  return mean(b, mul(b, diff, diff));
}

void mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss) {
  constexpr std::string_view name = "nn::mse_loss_grad";
  require_pair(name, x, target);
  ops::require_like(name, "x", x, "dx", dx);
  if (x.numel() == 0) {
    ops::fill_output(b, name, dx);
    return;
  }
  const Tensor scale = full(b, Layout{}, x.dtype(), 2.0 * dloss / double(x.numel()));
  mul(b, sub(b, x, target), scale, dx);
}

Dropout dropout(const Backend& b, const Tensor& x, double p, Generator& gen) {
  Dropout out{ops::new_like("nn::dropout", "x", x), {}};
  out.mask = dropout(b, x, out.y, p, gen);
  return out;
}
Tensor dropout_grad(const Backend& b, const Tensor& dy, const DropoutMask& mask) {
  Tensor dx = ops::new_like("nn::dropout_grad", "dy", dy);
  dropout_grad(b, dy, dx, mask);
  return dx;
}

Tensor linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias) {
  require_linear("nn::linear", x, w);
  Tensor y(linear_output(x, w), x.dtype());
  linear(b, x, w, bias, y);
  return y;
}
LinearGrads linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy) {
  require_linear("nn::linear_grad", x, w);
  LinearGrads grads{ops::new_like("nn::linear_grad", "x", x), ops::new_like("nn::linear_grad", "w", w),
                    Tensor(Layout{w.layout().dims()[0]}, x.dtype())};
  linear_grad(b, x, w, dy, grads.dx, grads.dw, grads.dbias);
  return grads;
}

Tensor cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss,
                          std::int64_t ignore_index) {
  Tensor dx = ops::new_like("nn::cross_entropy_grad", "x", x);
  cross_entropy_grad(b, x, target, dx, dloss, ignore_index);
  return dx;
}
Tensor mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss) {
  Tensor dx = ops::new_like("nn::mse_loss_grad", "x", x);
  mse_loss_grad(b, x, target, dx, dloss);
  return dx;
}

}  // namespace xylem::nn

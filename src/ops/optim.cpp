// xylem::optim's ops: the checks of sgd_step and adam_step, then one launch
// each (the update formulas are math.h's, in every framework's kernel).
#include "xylem/optim.hpp"

#include <cmath>
#include <string>
#include <string_view>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"

namespace xylem::optim {
namespace {

void require_setting(bool ok, std::string_view op, const char* setting, double value, const char* range) {
  ops::require_argument(ok, op,
                        [&] { return std::string(setting) + " must be " + range + ", not " + std::to_string(value); });
}

void require_contiguous(std::string_view op, std::string_view arg, const Tensor& t) {
  if (t.layout().is_contiguous()) return;
  std::string what = "'";
  what += arg;
  what += "' (" + ops::describe(t) + ") must be contiguous";
  ops::require_argument(false, op, what);
}

// A tensor the update reads or writes: contiguous, of param's dims and dtype.
void require_state(std::string_view op, const Tensor& param, std::string_view arg, const Tensor& t) {
  ops::require_like(op, "param", param, arg, t);
  require_contiguous(op, arg, t);
}

void require_param(std::string_view op, const Tensor& param, const Tensor& grad) {
  ops::require_real(op, "param", param);
  require_contiguous(op, "param", param);
  require_state(op, param, "grad", grad);
}

void validate_sgd(std::string_view op, const SgdOptions& o) {
  require_setting(o.lr >= 0, op, "lr", o.lr, ">= 0");
  require_setting(o.momentum >= 0, op, "momentum", o.momentum, ">= 0");
  require_setting(o.weight_decay >= 0, op, "weight_decay", o.weight_decay, ">= 0");
  require_setting(std::isfinite(o.dampening), op, "dampening", o.dampening, "finite");
  ops::require_argument(!o.nesterov || (o.momentum > 0 && o.dampening == 0), op,
                        "Nesterov momentum needs momentum > 0 and dampening 0");
}

void validate_adam(std::string_view op, const AdamOptions& o) {
  require_setting(o.lr >= 0, op, "lr", o.lr, ">= 0");
  require_setting(o.beta1 >= 0 && o.beta1 < 1, op, "beta1", o.beta1, "in [0, 1)");
  require_setting(o.beta2 >= 0 && o.beta2 < 1, op, "beta2", o.beta2, "in [0, 1)");
  require_setting(o.eps >= 0, op, "eps", o.eps, ">= 0");
  require_setting(o.weight_decay >= 0, op, "weight_decay", o.weight_decay, ">= 0");
}

}  // namespace

void validate(const SgdOptions& options) { validate_sgd("optim::SGD", options); }
void validate(const AdamOptions& options) { validate_adam("optim::Adam", options); }

void sgd_step(const Backend& b, Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdOptions& options,
              bool first_step) {
  constexpr std::string_view name = "optim::sgd_step";
  validate_sgd(name, options);
  require_param(name, param, grad);
  if (options.momentum != 0)
    require_state(name, param, "momentum_buffer", momentum_buffer);
  else
    ops::require_argument(!momentum_buffer.defined(), name, "a momentum buffer was given with momentum 0");
  detail::launch(b,
                 detail::args::optim_sgd_step<Tensor>{.param = param,
                                                      .grad = grad,
                                                      .momentum_buffer = momentum_buffer,
                                                      .nesterov = options.nesterov ? 1 : 0,
                                                      .first_step = first_step ? 1 : 0,
                                                      .lr = options.lr,
                                                      .momentum = options.momentum,
                                                      .dampening = options.dampening,
                                                      .weight_decay = options.weight_decay},
                 name);
}

void adam_step(const Backend& b, Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               const AdamOptions& options, std::int64_t step) {
  constexpr std::string_view name = "optim::adam_step";
  validate_adam(name, options);
  require_param(name, param, grad);
  require_state(name, param, "exp_avg", exp_avg);
  require_state(name, param, "exp_avg_sq", exp_avg_sq);
  ops::require_argument(step >= 1, name, [&] { return "step must be >= 1, not " + std::to_string(step); });
  const auto t = static_cast<double>(step);
  detail::launch(b,
                 detail::args::optim_adam_step<Tensor>{.param = param,
                                                       .grad = grad,
                                                       .exp_avg = exp_avg,
                                                       .exp_avg_sq = exp_avg_sq,
                                                       .decoupled = options.decoupled ? 1 : 0,
                                                       .lr = options.lr,
                                                       .beta1 = options.beta1,
                                                       .beta2 = options.beta2,
                                                       .eps = options.eps,
                                                       .weight_decay = options.weight_decay,
                                                       .bias_correction1 = 1 - std::pow(options.beta1, t),
                                                       .bias_correction2 = 1 - std::pow(options.beta2, t)},
                 name);
}

}  // namespace xylem::optim

#pragma once
/// @file
/// xylem::optim: optimizers over layers' parameters, with PyTorch's update
/// rules (torch.optim.SGD, Adam, AdamW). Each parameter's update is one fused
/// kernel (optim::sgd_step, optim::adam_step) on the backend passed to step:
/// the parameter, its gradient and its state are read and written in one pass.
///
/// State (momentum buffers, Adam's moments and step counts) is kept per
/// parameter and created at the parameter's first step, zero-filled on that
/// backend. A parameter whose grad is empty (no backward reached it, or
/// zero_grad ran since) is skipped and its state left as it is, as PyTorch
/// does. f32 and f64 parameters; every gradient must have its parameter's
/// dims and dtype, which step checks for all parameters before updating any.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/layers.hpp"
#include "xylem/tensor.hpp"

namespace xylem::optim {

/// torch.optim.SGD's settings.
struct SgdOptions {
  double lr = 1e-3;         ///< learning rate, >= 0
  double momentum = 0;      ///< >= 0; 0: no momentum buffer
  double dampening = 0;     ///< scales down the new gradient in the momentum buffer
  double weight_decay = 0;  ///< L2 penalty added to the gradient, >= 0
  bool nesterov = false;    ///< Nesterov momentum: needs momentum > 0 and dampening 0
};

/// torch.optim.Adam's (decoupled = false) and AdamW's (true) settings.
struct AdamOptions {
  double lr = 1e-3;         ///< learning rate, >= 0
  double beta1 = 0.9;       ///< decay of the first moment, in [0, 1)
  double beta2 = 0.999;     ///< decay of the second moment, in [0, 1)
  double eps = 1e-8;        ///< added to the denominator, >= 0
  double weight_decay = 0;  ///< >= 0: added to the gradient (Adam) or scaling the parameter (AdamW)
  bool decoupled = false;   ///< AdamW's decoupled weight decay
};

/// Raise invalid_argument, naming the setting, for options out of range.
/// @{
void validate(const SgdOptions& options);
void validate(const AdamOptions& options);
/// @}

/// One SGD update of `param` in place from `grad` (the optim::sgd_step op):
/// every tensor contiguous, of param's dims and dtype (f32 or f64).
/// `momentum_buffer` is empty exactly when options.momentum is 0;
/// `first_step` sets it to the gradient instead of blending (PyTorch's first
/// step). Errors (shape_mismatch, dtype_mismatch, invalid_argument) are
/// raised before anything changes.
void sgd_step(const Backend& b, Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdOptions& options,
              bool first_step);

/// One Adam/AdamW update of `param` in place (the optim::adam_step op), its
/// `step`-th (from 1: the bias corrections 1 - beta^step come from it).
/// Tensors as for sgd_step; exp_avg and exp_avg_sq are the running moments.
void adam_step(const Backend& b, Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
               const AdamOptions& options, std::int64_t step);

/// What both optimizers share: the parameters and their gradients.
class Optimizer {
 public:
  /// Resets every parameter's gradient to an empty handle (PyTorch's set_to_none).
  void zero_grad();
  /// The parameters, in the order given.
  [[nodiscard]] const std::vector<layers::Parameter*>& parameters() const noexcept { return params_; }

 protected:
  /// Null entries raise invalid_argument.
  explicit Optimizer(std::vector<layers::Parameter*> params);
  /// Checks every non-empty grad against its parameter (dims, dtype,
  /// f32/f64), so that a bad one raises before any parameter changes.
  void check_gradients(const char* op) const;

  std::vector<layers::Parameter*> params_;  ///< what step updates
};

/// torch.optim.SGD: plain, with momentum, Nesterov momentum, weight decay.
class SGD : public Optimizer {
 public:
  /// Options out of range raise invalid_argument.
  SGD(std::vector<layers::Parameter*> params, const SgdOptions& options);
  /// The layer's parameters().
  SGD(layers::Layer& layer, const SgdOptions& options) : SGD(layer.parameters(), options) {}

  /// One update of every parameter that has a gradient, on `b`.
  void step(const Backend& b);
  /// The rate the next step uses.
  [[nodiscard]] double learning_rate() const noexcept { return options_.lr; }
  /// Takes effect at the next step; a negative rate raises invalid_argument.
  void set_learning_rate(double lr);
  /// The settings, learning rate included.
  [[nodiscard]] const SgdOptions& options() const noexcept { return options_; }
  /// Parameter i's momentum buffer: empty before its first step, and always with momentum 0.
  [[nodiscard]] const Tensor& momentum_buffer(std::size_t i) const { return buffers_.at(i); }

 private:
  SgdOptions options_;
  std::vector<Tensor> buffers_;
};

/// torch.optim.Adam, or AdamW with options.decoupled (see AdamW).
class Adam : public Optimizer {
 public:
  /// Options out of range raise invalid_argument.
  Adam(std::vector<layers::Parameter*> params, const AdamOptions& options);
  /// The layer's parameters().
  Adam(layers::Layer& layer, const AdamOptions& options) : Adam(layer.parameters(), options) {}

  /// One update of every parameter that has a gradient, on `b`.
  void step(const Backend& b);
  /// The rate the next step uses.
  [[nodiscard]] double learning_rate() const noexcept { return options_.lr; }
  /// Takes effect at the next step; a negative rate raises invalid_argument.
  void set_learning_rate(double lr);
  /// The settings, learning rate included.
  [[nodiscard]] const AdamOptions& options() const noexcept { return options_; }
  /// Parameter i's first moment (empty before its first step).
  [[nodiscard]] const Tensor& exp_avg(std::size_t i) const { return state_.at(i).exp_avg; }
  /// Parameter i's second moment (empty before its first step).
  [[nodiscard]] const Tensor& exp_avg_sq(std::size_t i) const { return state_.at(i).exp_avg_sq; }
  /// The steps parameter i has taken (its bias corrections use this count).
  [[nodiscard]] std::int64_t steps(std::size_t i) const { return state_.at(i).steps; }

 private:
  struct State {
    Tensor exp_avg, exp_avg_sq;
    std::int64_t steps = 0;
  };
  AdamOptions options_;
  std::vector<State> state_;
};

/// torch.optim.AdamW: Adam with decoupled weight decay, 0.01 by default as PyTorch's.
class AdamW : public Adam {
 public:
  /// options.decoupled is set whatever it says.
  AdamW(std::vector<layers::Parameter*> params, AdamOptions options = defaults());
  /// The layer's parameters().
  explicit AdamW(layers::Layer& layer, const AdamOptions& options = defaults()) : AdamW(layer.parameters(), options) {}
  /// PyTorch's AdamW defaults: Adam's, with weight_decay 0.01.
  [[nodiscard]] static AdamOptions defaults() noexcept {
    AdamOptions o;
    o.weight_decay = 0.01;
    o.decoupled = true;
    return o;
  }
};

}  // namespace xylem::optim

// The optimizer classes: per-parameter state, created at a parameter's first
// step, and one optim::sgd_step / adam_step launch per parameter.
#include "xylem/optim.hpp"

#include <string>
#include <utility>

#include "xylem/creation.hpp"
#include "xylem/error.hpp"

namespace xylem::optim {
namespace {

void require_learning_rate(const char* op, double lr) {
  if (!(lr >= 0))
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": lr must be >= 0, not " + std::to_string(lr));
}

}  // namespace

Optimizer::Optimizer(std::vector<layers::Parameter*> params) : params_(std::move(params)) {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i] == nullptr)
      throw Error(ErrorCode::invalid_argument, "optim: parameter " + std::to_string(i) + " is a null pointer");
}

void Optimizer::zero_grad() {
  for (layers::Parameter* p : params_) p->grad = Tensor();
}

void Optimizer::check_gradients(const char* op) const {
  for (const layers::Parameter* p : params_) {
    if (!p->grad.defined()) continue;
    const std::string where = std::string(op) + " parameter '" + p->name + "'";
    if (p->value.dtype() != DType::f32 && p->value.dtype() != DType::f64)
      throw Error(ErrorCode::dtype_mismatch,
                  where + " is " + std::string(name(p->value.dtype())) + "; optimizers take f32 or f64 parameters");
    if (p->grad.dtype() != p->value.dtype())
      throw Error(ErrorCode::dtype_mismatch, where + ": grad is " + std::string(name(p->grad.dtype())) +
                                                 " but the parameter is " + std::string(name(p->value.dtype())));
    if (!p->grad.layout().same_dims(p->value.layout()))
      throw Error(ErrorCode::shape_mismatch, where + ": grad has shape " + p->grad.layout().dims_string() +
                                                 " but the parameter has " + p->value.layout().dims_string());
  }
}

SGD::SGD(std::vector<layers::Parameter*> params, const SgdOptions& options)
    : Optimizer(std::move(params)), options_(options), buffers_(params_.size()) {
  validate(options_);
}

void SGD::set_learning_rate(double lr) {
  require_learning_rate("optim::SGD", lr);
  options_.lr = lr;
}

// The optimizers update the parameters last to first: a backward makes the
// last layers' gradients first and data-parallel training reduces them
// first, so their updates run while the first layers' gradients are still
// being reduced (on two H100s a captured Fashion-MNIST step otherwise
// waited for its last bucket before any update). Each parameter's update
// is its own, so the order changes no result.
void SGD::step(const Backend& b) {
  check_gradients("optim::SGD");
  for (std::size_t i = params_.size(); i-- > 0;) {
    layers::Parameter& p = *params_[i];
    if (!p.grad.defined()) continue;
    // A new buffer is kept only once its first step ran, so that a step
    // that raised leaves the next one a first step still.
    const bool first = options_.momentum != 0 && !buffers_[i].defined();
    Tensor buffer = first ? zeros(b, Layout(p.value.layout().dims()), p.value.dtype()) : buffers_[i];
    sgd_step(b, p.value, p.grad, buffer, options_, first);
    buffers_[i] = buffer;
  }
}

Adam::Adam(std::vector<layers::Parameter*> params, const AdamOptions& options)
    : Optimizer(std::move(params)), options_(options), state_(params_.size()) {
  validate(options_);
}

void Adam::set_learning_rate(double lr) {
  require_learning_rate("optim::Adam", lr);
  options_.lr = lr;
}

void Adam::step(const Backend& b) {
  check_gradients(options_.decoupled ? "optim::AdamW" : "optim::Adam");
  for (std::size_t i = params_.size(); i-- > 0;) {  // last to first, as SGD::step says why
    layers::Parameter& p = *params_[i];
    if (!p.grad.defined()) continue;
    State& s = state_[i];
    const Layout dims(p.value.layout().dims());
    Tensor m = s.exp_avg.defined() ? s.exp_avg : zeros(b, dims, p.value.dtype());
    Tensor v = s.exp_avg_sq.defined() ? s.exp_avg_sq : zeros(b, dims, p.value.dtype());
    adam_step(b, p.value, p.grad, m, v, options_, s.steps + 1);
    s.exp_avg = m;
    s.exp_avg_sq = v;
    ++s.steps;
  }
}

namespace {

AdamOptions with_decoupled_decay(AdamOptions options) {
  options.decoupled = true;
  return options;
}

}  // namespace

AdamW::AdamW(std::vector<layers::Parameter*> params, AdamOptions options)
    : Adam(std::move(params), with_decoupled_decay(options)) {}

}  // namespace xylem::optim

// xylem.optim: the fused optimizer updates (PyTorch's SGD, Adam, AdamW
// rules), one kernel per parameter, and their settings; then the optimizer
// objects built on them (optimizers.cpp).
#include "bindings.hpp"

namespace xylem::python {

void bind_optim(nb::module_& m) {
  using optim::AdamOptions;
  using optim::SgdOptions;
  nb::class_<SgdOptions>(m, "SgdOptions", "torch.optim.SGD's settings.")
      .def(
          "__init__",
          [](SgdOptions* o, double lr, double momentum, double dampening, double weight_decay, bool nesterov) {
            new (o) SgdOptions{lr, momentum, dampening, weight_decay, nesterov};
            optim::validate(*o);
          },
          nb::kw_only(), "lr"_a = 1e-3, "momentum"_a = 0.0, "dampening"_a = 0.0, "weight_decay"_a = 0.0,
          "nesterov"_a = false, "Settings, checked (InvalidArgument names one out of range).")
      .def_rw("lr", &SgdOptions::lr, "Learning rate, >= 0.")
      .def_rw("momentum", &SgdOptions::momentum, ">= 0; 0: no momentum buffer.")
      .def_rw("dampening", &SgdOptions::dampening, "Scales down the new gradient in the momentum buffer.")
      .def_rw("weight_decay", &SgdOptions::weight_decay, "L2 penalty added to the gradient, >= 0.")
      .def_rw("nesterov", &SgdOptions::nesterov, "Nesterov momentum: needs momentum > 0 and dampening 0.");
  nb::class_<AdamOptions>(m, "AdamOptions", "torch.optim.Adam's (decoupled False) and AdamW's (True) settings.")
      .def(
          "__init__",
          [](AdamOptions* o, double lr, double beta1, double beta2, double eps, double weight_decay, bool decoupled) {
            new (o) AdamOptions{lr, beta1, beta2, eps, weight_decay, decoupled};
            optim::validate(*o);
          },
          nb::kw_only(), "lr"_a = 1e-3, "beta1"_a = 0.9, "beta2"_a = 0.999, "eps"_a = 1e-8, "weight_decay"_a = 0.0,
          "decoupled"_a = false, "Settings, checked (InvalidArgument names one out of range).")
      .def_rw("lr", &AdamOptions::lr, "Learning rate, >= 0.")
      .def_rw("beta1", &AdamOptions::beta1, "Decay of the first moment, in [0, 1).")
      .def_rw("beta2", &AdamOptions::beta2, "Decay of the second moment, in [0, 1).")
      .def_rw("eps", &AdamOptions::eps, "Added to the denominator, >= 0.")
      .def_rw("weight_decay", &AdamOptions::weight_decay, "Added to the gradient (Adam) or scaling the parameter (AdamW).")
      .def_rw("decoupled", &AdamOptions::decoupled, "AdamW's decoupled weight decay.");
  m.def(
      "sgd_step",
      [](Tensor& param, const Tensor& grad, std::optional<Tensor> momentum_buffer, const SgdOptions& options,
         bool first_step, std::optional<Backend> b) {
        Tensor buffer = momentum_buffer.value_or(Tensor{});
        optim::sgd_step(resolve(b), param, grad, buffer, options, first_step);
      },
      "param"_a, "grad"_a, "momentum_buffer"_a.none(), "options"_a, "first_step"_a = false, nb::kw_only(),
      "backend"_a = nb::none(), release_gil(),
      "One SGD update of param in place from grad: contiguous tensors of param's shape and dtype (f32, f64); "
      "momentum_buffer None exactly when options.momentum is 0; first_step sets the buffer to the gradient.");
  m.def(
      "adam_step",
      [](Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq, const AdamOptions& options,
         std::int64_t step, std::optional<Backend> b) {
        optim::adam_step(resolve(b), param, grad, exp_avg, exp_avg_sq, options, step);
      },
      "param"_a, "grad"_a, "exp_avg"_a, "exp_avg_sq"_a, "options"_a, "step"_a, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(),
      "One Adam/AdamW update of param in place, its step-th (from 1); exp_avg and exp_avg_sq are the running "
      "moments, updated too.");
  bind_optimizers(m);
}

}  // namespace xylem::python

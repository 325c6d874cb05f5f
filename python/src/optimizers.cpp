// xylem.optim's optimizer objects: SGD, Adam and AdamW over a layer's
// parameters (or a list of them), PyTorch's rules, one fused update per
// parameter at each step.
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <variant>

#include "bindings.hpp"

namespace xylem::python {
namespace {

using layers::Parameter;

// What an optimizer is given: a layer, or a list of Parameter objects.
using Params = std::variant<layers::Layer*, std::vector<Parameter*>>;

std::vector<Parameter*> parameters_of(const Params& params) {
  if (const auto* layer = std::get_if<layers::Layer*>(&params)) {
    if (!*layer) throw Error(ErrorCode::invalid_argument, "optimizer: params is None, not a layer or a list");
    return (*layer)->parameters();
  }
  return std::get<std::vector<Parameter*>>(params);
}

constexpr const char* kParamsDoc =
    "`params`: a layer (its parameters()) or a list of Parameter; the optimizer keeps it alive. Options out of range "
    "raise InvalidArgument.";

// What every optimizer shares; T is SGD or Adam (or AdamW).
template <class T>
void bind_common(nb::class_<T, optim::Optimizer>& cls) {
  cls.def(
         "step", [](T& o, std::optional<Backend> b) { o.step(resolve(b)); }, nb::kw_only(), "backend"_a = nb::none(),
         release_gil(),
         "One update of every parameter that has a gradient. Every gradient is checked first, so a bad one raises "
         "before any parameter changes.")
      .def_prop_rw("lr", &T::learning_rate, &T::set_learning_rate, "The learning rate the next step uses.");
}

void bind_sgd(nb::module_& m) {
  nb::class_<optim::SGD, optim::Optimizer> cls(m, "SGD",
                                               "torch.optim.SGD: plain, momentum, Nesterov momentum, weight decay.");
  cls.def(
         "__init__",
         [](optim::SGD* self, const Params& params, double lr, double momentum, double dampening, double weight_decay,
            bool nesterov) {
           new (self) optim::SGD(parameters_of(params), {lr, momentum, dampening, weight_decay, nesterov});
         },
         "params"_a, "lr"_a = 1e-3, "momentum"_a = 0.0, "dampening"_a = 0.0, "weight_decay"_a = 0.0,
         "nesterov"_a = false, nb::keep_alive<1, 2>(), kParamsDoc)
      .def_prop_ro("options", &optim::SGD::options, "The settings (a copy), learning rate included.")
      .def(
          "momentum_buffer", [](const optim::SGD& o, std::size_t i) { return defined_or_none(o.momentum_buffer(i)); },
          "i"_a, "Parameter i's momentum buffer: None before its first step, and always without momentum.");
  bind_common(cls);
}

void bind_adam(nb::module_& m) {
  nb::class_<optim::Adam, optim::Optimizer> cls(m, "Adam", "torch.optim.Adam (AdamW with decoupled=True).");
  cls.def(
         "__init__",
         [](optim::Adam* self, const Params& params, double lr, double beta1, double beta2, double eps,
            double weight_decay, bool decoupled) {
           new (self) optim::Adam(parameters_of(params), {lr, beta1, beta2, eps, weight_decay, decoupled});
         },
         "params"_a, "lr"_a = 1e-3, "beta1"_a = 0.9, "beta2"_a = 0.999, "eps"_a = 1e-8, "weight_decay"_a = 0.0,
         "decoupled"_a = false, nb::keep_alive<1, 2>(), kParamsDoc)
      .def_prop_ro("options", &optim::Adam::options, "The settings (a copy), learning rate included.")
      .def(
          "exp_avg", [](const optim::Adam& o, std::size_t i) { return defined_or_none(o.exp_avg(i)); }, "i"_a,
          "Parameter i's first moment (None before its first step).")
      .def(
          "exp_avg_sq", [](const optim::Adam& o, std::size_t i) { return defined_or_none(o.exp_avg_sq(i)); }, "i"_a,
          "Parameter i's second moment (None before its first step).")
      .def("steps", &optim::Adam::steps, "i"_a, "The steps parameter i has taken (its bias corrections use it).");
  bind_common(cls);
  const optim::AdamOptions w = optim::AdamW::defaults();
  nb::class_<optim::AdamW, optim::Adam>(m, "AdamW", "torch.optim.AdamW: Adam with decoupled weight decay.")
      .def(
          "__init__",
          [](optim::AdamW* self, const Params& params, double lr, double beta1, double beta2, double eps,
             double weight_decay) {
            new (self) optim::AdamW(parameters_of(params), {lr, beta1, beta2, eps, weight_decay, true});
          },
          "params"_a, "lr"_a = w.lr, "beta1"_a = w.beta1, "beta2"_a = w.beta2, "eps"_a = w.eps,
          "weight_decay"_a = w.weight_decay, nb::keep_alive<1, 2>(), kParamsDoc);
}

}  // namespace

void bind_optimizers(nb::module_& m) {
  nb::class_<optim::Optimizer>(m, "Optimizer", "What every optimizer shares: its parameters and their gradients.")
      .def("zero_grad", &optim::Optimizer::zero_grad, "Resets every parameter's grad to None.")
      .def_prop_ro("parameters", &optim::Optimizer::parameters, nb::rv_policy::reference_internal,
                   "The parameters, in the order given.");
  bind_sgd(m);
  bind_adam(m);
}

}  // namespace xylem::python

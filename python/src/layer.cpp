// xylem.layers: Layer, the base every layer shares (forward as __call__,
// backward, modes, parameters and their gradients, weights by name),
// Parameter, Buffer and Init; then the layer kinds (layers.cpp) and
// Sequential (sequential.cpp).
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "xylem/weights.hpp"

namespace xylem::python {

std::optional<Tensor> defined_or_none(const Tensor& t) {
  if (!t.defined()) return std::nullopt;
  return t;
}

namespace {

using layers::Buffer;
using layers::Layer;
using layers::Parameter;

void bind_parameter(nb::module_& m) {
  nb::class_<Parameter>(
      m, "Parameter",
      "A trainable tensor of a layer and its accumulated gradient (a view into the layer: it keeps the layer alive).")
      .def_ro("name", &Parameter::name, "\"weight\", \"bias\"; a Sequential prefixes its index: \"0.weight\".")
      .def_rw("value", &Parameter::value, "The tensor the layer computes with.")
      .def_prop_rw(
          "grad", [](const Parameter& p) { return defined_or_none(p.grad); },
          [](Parameter& p, std::optional<Tensor> g) { p.grad = g.value_or(Tensor{}); }, nb::arg("grad").none(),
          "The accumulated gradient: None until a backward reaches it, and after zero_grad().")
      .def("__repr__", [](const Parameter& p) { return "Parameter(" + p.name + ")"; });
  nb::class_<Buffer>(m, "Buffer", "A tensor a layer keeps but does not train (BatchNorm2d's running statistics).")
      .def_ro("name", &Buffer::name, "\"running_mean\"; a Sequential prefixes its index.")
      .def_rw("value", &Buffer::value, "The state itself.")
      .def_ro("may_be_absent", &Buffer::may_be_absent,
              "Whether a weights file may lack it (PyTorch's num_batches_tracked), which then keeps its value.")
      .def("__repr__", [](const Buffer& t) { return "Buffer(" + t.name + ")"; });
  nb::enum_<layers::Init>(m, "Init", "How Linear and Conv2d draw their weights (biases always as PyTorch does).")
      .value("kaiming_uniform", layers::Init::kaiming_uniform, "PyTorch's default: U(-b, b), b = 1/sqrt(fan_in).")
      .value("xavier_uniform", layers::Init::xavier_uniform, "U(-b, b), b = sqrt(6 / (fan_in + fan_out)).")
      .value("xavier_normal", layers::Init::xavier_normal, "N(0, 2 / (fan_in + fan_out)).");
}

void bind_weights(nb::class_<Layer>& cls) {
  cls.def("state_dict", &layers::state_dict,
          "Every parameter's and buffer's value by its PyTorch state_dict name (the tensors themselves, not copies).")
      .def("load_state_dict", &layers::load_state_dict, "tensors"_a, release_gil(),
           "Makes `tensors` (name to Tensor) the layer's values. Every name must be the layer's and every parameter "
           "and buffer present (a buffer that may be absent keeps its value); raises before anything changes "
           "(InvalidArgument, ShapeMismatch, DTypeMismatch).")
      .def(
          "save_weights", [](Layer& l, const std::filesystem::path& path) { layers::save_weights(path, l); }, "path"_a,
          release_gil(), "Writes state_dict() as a safetensors file that PyTorch loads (metadata format: pt).")
      .def(
          "load_weights", [](Layer& l, const std::filesystem::path& path) { layers::load_weights(path, l); }, "path"_a,
          release_gil(), "load_state_dict of a safetensors file's tensors (one PyTorch wrote, too).");
}

}  // namespace

void bind_layers(nb::module_& m) {
  bind_parameter(m);
  nb::class_<Layer> cls(m, "Layer",
                        "The base of every layer: layer(x) is its forward (which saves what backward needs); "
                        "backward(dy) returns dx and adds into each parameter's grad.");
  cls.def(
         "forward", [](Layer& l, const Tensor& x, std::optional<Backend> b) { return l.forward(resolve(b), x); }, "x"_a,
         nb::kw_only(), "backend"_a = nb::none(), release_gil(),
         "y = the layer applied to x; saves what backward needs. ShapeMismatch names the layer for an input it does "
         "not take.")
      .def(
          "__call__", [](Layer& l, const Tensor& x, std::optional<Backend> b) { return l.forward(resolve(b), x); },
          "x"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(), "The same as forward(x).")
      .def(
          "backward",
          [](Layer& l, const Tensor& dy, std::optional<Backend> b) { return defined_or_none(l.backward(resolve(b), dy)); },
          "dy"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
          "dx from dy (of the last forward's output shape); adds the parameters' gradients into their grad. "
          "None for an input with no gradient (Embedding's indices). InvalidArgument before a forward.")
      .def(
          "output_shape",
          [](const Layer& l, const std::vector<std::int64_t>& x) {
            const Layout y = l.output_shape(Layout(x));
            return as_tuple(y.dims());
          },
          "shape"_a, "The shape forward gives for an input of `shape` (ShapeMismatch for one it does not take).")
      .def("parameters", &Layer::parameters, nb::rv_policy::reference_internal,
           "The trainable tensors, in PyTorch's order.")
      .def("buffers", &Layer::buffers, nb::rv_policy::reference_internal,
           "The state that is saved but not trained, in PyTorch's order.")
      .def(
          "train",
          [](nb::handle self, bool on) {
            nb::cast<Layer&>(self).train(on);
            return nb::borrow(self);
          },
          "mode"_a = true, nb::sig("def train(self, mode: bool = True) -> Layer"),
          "Training (True) or evaluation mode (BatchNorm2d and Dropout differ); returns the layer.")
      .def(
          "eval",
          [](nb::handle self) {
            nb::cast<Layer&>(self).train(false);
            return nb::borrow(self);
          },
          nb::sig("def eval(self) -> Layer"), "Evaluation mode, the same as train(False); returns the layer.")
      .def_prop_ro("training", &Layer::training, "Whether the layer is in training mode.")
      .def("zero_grad", &Layer::zero_grad, "Resets every parameter's grad to None.")
      .def("__repr__", &Layer::describe);
  bind_weights(cls);
  bind_layer_kinds(m);
  bind_sequential(m);
  bind_recurrent(m);
}

}  // namespace xylem::python

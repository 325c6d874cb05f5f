// xylem.layers.Sequential. The C++ Sequential owns its layers; a layer made
// in Python stays the Python object the user holds (its weights readable,
// its mode settable), so Sequential owns a forwarding layer that shares it.
#include <nanobind/stl/shared_ptr.h>

#include <memory>

#include "bindings.hpp"

namespace xylem::python {
namespace {

using layers::Buffer;
using layers::Layer;
using layers::Parameter;
using layers::Sequential;

// A layer shared with Python: every call goes to `inner`, which the shared
// pointer keeps alive (nanobind's pointer to a Python object holds a
// reference to it).
class Shared final : public Layer {
 public:
  explicit Shared(std::shared_ptr<Layer> inner) : inner_(std::move(inner)) { Layer::train(inner_->training()); }
  Tensor forward(const Backend& b, const Tensor& x) override { return inner_->forward(b, x); }
  Tensor backward(const Backend& b, const Tensor& dy) override { return inner_->backward(b, dy); }
  [[nodiscard]] Layout output_shape(const Layout& x) const override { return inner_->output_shape(x); }
  [[nodiscard]] std::string describe() const override { return inner_->describe(); }
  [[nodiscard]] std::vector<Parameter*> parameters() override { return inner_->parameters(); }
  [[nodiscard]] std::vector<Buffer*> buffers() override { return inner_->buffers(); }
  void train(bool on) override {
    Layer::train(on);
    inner_->train(on);
  }
  [[nodiscard]] const std::shared_ptr<Layer>& inner() const noexcept { return inner_; }

 private:
  std::shared_ptr<Layer> inner_;
};

void append(Sequential& s, std::shared_ptr<Layer> layer) {
  if (!layer) throw Error(ErrorCode::invalid_argument, "Sequential.append: None is not a layer");
  s.add(std::make_unique<Shared>(std::move(layer)));
}

// The Python object of layer i: the one the user added, or (for a layer a
// model built in C++) a view that keeps the Sequential alive.
nb::object item(nb::handle self, std::int64_t i) {
  auto& s = nb::cast<Sequential&>(self);
  const auto n = static_cast<std::int64_t>(s.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw nb::index_error("Sequential index out of range");
  Layer& layer = s[static_cast<std::size_t>(i)];
  if (auto* shared = dynamic_cast<Shared*>(&layer)) return nb::cast(shared->inner());
  return nb::cast(&layer, nb::rv_policy::reference_internal, self);
}

}  // namespace

void bind_sequential(nb::module_& m) {
  nb::class_<Sequential, Layer>(m, "Sequential",
                                "Layers applied in order (backward in reverse), their parameters named by index as "
                                "PyTorch's nn.Sequential names them (\"0.weight\"), the keys of a saved model. Adding "
                                "a layer prefixes its parameters' names, so a layer belongs in one Sequential.")
      .def(
          "__init__",
          [](Sequential* self, const nb::args& layers) {
            new (self) Sequential();
            for (nb::handle layer : layers) append(*self, nb::cast<std::shared_ptr<Layer>>(layer));
          },
          nb::sig("def __init__(self, *layers: Layer) -> None"),
          "The layers, in order: Sequential(Linear(4, 8), ReLU(), Linear(8, 2)).")
      .def(
          "append",
          [](nb::handle self, std::shared_ptr<Layer> layer) {
            append(nb::cast<Sequential&>(self), std::move(layer));
            return nb::borrow(self);
          },
          "layer"_a, nb::sig("def append(self, layer: Layer) -> Sequential"),
          "Appends a layer (it takes the training mode of the Sequential); returns the Sequential.")
      .def("__len__", &Sequential::size, "The number of layers.")
      .def("__getitem__", &item, "i"_a, nb::sig("def __getitem__(self, i: int) -> Layer"),
           "The i-th layer (negative counts from the end).");
}

}  // namespace xylem::python

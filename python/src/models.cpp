// xylem.models: the reference networks (AlexNet, Overfeat fast, VGG-A) as
// Sequential layers, and the input their public benchmarks time them on
// (TransformerLM is bound in text.cpp).
#include "xylem/models.hpp"

#include <nanobind/stl/string_view.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.hpp"

namespace xylem::python {
namespace {

using Builder = layers::Sequential (*)(const Backend&, const layers::ParameterOptions&, std::uint64_t);

// A Sequential is not movable (a layer owns its state), so the builder's
// result is made in place.
std::unique_ptr<layers::Sequential> build(Builder make, DType dtype, layers::Init init, std::uint64_t seed,
                                          const std::optional<Backend>& b) {
  return std::unique_ptr<layers::Sequential>(new layers::Sequential(make(resolve(b), {dtype, init}, seed)));
}

void def_builder(nb::module_& m, const char* name, Builder make, const char* doc) {
  m.def(
      name,
      [make](DType dtype, layers::Init init, std::uint64_t seed, std::optional<Backend> b) {
        return build(make, dtype, init, seed, b);
      },
      nb::kw_only(), "dtype"_a = DType::f32, "init"_a = layers::Init::kaiming_uniform, "seed"_a = 0,
      "backend"_a = nb::none(), release_gil(), doc);
}

}  // namespace

void bind_models(nb::module_& m) {
  def_builder(m, "alexnet", &models::alexnet,
              "AlexNet (\"One weird trick\"; torchvision's without adaptive pooling) for 3x224x224 inputs: 61,100,840 "
              "parameters drawn from `seed`.");
  def_builder(m, "overfeat_fast", &models::overfeat_fast,
              "Overfeat fast as the convnet benchmarks define it, for 3x231x231 inputs: 145,920,872 parameters.");
  def_builder(m, "vgg_a", &models::vgg_a,
              "VGG-A (torchvision's vgg11 without adaptive pooling), for 3x224x224 inputs: 132,863,336 parameters.");
  nb::class_<models::Reference>(m, "Reference", "A reference network and the input its public benchmark uses.")
      .def_ro("name", &models::Reference::name, "\"alexnet\", \"overfeat_fast\", \"vgg_a\".")
      .def_ro("channels", &models::Reference::channels, "Of one input image.")
      .def_ro("height", &models::Reference::height, "Of one input image.")
      .def_ro("width", &models::Reference::width, "Of one input image.")
      .def_ro("batch", &models::Reference::batch, "The benchmark's batch size.")
      .def(
          "input_shape", [](const models::Reference& r, std::int64_t n) { return as_tuple(r.input(n).dims()); }, "n"_a,
          "(n, channels, height, width).")
      .def(
          "build",
          [](const models::Reference& r, DType dtype, layers::Init init, std::uint64_t seed, std::optional<Backend> b) {
            return build(r.make, dtype, init, seed, b);
          },
          nb::kw_only(), "dtype"_a = DType::f32, "init"_a = layers::Init::kaiming_uniform, "seed"_a = 0,
          "backend"_a = nb::none(), release_gil(), "The network, as its builder function makes it.");
  m.def(
      "references",
      [] {
        const auto refs = models::references();
        return std::vector<models::Reference>(refs.begin(), refs.end());
      },
      "AlexNet, Overfeat fast and VGG-A, in that order.");
  bind_transformer(m);
}

}  // namespace xylem::python

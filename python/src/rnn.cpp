// xylem.layers.LSTM and GRU (PyTorch's nn.LSTM, nn.GRU): layer(x) is the
// output alone, as every layer's; forward_states and backward_states take
// and give the initial and final states too.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include "bindings.hpp"
#include "xylem/rnn.hpp"

namespace xylem::python {
namespace {

using layers::Recurrent;

Tensor or_empty(const std::optional<Tensor>& t) { return t.value_or(Tensor{}); }

template <class L>
void bind_kind(nb::module_& m, const char* name, const char* doc) {
  nb::class_<L, Recurrent>(m, name, doc)
      .def(
          "__init__",
          [](L* self, std::int64_t input_size, std::int64_t hidden_size, int num_layers, bool bidirectional,
             bool batch_first, DType dtype, Generator* gen, std::optional<Backend> b) {
            const auto g = generator_or_default(gen);
            new (self) L(resolve(b), *g, input_size, hidden_size, num_layers, bidirectional, batch_first, {dtype});
          },
          "input_size"_a, "hidden_size"_a, "num_layers"_a = 1, "bidirectional"_a = false, "batch_first"_a = false,
          nb::kw_only(), "dtype"_a = DType::f32, "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
          "Parameters weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (then _reverse), "
          "U(-1/sqrt(H), 1/sqrt(H)) from `generator` (the default one when None).");
}

}  // namespace

void bind_recurrent(nb::module_& m) {
  nb::class_<Recurrent, layers::Layer>(m, "Recurrent", "The base of LSTM and GRU.")
      .def(
          "forward_states",
          [](Recurrent& l, const Tensor& x, std::optional<Tensor> h0, std::optional<Tensor> c0,
             std::optional<Backend> b) {
            auto out = l.forward(resolve(b), x, or_empty(h0), or_empty(c0));
            return std::make_tuple(out.output, out.h_n, defined_or_none(out.c_n));
          },
          "x"_a, "h0"_a = nb::none(), "c0"_a = nb::none(), nb::kw_only(), "backend"_a = nb::none(), release_gil(),
          "(output, h_n, c_n) from x [T, N, I] ([N, T, I] batch first) and the initial states "
          "[num_layers*D, N, H] (None: zeros); c_n is None for a GRU.")
      .def(
          "backward_states",
          [](Recurrent& l, const Tensor& dy, std::optional<Tensor> dh_n, std::optional<Tensor> dc_n,
             std::optional<Backend> b) {
            auto g = l.backward(resolve(b), dy, or_empty(dh_n), or_empty(dc_n));
            return std::make_tuple(g.dx, g.dh0, defined_or_none(g.dc0));
          },
          "dy"_a, "dh_n"_a = nb::none(), "dc_n"_a = nb::none(), nb::kw_only(), "backend"_a = nb::none(),
          release_gil(),
          "(dx, dh0, dc0) from the gradients of output, h_n and c_n (None: zeros); adds the parameters' "
          "gradients into their grad. dc0 is None for a GRU.");
  bind_kind<layers::LSTM>(m, "LSTM", "torch.nn.LSTM: gates i, f, g, o; states h and c.");
  bind_kind<layers::GRU>(m, "GRU", "torch.nn.GRU: gates r, z, n; state h.");
}

}  // namespace xylem::python

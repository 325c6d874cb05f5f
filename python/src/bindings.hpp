#pragma once
// What the module's source files share: each binds one area of the API
// into the module (or a submodule), and the helpers every op binding uses.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "xylem/xylem.hpp"

namespace xylem::python {

namespace nb = nanobind;
using namespace nb::literals;

void bind_errors(nb::module_& m);
void bind_backend(nb::module_& m);
void bind_future(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_numpy(nb::module_& m);
void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls);
void bind_creation(nb::module_& m);
void bind_math(nb::module_& m);
void bind_math_methods(nb::class_<Tensor>& cls);
void bind_fused(nb::module_& m);
void bind_blas(nb::module_& blas);
void bind_fft(nb::module_& fft);
void bind_nn(nb::module_& nn);
void bind_attention(nb::module_& nn);
void bind_optim(nb::module_& optim);
void bind_optimizers(nb::module_& optim);
void bind_layers(nb::module_& layers);
void bind_layer_kinds(nb::module_& layers);
void bind_sequential(nb::module_& layers);
void bind_recurrent(nb::module_& layers);
void bind_losses(nb::module_& losses);
void bind_data(nb::module_& data);
void bind_models(nb::module_& models);
void bind_corpus(nb::module_& data);
void bind_transformer(nb::module_& models);
void bind_safetensors(nb::module_& m);
void bind_capture(nb::module_& m);
// Indexing and shaping, nn.embedding and layers.Embedding: after the submodules.
void bind_index(nb::module_& m);

// The backend an op runs on: the one given, else the calling thread's
// (a `with backend:` block), else the module's default (Backend::best() at
// first use). Needs no GIL.
[[nodiscard]] Backend resolve(const std::optional<Backend>& backend);

// `given`, or the generator random functions share when given none (a
// random seed at first use; xylem.seed() restarts it).
[[nodiscard]] std::shared_ptr<Generator> generator_or_default(Generator* given);

// The seam between NumPy (or any array-like) and tensors.
// A tensor of obj's data (converted to `dtype` when given), on the host:
// a NumPy array's own memory where its layout and dtype allow, else a copy.
[[nodiscard]] Tensor from_python(nb::handle obj, std::optional<DType> dtype);
// A NumPy array of t's elements (its dtype; bf16 as ml_dtypes.bfloat16),
// copied. Waits for the work that writes t, without the GIL.
[[nodiscard]] nb::object to_numpy(const Tensor& t);
// A NumPy view of t's host copy (made current, xylem's work on it waited
// for without the GIL), which then counts as written: the array keeps the
// tensor alive.
[[nodiscard]] nb::object host_view(const Tensor& t);
// The NumPy array a host read returned: `bytes` of `shape`'s elements.
[[nodiscard]] nb::object bytes_to_numpy(std::vector<unsigned char> bytes, const Layout& shape, DType dtype);

// A shape (or strides) as a Python tuple of ints.
[[nodiscard]] nb::tuple as_tuple(std::span<const std::int64_t> values);

// An empty handle (no gradient yet, no state before a first step) as None.
[[nodiscard]] std::optional<Tensor> defined_or_none(const Tensor& t);

// Xylem waits and host work run without the GIL, so other Python threads
// go on meanwhile: every binding that calls into xylem takes this guard.
using release_gil = nb::call_guard<nb::gil_scoped_release>;

}  // namespace xylem::python

// Tensors to and from safetensors files (PyTorch's and Hugging Face's
// format for weights): dicts of name to Tensor.
#include "xylem/safetensors.hpp"

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"

namespace xylem::python {

void bind_safetensors(nb::module_& m) {
  m.def("save_safetensors", &save_safetensors, "path"_a, "tensors"_a,
        "metadata"_a = std::map<std::string, std::string>{}, release_gil(),
        "Writes `tensors` (name to Tensor, each read from wherever its latest data is) and `metadata` (str to str) as "
        "Hugging Face's safetensors writes them. Atomic: a failed save leaves an existing file as it was.");
  m.def("load_safetensors", &load_safetensors, "path"_a, release_gil(),
        "The tensors of a safetensors file (name to host Tensor). IOError for a file short of its header, Unsupported "
        "for a dtype xylem lacks, InvalidArgument for a header that does not hold together.");
  m.def("load_safetensors_metadata", &load_safetensors_metadata, "path"_a, release_gil(),
        "The \"__metadata__\" strings of a safetensors file ({} when it has none).");
}

}  // namespace xylem::python

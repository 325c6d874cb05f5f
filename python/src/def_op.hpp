#pragma once
// Binding an op that has both C++ forms, one writing into `out` and one
// returning a new tensor, as one Python function with out=None.
#include <string>

#include "bindings.hpp"

namespace xylem::python {

// name(<args>, *, out=None, backend=None): make(b, args...) without out,
// into(b, args..., out) with it (returning out). `names` are the nb::arg of
// args, in order.
// (`into` is a plain template parameter: a pack before its last parameter
// would not be deduced.)
template <class... Args, class Into, class... Names>
void def_with_out(nb::module_& m, const char* name, Tensor (*make)(const Backend&, Args...), Into into,
                  const std::string& doc, const Names&... names) {
  m.def(
      name,
      [make, into](Args... args, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return make(resolve(b), args...);
        into(resolve(b), args..., *out);
        return *out;
      },
      names..., nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(), doc.c_str());
}

}  // namespace xylem::python

#pragma once
// Binding an op that has both C++ forms, one writing into `out` and one
// returning a new tensor, as one Python function with out=None.
#include <string>

#include "bindings.hpp"

namespace xylem::python {

// name(<args>, *, out=None, backend=None): make(b, args...) without out,
// into(b, args..., out) with it, returning `out` itself (as NumPy's out=
// does): no new Python object, no copy of the tensor handle. `names` are the
// nb::arg of args, in order. The GIL is released around the C++ calls only.
// (`into` is a plain template parameter: a pack before its last parameter
// would not be deduced.)
template <class... Args, class Into, class... Names>
void def_with_out(nb::module_& m, const char* name, Tensor (*make)(const Backend&, Args...), Into into,
                  const std::string& doc, const Names&... names) {
  m.def(
      name,
      [make, into](Args... args, std::optional<nb::handle_t<Tensor>> out,
                   const std::optional<Backend>& b) -> nb::typed<nb::object, Tensor> {
        if (!out) {
          std::optional<Tensor> made;
          {
            nb::gil_scoped_release unlocked;
            made.emplace(make(resolve(b), args...));
          }
          return nb::typed<nb::object, Tensor>(nb::cast(std::move(*made)));
        }
        Tensor& target = nb::cast<Tensor&>(*out);
        {
          nb::gil_scoped_release unlocked;
          into(resolve(b), args..., target);
        }
        return nb::typed<nb::object, Tensor>(nb::borrow(*out));
      },
      names..., nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), doc.c_str());
}

}  // namespace xylem::python

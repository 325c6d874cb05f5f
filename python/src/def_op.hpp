#pragma once
// Binding an op that has both C++ forms, one writing into `out` and one
// returning a new tensor, as one Python function with out=None.
#include <new>
#include <string>

#include "bindings.hpp"

namespace xylem::python {

// The Python type Tensor, looked up once: nb::type<Tensor>() and casting a
// Tensor by value search nanobind's type map at every call, which a small
// op through Python pays for (module init registers the type before any op
// can run, and it lives as long as the module).
inline nb::handle tensor_type() {
  static const nb::handle type = nb::type<Tensor>();
  return type;
}

// name(<args>, *, out=None, backend=None): make(b, args...) without out,
// into(b, args..., out) with it, returning `out` itself (as NumPy's out=
// does): no new Python object, no copy of the tensor handle. `names` are the
// nb::arg of args, in order. The GIL is released around the C++ calls only.
// (`into` is a plain template parameter: a pack before its last parameter
// would not be deduced.)
//
// Released even for a small native op, which costs it ~0.04 us of ~0.6: the
// call may wait (an input current on another device, whose queue may be
// running a callback that takes the GIL to drop Python-owned memory), and
// from here nothing cheap tells it will not (Tensor::is_current_on flushes
// pending fusion). Holding it needs that answer from the core.
//
// The hot path of a small op through Python: the result is made in place in
// its Python object (allocated first, under the GIL; marked ready once made,
// so that an exception leaves a husk that is freed without destroying a
// Tensor), and `out` is used through the instance the argument's cast checked,
// not found a second time.
template <class... Args, class Into, class... Names>
void def_with_out(nb::module_& m, const char* name, Tensor (*make)(const Backend&, Args...), Into into,
                  const std::string& doc, const Names&... names) {
  m.def(
      name,
      [make, into](Args... args, std::optional<nb::handle_t<Tensor>> out,
                   const std::optional<Backend>& b) -> nb::typed<nb::object, Tensor> {
        if (!out) {
          nb::object made = nb::inst_alloc(tensor_type());
          {
            nb::gil_scoped_release unlocked;
            new (nb::inst_ptr<Tensor>(made)) Tensor(make(resolve(b), args...));
          }
          nb::inst_mark_ready(made);
          return nb::typed<nb::object, Tensor>(std::move(made));
        }
        // An instance whose __init__ never ran holds no Tensor: the cast
        // raises for it as for any other argument.
        Tensor& target = nb::inst_ready(*out) ? *nb::inst_ptr<Tensor>(*out) : nb::cast<Tensor&>(*out);
        {
          nb::gil_scoped_release unlocked;
          into(resolve(b), args..., target);
        }
        return nb::typed<nb::object, Tensor>(nb::borrow(*out));
      },
      names..., nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), doc.c_str());
}

}  // namespace xylem::python

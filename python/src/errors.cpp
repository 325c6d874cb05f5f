// xylem::Error as Python exceptions: xylem.Error, and one subclass per
// ErrorCode that also derives from the built-in exception Python users
// catch for that kind of failure (ShapeMismatch is a ValueError...).
#include <array>

#include "bindings.hpp"

namespace xylem::python {
namespace {

struct ErrorClass {
  const char* name;
  PyObject* builtin;
  const char* doc;
};

// No default: the compiler names a code added to XYLEM_ERROR_CODES and
// missing here.
ErrorClass error_class(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return {"InvalidArgument", PyExc_ValueError, "An argument out of its range, an empty tensor, a bad axis."};
    case ErrorCode::shape_mismatch:
      return {"ShapeMismatch", PyExc_ValueError, "Shapes that do not fit together (or do not broadcast)."};
    case ErrorCode::dtype_mismatch:
      return {"DTypeMismatch", PyExc_TypeError, "A dtype the operation does not take, or operands of two dtypes."};
    case ErrorCode::out_of_memory:
      return {"OutOfMemory", PyExc_MemoryError, "The device (or host) has no memory left for the allocation."};
    case ErrorCode::unsupported:
      return {"Unsupported", PyExc_NotImplementedError, "The device cannot run the operation on that dtype."};
    case ErrorCode::uninitialized_read:
      return {"UninitializedRead", PyExc_RuntimeError, "An input tensor that nothing ever wrote."};
    case ErrorCode::compile_failed:
      return {"CompileFailed", PyExc_RuntimeError, "A device kernel did not compile."};
    case ErrorCode::plugin_unavailable:
      return {"PluginUnavailable", PyExc_RuntimeError, "The framework's plugin did not load (the reason says why)."};
    case ErrorCode::device_lost:
      return {"DeviceLost", PyExc_RuntimeError, "The device failed or went away while running work."};
    case ErrorCode::io:
      return {"IOError", PyExc_OSError, "A file could not be read or written."};
    case ErrorCode::timeout:
      return {"Timeout", PyExc_TimeoutError, "A peer of a communicator did not answer within its deadline."};
    case ErrorCode::communication:
      return {"CommunicationError", PyExc_ConnectionError, "A communicator lost a peer or its transport failed."};
    case ErrorCode::index_out_of_range:
      return {"IndexOutOfRange", PyExc_IndexError, "An index outside the dimension it indexes (negative ones too)."};
    case ErrorCode::internal:
      return {"InternalError", PyExc_RuntimeError, "A bug in xylem: please report it with the message."};
  }
  return {"InternalError", PyExc_RuntimeError, ""};
}

constexpr ErrorCode kCodes[] = {
#define XYLEM_PY_CODE(e) ErrorCode::e,
    XYLEM_ERROR_CODES(XYLEM_PY_CODE)
#undef XYLEM_PY_CODE
};

// The classes, indexed by code; they live as long as the interpreter (the
// module holds a reference to each).
std::array<PyObject*, std::size(kCodes)> classes{};

void raise(const Error& e) {
  PyObject* type = classes[static_cast<std::size_t>(e.code())];
  nb::object error = nb::steal(PyObject_CallFunction(type, "s", e.what()));
  if (!error.is_valid()) return;  // the call set its own exception
  const std::string_view code_name = name(e.code());
  error.attr("code") = nb::str(code_name.data(), code_name.size());
  error.attr("message") = nb::str(e.message().data(), e.message().size());
  PyErr_SetObject(type, error.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::object base = nb::steal(PyErr_NewExceptionWithDoc(
      "xylem.Error",
      "Every failure xylem reports. `code` is the ErrorCode's name (\"shape_mismatch\"), `message` the text "
      "after \"code: \" in str(e). Raised before any tensor changes.",
      PyExc_Exception, nullptr));
  m.attr("Error") = base;
  for (const ErrorCode code : kCodes) {
    const ErrorClass c = error_class(code);
    nb::object bases = nb::make_tuple(base, nb::handle(c.builtin));
    const std::string qualified = std::string("xylem.") + c.name;
    nb::object cls = nb::steal(PyErr_NewExceptionWithDoc(qualified.c_str(), c.doc, bases.ptr(), nullptr));
    classes[static_cast<std::size_t>(code)] = cls.ptr();
    m.attr(c.name) = cls;
  }
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace xylem::python

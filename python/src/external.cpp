// Wrapping Python-owned memory and lending a tensor's memory to Python.
#include "external.hpp"

#include <Python.h>

#include "xylem/interop.hpp"

namespace xylem::python {

std::function<void()> under_gil(std::function<void()> release) {
  return [release = std::move(release)] {
    if (!Py_IsInitialized()) return;
    const PyGILState_STATE state = PyGILState_Ensure();
    release();
    PyGILState_Release(state);
  };
}

Tensor wrap_strided(const Backend& b, char* data, std::span<const std::int64_t> dims,
                    std::span<const std::int64_t> strides, DType dtype, std::function<void()> release) {
  // The first element's index counted from the lowest one.
  std::int64_t first = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (strides[i] < 0 && dims[i] > 0) first -= (dims[i] - 1) * strides[i];
  }
  char* lowest = data - first * static_cast<std::int64_t>(size_of(dtype));
  return interop::wrap(b, lowest, Layout::strided(dims, strides, first), dtype, std::move(release));
}

void* lend(const Tensor& t, const Backend& b, bool wait) {
  void* address = interop::data_pointer(t, b);
  if (wait) interop::synchronize(t, b);
  interop::mark_modified(t, b);
  return address;
}

}  // namespace xylem::python

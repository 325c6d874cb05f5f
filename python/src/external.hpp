#pragma once
// Tensors over memory that Python objects own (NumPy arrays, what DLPack
// hands over), and views of a tensor's memory for them.
#include <functional>
#include <span>

#include "bindings.hpp"

namespace xylem::python {

// `release` wrapped to run with the GIL held, from whichever thread xylem
// runs it on; it does nothing once the interpreter is gone.
[[nodiscard]] std::function<void()> under_gil(std::function<void()> release);

// A tensor over the elements at `data` + strides (in elements, any sign)
// on b's device: wrapped from the lowest element, so negative strides
// work. Throws invalid_argument (without calling release) where
// interop::wrap does: the caller copies instead.
[[nodiscard]] Tensor wrap_strided(const Backend& b, char* data, std::span<const std::int64_t> dims,
                                  std::span<const std::int64_t> strides, DType dtype,
                                  std::function<void()> release);

// t's copy on b's device made current and its address (after waiting for
// xylem's work on it when `wait`), then marked written by the outside: the
// other side may write it. The rule for writes that come later is in
// docs/PYTHON.md.
[[nodiscard]] void* lend(const Tensor& t, const Backend& b, bool wait);

}  // namespace xylem::python

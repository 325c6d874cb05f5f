#pragma once
// xylem.Future: a Future<T> of any T seen from Python. result() waits
// without the GIL; awaiting it in asyncio waits without blocking the loop.
#include <functional>
#include <utility>

#include "bindings.hpp"

namespace xylem::python {

class PyFuture {
 public:
  // `convert` turns the value into a Python object (called with the GIL).
  template <class T, class Convert>
  PyFuture(Future<T> future, Convert convert)
      : event_(future.event()),
        wait_([future] { future.wait(); }),
        value_([future, convert = std::move(convert)]() -> nb::object { return convert(future.get()); }) {}

  // True once the value is there (never blocks).
  [[nodiscard]] bool done() const { return event_ == nullptr || event_->ready(); }
  // Waits (releasing the GIL), then the value; raises the work's error.
  [[nodiscard]] nb::object result() const;
  // Runs fn on a xylem thread (never a queue's) once the work is done.
  void when_done(std::function<void()> fn) const;

 private:
  EventPtr event_;
  std::function<void()> wait_;
  std::function<nb::object()> value_;
};

}  // namespace xylem::python

// xylem.Future (see future.hpp): blocking result() and asyncio's await.
#include "future.hpp"

namespace xylem::python {

nb::object PyFuture::result() const {
  {
    nb::gil_scoped_release unlocked;
    wait_();
  }
  return value_();
}

void PyFuture::when_done(std::function<void()> fn) const { detail::run_when_ready(event_, std::move(fn)); }

namespace {

// Awaiting: an asyncio future of the running loop, completed from the loop's
// own thread (call_soon_threadsafe) once xylem's work is done, so the loop
// never blocks on xylem.
nb::object await_future(nb::handle self) {
  nb::object loop = nb::module_::import_("asyncio").attr("get_running_loop")();
  nb::object waiter = loop.attr("create_future")();
  nb::object settle = nb::cpp_function([](nb::handle future, nb::handle waiter_obj) {
    if (nb::cast<bool>(waiter_obj.attr("done")())) return;  // cancelled meanwhile
    try {
      // Through Python, so that a xylem error arrives as its exception.
      waiter_obj.attr("set_result")(future.attr("result")());
    } catch (nb::python_error& e) {
      waiter_obj.attr("set_exception")(e.value());
    }
  });
  const PyFuture& future = nb::cast<const PyFuture&>(self);
  // The callback owns references to Python objects, which it drops holding
  // the GIL: a raw pointer, as copies of the callback must not own them.
  auto* keep = new nb::tuple(nb::make_tuple(self, loop, settle, waiter));
  future.when_done([keep] {
    nb::gil_scoped_acquire gil;
    const nb::tuple& t = *keep;
    try {
      t[1].attr("call_soon_threadsafe")(t[2], t[0], t[3]);
    } catch (nb::python_error& e) {  // the loop closed before the work ended
      e.discard_as_unraisable("xylem.Future.__await__");
    }
    delete keep;
  });
  return waiter.attr("__await__")();
}

}  // namespace

void bind_future(nb::module_& m) {
  nb::class_<PyFuture>(m, "Future",
                       "A value enqueued work produces (a host read, a scalar result). result() waits for that "
                       "work only; `await future` waits without blocking the asyncio loop.")
      .def("done", &PyFuture::done, "True once the value is there (never blocks).")
      .def("result", &PyFuture::result, "Waits (other Python threads run meanwhile), then returns the value; "
                                        "raises the work's error.")
      .def("__await__", &await_future, "Awaitable from asyncio: the value, without blocking the loop.");
}

}  // namespace xylem::python

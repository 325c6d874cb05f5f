// xylem.capture and xylem.Graph (xylem/capture.hpp).
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"

namespace xylem::python {

void bind_capture(nb::module_& m) {
  nb::class_<Graph>(m, "Graph",
                    "Ops captured once by xylem.capture, run again by replay() on the data their tensors hold "
                    "then. Replays from several threads run one after the other.")
      .def("replay", [](Graph& g) { (void)g.replay(); }, release_gil(),
           "Runs the captured ops again, in order, as one piece of work; returns at once (reading a tensor "
           "waits for it).")
      .def("rebind", &Graph::rebind, "captured"_a, "replacement"_a, release_gil(),
           "From now on use `replacement` wherever the graph used `captured`: same shape, strides and "
           "storage size (else ShapeMismatch) and dtype (else DTypeMismatch); not a tensor a collective of "
           "the graph uses (InvalidArgument: its address is held by the graph).")
      .def("__len__", &Graph::size, "The number of captured ops.")
      .def("__repr__", [](const Graph& g) { return "xylem.Graph(" + std::to_string(g.size()) + " ops)"; });

  m.def(
      "capture",
      [](const Backend& backend, const nb::callable& fn) {
        // The block runs on this thread (ops release the GIL but stay on
        // it), which is the thread the capture records.
        return capture(backend, [&] { fn(); });
      },
      "backend"_a, "fn"_a,
      "Runs fn() once, recording the ops it launches on `backend`, and returns them as a Graph. A host "
      "read (numpy(), printing), a collective off the backend's GPU, an op on another backend or on a "
      "tensor current only elsewhere, or a framework that cannot replay raise (Unsupported, "
      "InvalidArgument) and no graph is made.");
}

}  // namespace xylem::python

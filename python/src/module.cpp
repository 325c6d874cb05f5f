// The module xylem._xylem: the whole public API, one file per area.
#include "bindings.hpp"

NB_MODULE(_xylem, m) {
  using namespace xylem::python;
  m.doc() = "xylem: tensors on any backend (native, OpenCL, CUDA) with BLAS, math and neural-network ops.";
  bind_errors(m);
  bind_backend(m);
  bind_future(m);
  bind_tensor(m);
  bind_numpy(m);
  bind_creation(m);
  bind_math(m);
  nb::module_ blas = m.def_submodule("blas", "BLAS levels 1 to 3 (OpenBLAS, CLBlast, cuBLAS underneath).");
  bind_blas(blas);
  nb::module_ nn = m.def_submodule("nn", "Neural-network operations and their gradients.");
  bind_nn(nn);
  nb::module_ optim = m.def_submodule("optim", "Fused optimizer updates with PyTorch's rules (SGD, Adam, AdamW).");
  bind_optim(optim);
}

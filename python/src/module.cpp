// The module xylem._xylem: the whole public API, one file per area.
#include "bindings.hpp"

namespace {

struct Submodule {
  const char* name;
  const char* doc;
  void (*bind)(nanobind::module_&);
};

}  // namespace

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
  bind_fused(m);
  bind_safetensors(m);
  bind_capture(m);
  // Layers before optim: an optimizer takes a Layer.
  const Submodule submodules[] = {
      {"blas", "BLAS levels 1 to 3 (OpenBLAS, CLBlast, cuBLAS underneath).", &bind_blas},
      {"nn", "Neural-network operations and their gradients.", &bind_nn},
      {"layers", "Network layers with forward (layer(x)) and an explicit backward.", &bind_layers},
      {"optim", "Optimizers with PyTorch's rules (SGD, Adam, AdamW) and their fused updates.", &bind_optim},
      {"losses", "Losses returning (loss, gradient with respect to the prediction).", &bind_losses},
      {"data", "IDX files, Fashion-MNIST, the batch loader and text corpora.", &bind_data},
      {"models", "Reference networks: AlexNet, Overfeat fast, VGG-A; a transformer language model.", &bind_models},
      {"fft", "Discrete Fourier transforms as numpy.fft (FFTW, cuFFT underneath).", &bind_fft},
  };
  for (const Submodule& s : submodules) {
    nb::module_ sub = m.def_submodule(s.name, s.doc);
    s.bind(sub);
  }
  bind_index(m);
}

// xylem.fft: numpy.fft's transforms (fft, ifft, rfft, irfft and the 2-D
// forms), with NumPy's norm names.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "xylem/fft.hpp"

namespace xylem::python {
namespace {

using fft::Norm;

// NumPy's names; None is "backward".
Norm norm_of(const std::optional<std::string>& name) {
  if (!name || *name == "backward") return Norm::backward;
  if (*name == "ortho") return Norm::ortho;
  if (*name == "forward") return Norm::forward;
  throw Error(ErrorCode::invalid_argument,
              "fft: norm \"" + *name + "\" is none of \"backward\", \"ortho\", \"forward\" (or None)");
}

using Transform = Tensor (*)(const Backend&, const Tensor&, Norm);
using Inverse = Tensor (*)(const Backend&, const Tensor&, std::int64_t, Norm);

void def_transform(nb::module_& m, const char* name, Transform f, const char* doc) {
  m.def(
      name,
      [f](const Tensor& x, const std::optional<std::string>& norm, const std::optional<Backend>& b) {
        const Norm n = norm_of(norm);
        nb::gil_scoped_release unlocked;
        return f(resolve(b), x, n);
      },
      "x"_a, nb::kw_only(), "norm"_a = nb::none(), "backend"_a = nb::none(), doc);
}

void def_inverse(nb::module_& m, const char* name, Inverse f, const char* doc) {
  m.def(
      name,
      [f](const Tensor& x, const std::optional<std::int64_t>& n, const std::optional<std::string>& norm,
          const std::optional<Backend>& b) {
        const Norm nm = norm_of(norm);
        nb::gil_scoped_release unlocked;
        return f(resolve(b), x, n.value_or(-1), nm);
      },
      "x"_a, "n"_a = nb::none(), nb::kw_only(), "norm"_a = nb::none(), "backend"_a = nb::none(), doc);
}

}  // namespace

void bind_fft(nb::module_& m) {
  def_transform(m, "fft", &fft::fft,
                "numpy.fft.fft over the last axis of a complex64/complex128 tensor. norm: None or \"backward\", "
                "\"ortho\", \"forward\".");
  def_transform(m, "ifft", &fft::ifft, "numpy.fft.ifft over the last axis.");
  def_transform(m, "rfft", &fft::rfft,
                "numpy.fft.rfft over the last axis of a float32/float64 tensor: n//2 + 1 complex frequencies.");
  def_inverse(m, "irfft", &fft::irfft,
              "numpy.fft.irfft over the last axis: a real signal of length n (None: 2*(m - 1) for m "
              "frequencies; the spectrum is cropped or zero-padded to n//2 + 1).");
  def_transform(m, "fft2", &fft::fft2, "numpy.fft.fft2 over the last two axes.");
  def_transform(m, "ifft2", &fft::ifft2, "numpy.fft.ifft2 over the last two axes.");
  def_transform(m, "rfft2", &fft::rfft2, "numpy.fft.rfft2 over the last two axes of a real tensor.");
  def_inverse(m, "irfft2", &fft::irfft2,
              "numpy.fft.irfft2 over the last two axes; n is the last axis' length, as irfft's.");
}

}  // namespace xylem::python

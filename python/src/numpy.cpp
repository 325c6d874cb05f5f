// NumPy and tensors: xylem.asarray, Tensor.numpy(). The two functions of
// the seam (from_python, to_numpy; see bindings.hpp) copy the elements
// through host memory; zero-copy wrapping of the array's memory goes there.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.hpp"

namespace xylem::python {
namespace {

// The NumPy dtype of each xylem dtype, by NumPy's name; bf16 is ml_dtypes'.
nb::object numpy_dtype(DType d) {
  if (d == DType::bf16) return nb::module_::import_("ml_dtypes").attr("bfloat16");
  const char* names[] = {"float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8", "bool"};
  static_assert(std::size(names) == kDTypeCount);
  return nb::module_::import_("numpy").attr("dtype")(names[static_cast<std::size_t>(d)]);
}

// The xylem dtype of a NumPy dtype; TypeError for those xylem lacks.
DType from_numpy_dtype(nb::handle dtype) {
  nb::object numpy = nb::module_::import_("numpy");
  nb::object wanted = numpy.attr("dtype")(dtype);
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    const auto d = static_cast<DType>(i);
    if (wanted.equal(numpy.attr("dtype")(numpy_dtype(d)))) return d;
  }
  throw Error(ErrorCode::dtype_mismatch,
              "asarray: xylem has no dtype for NumPy's " + nb::cast<std::string>(nb::str(wanted)) +
                  " (it takes float16, bfloat16, float32, float64, int32, int64, uint8, bool)");
}

using HostBytes = nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

}  // namespace

Tensor from_python(nb::handle obj, std::optional<DType> dtype) {
  nb::object numpy = nb::module_::import_("numpy");
  nb::object array = numpy.attr("ascontiguousarray")(obj);
  if (dtype) array = numpy.attr("ascontiguousarray")(array.attr("astype")(numpy_dtype(*dtype)));
  const DType to = dtype ? *dtype : from_numpy_dtype(array.attr("dtype"));
  const std::vector<std::int64_t> dims = nb::cast<std::vector<std::int64_t>>(array.attr("shape"));
  const Layout shape(dims);
  // The bytes, whatever the dtype (NumPy exports no buffer for ml_dtypes').
  const HostBytes bytes = nb::cast<HostBytes>(array.attr("reshape")(-1).attr("view")(numpy.attr("uint8")));
  nb::gil_scoped_release unlocked;
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape, to);
}

nb::object bytes_to_numpy(std::vector<unsigned char> bytes, const Layout& shape, DType dtype) {
  auto* owned = new std::vector<unsigned char>(std::move(bytes));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<unsigned char>*>(p); });
  const std::size_t n = owned->size();
  nb::object flat = nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(owned->data(), {n}, owner));
  nb::list dims;
  for (const std::int64_t d : shape.dims()) dims.append(d);
  return flat.attr("view")(numpy_dtype(dtype)).attr("reshape")(nb::tuple(dims));
}

nb::object to_numpy(const Tensor& t) {
  std::vector<unsigned char> bytes;
  {
    nb::gil_scoped_release unlocked;
    bytes = t.read_bytes().get();
  }
  return bytes_to_numpy(std::move(bytes), Layout(t.shape()), t.dtype());
}

void bind_numpy(nb::module_& m) {
  m.def("asarray", &from_python, "a"_a, "dtype"_a = nb::none(),
        "A tensor of `a`'s elements (a NumPy array, or anything numpy.asarray takes), converted to `dtype` when "
        "given; every xylem dtype, bf16 from ml_dtypes.bfloat16. The data is copied; it lives on the host until "
        "an op uses it elsewhere.");
}

}  // namespace xylem::python

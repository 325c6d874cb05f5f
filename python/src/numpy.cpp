// NumPy and tensors: xylem.asarray wraps an array's memory, Tensor.numpy()
// is a view of the tensor's host copy; both copy only where the layout or
// the dtype asks for it.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.hpp"
#include "external.hpp"

namespace xylem::python {
namespace {

// The NumPy dtype of each xylem dtype, by NumPy's name; bf16 is ml_dtypes'.
nb::object numpy_dtype(DType d) {
  if (d == DType::bf16) return nb::module_::import_("ml_dtypes").attr("bfloat16");
  const char* names[] = {"float16", "bfloat16", "float32", "float64",   "int32",
                         "int64",   "uint8",    "bool",    "complex64", "complex128"};
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
                  " (it takes float16, bfloat16, float32, float64, int32, int64, uint8, bool, complex64, "
                  "complex128)");
}

using HostBytes = nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

}  // namespace

namespace {

// The array's own memory as a tensor on the host, or an empty handle where
// it cannot be: read-only (xylem may write its tensors), byte-swapped, not
// aligned, or strides that are not whole elements.
Tensor wrap_array(nb::handle array, DType dtype) {
  nb::object flags = array.attr("flags");
  if (!nb::cast<bool>(flags.attr("writeable")) || !nb::cast<bool>(flags.attr("aligned")) ||
      !nb::cast<bool>(array.attr("dtype").attr("isnative"))) {
    return {};
  }
  const auto dims = nb::cast<std::vector<std::int64_t>>(array.attr("shape"));
  auto strides = nb::cast<std::vector<std::int64_t>>(array.attr("strides"));
  const auto element = static_cast<std::int64_t>(size_of(dtype));
  std::int64_t numel = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    numel *= dims[i];
    if (strides[i] % element != 0) return {};
    strides[i] /= element;
  }
  if (numel == 0) return {};
  auto* data = reinterpret_cast<char*>(nb::cast<std::uintptr_t>(array.attr("ctypes").attr("data")));
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  try {
    return wrap_strided(Backend::native(), data, dims, strides, dtype, under_gil([owner] { Py_DECREF(owner); }));
  } catch (const Error& e) {
    Py_DECREF(owner);
    if (e.code() != ErrorCode::invalid_argument) throw;
    return {};
  }
}

// obj's elements copied into a new tensor on the host.
Tensor copy_array(nb::handle obj, std::optional<DType> dtype) {
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

}  // namespace

Tensor from_python(nb::handle obj, std::optional<DType> dtype) {
  nb::object numpy = nb::module_::import_("numpy");
  if (nb::isinstance(obj, numpy.attr("ndarray"))) {
    nb::object own = obj.attr("dtype");
    if (!dtype || own.equal(numpy.attr("dtype")(numpy_dtype(*dtype)))) {
      if (Tensor t = wrap_array(obj, dtype ? *dtype : from_numpy_dtype(own)); t.defined()) return t;
    }
  }
  return copy_array(obj, dtype);
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

nb::object host_view(const Tensor& t) {
  // Nothing to share for no elements; a tensor never written raises
  // uninitialized_read on the copying path rather than show garbage.
  if (t.numel() == 0 || t.version() == 0) return to_numpy(t);
  void* data = nullptr;
  {
    nb::gil_scoped_release unlocked;
    data = lend(t, Backend::native(), true);
  }
  const std::vector<std::size_t> dims(t.shape().begin(), t.shape().end());
  const std::span<const std::int64_t> strides = t.layout().strides();
  const auto element = static_cast<std::uint8_t>(size_of(t.dtype()));
  // Unsigned integers of the element's size, viewed as the dtype after:
  // nanobind knows no bf16, NumPy's dtype comes from ml_dtypes. NumPy has no
  // 128-bit integer, so complex elements go as complex.
  const auto code = is_complex(t.dtype()) ? nb::dlpack::dtype_code::Complex : nb::dlpack::dtype_code::UInt;
  const nb::dlpack::dtype as_bytes{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(8 * element), 1};
  auto* owned = new Tensor(t);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::object array = nb::cast(nb::ndarray<nb::numpy>(data, dims.size(), dims.data(), owner, strides.data(), as_bytes));
  return array.attr("view")(numpy_dtype(t.dtype()));
}

void bind_numpy(nb::module_& m) {
  m.def("asarray", &from_python, "a"_a, "dtype"_a = nb::none(),
        "A tensor of `a`'s elements (a NumPy array, or anything numpy.asarray takes), converted to `dtype` when "
        "given; every xylem dtype, bf16 from ml_dtypes.bfloat16. A writeable, aligned NumPy array of the same "
        "dtype is shared, not copied (the tensor keeps it alive); anything else is copied. The data lives on the "
        "host until an op uses it elsewhere.");
}

}  // namespace xylem::python

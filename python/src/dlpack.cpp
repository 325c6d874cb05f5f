// DLPack both ways, as the Python array API standard says: Tensor.__dlpack__,
// Tensor.__dlpack_device__, xylem.from_dlpack. Versioned capsules (DLPack
// 1.x) for consumers that ask max_version >= (1, 0), legacy ones otherwise.
// CUDA memory is ordered through streams, never by a host wait.
#include <Python.h>

#include <string>
#include <utility>

#include "bindings.hpp"
#include "dlpack.hpp"
#include "external.hpp"
#include "xylem/interop.hpp"

namespace xylem::python {
namespace {

constexpr const char* kLegacy = "dltensor";
constexpr const char* kVersioned = "dltensor_versioned";

// DLPack's type of each xylem dtype, in DType order.
constexpr dlpack::DataType kTypes[] = {
    {dlpack::kDLFloat, 16, 1}, {dlpack::kDLBfloat, 16, 1}, {dlpack::kDLFloat, 32, 1}, {dlpack::kDLFloat, 64, 1},
    {dlpack::kDLInt, 32, 1},   {dlpack::kDLInt, 64, 1},    {dlpack::kDLUInt, 8, 1},   {dlpack::kDLBool, 8, 1},
    {dlpack::kDLComplex, 64, 1}, {dlpack::kDLComplex, 128, 1}};
static_assert(std::size(kTypes) == kDTypeCount);

DType from_dl_type(dlpack::DataType t) {
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    if (kTypes[i].code == t.code && kTypes[i].bits == t.bits && t.lanes == 1) return static_cast<DType>(i);
  }
  throw nb::buffer_error(("from_dlpack: xylem has no dtype for DLPack's code " + std::to_string(t.code) + ", " +
                          std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) + " lanes")
                             .c_str());
}

// A (device type, device id) pair; producers give enum members for ints.
std::pair<int, int> device_pair(nb::handle pair) {
  return {nb::cast<int>(nb::int_(pair[0])), nb::cast<int>(nb::int_(pair[1]))};
}

Backend cuda_backend(std::int32_t device) { return Backend::open("cuda:" + std::to_string(device)); }

// The device DLPack shows t on: the calling thread's backend where it is
// CUDA and holds t's latest data, else the host (so OpenCL tensors go as
// their host copy, as they do to NumPy).
Backend home(const Tensor& t) {
  Backend b = resolve(std::nullopt);
  if (b.framework() == "cuda" && t.is_current_on(b)) return b;
  return Backend::native();
}

dlpack::Device dl_device_of(const Backend& b) {
  if (b.framework() == "cuda") return {dlpack::kDLCUDA, b.config().device};
  return {dlpack::kDLCPU, 0};
}

// What a capsule's manager_ctx owns: the tensor (keeping its data alive)
// and the dims and strides the DLTensor points to.
template <class Managed>
struct Exported {
  Managed managed{};
  Tensor tensor;
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
};

template <class Managed>
void delete_exported(Managed* m) {
  delete static_cast<Exported<Managed>*>(m->manager_ctx);
}

// A capsule that nobody consumed frees what it holds; a consumed one was
// renamed "used_..." and its consumer calls the deleter.
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name = std::is_same_v<Managed, dlpack::ManagedTensor> ? kLegacy : kVersioned;
  if (PyCapsule_IsValid(capsule, name) != 0) {
    auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
    m->deleter(m);
  }
}

template <class Managed>
nb::object capsule_of(Tensor t, void* data, const Backend& b, std::uint64_t flags) {
  auto* e = new Exported<Managed>{{}, std::move(t), {}, {}};
  e->dims.assign(e->tensor.shape().begin(), e->tensor.shape().end());
  e->strides.assign(e->tensor.layout().strides().begin(), e->tensor.layout().strides().end());
  dlpack::Tensor& dl = e->managed.dl_tensor;
  dl = {data, dl_device_of(b), e->tensor.rank(), kTypes[static_cast<std::size_t>(e->tensor.dtype())],
        e->dims.data(), e->strides.data(), 0};
  e->managed.manager_ctx = e;
  e->managed.deleter = &delete_exported<Managed>;
  if constexpr (std::is_same_v<Managed, dlpack::ManagedTensorVersioned>) {
    e->managed.version = {1, 0};
    e->managed.flags = flags;
  }
  const char* name = std::is_same_v<Managed, dlpack::ManagedTensor> ? kLegacy : kVersioned;
  PyObject* capsule = PyCapsule_New(&e->managed, name, &capsule_destructor<Managed>);
  if (capsule == nullptr) {
    delete e;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

// The consumer's stream as the standard encodes it: None is CUDA's legacy
// default stream (handle 1), -1 asks for no ordering, 0 is ambiguous.
void order_for(const Tensor& t, const Backend& b, nb::handle stream) {
  const std::intptr_t s = stream.is_none() ? 1 : nb::cast<std::intptr_t>(stream);
  if (s == -1) return;
  if (s == 0) throw nb::buffer_error("__dlpack__: stream 0 is ambiguous on CUDA (pass 1 or 2)");
  nb::gil_scoped_release unlocked;
  interop::export_to(t, b, reinterpret_cast<void*>(s));
}

nb::object to_dlpack(const Tensor& t, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                     nb::handle copy) {
  Backend b = home(t);
  if (!dl_device.is_none()) {
    const auto [type, id] = device_pair(dl_device);
    if (type == dlpack::kDLCPU && id == 0) {
      b = Backend::native();
    } else if (type == dlpack::kDLCUDA) {
      try {
        b = cuda_backend(id);
      } catch (const Error& e) {
        throw nb::buffer_error((std::string("__dlpack__: no such device: ") + e.what()).c_str());
      }
    } else {
      throw nb::buffer_error(("__dlpack__: xylem exports to the host or CUDA, not DLPack device type " +
                              std::to_string(type))
                                 .c_str());
    }
  }
  const bool cuda = b.framework() == "cuda";
  if (!cuda && !stream.is_none()) throw nb::buffer_error("__dlpack__: a host tensor takes stream=None");
  if (t.version() == 0) throw Error(ErrorCode::uninitialized_read, "__dlpack__: the tensor was never written");
  const bool copied = !copy.is_none() && nb::cast<bool>(copy);
  Tensor source = t;
  void* data = nullptr;
  {
    nb::gil_scoped_release unlocked;
    if (copied) source = contiguous(b, t);
    data = lend(source, b, !cuda);
  }
  if (cuda) order_for(source, b, stream);
  const bool versioned = !max_version.is_none() && nb::cast<int>(max_version[0]) >= 1;
  if (versioned) {
    return capsule_of<dlpack::ManagedTensorVersioned>(std::move(source), data, b,
                                                      copied ? dlpack::kFlagIsCopied : 0);
  }
  return capsule_of<dlpack::ManagedTensor>(std::move(source), data, b, 0);
}

// A tensor over a DLPack tensor's memory on b's device; `deleter` frees it
// (the producer's) once xylem is done. A read-only one is copied: xylem's
// tensors are writeable.
Tensor adopt(const Backend& b, const dlpack::Tensor& dl, bool read_only, nb::handle copy,
             std::function<void()> deleter) {
  DType dtype{};
  try {
    dtype = from_dl_type(dl.dtype);
    if (read_only && !copy.is_none() && !nb::cast<bool>(copy)) {
      throw nb::buffer_error("from_dlpack: the array is read-only and copy=False, but xylem's tensors are writeable");
    }
  } catch (...) {
    deleter();
    throw;
  }
  const std::vector<std::int64_t> dims(dl.shape, dl.shape + dl.ndim);
  std::vector<std::int64_t> strides(dims.size());
  if (dl.strides != nullptr) {
    strides.assign(dl.strides, dl.strides + dl.ndim);
  } else {
    strides = std::vector<std::int64_t>(Layout(dims).strides().begin(), Layout(dims).strides().end());
  }
  std::int64_t numel = 1;
  for (const std::int64_t d : dims) numel *= d;
  if (numel == 0) {
    deleter();
    return Tensor::from_bytes(nullptr, 0, Layout(dims), dtype);
  }
  char* data = static_cast<char*>(dl.data) + dl.byte_offset;
  Tensor t;
  try {
    t = wrap_strided(b, data, dims, strides, dtype, under_gil(deleter));
  } catch (const Error& e) {
    deleter();
    if (e.code() != ErrorCode::invalid_argument) throw;
    throw nb::buffer_error((std::string("from_dlpack: ") + e.what()).c_str());
  }
  const bool copied = read_only || (!copy.is_none() && nb::cast<bool>(copy));
  if (!copied) return t;
  nb::gil_scoped_release unlocked;
  return contiguous(b, t);
}

Tensor from_dlpack(nb::handle x, nb::handle copy) {
  if (nb::isinstance<Tensor>(x)) {
    const Tensor t = nb::cast<Tensor>(x);
    if (copy.is_none() || !nb::cast<bool>(copy)) return t;
    nb::gil_scoped_release unlocked;
    return contiguous(home(t), t);
  }
  if (!nb::hasattr(x, "__dlpack__") || !nb::hasattr(x, "__dlpack_device__")) {
    throw nb::type_error("from_dlpack: the object has no __dlpack__ and __dlpack_device__");
  }
  const auto [type, id] = device_pair(x.attr("__dlpack_device__")());
  Backend b = Backend::native();
  nb::object stream = nb::none();
  if (type == dlpack::kDLCUDA) {
    b = cuda_backend(id);
    // The producer makes xylem's stream wait for its work on the memory.
    stream = nb::int_(reinterpret_cast<std::intptr_t>(interop::native_queue(b)));
  } else if (type != dlpack::kDLCPU && type != dlpack::kDLCUDAHost) {
    throw nb::buffer_error(("from_dlpack: xylem takes host or CUDA memory, not DLPack device type " +
                            std::to_string(type))
                               .c_str());
  }
  nb::object capsule;
  try {
    capsule = x.attr("__dlpack__")("stream"_a = stream, "max_version"_a = nb::make_tuple(1, 0));
  } catch (nb::python_error& e) {
    // A producer older than the 2023 standard knows no max_version.
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = x.attr("__dlpack__")("stream"_a = stream);
  }
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, kVersioned) != 0) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(c, kVersioned));
    if (m->version.major != 1) {
      throw nb::buffer_error(("from_dlpack: DLPack " + std::to_string(m->version.major) + "." +
                              std::to_string(m->version.minor) + " is not 1.x")
                                 .c_str());
    }
    PyCapsule_SetName(c, "used_dltensor_versioned");
    return adopt(b, m->dl_tensor, (m->flags & dlpack::kFlagReadOnly) != 0, copy, [m] { m->deleter(m); });
  }
  if (PyCapsule_IsValid(c, kLegacy) != 0) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(c, kLegacy));
    PyCapsule_SetName(c, "used_dltensor");
    return adopt(b, m->dl_tensor, false, copy, [m] {
      if (m->deleter != nullptr) m->deleter(m);
    });
  }
  throw nb::buffer_error("from_dlpack: __dlpack__ returned no unused DLPack capsule");
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("__dlpack__", &to_dlpack, nb::kw_only(), "stream"_a = nb::none(), "max_version"_a = nb::none(),
          "dl_device"_a = nb::none(), "copy"_a = nb::none(),
          "The tensor as a DLPack capsule (the array API standard's protocol): its CUDA copy where the calling "
          "thread's backend is CUDA and holds the latest data, else its host copy; the copy lent counts as "
          "written. `stream` (CUDA) is the consumer's stream, made to wait for xylem's work on the tensor.")
      .def(
          "__dlpack_device__",
          [](const Tensor& t) {
            const dlpack::Device d = dl_device_of(home(t));
            return nb::make_tuple(d.device_type, d.device_id);
          },
          "(device type, device id) of the memory __dlpack__ hands over: (1, 0) the host, (2, i) CUDA device i.");
  m.def("from_dlpack", &from_dlpack, "x"_a, nb::kw_only(), "copy"_a = nb::none(),
        "A tensor sharing the memory of `x` (anything with __dlpack__: NumPy, PyTorch, CuPy, JAX arrays), on the "
        "host or its CUDA device; xylem's stream waits for the producer's work. Read-only arrays, and copy=True, "
        "are copied.");
}

}  // namespace xylem::python

// Backends and what describes them: DType, Op, Hardware, BackendConfig,
// FrameworkStatus; the default backend ops run on; the `xylem info` report.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>
#include <sstream>
#include <vector>

#include "bindings.hpp"
#include "info_report.hpp"

namespace xylem::python {
namespace {

std::mutex default_mutex;
std::optional<Backend> default_backend;  // guarded by default_mutex
thread_local std::vector<Backend> entered;  // `with backend:` blocks of this thread, innermost last

template <class T>
std::string printed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

void bind_enums(nb::module_& m) {
  nb::enum_<DType> dtype(m, "DType", "Element types; f16 and bf16 are storage types computed in f32.");
#define XYLEM_PY_DTYPE(e, n, b, f) dtype.value(n, DType::e);
  XYLEM_DTYPES(XYLEM_PY_DTYPE)
#undef XYLEM_PY_DTYPE
  dtype.def_prop_ro("itemsize", [](DType d) { return size_of(d); }, "Bytes per element.")
      .def_prop_ro("is_floating", [](DType d) { return is_floating(d); }, "True for f16, bf16, f32 and f64.")
      .def_prop_ro("is_complex", [](DType d) { return is_complex(d); }, "True for c64 and c128.")
      .def("__str__", [](DType d) { return std::string(name(d)); });
#define XYLEM_PY_DTYPE_ALIAS(e, n, b, f) m.attr(#e) = DType::e;
  XYLEM_DTYPES(XYLEM_PY_DTYPE_ALIAS)
#undef XYLEM_PY_DTYPE_ALIAS

  nb::enum_<Op> op(m, "Op", "Every operation xylem knows, as Backend.supports asks about it (blas_gemm...).");
#define XYLEM_PY_OP(set, fn, ...) op.value(#set "_" #fn, Op::set##_##fn);
  XYLEM_OPS(XYLEM_PY_OP)
#undef XYLEM_PY_OP

  nb::enum_<HardwareKind>(m, "HardwareKind", "What sort of processing unit a Hardware is.")
      .value("cpu", HardwareKind::cpu)
      .value("gpu", HardwareKind::gpu)
      .value("accelerator", HardwareKind::accelerator)
      .value("dsp", HardwareKind::dsp)
      .value("other", HardwareKind::other);
  nb::enum_<Fallback>(m, "Fallback", "What a backend does with an operation its device cannot run.")
      .value("raise_", Fallback::raise, "raise Unsupported")
      .value("native", Fallback::native, "run it on the host instead, moving the tensors");
}

void bind_hardware(nb::module_& m) {
  nb::class_<Capabilities>(m, "Capabilities", "What a processing unit can do beyond f32 arithmetic.")
      .def_ro("fp16", &Capabilities::fp16, "Computes in half precision.")
      .def_ro("bf16", &Capabilities::bf16, "Computes in bfloat16.")
      .def_ro("fp64", &Capabilities::fp64, "Computes in double precision (else f64 ops are unsupported).")
      .def_ro("unified_memory", &Capabilities::unified_memory, "Shares memory with the host.")
      .def_ro("peer_access", &Capabilities::peer_access, "Reads other devices' memory directly.");
  nb::class_<Hardware>(m, "Hardware", "One processing unit a framework can see, as `xylem info` lists it.")
      .def_ro("framework", &Hardware::framework, "\"native\", \"opencl\" or \"cuda\".")
      .def_ro("index", &Hardware::index, "The N of \"opencl:N\".")
      .def_ro("name", &Hardware::name, "The device's own name.")
      .def_ro("vendor", &Hardware::vendor, "Who made it.")
      .def_ro("driver", &Hardware::driver, "Driver or runtime version, when known.")
      .def_ro("kind", &Hardware::kind, "CPU, GPU...")
      .def_ro("compute_units", &Hardware::compute_units, "Cores, compute units or multiprocessors.")
      .def_ro("memory_bytes", &Hardware::memory_bytes, "Global memory in bytes.")
      .def_ro("caps", &Hardware::caps, "Dtypes and memory features.")
      .def_ro("details", &Hardware::details, "Framework-specific details.")
      .def_prop_ro("id", &Hardware::id, "\"cuda:0\", \"opencl:1\"...")
      .def("__repr__", &printed<Hardware>);
  nb::class_<FrameworkStatus>(m, "FrameworkStatus", "One framework as `xylem info` shows it.")
      .def_ro("name", &FrameworkStatus::name, "\"native\", \"opencl\", \"cuda\".")
      .def_ro("available", &FrameworkStatus::available, "Whether a Backend can be opened on it.")
      .def_ro("reason", &FrameworkStatus::reason, "Why not, when unavailable.")
      .def_ro("source", &FrameworkStatus::source, "\"built in\" or the plugin's path.")
      .def_ro("hardware", &FrameworkStatus::hardware, "The devices it sees.")
      .def("__repr__", [](const FrameworkStatus& s) {
        return "FrameworkStatus(" + s.name + (s.available ? ", available)" : ", unavailable: " + s.reason + ")");
      });
}

void bind_backend_class(nb::module_& m) {
  nb::class_<BackendConfig>(m, "BackendConfig", "How a Backend is made; the defaults pick the best device present.")
      .def(nb::init<>())
      .def("__init__",
           [](BackendConfig* c, std::string framework, int device, std::optional<HardwareKind> kind,
              std::uint64_t memory_limit, Fallback fallback) {
             new (c) BackendConfig{std::move(framework), device, kind, memory_limit, fallback};
           },
           "framework"_a = "", "device"_a = -1, "kind"_a = nb::none(), "memory_limit"_a = 0,
           "fallback"_a = Fallback::raise, "A configuration; every field has its default.")
      .def_rw("framework", &BackendConfig::framework, "\"native\", \"opencl\", \"cuda\"; empty: the best present.")
      .def_rw("device", &BackendConfig::device, "Index within the framework; -1: the best one.")
      .def_rw("kind", &BackendConfig::kind, "Prefer this kind of hardware.")
      .def_rw("memory_limit", &BackendConfig::memory_limit, "Bytes; 0: the framework's default.")
      .def_rw("fallback", &BackendConfig::fallback, "When the device cannot run an operation.");

  nb::class_<Backend>(m, "Backend",
                      "One framework and one of its devices: where operations run. Cheap to copy; usable from "
                      "several threads. `with backend:` makes it the default of the calling thread.")
      .def(nb::init<const BackendConfig&>(), "config"_a, release_gil(), "The backend `config` describes.")
      .def_static("native", &Backend::native, release_gil(), "The host CPU. Always works.")
      .def_static("best", &Backend::best, release_gil(),
                  "CUDA, then OpenCL GPUs and accelerators, then native; XYLEM_BACKEND overrides the choice.")
      .def_static("open", &Backend::open, "spec"_a, release_gil(),
                  "\"native\", \"opencl:0\", \"cuda:1\"; a framework without index takes its best device.")
      .def_static("frameworks", &Backend::frameworks, release_gil(),
                  "Every framework xylem knows, loaded or not, with the reason.")
      .def_prop_ro("hardware", &Backend::hardware, "The device this backend runs on.")
      .def_prop_ro("framework", &Backend::framework, "\"native\", \"opencl\" or \"cuda\".")
      .def_prop_ro("id", &Backend::id, "\"cuda:0\"...")
      .def_prop_ro("config", &Backend::config, "The configuration, with the framework and device it resolved to.")
      .def("supports", &Backend::supports, "op"_a, "dtype"_a,
           "Whether this backend's device runs `op` on `dtype` (without falling back).")
      .def("synchronize", &Backend::synchronize, release_gil(),
           "Waits for all work enqueued on this device; raises an error that work raised.")
      .def("__eq__", [](const Backend& a, const Backend& b) { return a == b; })
      .def("__hash__", [](const Backend& b) { return std::hash<std::string>{}(b.id()); })
      .def("__repr__", &printed<Backend>)
      .def("__enter__",
           [](const Backend& b) {
             entered.push_back(b);
             return b;
           },
           "Makes this backend the calling thread's default until the block ends.")
      .def("__exit__", [](const Backend&, nb::handle, nb::handle, nb::handle) { entered.pop_back(); },
           "type"_a.none(), "value"_a.none(), "traceback"_a.none(), "Restores the previous default.");

  m.def("default_backend", [] { return resolve(std::nullopt); }, release_gil(),
        "The backend ops run on when given none: the innermost `with backend:` of this thread, else the one "
        "set_default_backend() set, else Backend.best() (chosen at first use).");
  m.def("set_default_backend",
        [](const Backend& b) {
          std::lock_guard lock(default_mutex);
          default_backend = b;
        },
        "backend"_a, "Makes `backend` the default of every thread (outside `with backend:` blocks).");
  m.def("info",
        [] {
          std::ostringstream os;
          cli::print_info(os);
          return os.str();
        },
        release_gil(), "The report `xylem info` prints: every framework, available or not and why, its hardware.");
  m.def("transfer_count", &transfer_count, "Transfers between devices since start, all tensors together.");
  nb::class_<TransferRoutes>(m, "TransferRoutes", "Transfers of tensor data, by the route each took.")
      .def_ro("uploads", &TransferRoutes::uploads, "From the host copy to a device.")
      .def_ro("downloads", &TransferRoutes::downloads, "From a device to the host copy.")
      .def_ro("device_to_device", &TransferRoutes::device_to_device,
              "Directly within one framework: one device, or peer to peer.")
      .def_ro("staged", &TransferRoutes::staged, "Between two devices through the host copy (also counted in its parts).")
      .def_ro("bytes", &TransferRoutes::bytes, "Bytes moved by uploads, downloads and direct copies.")
      .def_prop_ro("total", &TransferRoutes::total, "Copies made (staged ones in their parts).")
      .def("__repr__", [](const TransferRoutes& r) {
        return "TransferRoutes(uploads=" + std::to_string(r.uploads) + ", downloads=" + std::to_string(r.downloads) +
               ", device_to_device=" + std::to_string(r.device_to_device) + ", staged=" + std::to_string(r.staged) +
               ", bytes=" + std::to_string(r.bytes) + ")";
      });
  m.def("transfer_routes", [] { return transfer_routes(); }, "Transfers since start, all tensors together, by route.");
}

}  // namespace

Backend resolve(const std::optional<Backend>& backend) {
  if (backend) return *backend;
  if (!entered.empty()) return entered.back();
  std::lock_guard lock(default_mutex);
  if (!default_backend) default_backend = Backend::best();
  return *default_backend;
}

void bind_backend(nb::module_& m) {
  bind_enums(m);
  bind_hardware(m);
  bind_backend_class(m);
}

}  // namespace xylem::python

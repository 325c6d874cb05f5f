#include "cudnn_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "../vendor_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

#define XYLEM_STRINGIFY2(x) #x
#define XYLEM_STRINGIFY(x) XYLEM_STRINGIFY2(x)
constexpr const char* kSoname = "libcudnn.so." XYLEM_STRINGIFY(CUDNN_MAJOR);

struct Loaded {
  CudnnLibrary lib;
  bool ok = false;
  std::string why_not;
  std::string path;  // of the library loaded
};

Loaded load() {
  Loaded r;
  if (const char* v = std::getenv("XYLEM_CUDA_CUDNN"); v != nullptr && std::string_view(v) == "0") {
    r.why_not = "disabled by XYLEM_CUDA_CUDNN=0";
    return r;
  }
#ifdef XYLEM_CUDNN_LIBRARY_DIR
  const char* build_directory = XYLEM_CUDNN_LIBRARY_DIR;
#else
  const char* build_directory = nullptr;
#endif
  const VendorLibrary opened = open_vendor_library(kSoname, build_directory);
  if (opened.handle == nullptr) {
    r.why_not = opened.why_not;
    return r;
  }
  r.path = opened.path;
  void* const handle = opened.handle;
#define XYLEM_CUDNN_LOOKUP(name)                                                       \
  r.lib.name = reinterpret_cast<decltype(r.lib.name)>(dlsym(handle, #name));           \
  if (r.lib.name == nullptr) {                                                         \
    r.why_not = std::string(kSoname) + " has no " #name;                              \
    return r;                                                                          \
  }
  XYLEM_CUDNN_FUNCTIONS(XYLEM_CUDNN_LOOKUP)
#undef XYLEM_CUDNN_LOOKUP
  // cuDNN 9 numbers versions major*10000 + minor*100 + patch; within a
  // major version the legacy convolution API we call is stable.
  const std::size_t version = r.lib.cudnnGetVersion();
  if (version / 10000 != CUDNN_MAJOR) {
    r.why_not = "cuDNN " + std::to_string(version) + " found, built for major version " +
                std::to_string(CUDNN_MAJOR);
    return r;
  }
  r.ok = true;
  return r;
}

const Loaded& loaded() {
  static const Loaded once = load();  // thread-safe initialisation
  return once;
}

}  // namespace

const CudnnLibrary* cudnn_library(std::string* why_not) {
  const Loaded& l = loaded();
  if (!l.ok && why_not) *why_not = l.why_not;
  return l.ok ? &l.lib : nullptr;
}

std::string cudnn_description() {
  const Loaded& l = loaded();
  if (!l.ok) return "cuDNN not used (" + l.why_not + ")";
  const std::size_t v = l.lib.cudnnGetVersion();
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
         (l.path.empty() ? "" : " (" + l.path + ")");
}

void throw_cudnn(const CudnnLibrary& lib, cudnnStatus_t status, const char* call, int device,
                 std::string_view what) {
  // cuDNN 9 groups its codes by thousands: 2xxx bad parameter, 3xxx not
  // supported, 4xxx internal (4003/4004: allocation), 5xxx execution.
  const int group = int(status) / 1000;
  const ErrorCode code = status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                                 status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                             ? ErrorCode::out_of_memory
                         : group == 2 ? ErrorCode::invalid_argument
                         : group == 3 ? ErrorCode::unsupported
                         : group == 5 ? ErrorCode::device_lost
                                      : ErrorCode::internal;
  throw Error(code, "cuda:" + std::to_string(device) + " " + std::string(what) + ": " + call + " failed: " +
                        lib.cudnnGetErrorString(status));
}

}  // namespace xylem::cuda

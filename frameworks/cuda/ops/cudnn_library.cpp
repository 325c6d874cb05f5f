#include "cudnn_library.hpp"

#include <cstdlib>

#include "../vendor_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

constexpr const char* kSoname = "libcudnn.so." XYLEM_VENDOR_STRING(CUDNN_MAJOR);

const char* find_all(void* handle, CudnnLibrary& lib) {
  XYLEM_CUDNN_FUNCTIONS(XYLEM_VENDOR_FIND)
  return nullptr;
}

// cuDNN 9 numbers versions major*10000 + minor*100 + patch; within a
// major version the legacy convolution API we call is stable.
std::string why_wrong_version(CudnnLibrary& lib) {
  const std::size_t version = lib.cudnnGetVersion();
  if (version / 10000 == CUDNN_MAJOR) return {};
  return "cuDNN " + std::to_string(version) + " found, built for major version " + std::to_string(CUDNN_MAJOR);
}

LoadedLibrary<CudnnLibrary> load() {
  if (const char* v = std::getenv("XYLEM_CUDA_CUDNN"); v != nullptr && std::string_view(v) == "0") {
    LoadedLibrary<CudnnLibrary> r;
    r.why_not = "disabled by XYLEM_CUDA_CUDNN=0";
    return r;
  }
#ifdef XYLEM_CUDNN_LIBRARY_DIR
  const char* build_directory = XYLEM_CUDNN_LIBRARY_DIR;
#else
  const char* build_directory = nullptr;
#endif
  return load_functions<CudnnLibrary>(open_vendor_library(kSoname, build_directory), kSoname, find_all,
                                      why_wrong_version);
}

const LoadedLibrary<CudnnLibrary>& loaded() { return load_once<load>(); }

}  // namespace

const CudnnLibrary* cudnn_library(std::string* why_not) {
  const auto& l = loaded();
  if (!l.ok && why_not) *why_not = l.why_not;
  return l.ok ? &l.lib : nullptr;
}

std::string cudnn_description() {
  const auto& l = loaded();
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

#include "cufft_library.hpp"

#include "../vendor_library.hpp"

namespace xylem::cuda {
namespace {

constexpr const char* kSoname = "libcufft.so." XYLEM_VENDOR_STRING(CUFFT_VER_MAJOR);

const char* find_all(void* handle, CufftLibrary& lib) {
  XYLEM_CUFFT_FUNCTIONS(XYLEM_VENDOR_FIND)
  return nullptr;
}

// cuFFT numbers versions major*1000 + minor*100 + patch (12000 for 12.0.0).
std::string why_wrong_version(CufftLibrary& lib) {
  int version = 0;
  if (lib.cufftGetVersion(&version) == CUFFT_SUCCESS && version / 1000 == CUFFT_VER_MAJOR) return {};
  return std::string(kSoname) + " reports version " + std::to_string(version) + ", built for major version " +
         std::to_string(CUFFT_VER_MAJOR);
}

LoadedLibrary<CufftLibrary> load() {
  return load_functions<CufftLibrary>(open_vendor_library(kSoname, toolkit_library_directory()), kSoname, find_all,
                                      why_wrong_version);
}

}  // namespace

const CufftLibrary* cufft_library(std::string* why_not) noexcept {
  try {
    const auto& once = load_once<load>();
    if (!once.ok && why_not) *why_not = "cuFFT is needed for the fft ops: " + once.why_not;
    return once.ok ? &once.lib : nullptr;
  } catch (...) {
    if (why_not) *why_not = "cuFFT could not be loaded (out of memory)";
    return nullptr;
  }
}

const char* cufft_status_name(cufftResult r) noexcept {
  switch (r) {
#define XYLEM_CUFFT_CASE(e) \
  case e:                   \
    return #e;
    XYLEM_CUFFT_CASE(CUFFT_SUCCESS)
    XYLEM_CUFFT_CASE(CUFFT_INVALID_PLAN)
    XYLEM_CUFFT_CASE(CUFFT_ALLOC_FAILED)
    XYLEM_CUFFT_CASE(CUFFT_INVALID_TYPE)
    XYLEM_CUFFT_CASE(CUFFT_INVALID_VALUE)
    XYLEM_CUFFT_CASE(CUFFT_INTERNAL_ERROR)
    XYLEM_CUFFT_CASE(CUFFT_EXEC_FAILED)
    XYLEM_CUFFT_CASE(CUFFT_SETUP_FAILED)
    XYLEM_CUFFT_CASE(CUFFT_INVALID_SIZE)
    XYLEM_CUFFT_CASE(CUFFT_UNALIGNED_DATA)
    XYLEM_CUFFT_CASE(CUFFT_INVALID_DEVICE)
    XYLEM_CUFFT_CASE(CUFFT_NO_WORKSPACE)
    XYLEM_CUFFT_CASE(CUFFT_NOT_IMPLEMENTED)
    XYLEM_CUFFT_CASE(CUFFT_NOT_SUPPORTED)
#undef XYLEM_CUFFT_CASE
    default:
      return "an unknown cuFFT status";
  }
}

}  // namespace xylem::cuda

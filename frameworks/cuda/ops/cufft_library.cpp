#include "cufft_library.hpp"

#include <dlfcn.h>

#include "../vendor_library.hpp"

namespace xylem::cuda {
namespace {

#define XYLEM_CUFFT_STRING2(x) #x
#define XYLEM_CUFFT_STRING(x) XYLEM_CUFFT_STRING2(x)
constexpr const char* kSoname = "libcufft.so." XYLEM_CUFFT_STRING(CUFFT_VER_MAJOR);

struct Loaded {
  CufftLibrary lib;
  bool ok = false;
  std::string why_not;
};

Loaded load() {
  Loaded r;
#ifdef XYLEM_CUBLAS_LIBRARY_DIR
  const char* build_directory = XYLEM_CUBLAS_LIBRARY_DIR;  // the toolkit's library directory
#else
  const char* build_directory = nullptr;
#endif
  const VendorLibrary opened = open_vendor_library(kSoname, build_directory);
  if (opened.handle == nullptr) {
    r.why_not = opened.why_not;
    return r;
  }
  void* const handle = opened.handle;
#define XYLEM_CUFFT_LOOKUP(name)                                             \
  r.lib.name = reinterpret_cast<decltype(r.lib.name)>(dlsym(handle, #name)); \
  if (r.lib.name == nullptr) {                                               \
    r.why_not = std::string(kSoname) + " has no " #name;                    \
    return r;                                                                \
  }
  XYLEM_CUFFT_FUNCTIONS(XYLEM_CUFFT_LOOKUP)
#undef XYLEM_CUFFT_LOOKUP
  // cuFFT numbers versions major*1000 + minor*100 + patch (12000 for 12.0.0).
  int version = 0;
  if (r.lib.cufftGetVersion(&version) != CUFFT_SUCCESS || version / 1000 != CUFFT_VER_MAJOR) {
    r.why_not = std::string(kSoname) + " reports version " + std::to_string(version) + ", built for major version " +
                std::to_string(CUFFT_VER_MAJOR);
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

const CufftLibrary* cufft_library(std::string* why_not) noexcept {
  try {
    static const Loaded once = load();  // thread-safe initialisation
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

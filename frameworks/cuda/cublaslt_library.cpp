#include "cublaslt_library.hpp"

#include "vendor_library.hpp"

namespace xylem::cuda {
namespace {

constexpr const char* kSoname = "libcublasLt.so." XYLEM_VENDOR_STRING(CUBLAS_VER_MAJOR);

const char* find_all(void* handle, CublasLtLibrary& lib) {
  XYLEM_CUBLASLT_FUNCTIONS(XYLEM_VENDOR_FIND)
  return nullptr;
}

// cublasLtGetVersion() is major * 10000 + minor * 100 + patch.
std::string why_wrong_version(CublasLtLibrary& lib) {
  const auto major = static_cast<int>(lib.cublasLtGetVersion() / 10000);
  if (major == CUBLAS_VER_MAJOR) return {};
  return std::string(kSoname) + " reports major version " + std::to_string(major) + ", built for " +
         std::to_string(CUBLAS_VER_MAJOR);
}

LoadedLibrary<CublasLtLibrary> load() {
  return load_functions<CublasLtLibrary>(open_vendor_library(kSoname, toolkit_library_directory()), kSoname,
                                         find_all, why_wrong_version);
}

}  // namespace

const CublasLtLibrary* cublaslt(std::string* why) {
  const auto& l = load_once<load>();
  if (!l.ok && why != nullptr) *why = l.why_not;
  return l.ok ? &l.lib : nullptr;
}

}  // namespace xylem::cuda

#include "cublas_library.hpp"

#include <type_traits>

#include "vendor_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

// The hand-written gemm types name exactly the exported overloads (the
// casts, unevaluated, fail to compile when no overload matches).
#define XYLEM_CUBLAS_TYPE_CHECK(name, type) \
  static_assert(std::is_same_v<decltype(static_cast<type>(&::name)), type>);
XYLEM_CUBLAS_TYPED_FUNCTIONS(XYLEM_CUBLAS_TYPE_CHECK)
#undef XYLEM_CUBLAS_TYPE_CHECK

constexpr const char* kSoname = "libcublas.so." XYLEM_VENDOR_STRING(CUBLAS_VER_MAJOR);

// The typed gemms take their pointer types from the table, like the rest.
#define XYLEM_CUBLAS_FIND_TYPED(name, type) XYLEM_VENDOR_FIND(name)
const char* find_all(void* handle, CublasLibrary& lib) {
  XYLEM_CUBLAS_FUNCTIONS(XYLEM_VENDOR_FIND)
  XYLEM_CUBLAS_TYPED_FUNCTIONS(XYLEM_CUBLAS_FIND_TYPED)
  return nullptr;
}
#undef XYLEM_CUBLAS_FIND_TYPED

std::string why_wrong_version(CublasLibrary& lib) {
  int major = 0;
  if (lib.cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS && major == CUBLAS_VER_MAJOR) return {};
  return std::string(kSoname) + " reports major version " + std::to_string(major) + ", built for " +
         std::to_string(CUBLAS_VER_MAJOR);
}

LoadedLibrary<CublasLibrary> load() {
  return load_functions<CublasLibrary>(open_vendor_library(kSoname, toolkit_library_directory()), kSoname,
                                       find_all, why_wrong_version);
}

const LoadedLibrary<CublasLibrary>& loaded() { return load_once<load>(); }

}  // namespace

const CublasLibrary& cublas() {
  const auto& l = loaded();
  if (!l.ok) throw Error(ErrorCode::unsupported, "cuda: cuBLAS is needed for gemm and gemv: " + l.why_not);
  return l.lib;
}

std::string cublas_description() {
  const auto& l = loaded();
  if (!l.ok) return "cuBLAS not found (" + l.why_not + ")";
  int v[3] = {};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i) (void)l.lib.cublasGetProperty(parts[i], &v[i]);
  return "cuBLAS " + std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]) +
         (l.path.empty() ? "" : " (" + l.path + ")");
}

}  // namespace xylem::cuda

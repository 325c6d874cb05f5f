#include "cublas_library.hpp"

#include <dlfcn.h>

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

// Two steps, so that a name cublas_v2.h redefines (cublasCreate ->
// cublasCreate_v2) is looked up by the symbol it stands for.
#define XYLEM_CUBLAS_STRING2(x) #x
#define XYLEM_CUBLAS_STRING(x) XYLEM_CUBLAS_STRING2(x)
constexpr const char* kSoname = "libcublas.so." XYLEM_CUBLAS_STRING(CUBLAS_VER_MAJOR);

struct Loaded {
  CublasLibrary lib;
  bool ok = false;
  std::string why_not;
  std::string path;  // of the library loaded
};

Loaded load() {
  Loaded r;
#ifdef XYLEM_CUBLAS_LIBRARY_DIR
  const char* build_directory = XYLEM_CUBLAS_LIBRARY_DIR;
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
#define XYLEM_CUBLAS_LOOKUP_AS(name, type)                                              \
  r.lib.name = reinterpret_cast<type>(dlsym(handle, XYLEM_CUBLAS_STRING(name)));       \
  if (r.lib.name == nullptr) {                                                         \
    r.why_not = std::string(kSoname) + " has no " XYLEM_CUBLAS_STRING(name);           \
    return r;                                                                          \
  }
#define XYLEM_CUBLAS_LOOKUP(name) XYLEM_CUBLAS_LOOKUP_AS(name, decltype(r.lib.name))
  XYLEM_CUBLAS_FUNCTIONS(XYLEM_CUBLAS_LOOKUP)
  XYLEM_CUBLAS_TYPED_FUNCTIONS(XYLEM_CUBLAS_LOOKUP_AS)
#undef XYLEM_CUBLAS_LOOKUP
#undef XYLEM_CUBLAS_LOOKUP_AS
  int major = 0;
  if (r.lib.cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS || major != CUBLAS_VER_MAJOR) {
    r.why_not = std::string(kSoname) + " reports major version " + std::to_string(major) + ", built for " +
                std::to_string(CUBLAS_VER_MAJOR);
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

const CublasLibrary& cublas() {
  const Loaded& l = loaded();
  if (!l.ok) throw Error(ErrorCode::unsupported, "cuda: cuBLAS is needed for gemm and gemv: " + l.why_not);
  return l.lib;
}

std::string cublas_description() {
  const Loaded& l = loaded();
  if (!l.ok) return "cuBLAS not found (" + l.why_not + ")";
  int v[3] = {};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i) (void)l.lib.cublasGetProperty(parts[i], &v[i]);
  return "cuBLAS " + std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]) +
         (l.path.empty() ? "" : " (" + l.path + ")");
}

}  // namespace xylem::cuda

#include "nvrtc_library.hpp"

#include <dlfcn.h>

#include "../vendor_library.hpp"

namespace xylem::cuda {
namespace {

struct Loaded {
  NvrtcLibrary lib;
  bool ok = false;
  std::string why_not;
};

// NVRTC of the toolkit the plugin was built with first, then the previous
// major version: either compiles the fused kernels (plain CUDA C++).
Loaded load() {
  Loaded r;
#ifdef XYLEM_CUBLAS_LIBRARY_DIR
  const char* build_directory = XYLEM_CUBLAS_LIBRARY_DIR;  // the toolkit's library directory
#else
  const char* build_directory = nullptr;
#endif
  VendorLibrary opened;
  for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12"}) {
    opened = open_vendor_library(soname, build_directory);
    if (opened.handle) break;
    r.why_not += (r.why_not.empty() ? "" : "; ") + opened.why_not;
  }
  if (opened.handle == nullptr) return r;
  r.why_not.clear();
  void* const handle = opened.handle;
#define XYLEM_NVRTC_LOOKUP(name, type)                                       \
  r.lib.name = reinterpret_cast<decltype(r.lib.name)>(dlsym(handle, #name)); \
  if (r.lib.name == nullptr) {                                               \
    r.why_not = opened.path + " has no " #name;                             \
    return r;                                                                \
  }
  XYLEM_NVRTC_FUNCTIONS(XYLEM_NVRTC_LOOKUP)
#undef XYLEM_NVRTC_LOOKUP
  if (r.lib.nvrtcVersion(&r.lib.major, &r.lib.minor) != kNvrtcSuccess) {
    r.why_not = opened.path + ": nvrtcVersion failed";
    return r;
  }
  r.lib.path = opened.path;
  r.ok = true;
  return r;
}

}  // namespace

const NvrtcLibrary* nvrtc_library(std::string* why_not) noexcept {
  try {
    static const Loaded once = load();  // thread-safe initialisation
    if (!once.ok && why_not) *why_not = "NVRTC is needed for math::fused (fusion is off on CUDA): " + once.why_not;
    return once.ok ? &once.lib : nullptr;
  } catch (...) {
    if (why_not) *why_not = "NVRTC could not be loaded (out of memory)";
    return nullptr;
  }
}

}  // namespace xylem::cuda

namespace xylem::cuda {

std::string fusion_description() {
  std::string why;
  const NvrtcLibrary* lib = nvrtc_library(&why);
  if (lib == nullptr) return "fusion off (" + why + ")";
  return "fusion: NVRTC " + std::to_string(lib->major) + "." + std::to_string(lib->minor) +
         (lib->path.empty() ? "" : " (" + lib->path + ")");
}

}  // namespace xylem::cuda

#include "vendor_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <vector>

namespace xylem::cuda {

VendorLibrary open_vendor_library(const std::string& soname, const char* build_directory) {
  std::vector<std::string> candidates{soname};
  if (build_directory != nullptr) candidates.push_back(std::string(build_directory) + "/" + soname);
  candidates.push_back("/usr/local/cuda/lib64/" + soname);
  candidates.push_back("/usr/local/cuda/lib/" + soname);
  VendorLibrary r;
  for (const std::string& path : candidates)
    if ((r.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  if (r.handle == nullptr) {
    const char* err = dlerror();
    r.why_not = soname + " not found (" + (err ? err : "dlopen failed") + ")";
    return r;
  }
  if (link_map* map = nullptr; dlinfo(r.handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) r.path = map->l_name;
  return r;
}

const char* toolkit_library_directory() noexcept {
#ifdef XYLEM_CUBLAS_LIBRARY_DIR
  return XYLEM_CUBLAS_LIBRARY_DIR;
#else
  return nullptr;
#endif
}

void* vendor_symbol(void* handle, const char* symbol) { return dlsym(handle, symbol); }

}  // namespace xylem::cuda

#pragma once
// Opening one of NVIDIA's libraries (cuBLAS, cuDNN) at run time, so the
// plugin loads, and costs nothing, on machines without them: the loader's
// search first (LD_LIBRARY_PATH, this plugin's run path), then the
// directory the build found the library in, then where CUDA installs
// usually keep it. Opened libraries are never closed: plugins stay loaded
// until exit, and so do they.
#include <string>

namespace xylem::cuda {

struct VendorLibrary {
  void* handle = nullptr;  // nullptr: not found, and why_not says why
  std::string path;        // of the file loaded
  std::string why_not;
};

// `soname` such as "libcublas.so.13"; `build_directory` may be nullptr.
[[nodiscard]] VendorLibrary open_vendor_library(const std::string& soname, const char* build_directory);

// What `Load()` returns (a library's function table, or why there is
// none), computed by the first caller (thread-safe) and kept until exit.
template <auto Load>
[[nodiscard]] const auto& load_once() {
  static const auto once = Load();
  return once;
}

}  // namespace xylem::cuda

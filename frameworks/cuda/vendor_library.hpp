#pragma once
// Opening one of NVIDIA's libraries (cuBLAS, cuDNN, cuFFT, NCCL) at run time,
// so the plugin loads, and costs nothing, on machines without them: the
// loader's search first (LD_LIBRARY_PATH, this plugin's run path), then the
// directory the build found the library in, then where CUDA installs
// usually keep it. Opened libraries are never closed: plugins stay loaded
// until exit, and so do they. Each library keeps an X-macro list of the
// functions it calls and a table of pointers of their header's types; what
// is common to filling such a table lives here.
#include <string>

// Two steps, so that a name a header redefines (cublas_v2.h maps
// cublasCreate to cublasCreate_v2) becomes the symbol it stands for.
#define XYLEM_VENDOR_STRING2(x) #x
#define XYLEM_VENDOR_STRING(x) XYLEM_VENDOR_STRING2(x)

// One entry of a function-table lookup (see load_functions): in a function
// taking `void* handle` and the table `lib`, returns the symbol's name when
// the library lacks it.
#define XYLEM_VENDOR_FIND(name) \
  if (!::xylem::cuda::find_symbol(handle, XYLEM_VENDOR_STRING(name), lib.name)) return XYLEM_VENDOR_STRING(name);

namespace xylem::cuda {

struct VendorLibrary {
  void* handle = nullptr;  // nullptr: not found, and why_not says why
  std::string path;        // of the file loaded
  std::string why_not;
};

// `soname` such as "libcublas.so.13"; `build_directory` may be nullptr.
[[nodiscard]] VendorLibrary open_vendor_library(const std::string& soname, const char* build_directory);

// The CUDA toolkit's library directory the build found (cuBLAS and cuFFT
// live there), or nullptr.
[[nodiscard]] const char* toolkit_library_directory() noexcept;

// dlsym, kept out of this header.
[[nodiscard]] void* vendor_symbol(void* handle, const char* symbol);

// Sets `slot` to the library's `symbol`; false when there is none.
template <class Function>
[[nodiscard]] bool find_symbol(void* handle, const char* symbol, Function& slot) {
  slot = reinterpret_cast<Function>(vendor_symbol(handle, symbol));
  return slot != nullptr;
}

// A library's function table, or why there is none.
template <class Table>
struct LoadedLibrary {
  Table lib;
  bool ok = false;
  std::string why_not;
  std::string path;  // of the library loaded
};

// Fills a `Table` from `opened`: `find_all(handle, table)` looks every
// function up (with XYLEM_VENDOR_FIND) and returns the first one missing,
// or nullptr; then `why_wrong_version(table)` says what is wrong with the
// library's version, or returns "" when it is the one the plugin was built for.
template <class Table, class FindAll, class WhyWrongVersion>
[[nodiscard]] LoadedLibrary<Table> load_functions(const VendorLibrary& opened, const std::string& soname,
                                                  FindAll find_all, WhyWrongVersion why_wrong_version) {
  LoadedLibrary<Table> r;
  if (opened.handle == nullptr) {
    r.why_not = opened.why_not;
    return r;
  }
  r.path = opened.path;
  if (const char* missing = find_all(opened.handle, r.lib); missing != nullptr) {
    r.why_not = soname + " has no " + missing;
    return r;
  }
  r.why_not = why_wrong_version(r.lib);
  r.ok = r.why_not.empty();
  return r;
}

// What `Load()` returns (a library's function table, or why there is
// none), computed by the first caller (thread-safe) and kept until exit.
template <auto Load>
[[nodiscard]] const auto& load_once() {
  static const auto once = Load();
  return once;
}

}  // namespace xylem::cuda

#include "nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "vendor_library.hpp"

namespace xylem::cuda {
namespace {

constexpr const char* kSoname = "libnccl.so.2";
// ncclCommInitRankConfig with blocking = 0 (a dead peer must not hang an init).
constexpr int kOldestVersion = 21700;

// 22105 -> "2.21.5" (codes from 2.9 on; older ones were 2 digits shorter).
std::string version_text(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

// XYLEM_NCCL_LIBRARY: a path to load instead of the system's libnccl.so.2
// (to run on the NCCL another program ships, say PyTorch's wheel); only that
// one is tried, so a wrong path says so instead of finding another NCCL.
VendorLibrary open_nccl() {
  const char* path = std::getenv("XYLEM_NCCL_LIBRARY");
  if (path == nullptr || *path == '\0') return open_vendor_library(kSoname, nullptr);
  VendorLibrary r;
  r.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  r.path = path;
  if (r.handle == nullptr) {
    const char* err = dlerror();
    r.why_not = std::string("XYLEM_NCCL_LIBRARY=") + path + " cannot be loaded (" + (err ? err : "dlopen failed") + ")";
  }
  return r;
}

const char* find_all(void* handle, NcclLibrary& lib) {
  XYLEM_NCCL_FUNCTIONS(XYLEM_VENDOR_FIND)
  lib.ncclCommSplit = reinterpret_cast<decltype(lib.ncclCommSplit)>(dlsym(handle, "ncclCommSplit"));  // optional
  return nullptr;
}

std::string why_wrong_version(NcclLibrary& lib) {
  if (lib.ncclGetVersion(&lib.version) == ncclSuccess && lib.version >= kOldestVersion) return {};
  return std::string(kSoname) + " is NCCL " + version_text(lib.version) + "; xylem needs " +
         version_text(kOldestVersion) + " or later";
}

LoadedLibrary<NcclLibrary> load() {
  return load_functions<NcclLibrary>(open_nccl(), kSoname, find_all, why_wrong_version);
}

}  // namespace

const NcclLibrary* nccl(std::string& why) {
  const auto& l = load_once<load>();
  if (!l.ok) {
    why = l.why_not;
    return nullptr;
  }
  return &l.lib;
}

std::string nccl_description() {
  const auto& l = load_once<load>();
  if (!l.ok) return "NCCL not found (" + l.why_not + ")";
  return "NCCL " + version_text(l.lib.version) + (l.path.empty() ? "" : " (" + l.path + ")");
}

}  // namespace xylem::cuda

#include "core/plugin_loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "core/plugin_file_check.hpp"

namespace xylem::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPrefix = "libxylem_";
constexpr std::string_view kSuffix = ".so";

fs::path core_library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_directories), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  auto path = fs::canonical(info.dli_fname, ec);
  return ec ? fs::path(info.dli_fname).parent_path() : path.parent_path();
}

bool is_plugin_file_name(const std::string& file) {
  return file.rfind(kPrefix, 0) == 0 && file.size() > kPrefix.size() + kSuffix.size() &&
         file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

// Modules that share the file naming but are not frameworks (the optional
// components of xylem::dist); the framework registry passes them over.
constexpr std::string_view kComponents[] = {"mpi"};

bool is_component(const std::string& name) {
  return std::find(std::begin(kComponents), std::end(kComponents), name) != std::end(kComponents);
}

// The file's bytes through a read-only mapping, checked without dlopen;
// "" when the file may be loaded. Only the headers' pages are touched.
std::string check_file(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
  struct stat st {};
  std::string reason;
  if (::fstat(fd, &st) != 0) {
    reason = std::string("cannot stat it: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    reason = S_ISDIR(st.st_mode) ? "a directory, not a shared object" : "not a regular file";
  } else if (st.st_size == 0) {
    reason = check_plugin_file({});
  } else {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      reason = std::string("cannot map it: ") + std::strerror(errno);
    } else {
      reason = check_plugin_file({static_cast<const unsigned char*>(map), size});
      ::munmap(map, size);
    }
  }
  ::close(fd);
  return reason;
}

}  // namespace

std::vector<fs::path> plugin_directories() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("XYLEM_PLUGIN_PATH")) {
    std::stringstream list(env);
    std::string dir;
    while (std::getline(list, dir, ':'))
      if (!dir.empty()) dirs.emplace_back(dir);
  }
  if (auto dir = core_library_directory(); !dir.empty()) dirs.push_back(dir);
  return dirs;
}

std::string plugin_name_from_file(const fs::path& file) {
  std::string stem = file.filename().string();
  if (stem.rfind(kPrefix, 0) != 0) return stem;
  stem = stem.substr(kPrefix.size());
  if (const auto dot = stem.find(kSuffix); dot != std::string::npos) stem = stem.substr(0, dot);
  return stem;
}

std::vector<PluginCandidates> find_plugin_files() {
  std::vector<PluginCandidates> found;
  std::vector<fs::path> seen_dirs;
  for (const auto& dir : plugin_directories()) {
    // The same directory twice on the path would list each file twice.
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    if (std::find(seen_dirs.begin(), seen_dirs.end(), canonical) != seen_dirs.end()) continue;
    seen_dirs.push_back(canonical);
    std::vector<fs::path> here;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (is_plugin_file_name(it->path().filename().string())) here.push_back(it->path());
    std::sort(here.begin(), here.end());
    for (auto& path : here) {
      const std::string name = plugin_name_from_file(path);
      if (is_component(name)) continue;
      auto slot = std::find_if(found.begin(), found.end(), [&](const auto& c) { return c.name == name; });
      if (slot == found.end()) slot = found.insert(found.end(), PluginCandidates{name, {}});
      slot->files.push_back(std::move(path));
    }
  }
  return found;
}

void* open_module(const fs::path& file, std::string& reason) {
  const std::string filename = file.filename().string();
  if (std::string bad = check_file(file); !bad.empty()) {
    reason = "refused " + filename + " without loading it: " + bad;
    return nullptr;
  }
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    reason = "cannot load " + filename + ": " + (error ? error : "unknown error");
  }
  return handle;
}

LoadedPlugin load_plugin(const fs::path& file, std::string_view expected_name) {
  LoadedPlugin result;
  result.name = plugin_name_from_file(file);
  result.path = file.string();
  const std::string filename = file.filename().string();
  void* handle = open_module(file, result.reason);
  if (handle == nullptr) return result;
  auto entry = reinterpret_cast<XylemPluginEntryFn>(dlsym(handle, XYLEM_PLUGIN_ENTRY_NAME));
  if (entry == nullptr) {
    result.reason = filename + " has no " XYLEM_PLUGIN_ENTRY_NAME "() entry point: not a xylem plugin";
    dlclose(handle);
    return result;
  }
  const XylemPluginInfo* info = entry();
  if (info == nullptr || info->api_version != plugin::kApiVersion) {
    result.reason = filename + " was built for plugin API version " +
                    (info ? std::to_string(info->api_version) : std::string("?")) + ", this libxylem speaks version " +
                    std::to_string(plugin::kApiVersion) + ": rebuild the plugin against this xylem";
    dlclose(handle);
    return result;
  }
  const std::string_view digest = info->abi_digest ? info->abi_digest : "";
  if (digest != plugin::kAbiDigest) {
    result.reason = filename + " was built against other plugin ABI headers (digest " +
                    (digest.empty() ? std::string("none") : std::string(digest)) + "), this libxylem has digest " +
                    plugin::kAbiDigest + ": rebuild the plugin against this xylem";
    dlclose(handle);
    return result;
  }
  if (!expected_name.empty() && (info->name == nullptr || expected_name != info->name)) {
    result.reason = filename + " provides framework '" + (info->name ? info->name : "") + "', not '" +
                    std::string(expected_name) + "': rename the file libxylem_<framework>.so";
    dlclose(handle);
    return result;
  }
  if (info->name != nullptr) result.name = info->name;
  const char* error = nullptr;
  try {
    result.framework = info->create(&error);
  } catch (const std::exception& e) {
    result.framework = nullptr;
    result.reason = filename + " failed to start: " + e.what();
  } catch (...) {
    result.framework = nullptr;
    result.reason = filename + " failed to start (threw a non-standard exception)";
  }
  if (result.framework == nullptr && result.reason.empty())
    result.reason = error ? error : "the plugin could not start (no reason given)";
  // Never dlclose a plugin that created a framework: its code must stay.
  return result;
}

}  // namespace xylem::detail

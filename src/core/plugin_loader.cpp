#include "core/plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <set>
#include <sstream>

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

std::vector<fs::path> find_plugin_files() {
  std::vector<fs::path> files;
  std::set<std::string> names;
  for (const auto& dir : plugin_directories()) {
    std::error_code ec;
    std::vector<fs::path> here;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind(kPrefix, 0) == 0 && file.size() > kSuffix.size() &&
          file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
        here.push_back(entry.path());
    }
    std::sort(here.begin(), here.end());
    for (auto& path : here)
      if (names.insert(plugin_name_from_file(path)).second) files.push_back(std::move(path));
  }
  return files;
}

LoadedPlugin load_plugin(const fs::path& file) {
  LoadedPlugin result;
  result.name = plugin_name_from_file(file);
  result.path = file.string();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    result.reason = std::string("cannot load ") + file.filename().string() + ": " + (error ? error : "unknown error");
    return result;
  }
  auto entry = reinterpret_cast<XylemPluginEntryFn>(dlsym(handle, XYLEM_PLUGIN_ENTRY_NAME));
  if (entry == nullptr) {
    result.reason = file.filename().string() + " has no " XYLEM_PLUGIN_ENTRY_NAME "() entry point: not a xylem plugin";
    dlclose(handle);
    return result;
  }
  const XylemPluginInfo* info = entry();
  if (info == nullptr || info->api_version != plugin::kApiVersion) {
    result.reason = file.filename().string() + " was built for plugin API version " +
                    (info ? std::to_string(info->api_version) : std::string("?")) + ", this libxylem speaks version " +
                    std::to_string(plugin::kApiVersion) + ": rebuild the plugin against this xylem";
    dlclose(handle);
    return result;
  }
  if (info->name != nullptr) result.name = info->name;
  const char* error = nullptr;
  try {
    result.framework = info->create(&error);
  } catch (const std::exception& e) {
    result.framework = nullptr;
    result.reason = e.what();
  }
  if (result.framework == nullptr && result.reason.empty())
    result.reason = error ? error : "the plugin could not start (no reason given)";
  // Never dlclose a plugin that created a framework: its code must stay.
  return result;
}

}  // namespace xylem::detail

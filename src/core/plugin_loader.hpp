#pragma once
// Finding and loading framework plugins (shared modules libxylem_<name>.so).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

struct LoadedPlugin {
  std::string name;                        // from the plugin, or from the file name if it failed
  plugin::Framework* framework = nullptr;  // null when it failed
  std::string reason;                      // why it failed
  std::string path;
};

// Every file that may provide one framework, in search order.
struct PluginCandidates {
  std::string name;
  std::vector<std::filesystem::path> files;
};

// Where plugins are looked for, in order: each directory of
// XYLEM_PLUGIN_PATH (colon-separated), then the directory of libxylem.
[[nodiscard]] std::vector<std::filesystem::path> plugin_directories();

// Every libxylem_<name>.so in those directories but the optional
// components' (libxylem_mpi.so), grouped by name (in order
// of each name's first file); nothing is opened. A later file of a name is
// kept: it stands in when an earlier one cannot load.
[[nodiscard]] std::vector<PluginCandidates> find_plugin_files();

// The framework name a plugin file carries: libxylem_cuda.so -> "cuda".
[[nodiscard]] std::string plugin_name_from_file(const std::filesystem::path& file);

// Opens a shared module (dlopen, local symbols) after checking its bytes
// (check_plugin_file); null with `reason` set when it cannot be loaded.
// Plugins and the optional components (libxylem_mpi.so) load this way.
[[nodiscard]] void* open_module(const std::filesystem::path& file, std::string& reason);

// Loads one plugin: checks the file (check_plugin_file) before dlopen, then
// the entry point, its API version and that it names itself `expected_name`
// (when given), then creates the framework. Never throws: failure is
// reported in the result. A loaded plugin is never unloaded.
[[nodiscard]] LoadedPlugin load_plugin(const std::filesystem::path& file, std::string_view expected_name = {});

}  // namespace xylem::detail

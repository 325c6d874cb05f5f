#pragma once
// Finding and loading framework plugins (shared modules libxylem_<name>.so).
#include <filesystem>
#include <string>
#include <vector>

#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

struct LoadedPlugin {
  std::string name;                        // from the plugin, or from the file name if it failed
  plugin::Framework* framework = nullptr;  // null when it failed
  std::string reason;                      // why it failed
  std::string path;
};

// Where plugins are looked for, in order: each directory of
// XYLEM_PLUGIN_PATH (colon-separated), then the directory of libxylem.
[[nodiscard]] std::vector<std::filesystem::path> plugin_directories();

// Every libxylem_*.so in those directories (first found wins per name).
[[nodiscard]] std::vector<std::filesystem::path> find_plugin_files();

// The framework name a plugin file carries: libxylem_cuda.so -> "cuda".
[[nodiscard]] std::string plugin_name_from_file(const std::filesystem::path& file);

// Loads one plugin. Never throws: failure is reported in the result. A
// loaded plugin is never unloaded.
[[nodiscard]] LoadedPlugin load_plugin(const std::filesystem::path& file);

}  // namespace xylem::detail

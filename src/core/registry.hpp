#pragma once
// Every framework xylem knows: native (built in) and the plugins found at
// first use. Built once per process, thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

struct FrameworkEntry {
  std::string name;
  plugin::Framework* framework = nullptr;  // null when the plugin failed
  std::string reason;                      // why it is unavailable
  std::string source;                      // "built in" or the plugin path

  [[nodiscard]] bool available() const noexcept { return framework != nullptr && !framework->hardware().empty(); }
};

// In order of preference: cuda, opencl, native, then any other plugin.
[[nodiscard]] const std::vector<FrameworkEntry>& frameworks();
[[nodiscard]] const FrameworkEntry* find_framework(std::string_view name);

}  // namespace xylem::detail

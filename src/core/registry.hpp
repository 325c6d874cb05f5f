#pragma once
// Every framework xylem knows: those linked in (register_builtin: native,
// in libxylem) and the plugins on the search path. Each is started lazily,
// the first time its framework is asked for, so a program that only uses
// native never maps a plugin (and a broken plugin file cannot hurt it).
// Thread-safe.
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
  // For an available framework: the files of its name tried before the one
  // taken, each with why it failed ("path: reason; path: reason"). For an
  // unavailable one `reason` holds every file's failure instead.
  std::string passed_over;

  [[nodiscard]] bool available() const noexcept { return framework != nullptr && !framework->hardware().empty(); }
};

// Every framework, loading every plugin not loaded yet. In order of
// preference: cuda, opencl, native, then any other plugin.
[[nodiscard]] std::vector<const FrameworkEntry*> frameworks();
// One framework, loading only its plugin (nothing for a built-in one, not
// even a directory listing); null when no such framework is known.
[[nodiscard]] const FrameworkEntry* find_framework(std::string_view name);
// The built-in framework holding host memory (plugin::BuiltinMemory::host),
// started; null when none is linked in.
[[nodiscard]] const FrameworkEntry* host_framework();
// The names frameworks() would list, without loading anything.
[[nodiscard]] std::vector<std::string> framework_names();

}  // namespace xylem::detail

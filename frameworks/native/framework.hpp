#pragma once
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

// The entry of the native framework (the host CPU as one device, its
// memory plain host memory), as a plugin would export it: libxylem hands it
// to the core with plugin::register_builtin. The framework it creates
// lives until the process ends.
[[nodiscard]] const XylemPluginInfo& plugin_info() noexcept;

}  // namespace xylem::native

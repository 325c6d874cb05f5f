#pragma once
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

// The built-in framework: the host CPU as one device. Created on first use,
// lives until the process ends.
[[nodiscard]] plugin::Framework& framework();

}  // namespace xylem::native

// libxylem_refuses.so: a plugin whose framework declines to start (as one
// does without its driver), saying why.
#include "xylem/plugin/plugin.hpp"

namespace {
xylem::plugin::Framework* create(const char** error) {
  *error = "refuses: no hardware on purpose (xylem test plugin)";
  return nullptr;
}
}  // namespace

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry() {
  static const XylemPluginInfo info{xylem::plugin::kApiVersion, "refuses", &create};
  return &info;
}

// libxylem_badversion.so: built for a plugin API that does not exist yet.
// The loader must refuse it without calling create.
#include <cstdlib>

#include "xylem/plugin/plugin.hpp"

namespace {
xylem::plugin::Framework* create(const char** /*error*/) {
  std::abort();  // never called: the version check comes first
}
}  // namespace

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry() {
  static const XylemPluginInfo info{xylem::plugin::kApiVersion + 1, "badversion", &create};
  return &info;
}

// libxylem_baddigest.so: the right API version, but built against other
// ABI headers (a digest no build produces). The loader must refuse it
// without calling create, naming both digests.
#include <cstdlib>

#include "xylem/plugin/plugin.hpp"

namespace {
xylem::plugin::Framework* create(const char** /*error*/) {
  std::abort();  // never called: the digest check comes first
}
}  // namespace

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry() {
  static const XylemPluginInfo info{xylem::plugin::kApiVersion, "baddigest", &create, "0123456789abcdef"};
  return &info;
}

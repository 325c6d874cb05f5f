// `xylem warm`, the plugin's side (include/xylem/plugin/warm.hpp): every
// program pass that some (op, dtype) of some device would build at first
// use, built now through the on-disk cache (program_cache.hpp).
#include "xylem/plugin/warm.hpp"

#include <chrono>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "frameworks/opencl/framework.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/program_cache.hpp"

namespace xylem::opencl {

namespace {

struct WarmItem {
  std::size_t device;
  ProgramKey program;
};

// The programs the device's (op, dtype) pairs use, every variant of each,
// each program once, in table order.
void add_programs_of(Device& device, std::size_t index, std::vector<WarmItem>& items) {
  std::set<ProgramKey> seen;
  for (std::size_t op = 0; op < plugin::kOpCount; ++op) {
    const auto id = static_cast<plugin::OpId>(op);
    for (DType dtype : kEveryDtype) {
      if (!device.supports(id, dtype)) continue;
      for (const ProgramSpec* spec : kernels().get(id, dtype)->programs) {
        if (!spec) continue;
        for (int variant = 0; variant < spec->variants; ++variant) {
          const ProgramKey key{spec, device.pass(*spec, dtype), variant};
          if (seen.insert(key).second) items.push_back({index, key});
        }
      }
    }
  }
}

const char* warm(XylemWarmProgressFn progress, void* user, const char** cache_dir) {
  static std::string dir, error;
  dir = ProgramCache::from_environment().dir().string();
  if (cache_dir) *cache_dir = dir.c_str();
  try {
    Framework framework;
    std::vector<WarmItem> items;
    for (std::size_t i = 0; i < framework.hardware().size(); ++i) add_programs_of(framework.device(i), i, items);
    int done = 0;
    for (const WarmItem& item : items) {
      Device& device = framework.device(item.device);
      const auto start = std::chrono::steady_clock::now();
      const auto package = build_package(item.program, device.context(), device.info());
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string target = device.hardware().id();
      const std::string label = program_label(item.program);
      const XylemWarmStep step{++done, static_cast<int>(items.size()), target.c_str(), label.c_str(), seconds,
                               package->from_cache() ? 1 : 0};
      if (progress) progress(&step, user);
    }
    return nullptr;
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error while building the OpenCL programs";
  }
  return error.c_str();
}

}  // namespace

}  // namespace xylem::opencl

XYLEM_PLUGIN_EXPORT const char* xylem_plugin_warm(XylemWarmProgressFn progress, void* user, const char** cache_dir) {
  return xylem::opencl::warm(progress, user, cache_dir);
}

namespace {
// The export matches the type the command casts it to.
[[maybe_unused]] constexpr XylemWarmFn kWarmMatches = &xylem_plugin_warm;
}  // namespace

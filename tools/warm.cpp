// `xylem warm`: builds ahead of time what the plugins would build at first
// use (the OpenCL programs, for every (op, dtype) of every device) into the
// on-disk cache, with a progress bar on a terminal and plain lines
// otherwise; ends saying where the cache is.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "progress.hpp"
#include "xylem/backend.hpp"
#include "xylem/plugin/warm.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem warm

Builds every kernel program a framework would otherwise build at first use
(the OpenCL programs of every op and dtype, for every OpenCL device) and
stores them in the cache, so that the first call of each op in later
processes loads them instead. Shows a progress bar on a terminal, one line
per program otherwise, and ends with where the cache is.

environment:
  XYLEM_CACHE_DIR   where compiled kernels are cached (default: ~/.cache/xylem)
)";

struct Progress {
  ProgressBar bar{std::cout, ProgressBar::stdout_is_terminal(), "warm"};
  int compiled = 0, loaded = 0;
};

void draw(const XylemWarmStep* step, void* user) {
  auto& progress = *static_cast<Progress*>(user);
  ++(step->from_cache ? progress.loaded : progress.compiled);
  char line[256];
  std::snprintf(line, sizeof line, "%d/%d %s %s (%.1f s%s)", step->done, step->total, step->target, step->item,
                step->seconds, step->from_cache ? ", cached" : "");
  progress.bar.update(step->done, step->total, line);
}

// The plugin's warm export, or null for a framework built into libxylem or
// a plugin without one. The handle stays open: plugins are never unloaded.
XylemWarmFn warm_function(const FrameworkStatus& framework) {
  if (!framework.available || framework.source.empty() || framework.source == "built in") return nullptr;
  void* handle = dlopen(framework.source.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return nullptr;
  return reinterpret_cast<XylemWarmFn>(dlsym(handle, XYLEM_PLUGIN_WARM_NAME));
}

}  // namespace

int warm(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  const auto start = std::chrono::steady_clock::now();
  Progress progress;
  int status = 0, warmed = 0;
  for (const auto& framework : Backend::frameworks()) {
    const XylemWarmFn warm_fn = warm_function(framework);
    if (!warm_fn) continue;
    ++warmed;
    const char* cache_dir = "";
    if (const char* error = warm_fn(&draw, &progress, &cache_dir)) {
      std::cerr << "xylem warm: " << framework.name << ": " << error << "\n";
      status = 2;
    }
    std::cout << "warm: " << framework.name << " cache: " << (*cache_dir ? cache_dir : "(none: set XYLEM_CACHE_DIR)")
              << "\n";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (warmed == 0) std::cout << "warm: no framework here builds kernels at first use; nothing to do\n";
  std::printf("warm: %d built, %d already cached, in %.1f s\n", progress.compiled, progress.loaded, seconds);
  return status;
}

}  // namespace xylem::cli

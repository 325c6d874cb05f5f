#pragma once
// An optional second export of a plugin: build ahead of time what it would
// otherwise build at first use (the OpenCL plugin's programs), for
// `xylem warm`. The command finds it with dlsym in the file the registry
// loaded the framework from (FrameworkInfo::source); a plugin without it
// has nothing to warm. Plain C, like the entry point (plugin.hpp).
extern "C" {

// One finished step, as the plugin reports it.
struct XylemWarmStep {
  int done;            // steps finished so far, this one included
  int total;           // steps in all
  const char* target;  // the hardware: "opencl:0"
  const char* item;    // what was built: "softmax f32"
  double seconds;      // how long the step took
  int from_cache;      // 1 when the cache already held it
};
typedef void (*XylemWarmProgressFn)(const XylemWarmStep* step, void* user);

// Builds everything the plugin builds at first use, for every device it
// has, into its cache; calls progress after each step. Returns null on
// success, else why not (a string that lives until the next call).
// *cache_dir is set to where the cache is ("" when there is none).
typedef const char* (*XylemWarmFn)(XylemWarmProgressFn progress, void* user, const char** cache_dir);

#define XYLEM_PLUGIN_WARM_NAME "xylem_plugin_warm"

}  // extern "C"

#include "frameworks/native/framework.hpp"

#include <cblas.h>
#include <hwy/targets.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/version.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "frameworks/native/device.hpp"
#include "frameworks/native/ops/conv2d.hpp"
#include "xylem/error.hpp"

namespace xylem::native {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "host CPU";
}

std::string best_simd_target() {
  const std::int64_t targets = hwy::SupportedTargets();
  return hwy::TargetName(targets & -targets);  // Highway orders better targets at lower bits
}

// XYLEM_NATIVE_THREADS=n caps the host's worker threads (oneTBB's and
// OpenBLAS's) at n, as OMP_NUM_THREADS or torch.set_num_threads do: one
// process per core under mpirun, or n = 1 for ThreadSanitizer, which cannot
// see oneTBB's own synchronisation (libtbb is not built with it) and so
// reports, and must sift, every element a worker writes. Read once, when the
// framework loads; oneTBB keeps the cap while the control lives, so it is
// never destroyed.
int apply_thread_cap() {
  const char* env = std::getenv("XYLEM_NATIVE_THREADS");
  char* end = nullptr;
  const long n = env == nullptr ? 0 : std::strtol(env, &end, 10);
  if (n <= 0 || end == env || *end != '\0') return 0;
  static const auto* cap = new tbb::global_control(tbb::global_control::max_allowed_parallelism, std::size_t(n));
  (void)cap;
  openblas_set_num_threads(int(n));
  return int(n);
}

Hardware describe_host() {
  Hardware hw;
  hw.framework = "native";
  hw.index = 0;
  hw.name = cpu_model();
  hw.vendor = "host";
  hw.kind = HardwareKind::cpu;
  const int cap = apply_thread_cap();
  hw.compute_units = cap > 0 ? std::min(cap, tbb::info::default_concurrency()) : tbb::info::default_concurrency();
  hw.memory_bytes = std::uint64_t(sysconf(_SC_PHYS_PAGES)) * std::uint64_t(sysconf(_SC_PAGE_SIZE));
  hw.caps.fp64 = true;
  hw.caps.fp16 = true;  // stored as f16, computed in f32
  hw.caps.bf16 = true;
  hw.caps.unified_memory = true;
  hw.driver = "oneTBB " + std::to_string(TBB_VERSION_MAJOR) + "." + std::to_string(TBB_VERSION_MINOR);
  hw.details = "SIMD " + best_simd_target() + ", " + openblas_get_config() + ", " + conv2d_engine_description();
  return hw;
}

class NativeFramework final : public plugin::Framework {
 public:
  NativeFramework() : hardware_{describe_host()} {}
  std::string name() const override { return "native"; }
  const std::vector<Hardware>& hardware() const noexcept override { return hardware_; }
  plugin::Device& device(std::size_t index) override {
    if (index != 0) throw Error(ErrorCode::invalid_argument, "native has one device, native:0");
    std::call_once(opened_, [&] { device_ = std::make_unique<NativeDevice>(hardware_[0]); });
    return *device_;
  }

 private:
  std::vector<Hardware> hardware_;
  std::once_flag opened_;
  std::unique_ptr<NativeDevice> device_;
};

}  // namespace

const XylemPluginInfo& plugin_info() noexcept {
  // The framework is leaked on purpose: tensors in static storage may
  // release memory on its device during exit.
  static const XylemPluginInfo info{plugin::kApiVersion, "native",
                                    [](const char**) -> plugin::Framework* { return new NativeFramework(); }};
  return info;
}

}  // namespace xylem::native

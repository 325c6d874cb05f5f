// The CUDA framework: finds the GPUs, opens one CudaDevice per GPU on first
// use, and exports the plugin entry point. Without a driver or a GPU the
// plugin still loads; create() then reports why the framework is unavailable.
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "check.hpp"
#include "device.hpp"
#include "nccl_transport.hpp"
#include "ops/conv2d.hpp"
#include "ops/nvrtc_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

Hardware describe(int ordinal, int count, const std::string& versions) {
  cudaDeviceProp p{};
  XY_CUDA(cudaGetDeviceProperties(&p, ordinal), ordinal, "describe");
  Hardware hw;
  hw.framework = "cuda";
  hw.index = ordinal;
  hw.name = p.name;
  hw.vendor = "NVIDIA";
  hw.driver = versions;
  hw.kind = HardwareKind::gpu;
  hw.compute_units = p.multiProcessorCount;
  hw.memory_bytes = p.totalGlobalMem;
  const int cc = p.major * 10 + p.minor;
  hw.caps.fp16 = cc >= 53;
  hw.caps.bf16 = cc >= 80;
  hw.caps.fp64 = true;
  hw.caps.unified_memory = p.integrated != 0;
  for (int other = 0; other < count && !hw.caps.peer_access && peer_access_allowed(); ++other) {
    int can = 0;
    if (other != ordinal) XY_CUDA(cudaDeviceCanAccessPeer(&can, ordinal, other), ordinal, "describe");
    hw.caps.peer_access = can != 0;
  }
  char pci[64];
  std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  hw.details = "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) + ", " +
               std::to_string(p.multiProcessorCount) + " multiprocessors, L2 " + std::to_string(p.l2CacheSize >> 20) +
               " MiB, PCI " + pci + ", " + cublas_description() + ", " + conv2d_engine_description() + ", " + fusion_description();
  return hw;
}

class CudaFramework final : public plugin::Framework {
 public:
  explicit CudaFramework(std::vector<Hardware> hardware)
      : hardware_(std::move(hardware)), devices_(hardware_.size()) {}

  std::string name() const override { return "cuda"; }
  const std::vector<Hardware>& hardware() const noexcept override { return hardware_; }

  plugin::Device& device(std::size_t index) override {
    if (index >= hardware_.size())
      throw Error(ErrorCode::invalid_argument, "cuda:" + std::to_string(index) + ": no such GPU (" +
                                                   std::to_string(hardware_.size()) + " found)");
    std::lock_guard lock(mutex_);
    if (!devices_[index]) devices_[index] = std::make_unique<CudaDevice>(hardware_[index], hardware_[index].index);
    return *devices_[index];
  }

  plugin::dist::DeviceCollectives* collectives(std::string& why) override { return nccl_collectives(why); }

 private:
  std::vector<Hardware> hardware_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<CudaDevice>> devices_;
};

plugin::Framework* create(const char** error) {
  static std::string reason;  // create() runs once per process
  try {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
      *error = reason.c_str();
      return nullptr;
    }
    if (count == 0) {
      reason = "no CUDA-capable GPU found";
      *error = reason.c_str();
      return nullptr;
    }
    int driver = 0, runtime = 0;
    XY_CUDA(cudaDriverGetVersion(&driver), 0, "describe");
    XY_CUDA(cudaRuntimeGetVersion(&runtime), 0, "describe");
    const std::string versions = "CUDA driver " + version_string(driver) + ", runtime " + version_string(runtime);
    std::vector<Hardware> hardware;
    for (int i = 0; i < count; ++i) hardware.push_back(describe(i, count, versions));
    return new CudaFramework(std::move(hardware));
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown error while starting CUDA";
  }
  *error = reason.c_str();
  return nullptr;
}

}  // namespace
}  // namespace xylem::cuda

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry(void) {
  static const XylemPluginInfo info{xylem::plugin::kApiVersion, "cuda", &xylem::cuda::create};
  return &info;
}

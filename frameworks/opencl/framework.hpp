#pragma once
// The OpenCL framework: every platform's devices, flat-indexed
// ("opencl:0", "opencl:1" ... across platforms), opened on first use.
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "frameworks/opencl/device.hpp"
#include "frameworks/opencl/queue.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

class Framework final : public plugin::Framework {
 public:
  // Enumerates; throws Error{plugin_unavailable} when there is no platform
  // or no device (the message says which).
  Framework();
  ~Framework() override;

  [[nodiscard]] std::string name() const override { return "opencl"; }
  [[nodiscard]] const std::vector<Hardware>& hardware() const noexcept override { return hardware_; }
  [[nodiscard]] Device& device(std::size_t index) override;

 private:
  struct Platform {
    cl_platform_id id = nullptr;
    std::vector<cl_device_id> devices;
    Context context;  // all of the platform's devices: copies between them stay on the devices
  };

  std::vector<Platform> platforms_;
  std::vector<Hardware> hardware_;
  std::vector<DeviceInfo> infos_;
  std::vector<std::size_t> platform_of_;  // hardware index -> platforms_ index

  std::mutex mutex_;
  std::vector<std::unique_ptr<Device>> devices_;
  // Declared last: destroyed first, after the devices have finished.
  std::unique_ptr<HostWorker> callbacks_, tasks_;
};

}  // namespace xylem::opencl

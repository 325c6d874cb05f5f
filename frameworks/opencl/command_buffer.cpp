#include "frameworks/opencl/command_buffer.hpp"

#include <cstdlib>
#include <string>
#include <string_view>

#include "frameworks/opencl/device.hpp"

namespace xylem::opencl {

namespace {

bool reports_extension(cl_device_id device) {
  std::size_t size = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, nullptr, &size) != CL_SUCCESS) return false;
  std::string text(size, '\0');
  if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, text.data(), nullptr) != CL_SUCCESS) return false;
  text = " " + text + " ";
  return text.find(" cl_khr_command_buffer ") != std::string::npos;
}

template <class Fn>
Fn entry(cl_platform_id platform, const char* name) {
  return reinterpret_cast<Fn>(clGetExtensionFunctionAddressForPlatform(platform, name));
}

}  // namespace

CommandBufferApi load_command_buffer_api(const DeviceInfo& device) {
  if (!reports_extension(device.id)) return {};
  cl_device_command_buffer_capabilities_khr capabilities = 0;
  cl_command_queue_properties required = 0;
  if (clGetDeviceInfo(device.id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof capabilities, &capabilities,
                      nullptr) != CL_SUCCESS ||
      clGetDeviceInfo(device.id, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR, sizeof required, &required,
                      nullptr) != CL_SUCCESS)
    return {};
  // Without simultaneous use, enqueuing a buffer whose last run is pending
  // is an error: back-to-back replays would then have to wait on the host.
  if (!(capabilities & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) || required != 0) return {};
  CommandBufferApi api;
  api.create = entry<clCreateCommandBufferKHR_fn>(device.platform, "clCreateCommandBufferKHR");
  api.ndrange = entry<clCommandNDRangeKernelKHR_fn>(device.platform, "clCommandNDRangeKernelKHR");
  api.finalize = entry<clFinalizeCommandBufferKHR_fn>(device.platform, "clFinalizeCommandBufferKHR");
  api.enqueue = entry<clEnqueueCommandBufferKHR_fn>(device.platform, "clEnqueueCommandBufferKHR");
  api.release = entry<clReleaseCommandBufferKHR_fn>(device.platform, "clReleaseCommandBufferKHR");
  if (!api.create || !api.ndrange || !api.finalize || !api.enqueue || !api.release) return {};
  return api;
}

bool command_buffers_turned_off() {
  const char* value = std::getenv("XYLEM_OPENCL_COMMAND_BUFFER");
  return value != nullptr && std::string_view(value) == "0";
}

}  // namespace xylem::opencl

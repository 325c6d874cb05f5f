// The OpenCL framework: platform and device enumeration, Hardware from the
// device's properties, and the plugin's entry point.
#include "frameworks/opencl/framework.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace xylem::opencl {

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what, T fallback = {}) {
  T value{};
  return clGetDeviceInfo(d, what, sizeof value, &value, nullptr) == CL_SUCCESS ? value : fallback;
}

bool has_extension(const std::string& extensions, std::string_view name) {
  std::size_t at = 0;
  while ((at = extensions.find(name, at)) != std::string::npos) {
    const std::size_t end = at + name.size();
    if ((at == 0 || extensions[at - 1] == ' ') && (end == extensions.size() || extensions[end] == ' ')) return true;
    at = end;
  }
  return false;
}

// "OpenCL C 1.2 PoCL" -> 120.
int c_version(const std::string& text) {
  const std::string prefix = "OpenCL C ";
  if (text.compare(0, prefix.size(), prefix) != 0 || text.size() < prefix.size() + 3) return 110;
  const int major = text[prefix.size()] - '0', minor = text[prefix.size() + 2] - '0';
  return major * 100 + minor * 10;
}

HardwareKind kind_of(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return HardwareKind::gpu;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return HardwareKind::accelerator;
  if (type & CL_DEVICE_TYPE_CPU) return HardwareKind::cpu;
  return HardwareKind::other;
}

// A testing knob: XYLEM_OPENCL_NO_FP64=1 treats every device as having no
// fp64, to exercise that path on hardware that has it.
bool fp64_disabled() {
  const char* v = std::getenv("XYLEM_OPENCL_NO_FP64");
  return v && *v && *v != '0';
}

}  // namespace

Framework::Framework() : callbacks_(std::make_unique<HostWorker>()), tasks_(std::make_unique<HostWorker>()) {
  cl_uint count = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &count);
  if (status != CL_SUCCESS || count == 0)
    throw Error(ErrorCode::plugin_unavailable,
                "no OpenCL platform found (" + cl_error_name(status) +
                    "): install an ICD such as pocl-opencl-icd, or your GPU vendor's OpenCL driver");
  std::vector<cl_platform_id> ids(count);
  check(clGetPlatformIDs(count, ids.data(), nullptr), "opencl: listing platforms");

  const bool no_fp64 = fp64_disabled();
  for (cl_platform_id pid : ids) {
    cl_uint n = 0;
    if (clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    Platform platform;
    platform.id = pid;
    platform.devices.resize(n);
    check(clGetDeviceIDs(pid, CL_DEVICE_TYPE_ALL, n, platform.devices.data(), nullptr), "opencl: listing devices");
    const std::string platform_name = platform_string(pid, CL_PLATFORM_NAME);
    const std::string platform_version = platform_string(pid, CL_PLATFORM_VERSION);
    for (cl_device_id did : platform.devices) {
      DeviceInfo info;
      info.platform = pid;
      info.id = did;
      info.type = device_value<cl_device_type>(did, CL_DEVICE_TYPE);
      info.name = device_string(did, CL_DEVICE_NAME);
      info.driver = device_string(did, CL_DRIVER_VERSION);
      info.platform_version = platform_version;
      info.c_version = c_version(device_string(did, CL_DEVICE_OPENCL_C_VERSION));
      const std::string extensions = device_string(did, CL_DEVICE_EXTENSIONS);
      info.fp64 = !no_fp64 && (has_extension(extensions, "cl_khr_fp64") ||
                               device_value<cl_device_fp_config>(did, CL_DEVICE_DOUBLE_FP_CONFIG) != 0);
      info.max_work_group = device_value<std::size_t>(did, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1);
      info.local_mem = device_value<cl_ulong>(did, CL_DEVICE_LOCAL_MEM_SIZE);
      info.max_alloc = device_value<cl_ulong>(did, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
      info.compute_units = static_cast<int>(device_value<cl_uint>(did, CL_DEVICE_MAX_COMPUTE_UNITS, 1));
      info.per_item = (info.type & CL_DEVICE_TYPE_CPU) ? 16 : 1;
      info.chunk = (info.type & CL_DEVICE_TYPE_CPU) ? 16384 : 1;

      Hardware hw;
      hw.framework = "opencl";
      hw.index = static_cast<int>(hardware_.size());
      hw.name = info.name;
      hw.vendor = device_string(did, CL_DEVICE_VENDOR);
      hw.driver = info.driver;
      hw.kind = kind_of(info.type);
      hw.compute_units = info.compute_units;
      hw.memory_bytes = device_value<cl_ulong>(did, CL_DEVICE_GLOBAL_MEM_SIZE);
      hw.caps.fp16 = has_extension(extensions, "cl_khr_fp16");
      hw.caps.fp64 = info.fp64;
      hw.caps.unified_memory = device_value<cl_bool>(did, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
      hw.caps.peer_access = n > 1;  // devices of one platform share a context: buffers copy directly
      hw.details = device_string(did, CL_DEVICE_VERSION) + ", " + device_string(did, CL_DEVICE_OPENCL_C_VERSION) +
                   ", platform " + platform_name + " (" + platform_version + ")";
      hardware_.push_back(std::move(hw));
      infos_.push_back(std::move(info));
      platform_of_.push_back(platforms_.size());
    }
    platforms_.push_back(std::move(platform));
  }
  if (hardware_.empty())
    throw Error(ErrorCode::plugin_unavailable,
                std::to_string(count) + " OpenCL platform(s) found, but no device in any of them");
  devices_.resize(hardware_.size());
}

Framework::~Framework() {
  devices_.clear();  // finishes their queues while the host threads still run
}

Device& Framework::device(std::size_t index) {
  std::lock_guard lock(mutex_);
  if (index >= hardware_.size())
    throw Error(ErrorCode::invalid_argument, "opencl:" + std::to_string(index) + " does not exist (" +
                                                 std::to_string(hardware_.size()) + " OpenCL device(s))");
  if (!devices_[index]) {
    Platform& platform = platforms_[platform_of_[index]];
    if (!platform.context) {
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                             reinterpret_cast<cl_context_properties>(platform.id), 0};
      cl_int status = CL_SUCCESS;
      platform.context = Context(clCreateContext(props, static_cast<cl_uint>(platform.devices.size()),
                                                 platform.devices.data(), nullptr, nullptr, &status));
      check(status, [&] { return "opencl: creating a context for " + hardware_[index].id(); });
    }
    devices_[index] =
        std::make_unique<Device>(hardware_[index], infos_[index], platform.context, *callbacks_, *tasks_);
  }
  return *devices_[index];
}

}  // namespace xylem::opencl

namespace {

xylem::plugin::Framework* create_framework(const char** error) {
  static std::string reason;  // outlives the call, as the entry point promises
  try {
    return new xylem::opencl::Framework();
  } catch (const std::exception& e) {
    reason = e.what();
  } catch (...) {
    reason = "unknown error while enumerating OpenCL devices";
  }
  if (error) *error = reason.c_str();
  return nullptr;
}

const XylemPluginInfo kInfo = {xylem::plugin::kApiVersion, "opencl", &create_framework};

}  // namespace

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry(void) { return &kInfo; }

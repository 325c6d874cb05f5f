#pragma once
// cl_khr_command_buffer, where the device offers it: a replay of captured
// work (recording.hpp) is then one clEnqueueCommandBufferKHR instead of one
// enqueue per kernel. The extension is provisional and its entry points are
// not in every ICD loader, so they are looked up per platform at run time.
// Only the calls whose signature every revision of the extension shares are
// used: create, one NDRange command per kernel, finalize, enqueue, release.
#include <utility>

#include "frameworks/opencl/cl.hpp"

#include <CL/cl_ext.h>

namespace xylem::opencl {

struct DeviceInfo;

struct CommandBufferApi {
  clCreateCommandBufferKHR_fn create = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
};

// The entry points where the device reports cl_khr_command_buffer with
// simultaneous use (a replay may be queued while the last one runs) and
// needs no queue properties beyond the in-order queue we make; else all
// null (Device::command_buffers loads them once).
[[nodiscard]] CommandBufferApi load_command_buffer_api(const DeviceInfo& device);
// XYLEM_OPENCL_COMMAND_BUFFER=0 turns command buffers off (replays then
// enqueue each kernel); read whenever a capture's commands are collected.
[[nodiscard]] bool command_buffers_turned_off();

// An owned cl_command_buffer_khr.
class CommandBuffer {
 public:
  CommandBuffer() = default;
  CommandBuffer(const CommandBufferApi& api, cl_command_buffer_khr raw) noexcept : api_(&api), raw_(raw) {}
  CommandBuffer(CommandBuffer&& o) noexcept : api_(o.api_), raw_(o.raw_) { o.raw_ = nullptr; }
  CommandBuffer& operator=(CommandBuffer&& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(raw_, o.raw_);
    return *this;
  }
  CommandBuffer(const CommandBuffer&) = delete;
  CommandBuffer& operator=(const CommandBuffer&) = delete;
  ~CommandBuffer() {
    if (raw_) api_->release(raw_);  // freed once no replay of it is pending
  }
  [[nodiscard]] cl_command_buffer_khr get() const noexcept { return raw_; }
  [[nodiscard]] const CommandBufferApi& api() const noexcept { return *api_; }
  explicit operator bool() const noexcept { return raw_ != nullptr; }

 private:
  const CommandBufferApi* api_ = nullptr;
  cl_command_buffer_khr raw_ = nullptr;
};

}  // namespace xylem::opencl

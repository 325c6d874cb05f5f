#pragma once
// OpenCL replay of captured work (xylem/capture.hpp). Each recorded call's
// kernel is resolved and its programs built when it is added. On the first
// replay (and again only when a rebind changes a buffer) the calls' launch
// code runs once in a collecting pass (Device::collect): every kernel it
// would enqueue becomes a kernel object of the recording's own, its
// arguments set once, and every library call (CLBlast) a call re-issued as
// it was made. A replay then enqueues that list in order, or the one
// command buffer made of it (command_buffer.hpp), with no per-op dispatch
// or argument work. The temporaries and scratch buffers the launch code
// asked for belong to the list, so they live as long as the recording.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frameworks/opencl/cl.hpp"
#include "frameworks/opencl/command_buffer.hpp"
#include "xylem/plugin/bound_pointers.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

class Device;
struct KernelInfo;
struct OpKernel;

// One kernel argument as the launch code set it (a null value is __local
// memory of `bytes.size()` bytes).
struct KernelArg {
  cl_uint index = 0;
  std::vector<unsigned char> bytes;
  bool local = false;
};

// The commands of a sequence of calls, collected once, enqueued per replay.
class CommandList {
 public:
  // A library call made again at each replay on `queue`; returns its status
  // and, where `event` is not null, the event of its last command.
  using Call = std::function<cl_int(cl_command_queue* queue, cl_event* event)>;

  // A kernel of `info`'s program with these arguments, as a kernel object
  // of the list's own (never changed afterwards).
  void add_kernel(const KernelInfo& info, const std::vector<KernelArg>& args, std::size_t global, std::size_t local,
                  const std::string& what);
  void add_call(Call call, std::string what);
  // A buffer the list keeps for as long as it lives.
  [[nodiscard]] cl_mem keep(Mem buffer);
  // Makes the command buffer where `api` is given and every command is a
  // kernel; the list is complete after this.
  void finish(const CommandBufferApi* api, cl_command_queue queue);
  // The commands after `waits`; returns the event of the last.
  [[nodiscard]] cl_event enqueue(cl_command_queue queue, cl_uint num_waits, const cl_event* waits) const;
  [[nodiscard]] bool uses_command_buffer() const noexcept { return static_cast<bool>(command_buffer_); }

 private:
  struct Step {
    Kernel kernel;  // or a call
    std::size_t global = 0, local = 0;
    Call call;
    std::string what;  // "nn::sigmoid(x: f32 [4, 5], ...)", for errors at replay
  };
  std::vector<Step> steps_;
  std::vector<Mem> buffers_;
  CommandBuffer command_buffer_;
};

class Recording final : public plugin::Recording {
 public:
  explicit Recording(Device& device) : device_(device) {}
  void add(const plugin::OpCall& call) override;
  EventPtr replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) override;

 private:
  Device& device_;
  std::vector<const OpKernel*> kernels_;
  // The commands, and the buffers they were collected for: a rebind that
  // changes one collects them again.
  std::shared_ptr<const CommandList> commands_;
  plugin::BoundPointers bound_;
};

}  // namespace xylem::opencl

#include "frameworks/opencl/recording.hpp"

#include <string>
#include <utility>

#include "frameworks/opencl/device.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/package.hpp"

namespace xylem::opencl {

namespace {

// A fresh kernel object of the program `info.kernel` belongs to: the
// list's own, so no later launch changes its arguments.
Kernel own_kernel(const KernelInfo& info, const std::string& what) {
  cl_program program = nullptr;
  check(clGetKernelInfo(info.kernel.get(), CL_KERNEL_PROGRAM, sizeof program, &program, nullptr),
        [&] { return what + ": the program of " + info.name; });
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, info.name.c_str(), &status));
  check(status, [&] { return what + ": a kernel object for " + info.name; });
  return kernel;
}

}  // namespace

void CommandList::add_kernel(const KernelInfo& info, const std::vector<KernelArg>& args, std::size_t global,
                             std::size_t local, const std::string& what) {
  Kernel kernel = own_kernel(info, what);
  for (const KernelArg& a : args)
    check(clSetKernelArg(kernel.get(), a.index, a.bytes.size(), a.local ? nullptr : a.bytes.data()),
          [&] { return what + ": argument " + std::to_string(a.index) + " of " + info.name; });
  steps_.push_back(Step{std::move(kernel), global, local, nullptr, what});
}

void CommandList::add_call(Call call, std::string what) {
  steps_.push_back(Step{Kernel(), 0, 0, std::move(call), std::move(what)});
}

cl_mem CommandList::keep(Mem buffer) { return buffers_.emplace_back(std::move(buffer)).get(); }

void CommandList::finish(const CommandBufferApi* api, cl_command_queue queue) {
  if (api == nullptr || steps_.empty()) return;
  for (const Step& s : steps_)
    if (!s.kernel) return;  // a library call enqueues on a queue, not in a command buffer
  const cl_command_buffer_properties_khr properties[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                         CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
  cl_int status = CL_SUCCESS;
  CommandBuffer buffer(*api, api->create(1, &queue, properties, &status));
  check(status, [&] { return "opencl: a command buffer for " + std::to_string(steps_.size()) + " recorded kernels"; });
  for (const Step& s : steps_)
    check(api->ndrange(buffer.get(), nullptr, nullptr, s.kernel.get(), 1, nullptr, &s.global, &s.local, 0, nullptr,
                       nullptr, nullptr),
          [&] { return s.what + ": recording into a command buffer"; });
  check(api->finalize(buffer.get()), "opencl: finalizing a command buffer");
  command_buffer_ = std::move(buffer);
}

cl_event CommandList::enqueue(cl_command_queue queue, cl_uint num_waits, const cl_event* waits) const {
  cl_event event = nullptr;
  if (command_buffer_) {
    check(command_buffer_.api().enqueue(0, nullptr, command_buffer_.get(), num_waits, waits, &event), "opencl: replaying a command buffer");
    return event;
  }
  if (steps_.empty()) {
    check(clEnqueueMarkerWithWaitList(queue, num_waits, waits, &event), "opencl: replaying an empty recording");
    return event;
  }
  // The queue is in order: the first command waits for the dependencies,
  // the others follow it; only the last one makes an event.
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    const bool first = i == 0, last = i + 1 == steps_.size();
    cl_event* out = last ? &event : nullptr;
    if (s.kernel) {
      check(clEnqueueNDRangeKernel(queue, s.kernel.get(), 1, nullptr, &s.global, &s.local, first ? num_waits : 0,
                                   first ? waits : nullptr, out),
            [&] { return s.what + ": replaying"; });
    } else {
      if (first && num_waits > 0)
        check(clEnqueueBarrierWithWaitList(queue, num_waits, waits, nullptr), [&] { return s.what + ": replaying"; });
      cl_command_queue q = queue;
      check(s.call(&q, out), [&] { return s.what + ": replaying"; });
    }
  }
  return event;
}

void Recording::add(const plugin::OpCall& call) { kernels_.push_back(&device_.prepare(call)); }

EventPtr Recording::replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) {
  if (calls.size() != kernels_.size())
    throw Error(ErrorCode::internal, "opencl replay: " + std::to_string(calls.size()) + " calls for " +
                                         std::to_string(kernels_.size()) + " recorded");
  // The prepared commands name the data pointers they were prepared for.
  const bool rebound = bound_.changed(calls);
  if (!commands_ || rebound) {
    commands_.reset();  // none, should collecting fail: the next replay tries again
    commands_ = device_.collect(calls, kernels_);
  }
  return device_.replay(*commands_, deps);
}

}  // namespace xylem::opencl

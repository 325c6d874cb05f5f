// One opened OpenCL device: queue, dispatch, host tasks (memory.cpp has
// buffers and transfers).
#include "frameworks/opencl/device.hpp"

#include <string>

#include "frameworks/opencl/host_blocks.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/recording.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;

// The ops that only move bit patterns: every dtype, f64 too on a device
// without fp64.
bool moves_bits(OpId op) noexcept { return op == OpId::creation_fill || op == OpId::core_copy_view; }

}  // namespace

Device::Device(Hardware hardware, DeviceInfo info, Context context, HostWorker& callbacks, HostWorker& tasks)
    : hardware_(std::move(hardware)), info_(std::move(info)), context_(std::move(context)), callbacks_(&callbacks),
      tasks_(&tasks), host_blocks_(host_blocks_for(info_)) {
  cl_int status = CL_SUCCESS;
  queue_ = Queue(clCreateCommandQueue(context_.get(), info_.id, 0, &status));
  check(status, [&] { return "opencl: creating the queue of " + label(); });
}

Device::~Device() {
  if (queue_) clFinish(queue_.get());
}

std::string Device::label() const { return hardware_.id() + " (" + hardware_.name + ")"; }

bool Device::supports(OpId op, DType dtype) const noexcept {
  if (!kernels().get(op, dtype)) return false;
  return dtype != DType::f64 || info_.fp64 || moves_bits(op);
}

DType Device::pass(const ProgramSpec& spec, DType dtype) const noexcept {
  const DType p = pass_for(spec, dtype);
  return p == DType::f64 && !info_.fp64 ? DType::f32 : p;
}

const ProgramPackage& Device::program(const ProgramSpec& spec, DType dtype, int variant) {
  const ProgramKey key{&spec, pass(spec, dtype), variant};
  PackageSlot* slot = nullptr;
  {
    std::lock_guard lock(packages_mutex_);
    auto& entry = packages_[key];
    if (!entry) entry = std::make_unique<PackageSlot>();
    slot = entry.get();
  }
  std::call_once(slot->once, [&] { slot->package = build_package(key, context_.get(), info_); });
  return *slot->package;
}

const OpKernel& Device::prepare(const plugin::OpCall& call) {
  if (call.num_tensors == 0 || !supports(call.op, call.t[0].dtype)) {
    throw Error(ErrorCode::unsupported,
                describe(call, *this) + ": not supported on this device" +
                    (call.num_tensors && call.t[0].dtype == DType::f64 && !info_.fp64 ? " (no fp64)" : ""));
  }
  const OpKernel* kernel = kernels().get(call.op, call.t[0].dtype);
  // Build (or load) the programs before taking the launch lock: a first
  // compile must not stall other launches. A code no variant computes is
  // the caller's mistake, refused before anything is built.
  for (const ProgramSpec* spec : kernel->programs) {
    if (!spec) continue;
    const int variant = variant_for(*spec, call);
    if (variant < 0)
      throw Error(ErrorCode::invalid_argument, describe(call, *this) + ": unknown op code " + std::to_string(call.i[0]));
    (void)program(*spec, call.t[0].dtype, variant);
  }
  return *kernel;
}

EventPtr Device::launch(const plugin::OpCall& call, Deps deps) {
  const OpKernel& kernel = prepare(call);
  std::lock_guard lock(launch_mutex_);
  Launcher launcher(*this, call, deps);
  return kernel.launch(launcher);
}

std::unique_ptr<plugin::Recording> Device::record() { return std::make_unique<Recording>(*this); }

std::shared_ptr<const CommandList> Device::collect(std::span<const plugin::OpCall> calls,
                                                   std::span<const OpKernel* const> kernels) {
  auto list = std::make_shared<CommandList>();
  const CommandBufferApi* api = command_buffers();
  std::lock_guard lock(launch_mutex_);
  collecting_ = list.get();
  struct Reset {
    CommandList*& slot;
    ~Reset() { slot = nullptr; }
  } reset{collecting_};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    Launcher launcher(*this, calls[i], Deps{});
    (void)kernels[i]->launch(launcher);
  }
  list->finish(api, queue_.get());
  return list;
}

EventPtr Device::replay(const CommandList& commands, Deps deps) {
  const WaitList waits(deps, context_.get(), queue_.get());
  // A list may re-issue library calls, which share state with launches.
  std::lock_guard lock(launch_mutex_);
  return wrap(commands.enqueue(queue_.get(), waits.size(), waits.data()));
}

const CommandBufferApi* Device::command_buffers() {
  std::call_once(command_buffers_once_, [&] { command_buffers_ = load_command_buffer_api(info_); });
  return command_buffers_.create && !command_buffers_turned_off() ? &command_buffers_ : nullptr;
}

EventPtr Device::wrap(cl_event event) const {
  return std::make_shared<ClEvent>(ClEventHandle(event), context_.get(), queue_.get(), *callbacks_);
}

EventPtr Device::marker(const WaitList& waits, std::string_view what) const {
  cl_event event = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_.get(), waits.size(), waits.data(), &event),
        [&] { return "opencl: " + std::string(what) + " on " + label(); });
  return wrap(event);
}

cl_mem Device::scratch(std::size_t slot, std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  if (collecting_) {
    // A replay runs long after this launch code: the device's own scratch
    // may be replaced by then.
    cl_int status = CL_SUCCESS;
    Mem mem(create_buffer(bytes, /*drop_scratch=*/false, status));
    check(status, [&] { return "opencl: a recorded scratch buffer of " + std::to_string(bytes) + " bytes on " + label(); });
    return collecting_->keep(std::move(mem));
  }
  if (scratch_bytes_[slot] < bytes) {
    // During a launch: the scratch buffers stay (the launch may hold one).
    cl_int status = CL_SUCCESS;
    Mem mem(create_buffer(bytes, /*drop_scratch=*/false, status));
    check(status, [&] { return "opencl: scratch buffer of " + std::to_string(bytes) + " bytes on " + label(); });
    scratch_[slot] = std::move(mem);
    scratch_bytes_[slot] = bytes;
  }
  return scratch_[slot].get();
}

EventPtr Device::host_task(std::function<void()> fn, Deps deps) {
  // A marker after the deps (and, the queue being in order, after all work
  // queued so far); when it completes, fn runs on the task thread, then a
  // user event completes. That event is not on our queue: later commands
  // that depend on it wait for it explicitly.
  const WaitList waits(deps, context_.get(), queue_.get());
  cl_event raw_marker = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_.get(), waits.size(), waits.data(), &raw_marker),
        [&] { return "opencl: host task on " + label(); });
  const ClEventHandle marker_event(raw_marker);
  cl_int status = CL_SUCCESS;
  ClEventHandle done(clCreateUserEvent(context_.get(), &status));
  check(status, [&] { return "opencl: host task on " + label() + ": clCreateUserEvent"; });
  auto error = std::make_shared<std::exception_ptr>();
  auto result = std::make_shared<ClEvent>(done, context_.get(), static_cast<const void*>(tasks_), *callbacks_, error);
  {
    std::lock_guard lock(host_tasks_mutex_);
    ++host_tasks_pending_;
  }
  when_complete(
      marker_event.get(), *tasks_,
      [this, fn = std::move(fn), done, error](cl_int marker_status) {
        if (marker_status < 0) {
          *error = std::make_exception_ptr(Error(ErrorCode::device_lost, "opencl: a host task's dependency failed on " +
                                                                             label() + ": " +
                                                                             cl_error_name(marker_status)));
        } else {
          try {
            fn();
          } catch (...) {
            *error = std::current_exception();
          }
        }
        clSetUserEventStatus(done.get(), CL_COMPLETE);
        {
          std::lock_guard lock(host_tasks_mutex_);
          --host_tasks_pending_;
        }
        host_tasks_cv_.notify_all();
      },
      "host task");
  return result;
}

void Device::synchronize() {
  check(clFinish(queue_.get()), [&] { return "opencl: synchronize " + label(); });
  std::unique_lock lock(host_tasks_mutex_);
  host_tasks_cv_.wait(lock, [&] { return host_tasks_pending_ == 0; });
}

}  // namespace xylem::opencl

#pragma once
// One opened OpenCL device: its in-order queue, memory, op dispatch and the
// program packages, one per (program, pass, variant), built at first use.
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <cstddef>
#include <mutex>
#include <string>
#include <span>
#include <string_view>

#include "frameworks/opencl/cl.hpp"
#include "frameworks/opencl/command_buffer.hpp"
#include "frameworks/opencl/package.hpp"
#include "frameworks/opencl/queue.hpp"
#include "xylem/plugin/fault.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

// A fault point (xylem/plugin/fault.hpp): `injected`, the status a real
// failure of this kind returns, when the test switch fails this call; else
// the call's own status. The caller checks it as it would any other.
template <class Call>
[[nodiscard]] cl_int unless_fault(plugin::FaultSite site, cl_int injected, Call&& call) {
  return plugin::should_fail(site, "opencl") ? injected : call();
}

// What the kernels and launch code need to know about a device beyond its
// Hardware description.
struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_device_type type = CL_DEVICE_TYPE_DEFAULT;
  std::string name;
  std::string driver;
  std::string platform_version;
  int c_version = 120;  // OpenCL C version the compiler takes: 110, 120, 200, 300
  bool fp64 = false;
  std::size_t max_work_group = 1;
  std::uint64_t local_mem = 0;
  std::uint64_t max_alloc = 0;
  int compute_units = 1;
  // Elements per work-item of the contiguous elementwise kernels: 16 on CPU
  // devices, 1 elsewhere (XY_PER_ITEM in kernels/common.cl, from -DXY_CPU).
  std::size_t per_item = 1;
  // Elements per work-item of the chunked kernels (XY_CHUNK_BOUNDS in
  // kernels/common.cl, Launcher::run_chunks): on CPU devices a run long
  // enough to walk in explicit vectors (64 KiB of f32), 1 elsewhere.
  std::size_t chunk = 1;
};

class Framework;
class CommandList;
class HostBlocks;
struct OpKernel;

// A cache of host blocks for the buffers of a CPU device; null for others.
[[nodiscard]] std::shared_ptr<HostBlocks> host_blocks_for(const DeviceInfo& info);

class Device final : public plugin::Device {
 public:
  Device(Hardware hardware, DeviceInfo info, Context context, HostWorker& callbacks, HostWorker& tasks);
  ~Device() override;

  // plugin::Device
  [[nodiscard]] const Hardware& hardware() const noexcept override { return hardware_; }
  [[nodiscard]] void* allocate(std::size_t bytes) override;
  void release(void* data, Deps after) noexcept override;
  [[nodiscard]] EventPtr upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) override;
  [[nodiscard]] EventPtr download(void* host_dst, const void* src, std::size_t bytes, Deps deps) override;
  [[nodiscard]] EventPtr copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                                   Deps deps) override;
  [[nodiscard]] bool supports(plugin::OpId op, DType dtype) const noexcept override;
  [[nodiscard]] EventPtr launch(const plugin::OpCall& call, Deps deps) override;
  [[nodiscard]] EventPtr host_task(std::function<void()> fn, Deps deps) override;
  void synchronize() override;
  [[nodiscard]] plugin::MemoryStats memory_stats() const override;
  // Replays captured work (recording.hpp).
  [[nodiscard]] std::unique_ptr<plugin::Recording> record() override;
  // Its queue: the one every command of this device goes to.
  [[nodiscard]] void* native_queue() override { return queue_.get(); }

  // `call`'s kernel, its programs built (or loaded); unsupported where the
  // device has none, invalid_argument for an op code no variant computes.
  [[nodiscard]] const OpKernel& prepare(const plugin::OpCall& call);
  // Runs each call's launch code with the commands collected into a list
  // instead of enqueued (recording.hpp); kernels[i] is calls[i]'s.
  [[nodiscard]] std::shared_ptr<const CommandList> collect(std::span<const plugin::OpCall> calls,
                                                           std::span<const OpKernel* const> kernels);
  // Enqueues a collected list after deps.
  [[nodiscard]] EventPtr replay(const CommandList& commands, Deps deps);
  // The list being collected (launch code keeps its buffers there and
  // records its commands instead of enqueuing them), else null. Read under
  // the launch lock, which collect() holds.
  [[nodiscard]] CommandList* collecting() const noexcept { return collecting_; }
  // cl_khr_command_buffer's entry points where the device offers it
  // (command_buffer.hpp), loaded once; null where absent or turned off.
  [[nodiscard]] const CommandBufferApi* command_buffers();

  // For the op families.
  [[nodiscard]] const DeviceInfo& info() const noexcept { return info_; }
  [[nodiscard]] cl_context context() const noexcept { return context_.get(); }
  [[nodiscard]] cl_command_queue queue() const noexcept { return queue_.get(); }
  [[nodiscard]] HostWorker& callbacks() const noexcept { return *callbacks_; }
  // The program (program_spec.hpp) of the pass that holds dtype's kernels
  // and of `variant`, built (or loaded from the disk cache) on first use.
  [[nodiscard]] const ProgramPackage& program(const ProgramSpec& spec, DType dtype, int variant);
  // That pass: pass_for, but never f64 on a device without fp64 (the ops
  // that take f64 there only move bits, which every pass holds).
  [[nodiscard]] DType pass(const ProgramSpec& spec, DType dtype) const noexcept;
  // Wraps a completed-or-pending command of our queue (takes ownership).
  [[nodiscard]] EventPtr wrap(cl_event event) const;
  // Scratch buffer `slot` (0 or 1) of at least `bytes`, for multi-pass
  // kernels; valid until the next launch (launches are serialised and the
  // queue is in order; a replaced buffer lives on until its commands end).
  // While collecting, a buffer of the list's own.
  [[nodiscard]] cl_mem scratch(std::size_t slot, std::size_t bytes);
  // A buffer of `bytes` (over a host block on CPU devices, see
  // host_blocks.hpp), for an op's temporaries.
  [[nodiscard]] cl_mem new_buffer(std::size_t bytes, cl_int& status);
  // "opencl:0 (pthread-skylake-avx512)" for messages.
  [[nodiscard]] std::string label() const;

 private:
  [[nodiscard]] EventPtr marker(const WaitList& waits, std::string_view what) const;
  // new_buffer behind the allocation fault point; out of memory first
  // releases what is held for later (see release_held_memory) and retries once.
  [[nodiscard]] cl_mem create_buffer(std::size_t bytes, bool drop_scratch, cl_int& status);
  // The capacity of the host block (host_blocks.hpp) a buffer of `bytes`
  // goes on, or 0 for a buffer of the runtime's own memory.
  [[nodiscard]] std::size_t block_capacity(std::size_t bytes) const noexcept;
  // A buffer over a block of host_blocks_ (CL_MEM_USE_HOST_PTR) that hands
  // it back when the runtime destroys the buffer.
  [[nodiscard]] cl_mem buffer_on_block(std::size_t capacity, cl_int& status);
  // The device's cache: buffers whose release waits on queued work (freed
  // from event callbacks) and, when `drop_scratch` (not during a launch),
  // the scratch buffers.
  void release_held_memory(bool drop_scratch);

  Hardware hardware_;
  DeviceInfo info_;
  Context context_;
  Queue queue_;
  HostWorker* callbacks_;
  HostWorker* tasks_;

  std::mutex launch_mutex_;  // kernel arguments are per cl_kernel: one launch at a time
  CommandList* collecting_ = nullptr;  // under launch_mutex_
  std::once_flag command_buffers_once_;
  CommandBufferApi command_buffers_;
  std::array<Mem, 2> scratch_;
  std::array<std::size_t, 2> scratch_bytes_{};

  // One slot per (program, pass, variant) asked for; a slot is built once, outside
  // packages_mutex_, so one program's first compile holds up no other.
  struct PackageSlot {
    std::once_flag once;
    std::unique_ptr<ProgramPackage> package;
  };
  std::mutex packages_mutex_;
  std::map<ProgramKey, std::unique_ptr<PackageSlot>> packages_;

  std::atomic<std::uint64_t> allocated_{0}, peak_{0}, allocations_{0};
  // CPU devices: the host memory under large buffers, kept for reuse; null
  // elsewhere (host_blocks.hpp).
  std::shared_ptr<HostBlocks> host_blocks_;
  std::mutex host_tasks_mutex_;
  std::condition_variable host_tasks_cv_;
  std::size_t host_tasks_pending_ = 0;
};

}  // namespace xylem::opencl

#pragma once
// The native device: the host CPU, its memory and one in-order queue.
#include "frameworks/native/memory.hpp"
#include "frameworks/native/queue.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

// Registers the wait for every native queue at exit again, after library
// state just created that exit destroys (a oneDNN convolution plan's first
// use builds oneDNN's tables): exit runs handlers and destructors in reverse
// order of registration, so the queues are waited for before that state is
// destroyed. Bounded: only the first calls register.
void wait_at_exit_before_new_state();

class NativeDevice final : public plugin::Device {
 public:
  explicit NativeDevice(Hardware hardware);

  const Hardware& hardware() const noexcept override { return hardware_; }
  void* allocate(std::size_t bytes) override;
  void release(void* data, plugin::Deps after) noexcept override;
  EventPtr upload(void* dst, const void* host_src, std::size_t bytes, plugin::Deps deps) override;
  EventPtr download(void* host_dst, const void* src, std::size_t bytes, plugin::Deps deps) override;
  EventPtr copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                     plugin::Deps deps) override;
  bool supports(plugin::OpId op, DType dtype) const noexcept override;
  EventPtr launch(const plugin::OpCall& call, plugin::Deps deps) override;
  EventPtr host_task(std::function<void()> fn, plugin::Deps deps) override;
  std::unique_ptr<plugin::Recording> record() override;
  void synchronize() override { queue_.drain(); }
  bool addressable_memory() const noexcept override { return true; }
  plugin::MemoryStats memory_stats() const override { return memory_.stats(); }
  bool set_memory_limit(std::uint64_t bytes) override {
    memory_.set_limit(bytes);
    return true;
  }

 private:
  EventPtr copy_bytes(void* dst, const void* src, std::size_t bytes, plugin::Deps deps);

  Hardware hardware_;
  HostMemory memory_;
  NativeQueue queue_;  // last: its worker stops before the memory goes
};

}  // namespace xylem::native

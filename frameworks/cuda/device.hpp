#pragma once
// One NVIDIA GPU: its stream, events, caching allocator, pinned staging
// buffers, cuBLAS state and kernel launches.
#include <atomic>
#include <memory>
#include <mutex>

#include "memory.hpp"
#include "ops/kernels.hpp"
#include "queue.hpp"
#include "staging.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::cuda {

class CudaDevice final : public plugin::Device {
 public:
  CudaDevice(Hardware hardware, int ordinal);
  ~CudaDevice() override;

  const Hardware& hardware() const noexcept override { return hardware_; }
  void* allocate(std::size_t bytes) override { return memory_.allocate(bytes); }
  void release(void* data, plugin::Deps after) noexcept override;
  EventPtr upload(void* dst, const void* host_src, std::size_t bytes, plugin::Deps deps) override;
  EventPtr download(void* host_dst, const void* src, std::size_t bytes, plugin::Deps deps) override;
  EventPtr copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                     plugin::Deps deps) override;
  bool supports(plugin::OpId op, DType dtype) const noexcept override;
  EventPtr launch(const plugin::OpCall& call, plugin::Deps deps) override;
  EventPtr host_task(std::function<void()> fn, plugin::Deps deps) override;
  void synchronize() override;
  plugin::MemoryStats memory_stats() const override { return memory_.stats(); }
  bool set_memory_limit(std::uint64_t bytes) override {
    memory_.set_limit(bytes);
    return true;
  }

  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }

 private:
  void make_current() const;
  // Orders this stream after deps: CUDA events by a stream wait (no host
  // block), others (native, host tasks) by waiting on the host first.
  void wait_for(plugin::Deps deps, std::string_view what);
  [[nodiscard]] EventPtr record(std::string_view what);
  [[nodiscard]] bool enable_peer(int src_ordinal);

  Hardware hardware_;
  int ordinal_;
  Stream stream_;
  std::shared_ptr<EventPool> events_;
  CachingAllocator memory_;
  StagingPool staging_;
  DeviceBuffer scratch_;
  BlasState blas_;
  Context context_;
  std::mutex launch_mutex_;        // launches and their scratch, cuBLAS handle
  std::mutex peer_mutex_;
  std::uint64_t peers_enabled_ = 0;  // bit per source ordinal
  HostWorker worker_;              // last: its thread stops first
};

}  // namespace xylem::cuda

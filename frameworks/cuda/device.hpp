#pragma once
// One NVIDIA GPU: its two streams (kernels on one, transfers on the other,
// so uploads and downloads overlap with kernels), lazy events, caching
// allocator, pinned staging buffers, cuBLAS state and kernel launches.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "memory.hpp"
#include "ops/kernels.hpp"
#include "queue.hpp"
#include "small_reads.hpp"
#include "staging.hpp"
#include "timeline.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::cuda {

// False when XYLEM_CUDA_PEER_ACCESS=0: copies between GPUs then go through
// the host, as on machines without peer access (to test that route, or to
// compare it). Read once.
[[nodiscard]] bool peer_access_allowed() noexcept;

class GraphExec;
struct RecordedStep;

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
  std::string unsupported_reason(plugin::OpId op, DType dtype) const override;
  EventPtr launch(const plugin::OpCall& call, plugin::Deps deps) override;
  EventPtr host_task(std::function<void()> fn, plugin::Deps deps) override;
  void synchronize() override;
  // Replays captured work as CUDA graphs (recording.hpp).
  std::unique_ptr<plugin::Recording> record() override;
  bool addressable_memory() const noexcept override { return true; }
  // The compute stream: kernels run there, and transfers are ordered
  // against it through events.
  void* native_queue() override { return compute_->stream(); }
  void export_to_queue(void* consumer, plugin::Deps deps) override;
  EventPtr import_from_queue(void* producer, plugin::Deps deps) override;
  plugin::MemoryStats memory_stats() const override { return memory_.stats(); }
  bool set_memory_limit(std::uint64_t bytes) override {
    memory_.set_limit(bytes);
    return true;
  }

  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  // `call`'s kernel function; unsupported, naming the op and dtype, where
  // there is none.
  [[nodiscard]] Kernel kernel_of(const plugin::OpCall& call) const;
  // Runs steps[i].kernel(calls[i]), or steps[i].native (a collective),
  // under a stream capture on the recording stream and instantiates the
  // graph; unsupported, naming the op, where a call cannot be captured.
  [[nodiscard]] std::unique_ptr<GraphExec> capture_graph(std::span<const plugin::OpCall> calls,
                                                         std::span<const RecordedStep> steps);
  // Launches an instantiated graph on the compute stream after deps.
  [[nodiscard]] EventPtr launch_graph(const GraphExec& graph, plugin::Deps deps);
  // Makes this GPU the calling thread's current device.
  void select() const { make_current(); }
  // One op of a library that takes a stream (NCCL): `commands` enqueue it
  // on the communication stream, after `deps` and after every kernel
  // enqueued so far; returns its event. Kernels enqueued later run beside
  // it (a bucket's all_reduce beside the rest of the backward pass). What
  // `commands` throws leaves nothing numbered.
  [[nodiscard]] EventPtr enqueue(std::string_view what, plugin::Deps deps,
                                 const std::function<void(cudaStream_t)>& commands);
  // The same for one op over several GPUs at once (NCCL's group launch,
  // whose kernels reach every stream only when the group ends):
  // `commands` gets devices[i]'s compute stream as streams[i], after
  // deps[i] there, with every one of those streams held until each op is
  // numbered. Distinct devices; events in the devices' order.
  [[nodiscard]] static std::vector<EventPtr> enqueue_together(
      std::span<CudaDevice* const> devices, std::span<const std::vector<EventPtr>> deps, std::string_view what,
      const std::function<void(std::span<const cudaStream_t> streams)>& commands);

 private:
  void make_current() const;
  // Orders `own` after deps: ops of other streams by a stream wait (no host
  // block), others (native, host tasks) by waiting on the host first; ops of
  // `own` itself need nothing.
  void wait_for(Timeline& own, plugin::Deps deps, std::string_view what) {
    order_stream(own.stream(), &own, deps, what);
  }
  // The same for any stream of this device; `queue`: the Event::queue() of
  // ops already in it (null for a stream of the application).
  void order_stream(cudaStream_t stream, const void* queue, plugin::Deps deps, std::string_view what);
  // Before a transfer writes into dst: kernels that used the block before
  // it was last freed must be done (see memory.hpp).
  void fence_transfer(void* dst);
  [[nodiscard]] bool enable_peer(int src_ordinal);

  Hardware hardware_;
  int ordinal_;
  std::shared_ptr<Timeline> compute_;   // kernels, cuBLAS, same-device copies
  std::shared_ptr<Timeline> transfer_;  // uploads, downloads, peer copies
  std::shared_ptr<Timeline> comm_;      // collectives (NCCL), beside the kernels
  CachingAllocator memory_;
  StagingPool staging_;
  SmallReads small_reads_;
  DeviceBuffer scratch_;
  BlasState blas_;
  Context context_;
  Packages packages_;  // cuDNN state; before the worker, after the streams
  std::mutex peer_mutex_;
  std::uint64_t peers_enabled_ = 0;  // bit per source ordinal
  cudaStream_t capture_stream_ = nullptr;  // made on the first capture, under the compute lock
  cudaStream_t side_stream_ = nullptr;     // the captured collectives' (recording.hpp), likewise
  HostWorker worker_;              // last: its thread stops first
};

}  // namespace xylem::cuda

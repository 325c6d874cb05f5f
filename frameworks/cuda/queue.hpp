#pragma once
// The ordering machinery of one CUDA device: streams, a pool of CUDA events
// (timeline.hpp turns them into lazy op events), and a host worker thread
// for host tasks and completion callbacks (which must not run on CUDA's own
// callback thread: they may call CUDA or block).
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "xylem/future.hpp"
#include "xylem/plugin/host_worker.hpp"

namespace xylem::cuda {

// A non-blocking stream (no implicit ordering with the legacy default stream).
class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

// Events are created once and reused: creating one per launch would cost
// more than the launch.
class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  [[nodiscard]] cudaEvent_t acquire();
  void put(cudaEvent_t event) noexcept;
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  int device_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

// Completed by a host task on a HostWorker, or by a watcher thread (NCCL's
// calls); carries the failure. `wanted`, when given, is called (under the
// event's lock, so only before finish()) when a caller starts waiting for
// it (and every millisecond while it waits), or hangs a callback on it,
// before it is done: a watcher that looks
// at its calls only now and then looks at once. (ready() is a poll: the
// watcher's next look, within 200 us, answers it.)
class HostEvent final : public Event {
 public:
  explicit HostEvent(const void* queue, std::function<void()> wanted = {}) noexcept
      : queue_(queue), wanted_(std::move(wanted)) {}
  [[nodiscard]] bool ready() const override;
  void wait() const override;
  [[nodiscard]] const void* queue() const noexcept override { return queue_; }
  void on_ready(std::function<void()> fn) const override;
  void finish(std::exception_ptr error) noexcept;

 private:
  // Under mutex_ and before done_.
  void want() const {
    if (!done_ && wanted_) wanted_();
  }

  const void* queue_;
  std::function<void()> wanted_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::function<void()>> callbacks_;
  bool done_ = false;
  std::exception_ptr error_;
};

using plugin::HostWorker;

}  // namespace xylem::cuda

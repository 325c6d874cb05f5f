#pragma once
// The native framework's in-order queue: one worker thread per device runs
// enqueued kernels and host tasks in order, so callers return at once.
// Kernels parallelise inside with oneTBB.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

// Completion of one queued task. Callbacks registered with on_ready run on
// the worker thread right after the task.
class NativeEvent final : public Event {
 public:
  explicit NativeEvent(const void* queue) noexcept : queue_(queue) {}
  bool ready() const override { return done_.load(std::memory_order_acquire); }
  void wait() const override;
  const void* queue() const noexcept override { return queue_; }
  void on_ready(std::function<void()> fn) const override;
  void complete(std::exception_ptr error) noexcept;

 private:
  const void* queue_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
  mutable std::mutex callbacks_mutex_;
  mutable std::vector<std::function<void()>> callbacks_;
};

class NativeQueue {
 public:
  NativeQueue();
  ~NativeQueue();
  NativeQueue(const NativeQueue&) = delete;
  NativeQueue& operator=(const NativeQueue&) = delete;

  // Both return the event of the task; deps from other queues are waited
  // for on the worker thread, never on the caller's.
  EventPtr enqueue(Kernel kernel, const plugin::OpCall& call, plugin::Deps deps);
  EventPtr enqueue(std::function<void()> fn, plugin::Deps deps);
  // Waits until everything enqueued so far has run.
  void drain();

 private:
  struct Task {
    Kernel kernel = nullptr;
    plugin::OpCall call;
    std::function<void()> fn;
    std::vector<EventPtr> foreign_deps;
    std::shared_ptr<NativeEvent> event;
  };

  // Builds the task in place in the pending list, under the lock: the
  // caller fills it through `fill`.
  template <class Fill>
  EventPtr push(plugin::Deps deps, Fill&& fill);
  void run(Task& task) noexcept;
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Task> pending_;  // swapped whole into the worker: no allocation per task once warm
  // Set by producers when they add work, cleared by the worker when it takes
  // it. Producers write it only when it changes, so a worker spinning on it
  // costs them no cache-line transfer per task.
  std::atomic<bool> has_work_{false};
  bool sleeping_ = false;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace xylem::native

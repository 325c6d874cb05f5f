#pragma once
// The one thread every communicator's work runs on, in the order it was
// enqueued. One thread keeps each process's collectives in program order
// (what every transport needs: the ranks must call them in one order) and
// lets MPI run single-threaded.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "xylem/future.hpp"

namespace xylem::dist::detail {

// Completed by the work queue, carrying the work's error. A waiter polls
// for a moment before it sleeps: a small collective ends within
// microseconds, and waking a sleeping thread costs about as much again.
class WorkEvent final : public Event {
 public:
  bool ready() const override;
  void wait() const override;
  const void* queue() const noexcept override;
  void finish(std::exception_ptr error);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::atomic<bool> done_{false};
  mutable bool sleepers_ = false;  // under mutex_: whether finish() must notify
  std::exception_ptr error_;
};

// Runs `work` on the work queue's thread after the work enqueued before it;
// the event completes when it returns, with its exception if it throws.
std::shared_ptr<const WorkEvent> enqueue(std::function<void()> work);

}  // namespace xylem::dist::detail

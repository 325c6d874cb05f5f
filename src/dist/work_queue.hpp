#pragma once
// The one thread every communicator's work runs on, in the order it was
// enqueued. One queue keeps each process's collectives in program order
// (what every transport needs: the ranks must call them in one order) and
// makes the transports' calls one at a time (MPI_THREAD_SERIALIZED). Work
// may also run on the caller's thread while it holds the idle queue
// (InlineWork): a small collective then costs what the transport's call
// costs, not two thread hand-offs.
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "dist/function_ref.hpp"
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
  std::exception_ptr error_;  // written before done_ is set, read after it is seen
};

// Runs `work` on the work queue's thread after the work enqueued before it;
// the event completes when it returns, with its exception if it throws.
std::shared_ptr<const WorkEvent> enqueue(std::function<void()> work);

// Work run on the calling thread in the queue's place. claim() succeeds
// only when nothing is queued or running, and the check and the claim are
// one step: work enqueued afterwards, from any thread, waits until run()
// returns, so program order holds as if this had been enqueued.
class InlineWork {
 public:
  [[nodiscard]] static std::optional<InlineWork> claim();
  InlineWork(InlineWork&& other) noexcept : event_(std::move(other.event_)) {}
  InlineWork(const InlineWork&) = delete;
  InlineWork& operator=(const InlineWork&) = delete;
  InlineWork& operator=(InlineWork&&) = delete;
  ~InlineWork();  // a claim never run gives the queue back

  // Not yet complete: for the tensors to record before the work runs.
  [[nodiscard]] std::shared_ptr<const WorkEvent> event() const noexcept { return event_; }
  // Runs `work` here, gives the queue back, then completes event() as
  // enqueue's work completes its own (with the exception, if it throws).
  void run(std::function<void()> work) &&;
  // The same for work that holds nothing to release before event() completes.
  void run(FunctionRef<void()> work) &&;

 private:
  InlineWork() : event_(std::make_shared<WorkEvent>()) {}
  std::shared_ptr<WorkEvent> event_;
};

}  // namespace xylem::dist::detail

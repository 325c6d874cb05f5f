#pragma once
// An event for work not enqueued yet: a collective of a group whose ranks
// all live in this process runs once the last rank has called it, but
// each earlier rank's call must return a future, and its tensors must
// record the work, at once. The stand-in then follows the work's own event.
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>

#include "xylem/future.hpp"

namespace xylem::dist::detail {

class StandIn final : public Event {
 public:
  // `call` names the call and rank for a wait that passes `deadline`
  // before the work is enqueued.
  StandIn(std::chrono::steady_clock::time_point deadline, std::string call)
      : deadline_(deadline), call_(std::move(call)) {}

  bool ready() const override;
  // Until the work is enqueued, then the work's own wait; Error(timeout)
  // when the deadline passes first.
  void wait() const override;
  const void* queue() const noexcept override { return this; }

  // The work is enqueued as `event` (or failed before it was).
  void follow(EventPtr event);
  void fail(std::exception_ptr error);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  EventPtr event_;
  std::exception_ptr error_;
  std::chrono::steady_clock::time_point deadline_;
  std::string call_;
};

}  // namespace xylem::dist::detail

#include "dist/stand_in.hpp"

#include "xylem/error.hpp"

namespace xylem::dist::detail {

bool StandIn::ready() const {
  EventPtr event;
  {
    std::lock_guard lock(mutex_);
    if (error_) return true;
    event = event_;
  }
  return event && event->ready();
}

void StandIn::wait() const {
  EventPtr event;
  {
    std::unique_lock lock(mutex_);
    if (!cv_.wait_until(lock, deadline_, [&] { return event_ || error_; }))
      throw Error(ErrorCode::timeout,
                  call_ + ": the other ranks of this process's group did not make the call before the timeout; "
                          "a thread driving several ranks must call it on every rank's communicator before "
                          "waiting for one");
    if (error_) std::rethrow_exception(error_);
    event = event_;
  }
  event->wait();
}

void StandIn::follow(EventPtr event) {
  {
    std::lock_guard lock(mutex_);
    event_ = std::move(event);
  }
  cv_.notify_all();
}

void StandIn::fail(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
  }
  cv_.notify_all();
}

}  // namespace xylem::dist::detail

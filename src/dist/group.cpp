#include "dist/group.hpp"

#include <time.h>

#include <chrono>

#include "dist/work_queue.hpp"

namespace xylem::dist::detail {
namespace {

// A call's deadline, `timeout` from now, read from the coarse monotonic
// clock: the clock of steady_clock (both are CLOCK_MONOTONIC) as of the
// kernel's last tick, plus one tick, so the deadline comes never early and
// at most a tick (1-10 ms) late. Read on every call, it costs 10 ns
// against steady_clock::now()'s 60 on the 2-core VM, where a whole small
// all_reduce costs about 1 us.
plugin::dist::Deadline deadline_after(std::chrono::milliseconds timeout) noexcept {
  using plugin::dist::Clock;
  static const Clock::duration tick = [] {
    timespec resolution{};
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) != 0) return Clock::duration::max();
    return std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(resolution.tv_sec) +
                                                       std::chrono::nanoseconds(resolution.tv_nsec));
  }();
  timespec now{};
  if (tick == Clock::duration::max() || clock_gettime(CLOCK_MONOTONIC_COARSE, &now) != 0)
    return Clock::now() + timeout;
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(now.tv_sec) +
                                                                       std::chrono::nanoseconds(now.tv_nsec))) +
         tick + timeout;
}

}  // namespace

Link::~Link() {
  // A transport is released on the queue's thread, after the work that
  // uses it (MPI is called from one thread at a time), and before this
  // returns: the world's release finalises MPI, which must happen before
  // the process ends.
  if (transport.use_count() == 1) enqueue([t = std::move(transport)]() mutable { t.reset(); })->wait();
}

void Group::run(const Signature& signature,
                FunctionRef<void(plugin::dist::Transport&, plugin::dist::Deadline)> body) const {
  if (!link_->failure.empty())
    throw Error(ErrorCode::communication, "dist::" + signature.call +
                                              ": this communicator failed earlier and cannot be used again (" +
                                              link_->failure + ")");
  const auto deadline = deadline_after(timeout_);
  try {
    if (checked_) check_same(*link_->transport, signature, deadline);
    body(*link_->transport, deadline);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::timeout || e.code() == ErrorCode::communication) link_->failure = e.what();
    throw;
  }
}

}  // namespace xylem::dist::detail

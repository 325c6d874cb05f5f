#include "dist/group.hpp"

#include <chrono>

#include "dist/work_queue.hpp"

namespace xylem::dist::detail {

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
  // steady_clock, not the coarse monotonic clock (10 ns against 60): on a
  // tickless VM the coarse clock lagged more than its stated resolution,
  // and a deadline built from it came 2 ms early (dist.mpi_timeout in CI).
  const auto deadline = plugin::dist::Clock::now() + timeout_;
  try {
    if (checked_) check_same(*link_->transport, signature, deadline);
    body(*link_->transport, deadline);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::timeout || e.code() == ErrorCode::communication) link_->failure = e.what();
    throw;
  }
}

}  // namespace xylem::dist::detail

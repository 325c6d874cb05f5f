#pragma once
// A communicator's state: its transport, shared with the communicators
// made with other options over the same ranks, and the policy around
// each call (the deadline, the checked mode, a transport that failed).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "dist/check.hpp"
#include "dist/function_ref.hpp"
#include "xylem/dist.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

class LocalGroup;

// One transport and whether it is still usable: after a timeout or a lost
// peer its ranks no longer agree on what comes next, so every later call
// fails at once with the first failure's message. Touched only by whoever
// holds the work queue (its thread, or a caller running a small call
// itself), as every transport call is.
struct Link {
  explicit Link(std::shared_ptr<plugin::dist::Transport> t) : transport(std::move(t)) {}
  ~Link();
  std::shared_ptr<plugin::dist::Transport> transport;
  std::string failure;

  // The device transports over the same ranks (device_link.hpp), one per
  // device, started on first use. Device calls are enqueued on the
  // caller's thread, so these are under their own mutex.
  struct DeviceSlot {
    std::shared_ptr<plugin::dist::DeviceTransport> transport;  // null: the host transport serves the device
    std::string why;  // when null
  };
  std::mutex devices_mutex;
  std::map<const plugin::Device*, DeviceSlot> devices;
};

class Group {
 public:
  Group(std::shared_ptr<Link> link, std::chrono::milliseconds timeout, bool checked, std::string device)
      : link_(std::move(link)), timeout_(timeout), checked_(checked), device_(std::move(device)) {}
  // Rank `rank` of a group whose ranks all live in this process.
  Group(std::shared_ptr<LocalGroup> local, int rank, std::chrono::milliseconds timeout)
      : timeout_(timeout), checked_(true), local_(std::move(local)), local_rank_(rank) {}

  // The local group, or null for ranks in other processes; this rank in it.
  [[nodiscard]] LocalGroup* local() const noexcept { return local_.get(); }
  [[nodiscard]] int local_rank() const noexcept { return local_rank_; }

  [[nodiscard]] const std::shared_ptr<Link>& link() const noexcept { return link_; }
  [[nodiscard]] plugin::dist::Transport& transport() const noexcept { return *link_->transport; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  [[nodiscard]] bool checked() const noexcept { return checked_; }
  [[nodiscard]] const std::string& device() const noexcept { return device_; }  // Options::device

  // Holding the work queue: refuses a failed link, compares signatures in the
  // checked mode, then runs `body` against the call's deadline. A timeout
  // or communication error marks the link failed.
  void run(const Signature& signature, FunctionRef<void(plugin::dist::Transport&, plugin::dist::Deadline)> body) const;

 private:
  std::shared_ptr<Link> link_;
  std::chrono::milliseconds timeout_;
  bool checked_;
  std::string device_;
  std::shared_ptr<LocalGroup> local_;
  int local_rank_ = 0;
};

}  // namespace xylem::dist::detail

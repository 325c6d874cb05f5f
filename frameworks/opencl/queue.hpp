#pragma once
// Events and ordering: a cl_event wrapped as a xylem::Event, the conversion
// of a launch's dependencies into an event wait list, and the host threads
// that run callbacks and host tasks.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "frameworks/opencl/cl.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/host_worker.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::opencl {

using plugin::Deps;

// Callbacks from the CL runtime only post to a HostWorker: the runtime's own
// threads must not block.
using plugin::HostWorker;

// A cl_event as the core sees it. `queue_id` is the in-order queue the
// command ran on (the core skips waits within one queue), or another
// identity for user events completed from the host. `error` carries an
// exception from a host task.
class ClEvent final : public Event {
 public:
  ClEvent(ClEventHandle event, cl_context context, const void* queue_id, HostWorker& callbacks,
          std::shared_ptr<std::exception_ptr> error = nullptr) noexcept
      : event_(std::move(event)), context_(context), queue_id_(queue_id), callbacks_(&callbacks),
        error_(std::move(error)) {}

  [[nodiscard]] bool ready() const override;
  void wait() const override;
  [[nodiscard]] const void* queue() const noexcept override { return queue_id_; }
  void on_ready(std::function<void()> fn) const override;

  [[nodiscard]] cl_event raw() const noexcept { return event_.get(); }
  [[nodiscard]] cl_context context() const noexcept { return context_; }

 private:
  [[nodiscard]] cl_int status() const;
  ClEventHandle event_;
  cl_context context_;
  const void* queue_id_;
  HostWorker* callbacks_;
  std::shared_ptr<std::exception_ptr> error_;
};

// Dependencies as an event wait list for one queue. Our own events from the
// same context go in directly; foreign ones (native, other platforms) become
// user events completed when they are.
class WaitList {
 public:
  WaitList(Deps deps, cl_context context, cl_command_queue queue);
  [[nodiscard]] cl_uint size() const noexcept { return static_cast<cl_uint>(raw_.size()); }
  [[nodiscard]] const cl_event* data() const noexcept { return raw_.empty() ? nullptr : raw_.data(); }
  [[nodiscard]] bool empty() const noexcept { return raw_.empty(); }

 private:
  std::vector<cl_event> raw_;
  std::vector<ClEventHandle> owned_;
};

// Runs fn on `worker` once `event` completes; fn gets the event's final
// status (CL_COMPLETE or a negative error).
void when_complete(cl_event event, HostWorker& worker, std::function<void(cl_int)> fn, std::string_view what);

}  // namespace xylem::opencl

// Events, wait lists and host threads (see queue.hpp).
#include "frameworks/opencl/queue.hpp"

#include <string>

namespace xylem::opencl {

namespace {

struct CallbackPayload {
  HostWorker* worker;
  std::function<void(cl_int)> fn;
};

void CL_CALLBACK on_event_complete(cl_event, cl_int status, void* user) {
  auto* payload = static_cast<CallbackPayload*>(user);
  payload->worker->post([fn = std::move(payload->fn), status] { fn(status); });
  delete payload;
}

}  // namespace

void when_complete(cl_event event, HostWorker& worker, std::function<void(cl_int)> fn, std::string_view what) {
  auto* payload = new CallbackPayload{&worker, std::move(fn)};
  const cl_int status = clSetEventCallback(event, CL_COMPLETE, &on_event_complete, payload);
  if (status != CL_SUCCESS) {
    delete payload;
    check(status, [&] { return std::string(what) + ": clSetEventCallback"; });
  }
}

cl_int ClEvent::status() const {
  cl_int s = CL_COMPLETE;
  check(clGetEventInfo(event_.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, nullptr),
        "opencl event status: clGetEventInfo");
  return s;
}

bool ClEvent::ready() const {
  const cl_int s = status();
  return s == CL_COMPLETE || s < 0;
}

void ClEvent::wait() const {
  cl_event e = event_.get();
  const cl_int waited = clWaitForEvents(1, &e);
  const cl_int s = status();
  if (s < 0 || (waited != CL_SUCCESS && waited != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST))
    throw Error(ErrorCode::device_lost, "opencl: enqueued work failed: " + cl_error_name(s < 0 ? s : waited) +
                                            " (an earlier command or a dependency did not complete)");
  if (error_ && *error_) std::rethrow_exception(*error_);
}

void ClEvent::on_ready(std::function<void()> fn) const {
  if (ready()) {
    fn();
    return;
  }
  when_complete(event_.get(), *callbacks_, [fn = std::move(fn)](cl_int) { fn(); }, "opencl event on_ready");
}

WaitList::WaitList(Deps deps, cl_context context, cl_command_queue queue) {
  for (const EventPtr& dep : deps) {
    if (!dep) continue;
    if (const auto* ours = dynamic_cast<const ClEvent*>(dep.get()); ours && ours->context() == context) {
      // Commands on our own in-order queue are already ordered.
      if (ours->queue() == static_cast<const void*>(queue)) continue;
      raw_.push_back(ours->raw());
      continue;
    }
    if (dep->ready()) {
      dep->wait();  // rethrows the error of a failed dependency
      continue;
    }
    cl_int status = CL_SUCCESS;
    ClEventHandle user(clCreateUserEvent(context, &status));
    check(status, "opencl: clCreateUserEvent for a dependency on another framework");
    // The dependency completes the user event from its own thread; a failed
    // dependency fails the commands that wait on it.
    dep->on_ready([dep, user]() {
      cl_int done = CL_COMPLETE;
      try {
        dep->wait();
      } catch (...) {
        done = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
      }
      clSetUserEventStatus(user.get(), done);
    });
    raw_.push_back(user.get());
    owned_.push_back(std::move(user));
  }
}

}  // namespace xylem::opencl

#include "queue.hpp"

#include "check.hpp"

namespace xylem::cuda {

// Destructors below ignore CUDA errors on purpose: they cannot throw, and at
// process exit the CUDA runtime may already be torn down
// (cudaErrorCudartUnloading), when there is nothing left to release.

Stream::Stream(int device) : device_(device) {
  XY_CUDA(cudaSetDevice(device), device, "create stream");
  XY_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), device, "create stream");
}

Stream::~Stream() { (void)cudaStreamDestroy(stream_); }

EventPool::~EventPool() {
  for (cudaEvent_t e : free_) (void)cudaEventDestroy(e);
}

cudaEvent_t EventPool::acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  // An event belongs to the device current at its creation, and a wait from
  // another GPU's thread may get here: create it on ours, then switch back.
  int current = -1;
  XY_CUDA(cudaGetDevice(&current), device_, "create event");
  if (current != device_) XY_CUDA(cudaSetDevice(device_), device_, "create event");
  cudaEvent_t e = nullptr;
  const cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  if (current != device_) {
    const cudaError_t back = cudaSetDevice(current);
    if (back != cudaSuccess && err == cudaSuccess) (void)cudaEventDestroy(e);
    XY_CUDA(back, current, "create event");
  }
  XY_CUDA(err, device_, "create event");
  return e;
}

void EventPool::put(cudaEvent_t event) noexcept {
  try {
    std::lock_guard lock(mutex_);
    free_.push_back(event);
  } catch (...) {
    (void)cudaEventDestroy(event);  // no memory to keep it: give it back instead
  }
}

bool HostEvent::ready() const {
  std::lock_guard lock(mutex_);  // a poll: not a wait (data-parallel training polls each step)
  return done_;
}

void HostEvent::wait() const {
  std::unique_lock lock(mutex_);
  // Said again now and then, not once: a watcher that looks without pause
  // only for a while after each want (nccl_transport.cpp) would otherwise
  // fall back to polling during a long call and end its wait up to a poll
  // late (200 us on every collective of 1 GiB and more on two H100s).
  constexpr std::chrono::milliseconds kWantAgain{1};
  for (want(); !cv_.wait_for(lock, kWantAgain, [&] { return done_; });) want();
  if (error_) std::rethrow_exception(error_);
}

void HostEvent::on_ready(std::function<void()> fn) const {
  {
    std::lock_guard lock(mutex_);
    if (!done_) {
      callbacks_.push_back(std::move(fn));
      want();
      return;
    }
  }
  fn();
}

void HostEvent::finish(std::exception_ptr error) noexcept {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& fn : callbacks) {
    try {
      fn();
    } catch (...) {
      // A callback's failure belongs to whoever registered it (Future::then
      // stores its own); nothing to report here.
    }
  }
}

}  // namespace xylem::cuda

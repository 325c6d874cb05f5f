#include "xylem/plugin/host_worker.hpp"

#include <future>

namespace xylem::plugin {

HostWorker::HostWorker() : thread_([this] { loop(); }) {}

HostWorker::~HostWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HostWorker::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void HostWorker::drain() {
  if (std::this_thread::get_id() == thread_.get_id()) return;
  std::promise<void> done;
  auto future = done.get_future();
  post([&done] { done.set_value(); });
  future.wait();
}

void HostWorker::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (...) {
      // See post(): the job's own event carries its failure.
    }
  }
}

}  // namespace xylem::plugin

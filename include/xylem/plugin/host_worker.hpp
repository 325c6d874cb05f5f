#pragma once
// One host thread running posted jobs in order: what a framework uses for
// host tasks and for work that a driver callback must not do on the
// driver's own thread (CUDA host tasks, OpenCL event callbacks).
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace xylem::plugin {

class HostWorker {
 public:
  HostWorker();
  // Runs the jobs already posted, then stops.
  ~HostWorker();
  HostWorker(const HostWorker&) = delete;
  HostWorker& operator=(const HostWorker&) = delete;

  // Jobs report failures through their own events: an exception escaping a
  // job is dropped, so the thread lives on for the jobs after it.
  void post(std::function<void()> job);
  // Waits until every job posted so far has run (no-op on the worker itself).
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace xylem::plugin

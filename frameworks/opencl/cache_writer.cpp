// The cache writer thread (cache_writer.hpp).
#include "frameworks/opencl/cache_writer.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace xylem::opencl {

namespace {

void drain_at_exit();

class Writer {
 public:
  Writer() : thread_([this] { run(); }) {}
  // Runs at exit after the handlers registered later (drain_at_exit's):
  // the queue is empty by then.
  ~Writer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void push(std::function<void()> write) {
    {
      std::lock_guard lock(mutex_);
      writes_.push_back(std::move(write));
    }
    ready_.notify_one();
  }

  // Returns once every queued write is done.
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return writes_.empty() && !busy_; });
  }

 private:
  void run() {
    // Below the threads that wait for results: the first calls' launches
    // compile their kernels on the same cores (Linux sets nice per thread).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
    for (;;) {
      std::function<void()> write;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stop_ || !writes_.empty(); });
        if (writes_.empty()) return;
        write = std::move(writes_.front());
        writes_.pop_front();
        busy_ = true;
      }
      try {
        write();
      } catch (...) {
        // Dropped: see write_later.
      }
      // Exit handlers run in reverse order of registration, and the LLVM
      // under an OpenCL compiler registers some of its own on the first
      // code generation (a write's, or a launch's): the queued writes must
      // be done before those run, or a write at exit crashes. So the drain
      // registers again after every write (the list of handlers grows by
      // one entry a program).
      (void)std::atexit(drain_at_exit);
      {
        std::lock_guard lock(mutex_);
        busy_ = false;
      }
      idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_, idle_;
  std::deque<std::function<void()>> writes_;
  bool stop_ = false, busy_ = false;
  std::thread thread_;
};

Writer& writer() {
  static Writer instance;
  return instance;
}

void drain_at_exit() { writer().wait_idle(); }

}  // namespace

void write_later(std::function<void()> write) {
  writer().push(std::move(write));
  (void)std::atexit(drain_at_exit);
}

}  // namespace xylem::opencl

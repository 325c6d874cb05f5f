#include "dist/work_queue.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace xylem::dist::detail {
namespace {

class WorkQueue {
 public:
  // Leaked on purpose: work may still be queued while statics are destroyed.
  static WorkQueue& instance() {
    static WorkQueue* queue = new WorkQueue();
    return *queue;
  }

  void push(std::function<void()> item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
    }
    wake_.notify_one();
  }

 private:
  WorkQueue() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    for (;;) {
      std::function<void()> item;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !items_.empty(); });
        item = std::move(items_.front());
        items_.pop_front();
      }
      item();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> items_;
};

}  // namespace

bool WorkEvent::ready() const {
  std::lock_guard lock(mutex_);
  return done_;
}

void WorkEvent::wait() const {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

const void* WorkEvent::queue() const noexcept { return &WorkQueue::instance(); }

void WorkEvent::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
    done_ = true;
  }
  cv_.notify_all();
}

std::shared_ptr<const WorkEvent> enqueue(std::function<void()> work) {
  auto event = std::make_shared<WorkEvent>();
  WorkQueue::instance().push([event, work = std::move(work)]() mutable {
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    // What the work holds (a communicator's group) goes before the waiter
    // wakes: a program that then exits must find the group released.
    work = nullptr;
    event->finish(std::move(error));
  });
  return event;
}

}  // namespace xylem::dist::detail

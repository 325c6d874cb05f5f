#include "dist/work_queue.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace xylem::dist::detail {
namespace {

// How long the work queue's thread and a waiter poll before they sleep on
// a condition variable. Polling yields the core between looks, so a rank's
// compute threads lose nothing to it; what it saves is two thread wake-ups
// per call (enqueue -> queue thread, finish -> waiter), most of a small
// all_reduce's cost beside MPI_Allreduce.
constexpr auto kPoll = std::chrono::microseconds(50);

// Calls ready() until it is true or kPoll has passed; whether it became true.
template <class Ready>
bool poll(Ready&& ready) {
  if (ready()) return true;
  const auto until = std::chrono::steady_clock::now() + kPoll;
  do {
    std::this_thread::yield();
    if (ready()) return true;
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

class WorkQueue {
 public:
  // Leaked on purpose: work may still be queued while statics are destroyed.
  static WorkQueue& instance() {
    static WorkQueue* queue = new WorkQueue();
    return *queue;
  }

  void push(std::function<void()> item) {
    bool sleeping = false;
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
      queued_.fetch_add(1, std::memory_order_release);
      sleeping = sleeping_;
    }
    if (sleeping) wake_.notify_one();
  }

 private:
  WorkQueue() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    for (;;) {
      poll([&] { return queued_.load(std::memory_order_acquire) > 0; });
      std::function<void()> item;
      {
        std::unique_lock lock(mutex_);
        sleeping_ = true;
        wake_.wait(lock, [&] { return !items_.empty(); });
        sleeping_ = false;
        item = std::move(items_.front());
        items_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      item();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> items_;
  std::atomic<std::size_t> queued_{0};  // items_.size(), read without the lock
  bool sleeping_ = false;               // under mutex_: whether push() must notify
};

}  // namespace

bool WorkEvent::ready() const { return done_.load(std::memory_order_acquire); }

void WorkEvent::wait() const {
  if (!poll([&] { return ready(); })) {
    std::unique_lock lock(mutex_);
    sleepers_ = true;
    cv_.wait(lock, [&] { return ready(); });
  }
  std::lock_guard lock(mutex_);  // error_ was written under it
  if (error_) std::rethrow_exception(error_);
}

const void* WorkEvent::queue() const noexcept { return &WorkQueue::instance(); }

void WorkEvent::finish(std::exception_ptr error) {
  bool sleepers = false;
  {
    std::lock_guard lock(mutex_);
    error_ = std::move(error);
    done_.store(true, std::memory_order_release);
    sleepers = sleepers_;
  }
  if (sleepers) cv_.notify_all();
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

#include "dist/work_queue.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>

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

struct Item {
  std::function<void()> work;
  std::shared_ptr<WorkEvent> event;
};

template <class Work>
void perform(Work& work, WorkEvent& event);

class WorkQueue {
 public:
  // Leaked on purpose: work may still be queued while statics are destroyed.
  static WorkQueue& instance() {
    static WorkQueue* queue = new WorkQueue();
    return *queue;
  }

  void push(Item item) {
    bool sleeping = false;
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
      queued_.fetch_add(1, std::memory_order_release);
      sleeping = sleeping_;
    }
    if (sleeping) wake_.notify_one();
  }

  // Whether the queue was idle; if so the caller holds it until release().
  bool hold_if_idle() {
    std::lock_guard lock(mutex_);
    if (held_ || !items_.empty()) return false;
    held_ = true;
    return true;
  }

  void release() {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      held_ = false;
      wake = sleeping_ && !items_.empty();
    }
    if (wake) wake_.notify_one();
  }

 private:
  WorkQueue() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    for (;;) {
      poll([&] { return queued_.load(std::memory_order_acquire) > 0; });
      Item item;
      {
        std::unique_lock lock(mutex_);
        sleeping_ = true;
        wake_.wait(lock, [&] { return !items_.empty() && !held_; });
        sleeping_ = false;
        held_ = true;
        item = std::move(items_.front());
        items_.pop_front();
        queued_.fetch_sub(1, std::memory_order_relaxed);
      }
      perform(item.work, *item.event);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> items_;
  std::atomic<std::size_t> queued_{0};  // items_.size(), read without the lock
  bool sleeping_ = false;               // under mutex_: whether push() and release() must notify
  bool held_ = false;                   // under mutex_: work runs, here or on a caller's thread
};

// Runs `work` (the queue held, by its thread or an InlineWork), gives the
// queue back, then completes `event` with the outcome. Given back first,
// so that the waiter, woken, finds the queue idle and may run its next
// small call itself.
// `work` is a std::function (what it holds is released here) or a
// FunctionRef (it holds nothing).
template <class Work>
void perform(Work& work, WorkEvent& event) {
  std::exception_ptr error;
  try {
    work();
  } catch (...) {
    error = std::current_exception();
  }
  WorkQueue::instance().release();
  // What the work holds (a communicator's group) goes before the waiter
  // wakes: a program that then exits must find the group released. The
  // queue is free by then, so a last group's release, which enqueues its
  // transport's and waits, does not wait on itself.
  if constexpr (std::is_same_v<Work, std::function<void()>>) work = nullptr;
  event.finish(std::move(error));
}

}  // namespace

bool WorkEvent::ready() const { return done_.load(std::memory_order_acquire); }

void WorkEvent::wait() const {
  if (!poll([&] { return ready(); })) {
    std::unique_lock lock(mutex_);
    sleepers_ = true;
    cv_.wait(lock, [&] { return ready(); });
  }
  // error_ was written before done_ was set (release), and done_ was seen
  // set (acquire): no lock is needed to read it, nor taken on each wait.
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
  WorkQueue::instance().push(Item{std::move(work), event});
  return event;
}

std::optional<InlineWork> InlineWork::claim() {
  if (!WorkQueue::instance().hold_if_idle()) return std::nullopt;
  return InlineWork();
}

InlineWork::~InlineWork() {
  if (event_) WorkQueue::instance().release();
}

void InlineWork::run(std::function<void()> work) && {
  const auto event = std::move(event_);
  perform(work, *event);
}

void InlineWork::run(FunctionRef<void()> work) && {
  const auto event = std::move(event_);
  perform(work, *event);
}

}  // namespace xylem::dist::detail

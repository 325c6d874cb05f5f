#include "frameworks/native/queue.hpp"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace xylem::native {

namespace {

// The queue whose task this thread is running, if any: it holds that
// queue's run token, which it must not try to take again (a task that
// launches an op, say an application's release callback, has it queued).
thread_local const NativeQueue* running_task_of = nullptr;

// Set once the process is exiting (NativeQueue::stop_helping).
std::atomic<bool> waiters_only_wait{false};

class RunningTask {
 public:
  explicit RunningTask(const NativeQueue* queue) noexcept : outer_(std::exchange(running_task_of, queue)) {}
  ~RunningTask() { running_task_of = outer_; }
  RunningTask(const RunningTask&) = delete;
  RunningTask& operator=(const RunningTask&) = delete;

 private:
  const NativeQueue* outer_;
};

}  // namespace

void NativeEvent::wait() const {
  // ready() first, for two reasons. A task that waits on an earlier event of
  // its own queue (done, the queue is in order) must not reach help(): its
  // runner holds the token. And queue_ may be gone: events are shared and
  // outlive their queue, but ~NativeQueue returns only after every task has
  // completed, so an event of a destroyed queue is ready and never reads
  // queue_. (Waiting while another thread destroys the queue is unsupported:
  // it could go between ready() and help(). A device is destroyed only once
  // nothing uses it; native's never is.)
  if (!ready()) queue_->help(*this);
  done_.wait(false, std::memory_order_acquire);
  if (error_) std::rethrow_exception(error_);
}

void NativeEvent::on_ready(std::function<void()> fn) const {
  {
    std::lock_guard lock(callbacks_mutex_);
    if (!done_.load(std::memory_order_acquire)) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void NativeEvent::complete(std::exception_ptr error) noexcept {
  error_ = std::move(error);
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(callbacks_mutex_);
    done_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  done_.notify_all();
  for (auto& fn : callbacks) fn();
}

NativeQueue::NativeQueue(bool worker) : done_(std::make_shared<NativeEvent>(this)) {
  done_->complete(nullptr);
  if (worker) worker_ = std::thread([this] { loop(); });
}

NativeQueue::~NativeQueue() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  if (worker_.joinable()) worker_.join();  // it returns once it finds no work
  // Then run what is left (all of it without a worker): every event is
  // complete once the queue is gone, which NativeEvent::wait relies on.
  std::lock_guard token(runner_);
  while (take()) run_batch(nullptr);
}

EventPtr NativeQueue::enqueue(Kernel kernel, const plugin::OpCall& call, plugin::Deps deps, bool may_run_here) {
  TaskDeps kept = keep(deps);
  // A dep kept is one not complete or failed: the kernel must wait for it
  // or fail with its error, which the queued path does.
  if (may_run_here && kept.empty()) {
    if (EventPtr event = run_here(kernel, call)) return event;
  }
  return push(std::move(kept), OnFailedDep::fail, [&](Task& task) {
    task.kernel = kernel;
    // Copy only the arguments in use: an OpCall is mostly empty slots.
    task.call.op = call.op;
    task.call.num_tensors = call.num_tensors;
    std::copy_n(call.t.begin(), call.num_tensors, task.call.t.begin());
    task.call.f = call.f;
    task.call.i = call.i;
  });
}

EventPtr NativeQueue::enqueue(std::function<void()> fn, plugin::Deps deps, OnFailedDep on_failed_dep) {
  return push(keep(deps), on_failed_dep, [&](Task& task) {
    task.kernel = nullptr;
    task.fn = std::move(fn);
  });
}

void NativeQueue::TaskDeps::push(const EventPtr& event) {
  if (size_ < inline_.size()) {
    inline_[size_++] = event;
  } else {
    more_.push_back(event);
  }
}

namespace {

// Whether a complete event failed: its wait() rethrows the error.
bool failed(const Event& event) {
  try {
    event.wait();
    return false;
  } catch (...) {
    return true;
  }
}

}  // namespace

NativeQueue::TaskDeps NativeQueue::keep(plugin::Deps deps) const {
  // Work on this queue is already ordered: its events are kept only to
  // pass on an error, so those that completed cleanly are dropped. No
  // deadlock when run() waits on other queues' events, maybe running their
  // queue's work (see help()) while holding this queue's token: every dep
  // was enqueued before this task, so each wait is on older work and a
  // chain of waits cannot close into a cycle; and a token is never waited
  // for by a thread holding one (helpers only try it; the worker locks its
  // own holding nothing).
  TaskDeps kept;
  for (const auto& dep : deps) {
    if (!dep) continue;
    const bool keep_it = dep->queue() == this ? !dep->ready() || static_cast<const NativeEvent&>(*dep).failed()
                                              : !dep->ready() || failed(*dep);
    if (keep_it) kept.push(dep);
  }
  return kept;
}

template <class Fill>
EventPtr NativeQueue::push(TaskDeps kept, OnFailedDep on_failed_dep, Fill&& fill) {
  auto event = std::make_shared<NativeEvent>(this);
  bool wake;
  {
    std::lock_guard lock(mutex_);
    Task& task = pending_.emplace_back();
    fill(task);
    task.deps = std::move(kept);
    task.on_failed_dep = on_failed_dep;
    task.event = event;
    if (!has_work_.load(std::memory_order_relaxed)) has_work_.store(true, std::memory_order_relaxed);
    wake = sleeping_;
  }
  if (wake) wake_.notify_one();
  return event;
}

EventPtr NativeQueue::run_here(Kernel kernel, const plugin::OpCall& call) {
  // Without a worker, a waiter that finds the token taken would sleep with
  // no one left to run its task. Inside one of this queue's tasks, this
  // thread holds the token already.
  if (!worker_.joinable() || running_task_of == this) return nullptr;
  // Only a try, as in help(): a runner busy with earlier work means the
  // queue is not idle.
  std::unique_lock token(runner_, std::try_to_lock);
  if (!token) return nullptr;
  // Under the token, batch_ is ours to read. has_work_ tells whether
  // pending_ holds tasks: those enqueued by anything that happened before
  // this call are seen here (their store of true, or the take() that moved
  // them into batch_, precedes ours in has_work_'s order). A task another
  // thread is enqueuing at this very moment may be missed: it is then
  // ordered after this kernel, behind the token we hold.
  if (next_ < batch_.size() || has_work_.load(std::memory_order_relaxed)) return nullptr;
  std::exception_ptr error;
  const RunningTask running(this);
  // Isolated for the reason help() gives.
  tbb::this_task_arena::isolate([&] {
    try {
      kernel(call);
    } catch (...) {
      error = std::current_exception();
    }
  });
  if (!error) return done_;
  auto event = std::make_shared<NativeEvent>(this);
  event->complete(std::move(error));
  return event;
}

void NativeQueue::run(Task& task) noexcept {
  std::exception_ptr error;
  const RunningTask running(this);
  try {
    // This queue's deps ran before this task (the queue is in order): their
    // wait() only rethrows an error. Others' may still run.
    task.deps.for_each([&](const Event& dep) {
      if (task.on_failed_dep == OnFailedDep::fail) {
        dep.wait();
        return;
      }
      try {
        dep.wait();
      } catch (...) {
      }
    });
    if (task.kernel) {
      task.kernel(task.call);
    } else {
      task.fn();
    }
  } catch (...) {
    error = std::current_exception();
  }
  task.event->complete(std::move(error));
}

void NativeQueue::loop() {
  while (wait_for_work()) {
    std::unique_lock token(runner_, std::try_to_lock);
    if (!token) {
      // A waiting caller runs tasks. If it took them all, wait for more
      // work rather than for the token: its unlock then wakes no one.
      if (!has_work_.load(std::memory_order_relaxed)) continue;
      token.lock();  // a bounded wait: it runs only up to its own task
    }
    if (take()) run_batch(nullptr);
  }
}

bool NativeQueue::wait_for_work() {
  // Spin briefly before sleeping: a caller issuing ops back to back then
  // never pays for a wake-up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (!has_work_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
  }
  std::unique_lock lock(mutex_);
  if (!has_work_.load(std::memory_order_relaxed) && !stop_) {
    sleeping_ = true;
    wake_.wait(lock, [&] { return has_work_.load(std::memory_order_relaxed) || stop_; });
    sleeping_ = false;
  }
  return has_work_.load(std::memory_order_relaxed);  // else stopping, with nothing left
}

bool NativeQueue::take() {
  if (next_ < batch_.size()) return true;  // left by a helper
  batch_.clear();
  next_ = 0;
  std::lock_guard lock(mutex_);
  batch_.swap(pending_);
  has_work_.store(false, std::memory_order_relaxed);
  return !batch_.empty();
}

void NativeQueue::run_batch(const NativeEvent* until) {
  while (next_ < batch_.size()) {
    Task& task = batch_[next_++];
    run(task);
    if (task.event.get() == until) break;
  }
  if (next_ == batch_.size()) {
    batch_.clear();  // now, not at the next take(): the tasks hold their captures
    next_ = 0;
  }
}

void NativeQueue::stop_helping() noexcept { waiters_only_wait.store(true, std::memory_order_release); }

void NativeQueue::help(const NativeEvent& event) {
  if (waiters_only_wait.load(std::memory_order_acquire)) return;
  // Only a try: if someone runs tasks, it reaches ours without being woken,
  // and sleeping on the event costs this caller the one wake-up that
  // queuing for the token would. Queuing could also deadlock: the runner's
  // batch may hold, after our task, one that waits for this caller's next
  // step (testing::Gate does).
  std::unique_lock token(runner_, std::try_to_lock);
  if (!token) return;
  // Isolated: while a kernel waits for its oneTBB subtasks, this thread
  // (the caller's, maybe itself running a parallel loop) must not take
  // outer-level work meanwhile, which could wait on this queue, whose token
  // it holds. (Not the worker: it may run tasks during exit, after oneTBB's
  // teardown, and a frees-only task must not touch oneTBB then.)
  tbb::this_task_arena::isolate([&] {
    while (!event.ready() && take()) run_batch(&event);
  });
  if (next_ == batch_.size()) return;
  // Tasks after ours are left for the worker: the caller returns as soon as
  // its task is done, and one of them may wait for the caller's next step.
  bool wake;
  {
    std::lock_guard lock(mutex_);
    has_work_.store(true, std::memory_order_relaxed);
    wake = sleeping_;
  }
  if (wake) wake_.notify_one();
}

void NativeQueue::drain() { enqueue([] {}, {})->wait(); }

}  // namespace xylem::native

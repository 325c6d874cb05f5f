#pragma once
// The native framework's in-order queue: one worker thread per device runs
// enqueued kernels and host tasks in order, so callers return at once.
// Kernels parallelise inside with oneTBB.
//
// A caller that waits on a task not yet run runs the queue's work itself,
// up to and including that task, when no one else is running it (see
// help()): reading a result then costs no hand-off to the worker and back,
// two thread wake-ups that take ~50 us each when no core is free. Whoever
// runs tasks holds the run token `runner_`, so tasks still run one at a
// time and in order, on the worker or on a waiting caller.
//
// A small kernel submitted to an idle queue runs at once on the submitting
// thread (enqueue's `may_run_here`): with nothing queued before it and every
// dep complete, it would be the worker's next task anyway, and running it here
// saves building the task and handing it over (the hand-off, not the kernel,
// is most of a small op's cost). The caller takes the run token for it, so the
// queue stays in order: a task another thread enqueues meanwhile waits for the
// token like any task behind a running one.
#include <array>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

// Relative, so that the unit tests (which build queues of their own, with
// only the public include path) find it too; it includes only public headers.
#include "ops/kernels.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

class NativeQueue;

// Completion of one queued task. Callbacks registered with on_ready run
// right after the task, on the thread that ran it: the worker, or a caller
// that waited for it (so they must be short and must not wait on this queue).
class NativeEvent final : public Event {
 public:
  explicit NativeEvent(NativeQueue* queue) noexcept : queue_(queue) {}
  bool ready() const override { return done_.load(std::memory_order_acquire); }
  // Runs the queue's pending work up to this task when no one else is
  // running it, else sleeps until the runner completes it.
  void wait() const override;
  const void* queue() const noexcept override { return queue_; }
  void on_ready(std::function<void()> fn) const override;
  void complete(std::exception_ptr error) noexcept;
  // Done, with an error.
  [[nodiscard]] bool failed() const noexcept { return ready() && error_ != nullptr; }

 private:
  // May dangle once the queue is destroyed: used only while the event is
  // not ready, and ~NativeQueue completes every task first (see wait()).
  NativeQueue* queue_;
  std::atomic<bool> done_{false};
  std::exception_ptr error_;
  mutable std::mutex callbacks_mutex_;
  mutable std::vector<std::function<void()>> callbacks_;
};

class NativeQueue {
 public:
  // Without a worker (for single-threaded tests), tasks run only when
  // waited for or at destruction; a second waiter could wait forever.
  explicit NativeQueue(bool worker = true);
  // Runs everything enqueued, then stops the worker.
  ~NativeQueue();
  NativeQueue(const NativeQueue&) = delete;
  NativeQueue& operator=(const NativeQueue&) = delete;

  // What a task does when one of its deps failed: fail with that error
  // (work that computes data must not run on data never produced, and a
  // host read must not return it), or run anyway (a free: the memory goes
  // back whatever happened).
  enum class OnFailedDep : std::uint8_t { fail, run };

  // Both return the event of the task; deps from other queues are waited
  // for by whoever runs the task, never by the caller of enqueue. A kernel
  // fails when a dep failed. With `may_run_here` (a kernel short enough to
  // run on the caller's thread) the kernel runs before enqueue returns when
  // the queue is idle: nothing queued or running, every dep complete and
  // clean, a worker present. Its error, if any, is carried by the returned
  // event just as a queued kernel's is.
  EventPtr enqueue(Kernel kernel, const plugin::OpCall& call, plugin::Deps deps, bool may_run_here = false);
  EventPtr enqueue(std::function<void()> fn, plugin::Deps deps, OnFailedDep on_failed_dep = OnFailedDep::fail);
  // Waits until everything enqueued so far has run (running it here when
  // the worker is not).
  void drain();
  // From now on, for the rest of the process, a waiter sleeps until the
  // worker has run its task instead of running tasks itself. For the exit
  // handler: by the time it runs, the exiting thread's thread_local objects
  // (oneDNN's stream and workspace in conv2d_onednn.cpp) are already
  // destroyed, so kernels must not run on that thread any more.
  static void stop_helping() noexcept;

 private:
  friend class NativeEvent;

  // The deps a task keeps: other queues' events not yet complete (waited
  // for), and any that had failed or might yet fail (their error is passed
  // on). Inline up to four, what most ops have: queuing allocates nothing.
  class TaskDeps {
   public:
    void push(const EventPtr& event);
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    template <class F>
    void for_each(F&& f) const {
      for (std::size_t i = 0; i < size_; ++i) f(*inline_[i]);
      for (const auto& event : more_) f(*event);
    }

   private:
    std::array<EventPtr, 4> inline_;
    std::size_t size_ = 0;
    std::vector<EventPtr> more_;
  };

  struct Task {
    Kernel kernel = nullptr;
    plugin::OpCall call;
    std::function<void()> fn;
    TaskDeps deps;
    OnFailedDep on_failed_dep = OnFailedDep::fail;
    std::shared_ptr<NativeEvent> event;
  };

  // The deps worth keeping (see TaskDeps), chosen before taking the lock:
  // asking another framework's event whether it failed may cost a call.
  [[nodiscard]] TaskDeps keep(plugin::Deps deps) const;
  // Builds the task in place in the pending list, under the lock: the
  // caller fills it through `fill`.
  template <class Fill>
  EventPtr push(TaskDeps kept, OnFailedDep on_failed_dep, Fill&& fill);
  // Runs the kernel on this thread if the queue is idle (see enqueue);
  // null when it is not, and the kernel must be queued.
  EventPtr run_here(Kernel kernel, const plugin::OpCall& call);
  void run(Task& task) noexcept;
  void loop();
  // False once the queue is stopping and nothing is left to run.
  bool wait_for_work();
  // Called by NativeEvent::wait when its task has not run: if no one holds
  // the run token, takes it and runs the queue's tasks up to and including
  // that task, in order. Never blocks on the token.
  void help(const NativeEvent& event);
  // Under runner_: makes batch_[next_...] the next tasks to run, taking
  // pending_ once the batch is used up; false if there are none.
  bool take();
  // Under runner_: runs the batch in order, stopping after `until`'s task.
  void run_batch(const NativeEvent* until);

  // Lock order: runner_, then mutex_. Whoever holds runner_ (the run
  // token) runs tasks; no one else runs any task of this queue meanwhile.
  std::mutex runner_;
  // Under runner_: tasks taken from pending_; those from next_ on have not
  // run (a helper stops after its own task). They come before pending_.
  std::vector<Task> batch_;
  std::size_t next_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Task> pending_;  // swapped whole into the runner: no allocation per task once warm
  // Whether there are tasks no one is running: set by producers when they
  // add work and by a helper that leaves some in batch_, cleared when a
  // runner takes pending_ (written under mutex_). Producers write it only
  // when it changes, so a worker spinning on it costs them no cache-line
  // transfer per task.
  std::atomic<bool> has_work_{false};
  bool sleeping_ = false;
  bool stop_ = false;
  // The event of every kernel that ran at once without error: complete from
  // the start, so such a kernel allocates no event of its own.
  std::shared_ptr<NativeEvent> done_;
  std::thread worker_;
};

}  // namespace xylem::native

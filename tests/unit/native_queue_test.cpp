// The native queue's small kernels run on the submitting thread when the
// queue is idle: they then keep the queue's order against other submitters,
// carry their errors in their events as queued kernels do, and leave a queue
// whose destruction still runs everything queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "../../frameworks/native/queue.hpp"

namespace {

using namespace std::chrono_literals;
using xylem::EventPtr;
using xylem::native::NativeQueue;
using xylem::plugin::Deps;
using xylem::plugin::OpCall;

// Kernels are plain function pointers: what a test kernel touches travels
// in its call's integers, as a pointer and a value.
template <class T>
OpCall call_on(T* target, std::int64_t value = 0) {
  OpCall call;
  call.i[0] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(target));
  call.i[1] = value;
  return call;
}
template <class T>
T& target(const OpCall& call) {
  return *reinterpret_cast<T*>(static_cast<std::intptr_t>(call.i[0]));
}

// Appends its value to a log (touched only by the queue's runner, one at a time).
void log_value(const OpCall& call) { target<std::vector<std::int64_t>>(call).push_back(call.i[1]); }

void record_thread(const OpCall& call) { target<std::thread::id>(call) = std::this_thread::get_id(); }

void fail(const OpCall&) { throw std::runtime_error("kernel failed"); }

// Says which thread runs it, then waits for the test to let it finish.
struct Held {
  std::promise<std::thread::id> started;
  std::shared_future<void> finish;
};
void held(const OpCall& call) {
  Held& h = target<Held>(call);
  h.started.set_value(std::this_thread::get_id());
  h.finish.wait();
}

// Runs `submit` until its kernel ran on the submitting thread (the worker,
// still holding the queue a moment after its last task, can make a try miss).
template <class Submit>
bool runs_here_once(NativeQueue& queue, Submit&& submit) {
  for (int i = 0; i < 200; ++i) {
    queue.drain();
    std::this_thread::sleep_for(1ms);
    if (submit()) return true;
  }
  return false;
}

TEST(NativeQueueRunHere, SmallKernelRunsOnTheCallerWhenIdle) {
  NativeQueue queue;
  std::thread::id by;
  EXPECT_TRUE(runs_here_once(queue, [&] {
    EventPtr event = queue.enqueue(&record_thread, call_on(&by), {}, /*may_run_here=*/true);
    EXPECT_TRUE(event->ready()) << "a kernel that ran here is complete when enqueue returns";
    return event->ready() && by == std::this_thread::get_id();
  }));
  // Not asked to: queued, run by the worker or a waiter.
  queue.drain();
  EventPtr queued = queue.enqueue(&record_thread, call_on(&by), {});
  queued->wait();
}

// Without a worker nothing runs here: a waiter finding the token taken by a
// kernel running here would have no one to run its task.
TEST(NativeQueueRunHere, NotWithoutAWorker) {
  NativeQueue queue(/*worker=*/false);
  std::vector<std::int64_t> log;
  EventPtr event = queue.enqueue(&log_value, call_on(&log, 1), {}, true);
  EXPECT_FALSE(event->ready());
  event->wait();
  EXPECT_EQ(log, std::vector<std::int64_t>{1});
}

// A task queued before (here: one still running) comes first: the small
// kernel submitted from another thread is queued behind it, not run there.
TEST(NativeQueueRunHere, DoesNotOvertakeQueuedWork) {
  NativeQueue queue;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  std::vector<std::int64_t> log;
  EventPtr first = queue.enqueue(
      [&log, gate] {
        gate.wait();
        log.push_back(0);
      },
      {});
  EventPtr second;
  std::thread([&] { second = queue.enqueue(&log_value, call_on(&log, 1), {}, true); }).join();
  EXPECT_FALSE(second->ready()) << "ran while the queue was busy";
  open.set_value();
  second->wait();
  EXPECT_TRUE(first->ready());
  EXPECT_EQ(log, (std::vector<std::int64_t>{0, 1}));
}

// While a kernel runs on its submitter, a task another thread enqueues waits
// for it, and a waiter on that task neither runs it early nor hangs.
TEST(NativeQueueRunHere, LaterWorkWaitsForAKernelRunningHere) {
  NativeQueue queue;
  std::vector<std::int64_t> log;
  bool done = false;
  for (int attempt = 0; attempt < 200 && !done; ++attempt) {
    queue.drain();
    std::this_thread::sleep_for(1ms);
    std::promise<void> open;
    Held h{{}, open.get_future().share()};
    std::thread::id submitter;
    std::thread running([&] {
      submitter = std::this_thread::get_id();
      queue.enqueue(&held, call_on(&h), {}, true);
    });
    const std::thread::id ran_by = h.started.get_future().get();
    EventPtr later = queue.enqueue(&log_value, call_on(&log, attempt), {});
    auto waiter = std::async(std::launch::async, [&] { later->wait(); });
    EXPECT_EQ(waiter.wait_for(20ms), std::future_status::timeout) << "ran before the kernel ahead of it";
    EXPECT_FALSE(later->ready());
    open.set_value();
    running.join();
    waiter.get();
    done = ran_by == submitter;  // else the worker ran it: try again
  }
  EXPECT_TRUE(done) << "the held kernel never ran on its submitter";
}

// Two threads submitting at once, one small kernels, the other host tasks:
// each thread's work runs in its order, and every item runs once, one at a
// time (TSan checks the log has no race).
TEST(NativeQueueRunHere, TwoSubmittersKeepTheirOrder) {
  constexpr std::int64_t kEach = 3000;
  std::vector<std::int64_t> log;
  {
    NativeQueue queue;
    std::thread kernels([&] {
      for (std::int64_t k = 0; k < kEach; ++k) {
        EventPtr event = queue.enqueue(&log_value, call_on(&log, 2 * k), {}, true);
        if (k % 7 == 0) event->wait();
      }
    });
    std::thread tasks([&] {
      for (std::int64_t k = 0; k < kEach; ++k) {
        EventPtr event = queue.enqueue([&log, k] { log.push_back(2 * k + 1); }, {});
        if (k % 11 == 0) event->wait();
      }
    });
    kernels.join();
    tasks.join();
  }  // destroying the queue runs what is still queued
  ASSERT_EQ(log.size(), std::size_t(2 * kEach));
  std::int64_t next[2] = {0, 1};
  for (std::int64_t v : log) {
    ASSERT_EQ(v, next[v % 2]) << "out of its submitter's order";
    next[v % 2] += 2;
  }
}

// An error raised by a kernel that ran here is carried by its event, as a
// queued kernel's: waiting raises it, and later work depending on it fails
// with it (queued, as a failed dep must be passed on), however often asked.
TEST(NativeQueueRunHere, ErrorsAreCarriedByTheEvent) {
  NativeQueue queue;
  EventPtr bad;
  ASSERT_TRUE(runs_here_once(queue, [&] {
    bad = queue.enqueue(&fail, {}, {}, true);
    return bad->ready();
  }));
  EXPECT_THROW(bad->wait(), std::runtime_error);
  EXPECT_THROW(bad->wait(), std::runtime_error) << "twice";
  std::vector<std::int64_t> log;
  EventPtr dependent = queue.enqueue(&log_value, call_on(&log, 1), Deps(&bad, 1), true);
  EXPECT_THROW(dependent->wait(), std::runtime_error);
  EventPtr task = queue.enqueue([&log] { log.push_back(2); }, Deps(&bad, 1));
  EXPECT_THROW(task->wait(), std::runtime_error);
  EventPtr free_anyway = queue.enqueue([&log] { log.push_back(3); }, Deps(&bad, 1), NativeQueue::OnFailedDep::run);
  EXPECT_NO_THROW(free_anyway->wait());
  EXPECT_EQ(log, std::vector<std::int64_t>{3}) << "work on a failed dep ran";
  // An independent kernel is not touched by it.
  EventPtr clean = queue.enqueue(&log_value, call_on(&log, 4), {}, true);
  EXPECT_NO_THROW(clean->wait());
}

// A task of the queue that launches a small kernel on it (this thread holds
// the queue's token then) has it queued, to run after the task.
TEST(NativeQueueRunHere, FromInsideATaskOfTheQueue) {
  NativeQueue queue;
  std::vector<std::int64_t> log;
  EventPtr inner;
  EventPtr outer = queue.enqueue(
      [&] {
        inner = queue.enqueue(&log_value, call_on(&log, 2), {}, true);
        log.push_back(1);
      },
      {});
  outer->wait();
  inner->wait();
  EXPECT_EQ(log, (std::vector<std::int64_t>{1, 2}));
}

// A dep not yet complete (another queue's, held) keeps the kernel queued:
// the submitter never waits for it.
TEST(NativeQueueRunHere, PendingDepKeepsTheKernelQueued) {
  NativeQueue queue, other;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  EventPtr dep = other.enqueue([gate] { gate.wait(); }, {});
  std::vector<std::int64_t> log;
  queue.drain();
  EventPtr event = queue.enqueue(&log_value, call_on(&log, 1), Deps(&dep, 1), true);
  EXPECT_FALSE(event->ready());
  open.set_value();
  event->wait();
  EXPECT_EQ(log, std::vector<std::int64_t>{1});
}

}  // namespace

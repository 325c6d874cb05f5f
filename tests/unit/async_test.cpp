// Asynchrony: operations enqueue and return before their work runs (proved
// with a gate that holds the queue closed, not with a timer); futures with
// wait, get, ready and then; Backend::synchronize; host reads as futures;
// an op on one device waiting for another device's work without blocking
// the caller; the native queue itself: a waiter runs queued work in order.
#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "../../frameworks/native/queue.hpp"
#include "common/support.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/testing.hpp"

namespace {

using namespace std::chrono_literals;
using xylem::Backend;
using xylem::Future;
using xylem::Layout;
using xylem::Tensor;
using xylem::testing::Gate;
using xylem::native::NativeQueue;

// Waiting for work behind a gate must not hang the suite if the core blocks
// where it must not: a watchdog that opens the gate and fails.
template <class F>
void within_seconds(Gate& gate, F&& fn, const char* what) {
  auto done = std::async(std::launch::async, std::forward<F>(fn));
  if (done.wait_for(20s) != std::future_status::ready) {
    ADD_FAILURE() << what << " blocked the calling thread while the queue was held closed";
    gate.open();
  }
  done.get();
}

class Async : public ::testing::TestWithParam<std::string> {
 protected:
  Backend backend = Backend::open(GetParam());
};

TEST_P(Async, OpReturnsBeforeItsWorkRuns) {
  auto x = Tensor::from(std::vector<float>{-1, 2, -3, 4});
  Tensor y(x.layout(), xylem::f32);
  Gate gate(backend);
  xylem::nn::relu(backend, x, y);  // returns while the queue is held
  auto values = y.read<float>();
  EXPECT_FALSE(values.ready()) << "the read finished while the queue was closed";
  EXPECT_FALSE(values.event()->ready());
  gate.open();
  EXPECT_EQ(values.get(), (std::vector<float>{0, 2, 0, 4}));
  EXPECT_TRUE(values.ready());
  EXPECT_TRUE(gate.reached());
}

// A tensor dropped while an op that reads it is still queued keeps its
// memory until that op has run: the block must not be freed (and handed to
// the next allocation of its size) at once.
TEST_P(Async, DroppedInputOutlivesItsQueuedReader) {
  std::mt19937_64 rng(xylem_test::fresh_seed());
  const std::vector<float> values = xylem_test::random_vector<float>(rng, 4096, -2, 2);
  Tensor y(Layout{4096}, xylem::f32);
  Gate gate(backend);
  {
    Tensor x = xylem::cast(backend, Tensor::from(values), xylem::f32);
    xylem::nn::relu(backend, x, y);  // queued behind the gate
  }
  // Blocks of x's size, written on the host now: one of them may be x's if
  // its free did not wait for the relu (caught on mirror:0, whose host
  // tensors share the allocator).
  std::vector<Tensor> others;
  for (int i = 0; i < 4; ++i) others.push_back(Tensor::from(std::vector<float>(4096, 7.0f)));
  gate.open();
  const std::vector<float> got = y.to_vector<float>();
  ASSERT_EQ(got.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(double(got[i]), std::max(0.0, double(values[i]))) << "element " << i;
}

TEST_P(Async, SynchronizeWaitsForEverything) {
  Tensor a(Layout{1000}, xylem::f64);
  Tensor b(Layout{1000}, xylem::f64);
  std::atomic<bool> last_done{false};
  {
    Gate gate(backend);
    xylem::fill(backend, a, 1.5);
    xylem::fill(backend, b, -1.5);
    xylem::nn::relu(backend, b, b);
    // A marker behind the ops on the same queue: done means they are done.
    (void)xylem::plugin::device_of(backend).host_task([&] { last_done = true; }, {});
    EXPECT_FALSE(last_done.load());
    gate.open();
    backend.synchronize();
    EXPECT_TRUE(last_done.load()) << "synchronize returned before the queue's work was done";
  }
  // Host reads run on the host (native) queue: for native, synchronize
  // covers them too.
  if (backend == Backend::native()) {
    Gate gate(backend);
    auto ra = a.read<double>();
    EXPECT_FALSE(ra.ready());
    gate.open();
    backend.synchronize();
    EXPECT_TRUE(ra.ready());
  }
  EXPECT_EQ(a.to_vector<double>(), std::vector<double>(1000, 1.5));
  EXPECT_EQ(b.to_vector<double>(), std::vector<double>(1000, 0.0));
}

TEST_P(Async, ThenRunsAfterTheValueIsReady) {
  auto x = Tensor::from(std::vector<double>{1, 2, 3});
  Tensor y(x.layout(), xylem::f64);
  Gate gate(backend);
  xylem::fill(backend, y, 0.25);
  std::atomic<bool> ran{false};
  auto sum = y.read<double>().then([&ran](const std::vector<double>& v) {
    ran = true;
    double s = 0;
    for (double e : v) s += e;
    return s;
  });
  auto twice = sum.then([](const double& s) { return 2 * s; });
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(sum.ready());
  EXPECT_FALSE(twice.ready());
  gate.open();
  EXPECT_DOUBLE_EQ(twice.get(), 1.5);
  EXPECT_TRUE(ran.load());
  EXPECT_DOUBLE_EQ(sum.get(), 0.75);
}

TEST_P(Async, ThenPassesExceptionsOn) {
  Tensor y(Layout{2}, xylem::f32);
  xylem::fill(backend, y, 1);
  auto failing = y.read<float>().then([](const std::vector<float>&) -> int { throw std::runtime_error("boom"); });
  auto after = failing.then([](const int& v) { return v + 1; });
  EXPECT_THROW((void)failing.get(), std::runtime_error);
  EXPECT_THROW((void)after.get(), std::runtime_error);
}

TEST_P(Async, ReadWaitsOnlyForItsTensor) {
  Tensor a(Layout{8}, xylem::f32);
  xylem::fill(backend, a, 2);
  backend.synchronize();
  auto early = a.read<float>();  // enqueued before the gate
  Gate gate(backend);
  EXPECT_EQ(early.get(), std::vector<float>(8, 2.0f));
  gate.open();
}

TEST_P(Async, TwoReadsOfOneFuture) {
  Tensor a(Layout{3}, xylem::f64);
  xylem::fill(backend, a, 7);
  const auto f = a.read<double>();
  f.wait();
  EXPECT_TRUE(f.ready());
  EXPECT_TRUE(f.valid());
  EXPECT_EQ(f.get(), std::vector<double>(3, 7.0));
  EXPECT_EQ(f.get(), std::vector<double>(3, 7.0));  // const& get keeps the value
}

INSTANTIATE_TEST_SUITE_P(Backends, Async, ::testing::Values("native", "mirror:0"),
                         [](const auto& p) {
                           return p.param == "native" ? std::string("native") : std::string("mirror");
                         });

TEST(Futures, ReadyAndDefault) {
  auto f = Future<int>::ready(5);
  EXPECT_TRUE(f.valid());
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), 5);
  EXPECT_EQ(f.then([](const int& v) { return v * 3; }).get(), 15);
  Future<int> none;
  EXPECT_FALSE(none.valid());
  EXPECT_TRUE(xylem::ready_event()->ready());
}

TEST(Futures, BlasReductionFuture) {
  auto native = Backend::native();
  auto x = Tensor::from(std::vector<double>{1, -2, 3});
  Gate gate(native);
  auto s = xylem::blas::asum(native, x);
  EXPECT_FALSE(s.ready());
  gate.open();
  EXPECT_DOUBLE_EQ(s.get(), 6.0);
}

// The op on native reads a tensor that mirror has not finished writing: the
// core must chain it on mirror's event, not wait on the host.
TEST(CrossDevice, OpWaitsOnEventsNotOnTheHost) {
  auto native = Backend::native();
  auto mirror = xylem_test::mirror();
  auto x = Tensor::from(std::vector<float>{-1, 2, -3});
  Tensor y(x.layout(), xylem::f32);
  Gate gate(mirror);
  xylem::blas::scal(mirror, -1.0, x);  // held behind the gate
  within_seconds(gate, [&] { xylem::nn::relu(native, x, y); }, "relu on native of a tensor pending on mirror");
  auto values = y.read<float>();
  EXPECT_FALSE(values.ready()) << "native ran before mirror's write was done";
  gate.open();
  EXPECT_EQ(values.get(), (std::vector<float>{1, 0, 3}));
}

TEST(CrossDevice, NativeGateHoldsAMirrorReader) {
  auto native = Backend::native();
  auto mirror = xylem_test::mirror();
  Tensor x(Layout{4}, xylem::f64);
  Tensor y(Layout{4}, xylem::f64);
  Gate gate(native);
  xylem::fill(native, x, -2);
  within_seconds(gate, [&] { xylem::nn::relu(mirror, x, y); }, "relu on mirror of a tensor pending on native");
  auto values = y.read<double>();
  EXPECT_FALSE(values.ready());
  gate.open();
  EXPECT_EQ(values.get(), std::vector<double>(4, 0.0));
}

// The native queue on its own. A queue without a worker runs tasks only
// when someone waits, so what a waiter runs is exact, not a race.
TEST(NativeQueue, WaiterRunsTasksUpToItsOwn) {
  NativeQueue queue(/*worker=*/false);
  std::vector<char> ran;  // only ever touched by the one running thread
  std::vector<std::thread::id> by;
  auto task = [&](char name) {
    return queue.enqueue(
        [&, name] {
          ran.push_back(name);
          by.push_back(std::this_thread::get_id());
        },
        {});
  };
  auto a = task('a');
  auto b = task('b');
  auto c = task('c');
  EXPECT_FALSE(a->ready());
  b->wait();  // runs a then b here, and stops: c is not ours to run
  EXPECT_TRUE(a->ready());
  EXPECT_FALSE(c->ready());
  EXPECT_EQ(ran, (std::vector<char>{'a', 'b'}));
  a->wait();  // done already
  c->wait();
  EXPECT_EQ(ran, (std::vector<char>{'a', 'b', 'c'}));
  EXPECT_EQ(by, std::vector<std::thread::id>(3, std::this_thread::get_id()));
}

TEST(NativeQueue, WaiterGetsTheTasksError) {
  for (bool worker : {false, true}) {
    NativeQueue queue(worker);
    auto bad = queue.enqueue([] { throw std::runtime_error("task failed"); }, {});
    auto after = queue.enqueue([] {}, {});
    EXPECT_THROW(bad->wait(), std::runtime_error) << "worker " << worker;
    EXPECT_THROW(bad->wait(), std::runtime_error) << "twice";
    EXPECT_NO_THROW(after->wait()) << "an error stops only its own task";
  }
}

// A task that waits on an earlier task of its own queue (done: the queue is
// in order) must not try to run the queue: its runner is busy with it.
TEST(NativeQueue, TaskWaitsOnAnEarlierTaskOfItsQueue) {
  for (bool worker : {false, true}) {
    NativeQueue queue(worker);
    auto first = queue.enqueue([] {}, {});
    bool first_done = false;
    auto second = queue.enqueue(
        [&] {
          first->wait();
          first_done = first->ready();
        },
        {});
    second->wait();
    EXPECT_TRUE(first_done) << "worker " << worker;
  }
}

// With a worker, a caller that waits after the worker has gone to sleep
// finds the token free and runs the task before the worker is even
// scheduled. Which thread gets there first is up to the scheduler, so this
// asks for it once in many tries (it takes one almost always).
TEST(NativeQueue, WaiterRunsTheTaskWhileTheWorkerSleeps) {
  NativeQueue queue;
  const auto self = std::this_thread::get_id();
  bool ran_here = false;
  for (int i = 0; i < 200 && !ran_here; ++i) {
    std::this_thread::sleep_for(2ms);  // the worker spins 50 us, then sleeps
    std::thread::id by;
    queue.enqueue([&] { by = std::this_thread::get_id(); }, {})->wait();
    ran_here = by == self;
  }
  EXPECT_TRUE(ran_here) << "the worker ran every task: waiters never help";
}

// While the worker runs a long task, a waiter on a later one must not run
// it (out of order) but wait its turn; its own task still completes.
TEST(NativeQueue, WaiterDoesNotOvertakeTheWorker) {
  NativeQueue queue;
  std::promise<void> open;
  std::shared_future<void> gate = open.get_future().share();
  std::atomic<bool> long_done{false};
  std::atomic<bool> in_order{false};
  auto held = queue.enqueue(
      [&, gate] {
        gate.wait();
        long_done = true;
      },
      {});
  auto later = queue.enqueue([&] { in_order = long_done.load(); }, {});
  auto waiter = std::async(std::launch::async, [&] { later->wait(); });
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  EXPECT_FALSE(later->ready());
  open.set_value();
  waiter.get();
  EXPECT_TRUE(held->ready());
  EXPECT_TRUE(in_order.load());
}

// Events are shared and outlive the queue: after it is destroyed (which
// runs everything), waiting on them must not touch it (ASan would see).
TEST(NativeQueue, EventsOutliveTheQueue) {
  for (bool worker : {false, true}) {
    std::vector<xylem::EventPtr> events;
    std::atomic<int> count{0};
    {
      NativeQueue queue(worker);
      for (int i = 0; i < 100; ++i) {
        events.push_back(queue.enqueue(
            [&, i] {
              if (i % 10 == 0) std::this_thread::sleep_for(100us);
              ++count;
            },
            {}));
      }
      events.push_back(queue.enqueue([] { throw std::runtime_error("late"); }, {}));
    }
    EXPECT_EQ(count.load(), 100) << "worker " << worker;
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      EXPECT_TRUE(events[i]->ready());
      events[i]->wait();
    }
    EXPECT_THROW(events.back()->wait(), std::runtime_error);
  }
}

// Deps on another queue are waited by whoever runs the task, and the wait
// may run that queue's work: two queues, each task depending on the other
// queue's latest, many waiters. Nothing may deadlock or run early.
TEST(NativeQueue, DepsAcrossQueuesWithWaiters) {
  NativeQueue queues[2];
  constexpr int kThreads = 4, kIters = 200;
  std::mutex mutex;  // makes "latest event of each queue" well defined
  xylem::EventPtr latest[2];
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        const int q = (t + i) % 2;
        xylem::EventPtr event;
        {
          std::lock_guard lock(mutex);
          xylem::EventPtr dep = latest[1 - q];
          event = queues[q].enqueue(
              [&early, dep] {
                if (dep && !dep->ready()) ++early;
              },
              xylem::plugin::Deps(&dep, dep ? 1u : 0u));
          latest[q] = event;
        }
        if (i % 3 == 0) event->wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  queues[0].drain();
  queues[1].drain();
  EXPECT_EQ(early.load(), 0) << "a task ran before its dep on the other queue";
}

}  // namespace

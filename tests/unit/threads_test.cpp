// Several host threads sharing one backend and one tensor: concurrent reads,
// ops on separate tensors, concurrent writes to one tensor (serialised, so
// the final value is exact), and writes alternating between two devices;
// many threads enqueueing on one queue and waiting, so that waiters run the
// queue's work. Meant to be run under ThreadSanitizer as well.
#include <atomic>
#include <barrier>
#include <mutex>
#include <thread>

#include "common/support.hpp"
#include "xylem/plugin/plugin.hpp"

namespace {

using xylem::Backend;
using xylem::Layout;
using xylem::Tensor;

constexpr int kThreads = 4;

template <class F>
void run_threads(F&& body) {
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (auto& th : threads) th.join();
}

class Threads : public ::testing::TestWithParam<std::string> {
 protected:
  Backend backend = Backend::open(GetParam());
};

TEST_P(Threads, SeparateTensorsOneBackend) {
  constexpr int kIters = 40;
  std::vector<Tensor> outputs(kThreads);
  run_threads([&](int t) {
    Tensor x(Layout{257}, xylem::f32);
    Tensor y(Layout{257}, xylem::f32);
    for (int i = 0; i < kIters; ++i) {
      xylem::fill(backend, x, double(t * 1000 + i) - 2000);
      xylem::nn::relu(backend, x, y);
    }
    outputs[t] = y;
  });
  for (int t = 0; t < kThreads; ++t) {
    const float expect = std::max(0.0f, float(t * 1000 + kIters - 1) - 2000);
    EXPECT_EQ(outputs[t].to_vector<float>(), std::vector<float>(257, expect)) << "thread " << t;
  }
}

TEST_P(Threads, ConcurrentReadsOfOneTensor) {
  auto x = Tensor::from(xylem_test::iota_vector<double>(1000, -500));
  std::vector<Tensor> outputs(kThreads);
  std::vector<std::vector<double>> host(kThreads);
  run_threads([&](int t) {
    Tensor y(x.layout(), xylem::f64);
    for (int i = 0; i < 10; ++i) xylem::nn::relu(backend, x, y);
    host[t] = x.to_vector<double>();
    outputs[t] = y;
  });
  // Many threads found x stale on a device at once: it still moved at most once.
  EXPECT_EQ(x.transfers(), GetParam() == "native" ? 0u : 1u);
  EXPECT_EQ(x.version(), 1u);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(host[t], xylem_test::iota_vector<double>(1000, -500));
    auto y = outputs[t].to_vector<double>();
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], std::max(0.0, double(i) - 500)) << i;
  }
}

TEST_P(Threads, ConcurrentWritesToOneTensorAreSerialised) {
  constexpr int kIters = 50;
  auto acc = xylem::zeros(backend, Layout{513}, xylem::f64);
  auto one = xylem::ones(backend, Layout{513}, xylem::f64);
  run_threads([&](int) {
    for (int i = 0; i < kIters; ++i) xylem::blas::axpy(backend, 1.0, one, acc);
  });
  EXPECT_EQ(acc.to_vector<double>(), std::vector<double>(513, double(kThreads * kIters)));
  EXPECT_EQ(acc.version(), 1u + kThreads * kIters);
}

TEST_P(Threads, ConcurrentViewsOfOneTensor) {
  // Each thread scales its own row of a shared matrix, many times.
  constexpr int kIters = 20;
  auto m = xylem::ones(backend, Layout{kThreads, 64}, xylem::f32);
  run_threads([&](int t) {
    auto row = m.slice(0, t, t + 1).reshape({64});
    for (int i = 0; i < kIters; ++i) xylem::blas::scal(backend, 2.0, row);
  });
  EXPECT_EQ(m.to_vector<float>(), std::vector<float>(kThreads * 64, float(1 << kIters)));
}

// Waiters run queued work themselves when the worker is not running it
// (native) or sleep until it is done (mirror). Either way the tasks of one
// queue run one at a time, in the order they were enqueued: each takes a
// ticket under a lock as it is enqueued and must run with the next one.
// The log has no lock of its own, so ThreadSanitizer sees any overlap.
TEST_P(Threads, EnqueueAndWaitKeepsOrder) {
  constexpr int kIters = 300;
  std::mutex enqueue_order;
  int next_ticket = 0;
  std::vector<int> log;
  log.reserve(kThreads * kIters);
  std::atomic<int> out_of_order{0};
  run_threads([&](int t) {
    for (int i = 0; i < kIters; ++i) {
      xylem::EventPtr done;
      {
        std::lock_guard lock(enqueue_order);
        const int ticket = next_ticket++;
        done = xylem::plugin::device_of(backend).host_task(
            [&, ticket] {
              if (ticket != int(log.size())) ++out_of_order;
              log.push_back(ticket);
            },
            {});
      }
      if ((i + t) % 4 != 0) done->wait();  // some left behind for the worker
    }
  });
  backend.synchronize();
  EXPECT_EQ(out_of_order.load(), 0);
  ASSERT_EQ(log.size(), std::size_t(kThreads * kIters));
}

INSTANTIATE_TEST_SUITE_P(Backends, Threads, ::testing::Values("native", "mirror:0"),
                         [](const auto& p) {
                           return p.param == "native" ? std::string("native") : std::string("mirror");
                         });

// Threads writing one tensor alternately on two devices: every op must see
// the previous op's result, whichever device ran it.
TEST(ThreadsAcrossDevices, WritesAlternatingBetweenDevices) {
  constexpr int kIters = 25;
  auto native = Backend::native();
  auto mirror = xylem_test::mirror();
  auto acc = xylem::zeros(native, Layout{100}, xylem::f32);
  auto one = Tensor::from(std::vector<float>(100, 1.0f));
  run_threads([&](int t) {
    for (int i = 0; i < kIters; ++i) xylem::blas::axpy((t + i) % 2 ? mirror : native, 1.0, one, acc);
  });
  EXPECT_EQ(acc.to_vector<float>(), std::vector<float>(100, float(kThreads * kIters)));
  EXPECT_EQ(acc.version(), 1u + kThreads * kIters);
  EXPECT_LE(one.transfers(), 1u);
}

TEST(ThreadsAcrossDevices, OpeningBackendsConcurrently) {
  std::vector<std::string> ids(kThreads);
  run_threads([&](int t) {
    auto frameworks = Backend::frameworks();
    auto b = t % 2 ? Backend::open("mirror:0") : Backend::native();
    ids[t] = b.id() + "/" + std::to_string(frameworks.size());
  });
  for (int t = 2; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[t - 2]);
}

}  // namespace

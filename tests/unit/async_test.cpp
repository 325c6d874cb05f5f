// Asynchrony: operations enqueue and return before their work runs (proved
// with a gate that holds the queue closed, not with a timer); futures with
// wait, get, ready and then; Backend::synchronize; host reads as futures;
// an op on one device waiting for another device's work without blocking
// the caller.
#include <atomic>
#include <future>
#include <thread>

#include "common/support.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/testing.hpp"

namespace {

using namespace std::chrono_literals;
using xylem::Backend;
using xylem::Future;
using xylem::Shape;
using xylem::Tensor;
using xylem::testing::Gate;

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
  Tensor y(x.shape(), xylem::f32);
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

TEST_P(Async, SynchronizeWaitsForEverything) {
  Tensor a(Shape{1000}, xylem::f64);
  Tensor b(Shape{1000}, xylem::f64);
  std::atomic<bool> last_done{false};
  {
    Gate gate(backend);
    xylem::fill(backend, a, 1.5);
    xylem::fill(backend, b, -1.5);
    xylem::nn::relu(backend, b, b);
    // A marker behind the ops on the same queue: done means they are done.
    (void)backend.device().host_task([&] { last_done = true; }, {});
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
  Tensor y(x.shape(), xylem::f64);
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
  Tensor y(Shape{2}, xylem::f32);
  xylem::fill(backend, y, 1);
  auto failing = y.read<float>().then([](const std::vector<float>&) -> int { throw std::runtime_error("boom"); });
  auto after = failing.then([](const int& v) { return v + 1; });
  EXPECT_THROW((void)failing.get(), std::runtime_error);
  EXPECT_THROW((void)after.get(), std::runtime_error);
}

TEST_P(Async, ReadWaitsOnlyForItsTensor) {
  Tensor a(Shape{8}, xylem::f32);
  xylem::fill(backend, a, 2);
  backend.synchronize();
  auto early = a.read<float>();  // enqueued before the gate
  Gate gate(backend);
  EXPECT_EQ(early.get(), std::vector<float>(8, 2.0f));
  gate.open();
}

TEST_P(Async, TwoReadsOfOneFuture) {
  Tensor a(Shape{3}, xylem::f64);
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
  Tensor y(x.shape(), xylem::f32);
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
  Tensor x(Shape{4}, xylem::f64);
  Tensor y(Shape{4}, xylem::f64);
  Gate gate(native);
  xylem::fill(native, x, -2);
  within_seconds(gate, [&] { xylem::nn::relu(mirror, x, y); }, "relu on mirror of a tensor pending on native");
  auto values = y.read<double>();
  EXPECT_FALSE(values.ready());
  gate.open();
  EXPECT_EQ(values.get(), std::vector<double>(4, 0.0));
}

}  // namespace

// Capture and replay (xylem/capture.hpp) on native: a replay gives what the
// same ops give eagerly on the data the tensors hold then; changes of shape
// or dtype, host reads, transfers, other backends, nesting and frameworks
// that cannot replay are typed errors.
#include <atomic>
#include <span>
#include <thread>
#include <vector>

#include "common/support.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem;
using xylem_test::contains;

template <class T>
class CaptureTest : public ::testing::Test {
 protected:
  static constexpr DType kDType = dtype_of_v<T>;
  Backend native = Backend::native();
  Generator gen{xylem_test::fresh_seed()};
  Tensor random(const Layout& shape, double low = -1, double high = 1) {
    return uniform(native, shape, kDType, gen, low, high);
  }
};
using Dtypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CaptureTest, Dtypes);

// A chain of small elementwise ops with temporaries between them.
Tensor chain(const Backend& b, const Tensor& x, const Tensor& y) {
  Tensor t = xylem::add(b, x, y);
  t = xylem::mul(b, t, x);
  t = xylem::exp(b, xylem::neg(b, xylem::abs(b, t)));
  return xylem::sub(b, xylem::sqrt(b, t), y);
}

TYPED_TEST(CaptureTest, ElementwiseChainReplaysOnNewData) {
  const Backend& b = this->native;
  Tensor x = this->random({3, 17});
  Tensor y = this->random({3, 17});
  Tensor out;
  Graph g = capture(b, [&] { out = chain(b, x, y); });
  EXPECT_EQ(g.size(), 7u);
  EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles());  // capture ran the block once

  for (int round = 0; round < 2; ++round) {  // new data, then replay; twice
    fill_uniform(b, x, this->gen, -2, 2);
    fill_uniform(b, y, this->gen, -2, 2);
    g.replay();
    EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles()) << "round " << round;
  }
  g.replay();
  g.replay()->wait();
  EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles()) << "replayed twice on the same data";
}

TYPED_TEST(CaptureTest, Gemm) {
  const Backend& b = this->native;
  Tensor a = this->random({24, 40});
  Tensor w = this->random({40, 16});
  Tensor c(Layout{24, 16}, this->kDType);
  const auto gemm = [&](Tensor& into) { blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1, a, w, 0, into); };
  Graph g = capture(b, [&] { gemm(c); });
  ASSERT_EQ(g.size(), 1u);
  fill_uniform(b, a, this->gen);
  g.replay();
  Tensor eager(Layout{24, 16}, this->kDType);
  gemm(eager);
  EXPECT_EQ(c.to_doubles(), eager.to_doubles());
}

// A small network's forward and backward (conv, relu, pool, flatten,
// linear) against the same network run eagerly.
void build_net(layers::Sequential& net, const Backend& b, DType dtype, std::uint64_t seed) {
  Generator gen(seed);
  const layers::ParameterOptions options{.dtype = dtype};
  net.emplace<layers::Conv2d>(b, gen, 2, 4, 3, 1, 1, true, options);
  net.emplace<layers::Activation>(layers::Activation::Kind::relu);
  net.emplace<layers::MaxPool2d>(2);
  net.emplace<layers::Flatten>();
  net.emplace<layers::Linear>(b, gen, 4 * 4 * 4, 5, true, options);
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const char* what) {
  const auto g = got.to_doubles(), w = want.to_doubles();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
}

TYPED_TEST(CaptureTest, LayersForwardBackward) {
  const Backend& b = this->native;
  const double tol = this->kDType == f32 ? 1e-5 : 1e-12;
  const std::uint64_t seed = xylem_test::fresh_seed();
  layers::Sequential net;
  build_net(net, b, this->kDType, seed);
  Tensor x = this->random({3, 2, 8, 8});
  Tensor dy = this->random({3, 5});
  Tensor y, dx;
  Graph g = capture(b, [&] {
    y = net.forward(b, x);
    dx = net.backward(b, dy);
  });
  EXPECT_GT(g.size(), 5u);

  fill_uniform(b, x, this->gen);
  fill_uniform(b, dy, this->gen);
  g.replay();

  layers::Sequential eager;
  build_net(eager, b, this->kDType, seed);
  const Tensor y_eager = eager.forward(b, x);
  const Tensor dx_eager = eager.backward(b, dy);
  expect_near(y, y_eager, tol, "y");
  expect_near(dx, dx_eager, tol, "dx");
  const auto params = net.parameters(), eager_params = eager.parameters();
  ASSERT_EQ(params.size(), eager_params.size());
  for (std::size_t p = 0; p < params.size(); ++p) expect_near(params[p]->grad, eager_params[p]->grad, tol, "grad");
}

TYPED_TEST(CaptureTest, RebindChecksShapeAndDtype) {
  const Backend& b = this->native;
  Tensor x = this->random({4, 5});
  Tensor out;
  Graph g = capture(b, [&] { out = xylem::exp(b, x); });
  g.replay()->wait();
  const auto x_before = xylem_test::snapshot(x);
  const auto out_before = xylem_test::snapshot(out);

  Tensor wrong_shape = this->random({5, 4});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, g.rebind(x, wrong_shape));
  Tensor wider = this->random({4, 10});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, g.rebind(x, wider.slice(1, 0, 5)));  // other strides
  Tensor wrong_dtype = uniform(b, {4, 5}, this->kDType == f32 ? f64 : f32, this->gen);
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, g.rebind(x, wrong_dtype));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(wrong_shape, x));  // not in the graph
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(x, out));          // already in the graph
  g.replay()->wait();
  XY_EXPECT_UNCHANGED(x, x_before);
  EXPECT_EQ(out.to_doubles(), out_before.values);

  Tensor other = this->random({4, 5});
  g.rebind(x, other);
  g.replay();
  EXPECT_EQ(out.to_doubles(), xylem::exp(b, other).to_doubles());
}

class CaptureRefusal : public ::testing::Test {
 protected:
  Backend b = Backend::native();
  Tensor x = Tensor::from(std::vector<float>{1, 2, 3, 4});
};

TEST_F(CaptureRefusal, HostRead) {
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] {
    Tensor y = xylem::exp(b, x);
    (void)y.to_vector<float>();
  }));
  EXPECT_TRUE(contains(msg, "host")) << msg;
}

TEST_F(CaptureRefusal, EvenWhenTheBlockCatchesTheError) {
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] {
    try {
      (void)xylem::exp(b, x).to_vector<float>();
    } catch (const Error&) {
    }
  }));
}

TEST_F(CaptureRefusal, Nested) {
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)capture(b, [] {}); }));
  // The thread captures again once the outer capture has ended.
  EXPECT_EQ(capture(b, [&] { (void)xylem::exp(b, x); }).size(), 1u);
}

TEST_F(CaptureRefusal, FrameworkThatCannotReplay) {
  const Backend mirror = xylem_test::mirror();
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(mirror, [&] { (void)xylem::exp(mirror, x); }));
  EXPECT_TRUE(contains(msg, "mirror")) << msg;
}

TEST_F(CaptureRefusal, OpOnAnotherBackend) {
  const Backend mirror = xylem_test::mirror();
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)xylem::exp(mirror, x); }));
}

TEST_F(CaptureRefusal, TransferFromAnotherFramework) {
  const Backend mirror = xylem_test::mirror();
  Tensor on_mirror = xylem::exp(mirror, x);  // current on mirror only
  const auto msg = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)xylem::exp(b, on_mirror); }));
  EXPECT_TRUE(contains(msg, "transfer")) << msg;
  EXPECT_FALSE(on_mirror.is_current_on(b));
}

TEST_F(CaptureRefusal, Collective) {
  const std::vector<dist::Communicator> group = dist::Communicator::local(std::span(&b, 1));
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] { (void)group[0].all_reduce(x); }));
  EXPECT_TRUE(contains(msg, "collective")) << msg;
}

// Replays of one graph from two threads run one after the other: an
// in-place increment replayed 2 x 200 times counts every replay.
TEST(CaptureThreads, ReplaysAreSerialized) {
  const Backend b = Backend::native();
  Tensor counter = zeros(b, {64}, f64);
  const Tensor one = ones(b, {64}, f64);
  Graph g = capture(b, [&] { xylem::add(b, counter, one, counter); });
  constexpr int kEach = 200;
  std::atomic<bool> go{false};
  const auto replays = [&] {
    while (!go.load()) std::this_thread::yield();
    for (int i = 0; i < kEach; ++i) g.replay();
  };
  std::thread first(replays), second(replays);
  go = true;
  first.join();
  second.join();
  EXPECT_EQ(counter.to_doubles(), std::vector<double>(64, 1 + 2 * kEach));
}

}  // namespace

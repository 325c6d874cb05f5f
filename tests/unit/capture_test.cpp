// Capture and replay (xylem/capture.hpp) on every framework that can
// record (native, OpenCL, CUDA; one absent is skipped, by name): a replay
// gives what the same ops give eagerly on the data the tensors hold then;
// changes of shape or dtype, host reads, transfers, other backends, nesting
// and frameworks that cannot replay are typed errors.
#include <atomic>
#include <iostream>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/support.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem;
using xylem_test::contains;

// Opens the framework `name` or skips saying why ("[  SKIPPED ] name:
// reason", what CTest's SKIP_REGULAR_EXPRESSION looks for).
bool open_or_skip(const std::string& name, Backend& b) {
  try {
    b = Backend::open(name);
    return true;
  } catch (const Error& e) {
    std::cout << "[  SKIPPED ] " << name << ": " << e.message() << std::endl;
    return false;
  }
}

class Capture : public ::testing::TestWithParam<std::tuple<std::string, DType>> {
 protected:
  void SetUp() override {
    if (!open_or_skip(std::get<0>(GetParam()), b)) GTEST_SKIP() << std::get<0>(GetParam()) << " is absent";
    if (!b.supports(Op::math_unary, kDType)) {
      std::cout << "[  SKIPPED ] " << std::get<0>(GetParam()) << ": no " << name(kDType) << std::endl;
      GTEST_SKIP();
    }
  }
  const DType kDType = std::get<1>(GetParam());
  Backend b = Backend::native();
  Generator gen{xylem_test::fresh_seed()};
  Tensor random(const Layout& shape, double low = -1, double high = 1) {
    return uniform(b, shape, kDType, gen, low, high);
  }
  // Relative tolerance of a replay against the same ops run eagerly: the
  // kernels are the same, but a library may pick another path per call.
  [[nodiscard]] double tol() const { return kDType == f32 ? 1e-5 : 1e-12; }
};

std::string target_name(const ::testing::TestParamInfo<std::tuple<std::string, DType>>& info) {
  return std::get<0>(info.param) + "_" + std::string(name(std::get<1>(info.param)));
}
INSTANTIATE_TEST_SUITE_P(Frameworks, Capture,
                         ::testing::Combine(::testing::Values("native", "opencl", "cuda"), ::testing::Values(f32, f64)),
                         target_name);

void expect_near(const Tensor& got, const Tensor& want, double tol, const char* what) {
  const auto g = got.to_doubles(), w = want.to_doubles();
  ASSERT_EQ(g.size(), w.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " element " << i;
}

// A chain of small elementwise ops with temporaries between them.
Tensor chain(const Backend& b, const Tensor& x, const Tensor& y) {
  Tensor t = xylem::add(b, x, y);
  t = xylem::mul(b, t, x);
  t = xylem::exp(b, xylem::neg(b, xylem::abs(b, t)));
  return xylem::sub(b, xylem::sqrt(b, t), y);
}

// With automatic fusion off the graph holds the seven calls; on, they are
// recorded as fused kernels (fewer, every result still stored).
TEST_P(Capture, ElementwiseChainReplaysOnNewData) {
  for (const bool fusion : {false, true}) {
    SCOPED_TRACE(fusion ? "fusion on" : "fusion off");
    xylem::set_fusion(fusion);
    Tensor x = random({3, 17});
    Tensor y = random({3, 17});
    Tensor out;
    Graph g = capture(b, [&] { out = chain(b, x, y); });
    if (fusion) {
      EXPECT_GE(g.size(), 1u);
      EXPECT_LE(g.size(), 7u);
    } else {
      EXPECT_EQ(g.size(), 7u);
    }
    EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles());  // capture ran the block once

    for (int round = 0; round < 2; ++round) {  // new data, then replay; twice
      fill_uniform(b, x, gen, -2, 2);
      fill_uniform(b, y, gen, -2, 2);
      g.replay();
      EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles()) << "round " << round;
    }
    g.replay();
    g.replay()->wait();
    EXPECT_EQ(out.to_doubles(), chain(b, x, y).to_doubles()) << "replayed twice on the same data";
  }
  xylem::set_fusion(true);
}

TEST_P(Capture, Gemm) {
  Tensor a = random({24, 40});
  Tensor w = random({40, 16});
  Tensor c(Layout{24, 16}, kDType);
  const auto gemm = [&](Tensor& into) { blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1, a, w, 0, into); };
  Graph g = capture(b, [&] { gemm(c); });
  ASSERT_EQ(g.size(), 1u);
  fill_uniform(b, a, gen);
  g.replay();
  Tensor eager(Layout{24, 16}, kDType);
  gemm(eager);
  expect_near(c, eager, tol(), "gemm");  // a library may pick another algorithm inside a CUDA graph
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

TEST_P(Capture, LayersForwardBackward) {
  const double tol = this->tol();
  const std::uint64_t seed = xylem_test::fresh_seed();
  layers::Sequential net;
  build_net(net, b, kDType, seed);
  Tensor x = random({3, 2, 8, 8});
  Tensor dy = random({3, 5});
  Tensor y, dx;
  Graph g = capture(b, [&] {
    y = net.forward(b, x);
    dx = net.backward(b, dy);
  });
  EXPECT_GT(g.size(), 5u);

  fill_uniform(b, x, gen);
  fill_uniform(b, dy, gen);
  g.replay();

  layers::Sequential eager;
  build_net(eager, b, kDType, seed);
  const Tensor y_eager = eager.forward(b, x);
  const Tensor dx_eager = eager.backward(b, dy);
  expect_near(y, y_eager, tol, "y");
  expect_near(dx, dx_eager, tol, "dx");
  const auto params = net.parameters(), eager_params = eager.parameters();
  ASSERT_EQ(params.size(), eager_params.size());
  for (std::size_t p = 0; p < params.size(); ++p) expect_near(params[p]->grad, eager_params[p]->grad, tol, "grad");
}

TEST_P(Capture, RebindChecksShapeAndDtype) {
  Tensor x = random({4, 5});
  Tensor out;
  Graph g = capture(b, [&] { out = xylem::exp(b, x); });
  g.replay()->wait();
  const auto x_before = xylem_test::snapshot(x);
  const auto out_before = xylem_test::snapshot(out);

  Tensor wrong_shape = random({5, 4});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, g.rebind(x, wrong_shape));
  Tensor wider = random({4, 10});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, g.rebind(x, wider.slice(1, 0, 5)));  // other strides
  Tensor wrong_dtype = uniform(b, {4, 5}, kDType == f32 ? f64 : f32, gen);
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, g.rebind(x, wrong_dtype));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(wrong_shape, x));  // not in the graph
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(x, out));          // already in the graph
  g.replay()->wait();
  XY_EXPECT_UNCHANGED(x, x_before);
  EXPECT_EQ(out.to_doubles(), out_before.values);

  Tensor other = random({4, 5});
  g.rebind(x, other);
  g.replay();
  EXPECT_EQ(out.to_doubles(), xylem::exp(b, other).to_doubles());
}

// Ops of many families (reductions, norms, pooling, BLAS 1 with its
// scratch buffers, an optimizer step, casts, selection) replayed on new data
// against the same ops run eagerly.
struct Families {
  Tensor s, ls, sum, var, max, argmax, ln, clamped, dot, nrm2, pooled, lrn, param, half;
};
Families families(const Backend& b, const Tensor& x, const Tensor& img, Tensor& param, Tensor& m, Tensor& v) {
  Families f;
  f.s = nn::softmax(b, x, 1);
  f.ls = nn::log_softmax(b, x, 0);
  f.sum = xylem::sum(b, x, {.axes = {1}});
  f.var = xylem::var(b, x, {.axes = {0}});
  f.max = xylem::max(b, x, {.axes = {1}});
  f.argmax = xylem::argmax(b, x, {.axes = {0}});
  f.ln = Tensor(x.layout(), x.dtype());
  (void)nn::layer_norm(b, x, 1, Tensor(), Tensor(), 1e-5, f.ln);
  f.clamped = xylem::clamp(b, x, -0.25, 0.5);
  f.dot = Tensor(Layout{1}, x.dtype());
  blas::dot(b, x.reshape({-1}), f.s.reshape({-1}), f.dot);
  f.nrm2 = Tensor(Layout{1}, x.dtype());
  blas::nrm2(b, f.ls.reshape({-1}), f.nrm2);
  f.pooled = nn::avg_pool2d(b, img, nn::Pool2d{});
  f.lrn = nn::lrn(b, img);
  optim::adam_step(b, param, f.clamped, m, v, optim::AdamOptions{.lr = 0.1}, 3);
  f.param = param;
  f.half = xylem::cast(b, f.sum, f16);
  return f;
}

TEST_P(Capture, ManyFamilies) {
  Tensor x = random({6, 33});
  Tensor img = random({2, 3, 6, 6});
  const Tensor param0 = random({6, 33}), m0 = random({6, 33}), v0 = random({6, 33}, 0.1, 1);
  Tensor param = contiguous(b, param0), m = contiguous(b, m0), v = contiguous(b, v0);
  Families got;
  Graph g = capture(b, [&] { got = families(b, x, img, param, m, v); });
  EXPECT_EQ(g.size(), 14u);  // one op each

  fill_uniform(b, x, gen, -2, 2);
  fill_uniform(b, img, gen);
  for (auto [from, to] : {std::pair{&param0, &param}, std::pair{&m0, &m}, std::pair{&v0, &v}}) {
    Tensor flat = to->reshape({-1});
    blas::copy(b, from->reshape({-1}), flat);
  }
  g.replay();
  Tensor param_e = contiguous(b, param0), m_e = contiguous(b, m0), v_e = contiguous(b, v0);
  const Families want = families(b, x, img, param_e, m_e, v_e);
  const double t = tol();
  expect_near(got.s, want.s, t, "softmax");
  expect_near(got.ls, want.ls, t, "log_softmax");
  expect_near(got.sum, want.sum, t, "sum");
  expect_near(got.var, want.var, t, "var");
  expect_near(got.max, want.max, t, "max");
  EXPECT_EQ(got.argmax.to_doubles(), want.argmax.to_doubles());
  expect_near(got.ln, want.ln, t, "layer_norm");
  expect_near(got.clamped, want.clamped, t, "clamp");
  expect_near(got.dot, want.dot, t, "dot");
  expect_near(got.nrm2, want.nrm2, t, "nrm2");
  expect_near(got.pooled, want.pooled, t, "avg_pool2d");
  expect_near(got.lrn, want.lrn, t, "lrn");
  expect_near(got.param, want.param, t, "adam_step");
  expect_near(got.half, want.half, 1e-3, "cast");
}

class CaptureOn : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!open_or_skip(GetParam(), b)) GTEST_SKIP() << GetParam() << " is absent";
    x = contiguous(b, Tensor::from(std::vector<float>{1, 2, 3, 4}));
  }
  Backend b = Backend::native();
  Tensor x;
};
INSTANTIATE_TEST_SUITE_P(Frameworks, CaptureOn, ::testing::Values("native", "opencl", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(CaptureOn, HostRead) {
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] {
    Tensor y = xylem::exp(b, x);
    (void)y.to_vector<float>();
  }));
  EXPECT_TRUE(contains(msg, "host")) << msg;
}

TEST_P(CaptureOn, LendingMemoryToAnotherLibrary) {
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] {
    Tensor y = xylem::exp(b, x);
    (void)interop::data_pointer(y, b);
  }));
  EXPECT_TRUE(contains(msg, "another library")) << msg;
}

TEST_P(CaptureOn, EvenWhenTheBlockCatchesTheError) {
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] {
    try {
      (void)xylem::exp(b, x).to_vector<float>();
    } catch (const Error&) {
    }
  }));
}

TEST_P(CaptureOn, Nested) {
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)capture(b, [] {}); }));
  // The thread captures again once the outer capture has ended.
  EXPECT_EQ(capture(b, [&] { (void)xylem::exp(b, x); }).size(), 1u);
}

TEST(CaptureRefusal, FrameworkThatCannotReplay) {
  const Backend mirror = xylem_test::mirror();
  const Tensor x = Tensor::from(std::vector<float>{1, 2, 3, 4});
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(mirror, [&] { (void)xylem::exp(mirror, x); }));
  EXPECT_TRUE(contains(msg, "mirror")) << msg;
}

TEST_P(CaptureOn, OpOnAnotherBackend) {
  const Backend mirror = xylem_test::mirror();
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)xylem::exp(mirror, x); }));
}

TEST_P(CaptureOn, TransferFromAnotherFramework) {
  const Backend mirror = xylem_test::mirror();
  Tensor on_mirror = xylem::exp(mirror, x);  // current on mirror only
  const auto msg = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)capture(b, [&] { (void)xylem::exp(b, on_mirror); }));
  EXPECT_TRUE(contains(msg, "transfer")) << msg;
  EXPECT_FALSE(on_mirror.is_current_on(b));
}

TEST_P(CaptureOn, Collective) {
  const std::vector<dist::Communicator> group = dist::Communicator::local(std::span(&b, 1));
  const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(b, [&] { (void)group[0].all_reduce(x); }));
  EXPECT_TRUE(contains(msg, "collective")) << msg;
}

// Replays of one graph from two threads run one after the other: an
// in-place increment replayed 2 x 200 times counts every replay (exact in
// f32).
TEST_P(CaptureOn, ReplaysAreSerialized) {
  Tensor counter = zeros(b, {64}, f32);
  const Tensor one = ones(b, {64}, f32);
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

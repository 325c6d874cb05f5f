// Automatic fusion (src/core/fusion.*): eager elementwise calls join one
// pending chain that runs as one kernel when their data is needed. Each
// test checks the values against a float64 reference on fresh random
// inputs, and the chain's counters for what ran fused, what was stored and
// what was dropped. On every framework present (inputs made on the host, so
// the first op on a device transfers them).
#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/support.hpp"
#include "core/fusion.hpp"
#include "xylem/plugin/math.h"

namespace {

using xylem::Backend;
using xylem::DType;
using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;
using xylem::detail::fusion_counts;
using xylem::detail::FusionCounts;

// The counters' change over a block.
struct CountsSince {
  FusionCounts start = fusion_counts();
  [[nodiscard]] FusionCounts now() const {
    const FusionCounts c = fusion_counts();
    return {c.kernels - start.kernels, c.calls - start.calls, c.stored - start.stored, c.dropped - start.dropped,
            c.epilogues - start.epilogues};
  }
};

// The counters' change: `kernels` fused kernels, `calls` calls deferred,
// `stored` results written, `dropped` never written.
void expect_counts(const FusionCounts& c, std::uint64_t kernels, std::uint64_t calls, std::uint64_t stored,
                   std::uint64_t dropped) {
  EXPECT_EQ(c.kernels, kernels);
  EXPECT_EQ(c.calls, calls);
  EXPECT_EQ(c.stored, stored);
  EXPECT_EQ(c.dropped, dropped);
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  // One assertion, for the first element out of tolerance: the operands of
  // the out-of-memory test hold a million elements each.
  std::size_t i = 0;
  while (i < got.size() && std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i]))) ++i;
  if (i < got.size()) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " at " << i;
  }
}

// Sets (a non-empty value) or unsets an environment variable for a scope.
class EnvSetting {
 public:
  EnvSetting(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    *value != '\0' ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~EnvSetting() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  EnvSetting(const EnvSetting&) = delete;
  EnvSetting& operator=(const EnvSetting&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class AutoFusion : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      backend = Backend::open(GetParam());
    } catch (const xylem::Error& e) {
      GTEST_SKIP() << GetParam() << ": " << e.message();
    }
    xylem::set_fusion(true);
    seed = xylem_test::fresh_seed();
    rng.seed(seed);
  }
  void TearDown() override { xylem::set_fusion(true); }

  Tensor random(const Layout& shape, DType dtype, std::vector<double>& values, double low = -2, double high = 2) {
    values = xylem_test::random_vector<double>(rng, shape.numel(), low, high);
    Tensor f64 = Tensor::from(values).reshape(shape.dims());
    if (dtype == xylem::f64) return f64;
    Tensor t(shape, dtype);
    xylem::cast(Backend::native(), f64, t);
    values = t.to_doubles();  // the inputs as the dtype holds them
    return t;
  }

  Backend backend = Backend::native();
  std::uint64_t seed = 0;
  std::mt19937_64 rng;
};

// y = relu(x * a + b) * 2, the temporaries gone by the time y is read: one
// kernel, one result stored, three dropped.
TEST_P(AutoFusion, ChainOfTemporariesRunsAsOneKernel) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  for (DType dtype : {xylem::f32, xylem::f64, xylem::f16, xylem::bf16}) {
    SCOPED_TRACE(name(dtype));
    if (!backend.supports(xylem::Op::math_fused, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    std::vector<double> xv, av, bv;
    const Tensor x = random(Layout{37, 65}, dtype, xv);
    const Tensor a = random(Layout{65}, dtype, av);  // broadcast along rows
    const Tensor b = random(Layout{37, 1}, dtype, bv);
    Tensor two(Layout{}, dtype);
    xylem::fill(backend, two, 2.0);
    const auto chain = [&] {
      return xylem::mul(backend, xylem::nn::relu(backend, xylem::add(backend, xylem::mul(backend, x, a), b)), two);
    };
    (void)chain().version();  // seen once: on OpenCL and CUDA its calls ran one by one, now it compiles
    CountsSince counts;
    const Tensor y = chain();
    const std::vector<double> got = y.to_doubles();
    std::vector<double> want(xv.size());
    for (int i = 0; i < 37; ++i)
      for (int j = 0; j < 65; ++j) want[i * 65 + j] = std::max(0.0, xv[i * 65 + j] * av[j] + bv[i]) * 2;
    const double tol = dtype == xylem::f64 ? 1e-12 : dtype == xylem::f32 ? 1e-5 : 2e-2;
    expect_near(got, want, tol, "relu(x*a+b)*2");
    expect_counts(counts.now(), 1, 4, 1, 3);
  }
}

// Integer calls never join a chain (fusion's programs are float only): a
// chain of i32 and i64 calls runs call by call, each result stored, twice
// (so OpenCL and CUDA would have compiled a float chain of that shape).
TEST_P(AutoFusion, IntegerCallsRunUnfused) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  for (DType dtype : {xylem::i32, xylem::i64}) {
    SCOPED_TRACE(name(dtype));
    if (!backend.supports(xylem::Op::math_binary, dtype)) continue;
    std::vector<double> xv;
    const Tensor x = xylem::cast(Backend::native(), random(Layout{37, 65}, xylem::f64, xv, -1000, 1000), dtype);
    xv = x.to_doubles();
    Tensor three(Layout{}, dtype);
    xylem::fill(backend, three, 3.0);
    for (int round = 0; round < 2; ++round) {
      CountsSince counts;
      const Tensor y = xylem::neg(backend, xylem::maximum(backend, xylem::mul(backend, xylem::add(backend, x, x), three), x));
      const std::vector<double> got = y.to_doubles();
      std::vector<double> want(xv.size());
      for (std::size_t i = 0; i < xv.size(); ++i) want[i] = -std::max(xv[i] * 2 * 3, xv[i]);
      expect_near(got, want, 0, "-maximum((x + x) * 3, x)");
      expect_counts(counts.now(), 0, 0, 0, 0);
    }
  }
}

// Named intermediates stay readable: every one still held is stored.
TEST_P(AutoFusion, HeldIntermediatesAreStored) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  const Tensor x = random(Layout{3000}, xylem::f32, xv);
  const auto run = [&] {
    Tensor e = xylem::exp(backend, x);
    Tensor s = xylem::sin(backend, e);
    Tensor y = xylem::add(backend, s, x);
    return std::array<Tensor, 3>{e, s, y};
  };
  (void)run()[2].version();  // seen once (see ChainOfTemporariesRunsAsOneKernel)
  CountsSince counts;
  const auto [e, s, y] = run();
  std::vector<double> we(xv.size()), ws(xv.size()), wy(xv.size());
  for (std::size_t i = 0; i < xv.size(); ++i) {
    we[i] = std::exp(xv[i]);
    ws[i] = std::sin(we[i]);
    wy[i] = ws[i] + xv[i];
  }
  expect_near(y.to_doubles(), wy, 1e-5, "y");
  expect_near(e.to_doubles(), we, 1e-5, "e");
  expect_near(s.to_doubles(), ws, 1e-5, "s");
  expect_counts(counts.now(), 1, 3, 3, 0);
}

// In place, twice, on a tensor the chain also read first: each call still
// counts in the version, and the reads see the values before the writes.
TEST_P(AutoFusion, InPlaceWritesKeepOrderAndVersions) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  Tensor x = random(Layout{40, 33}, xylem::f64, xv);
  const std::uint64_t v0 = x.version();
  const Tensor before = xylem::neg(backend, x);  // reads x before it changes
  xylem::exp(backend, x, x);
  xylem::add(backend, x, before, x);  // exp(x) - x
  std::vector<double> want(xv.size()), want_before(xv.size());
  for (std::size_t i = 0; i < xv.size(); ++i) {
    want[i] = std::exp(xv[i]) - xv[i];
    want_before[i] = -xv[i];
  }
  EXPECT_EQ(x.version(), v0 + 2);
  expect_near(x.to_doubles(), want, 1e-12, "x");
  expect_near(before.to_doubles(), want_before, 1e-12, "before");
}

// Another op, a reduction, a host read or a different shape in between runs
// the chain first; the results are those of the calls in their order.
TEST_P(AutoFusion, OtherWorkRunsTheChainFirst) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  Tensor x = random(Layout{3000}, xylem::f64, xv);
  Tensor y = xylem::mul(backend, x, x);
  xylem::blas::scal(backend, 3.0, y);  // not elementwise in the chain's sense: the chain runs first
  Tensor z = xylem::add(backend, y, x);
  const Tensor small = xylem::neg(backend, xylem::sum(backend, z));  // another shape
  std::vector<double> want(xv.size());
  double total = 0;
  for (std::size_t i = 0; i < xv.size(); ++i) total += want[i] = 3 * xv[i] * xv[i] + xv[i];
  expect_near(z.to_doubles(), want, 1e-12, "z");
  expect_near(small.to_doubles(), {-total}, 1e-10, "-sum(z)");
  // A transposed view of a chain result is read from memory: the chain runs.
  Tensor m = random(Layout{40, 30}, xylem::f64, xv);
  Tensor m2 = xylem::mul(backend, m, m);
  Tensor t = xylem::add(backend, m2.transpose(0, 1), xylem::full(backend, Layout{30, 40}, xylem::f64, 1.0));
  const std::vector<double> got = t.to_doubles();
  for (int i = 0; i < 30; ++i)
    for (int j = 0; j < 40; ++j) ASSERT_NEAR(got[i * 40 + j], xv[j * 30 + i] * xv[j * 30 + i] + 1, 1e-12);
}

// Writing, in place, a tensor the chain read through another view (here
// transposed) must not change what that read saw.
TEST_P(AutoFusion, WriteAfterReadThroughAnotherView) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  Tensor m = random(Layout{48, 48}, xylem::f64, xv);
  const Tensor t = xylem::exp(backend, m.transpose(0, 1));
  xylem::neg(backend, m, m);
  const std::vector<double> got_t = t.to_doubles(), got_m = m.to_doubles();
  for (int i = 0; i < 48; ++i)
    for (int j = 0; j < 48; ++j) {
      ASSERT_NEAR(got_t[i * 48 + j], std::exp(xv[j * 48 + i]), 1e-12);
      ASSERT_EQ(got_m[i * 48 + j], -xv[i * 48 + j]);
    }
}

// Results written into part of a larger tensor run unfused; the rest of
// that tensor keeps its data.
TEST_P(AutoFusion, OutputViewRunsUnfused) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv, bigv;
  const Tensor x = random(Layout{10}, xylem::f64, xv);
  Tensor big = random(Layout{3, 10}, xylem::f64, bigv);
  Tensor row = big.slice(0, 1, 2).reshape({10});
  xylem::exp(backend, x, row);
  const std::vector<double> got = big.to_doubles();
  for (int i = 0; i < 30; ++i) ASSERT_NEAR(got[i], i / 10 == 1 ? std::exp(xv[i % 10]) : bigv[i], 1e-12);
}

// Errors the call can know are still the call's: nothing is deferred.
TEST_P(AutoFusion, ErrorsAreRaisedByTheCall) {
  std::vector<double> xv;
  const Tensor x = random(Layout{40, 50}, xylem::f32, xv);
  const Tensor never(Layout{40, 50}, xylem::f32);
  Tensor out = xylem::zeros(backend, Layout{40, 50}, xylem::f32);
  const auto snap = xylem_test::snapshot(out);
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read, xylem::add(backend, x, never, out));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::add(backend, x, Tensor(Layout{3}, xylem::f32)));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::add(backend, x, xylem::zeros(backend, Layout{40, 50}, xylem::f64)));
  XY_EXPECT_UNCHANGED(out, snap);
  // More memory than the device has: out of memory from the call itself.
  const std::int64_t huge = std::int64_t(1) << 58;
  const Tensor big = xylem::full(backend, Layout{1}, xylem::f32, 1.0).as_strided(
      Layout::strided(std::vector<std::int64_t>{huge}, std::vector<std::int64_t>{0}, 0));
  XY_EXPECT_ERROR(ErrorCode::out_of_memory, (void)xylem::exp(backend, big));
  expect_near(xylem::exp(backend, x).to_doubles(), [&] {
    std::vector<double> w(xv.size());
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::exp(xv[i]);
    return w;
  }(), 1e-5, "exp after the errors");
}

// A chain longer than one kernel holds (16 instructions, 32 calls) is cut
// into pieces run in order; each piece stores what the next one reads.
TEST_P(AutoFusion, LongChainsRunInPieces) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  const Tensor x = random(Layout{2000}, xylem::f64, xv);
  const auto run = [&] {
    Tensor y = xylem::exp(backend, x);
    for (int i = 0; i < 40; ++i) y = xylem::add(backend, y, x);  // each earlier y is dropped
    return y;
  };
  (void)run().version();  // its programs seen once
  CountsSince counts;
  const Tensor y = run();
  const std::vector<double> got = y.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_NEAR(got[i], std::exp(xv[i]) + 40 * xv[i], 1e-10);
  const FusionCounts c = counts.now();
  EXPECT_EQ(c.calls, 41u);
  EXPECT_GE(c.kernels, 3u);  // 41 dependent calls, at most 14 a kernel
  EXPECT_LE(c.kernels, 6u);
  EXPECT_EQ(c.stored, c.kernels);  // one result a piece: the last y, or what the next piece reads
}

// On a device that compiles its fused programs (OpenCL, CUDA), a program's
// first chain runs as its calls, one by one; the next one fuses. The host
// fuses at once (nothing to compile).
TEST_P(AutoFusion, FirstSightingRunsUnfusedWhereProgramsCompile) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  const Tensor x = random(Layout{1500}, xylem::f32, xv);
  (void)x.version();
  // A program no other test makes: clamp with these bounds, then sin, cos.
  const auto run = [&] { return xylem::cos(backend, xylem::sin(backend, xylem::clamp(backend, x, -0.8125, 0.6875))); };
  const bool compiles = GetParam() != "native";
  for (int time = 0; time < 2; ++time) {
    CountsSince counts;
    const std::vector<double> got = run().to_doubles();
    for (std::size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(got[i], std::cos(std::sin(std::clamp(xv[i], -0.8125, 0.6875))), 1e-5);
    const FusionCounts c = counts.now();
    EXPECT_EQ(c.calls, 3u);
    EXPECT_EQ(c.kernels, compiles && time == 0 ? 0u : 1u) << "time " << time;
  }
}

// An empty batch never joins the chain and leaves a pending one alone: its
// output is complete as it is, and the pending result is still right.
TEST_P(AutoFusion, EmptyTensorsJoinNothing) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  const Tensor x = random(Layout{2000}, xylem::f32, xv);
  (void)x.version();
  CountsSince counts;
  const Tensor y = xylem::exp(backend, x);  // pending
  const Tensor empty = xylem::zeros(backend, Layout{0, 7}, xylem::f32);
  const Tensor e = xylem::nn::relu(backend, xylem::add(backend, empty, empty));
  EXPECT_EQ(e.layout().dims_string(), Layout({0, 7}).dims_string());
  EXPECT_TRUE(e.to_doubles().empty());
  const std::vector<double> got = y.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_NEAR(got[i], std::exp(xv[i]), 1e-5 * std::exp(xv[i]));
  EXPECT_EQ(counts.now().calls, 1u);  // exp alone joined
}

// On the host, a call of 1024 elements or fewer runs at once, unfused: it
// costs less than deferring it would.
TEST_P(AutoFusion, SmallHostCallsRunAtOnce) {
  if (GetParam() != "native") GTEST_SKIP() << "a host rule";
  std::vector<double> xv;
  const Tensor x = random(Layout{1024}, xylem::f32, xv);
  (void)x.version();
  CountsSince counts;
  const Tensor y = xylem::exp(backend, xylem::neg(backend, x));
  EXPECT_EQ(counts.now().calls, 0u);
  const std::vector<double> got = y.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_NEAR(got[i], std::exp(-xv[i]), 1e-5 * std::exp(-xv[i]));
}

// set_fusion(false): every call runs by itself; the same values.
TEST_P(AutoFusion, OffRunsEachCall) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  const Tensor x = random(Layout{2049}, xylem::f32, xv);
  const Tensor fused = xylem::nn::sigmoid(backend, xylem::mul(backend, x, x));
  const std::vector<double> with = fused.to_doubles();
  xylem::set_fusion(false);
  EXPECT_FALSE(xylem::fusion_enabled());
  CountsSince counts;
  const std::vector<double> without = xylem::nn::sigmoid(backend, xylem::mul(backend, x, x)).to_doubles();
  EXPECT_EQ(counts.now().calls, 0u);
  expect_near(with, without, 1e-6, "fused against unfused");
}

// Tensors of more than 1024 elements throughout: on native, smaller calls run
// on the caller's thread unfused (core/fusion.cpp, kHostMinElements).

// Calls across threads, each on its own tensors, sharing the chain: every
// thread's values are right (run under ThreadSanitizer too).
TEST_P(AutoFusion, ThreadsShareTheChain) {
  constexpr int kThreads = 4, kIters = 30;
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kIters; ++i) {
        const double v = t + 0.25 * i;
        const Tensor x = xylem::full(backend, Layout{2048}, xylem::f64, v);
        const Tensor y = xylem::add(backend, xylem::mul(backend, x, x), x);
        for (double got : y.to_doubles()) wrong += got != v * v + v;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// A capture runs what was pending first and records none of it; inside the
// capture nothing is deferred, so replay gives the eager result.
TEST_P(AutoFusion, CaptureRecordsOnlyItsOwnCalls) {
  
  std::vector<double> xv;
  Tensor x = random(Layout{1500}, xylem::f64, xv);
  Tensor pending = xylem::exp(backend, x);
  Tensor y(Layout{1500}, xylem::f64);
  xylem::Graph g = xylem::capture(backend, [&] { xylem::mul(backend, x, x, y); });
  EXPECT_EQ(g.size(), 1u);
  g.replay()->wait();
  const std::vector<double> got = y.to_doubles(), got_pending = pending.to_doubles();
  for (int i = 0; i < 1500; ++i) {
    ASSERT_EQ(got[i], xv[i] * xv[i]);
    ASSERT_NEAR(got_pending[i], std::exp(xv[i]), 1e-12);
  }
}

// Inside a capture the block's calls are fused too, and the graph records
// the fused kernel (every result stored); a replay on new data computes the
// chain again.
TEST_P(AutoFusion, CaptureRecordsFusedKernels) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::vector<double> xv;
  Tensor x = random(Layout{2000}, xylem::f64, xv);
  Tensor y(Layout{2000}, xylem::f64);
  xylem::blas::copy(backend, x, y);  // x and y current on the backend before the capture
  (void)y.version();
  CountsSince counts;
  xylem::Graph g = xylem::capture(backend, [&] {
    Tensor t = xylem::exp(backend, x);
    t = xylem::mul(backend, t, x);
    xylem::sub(backend, t, x, y);
  });
  EXPECT_EQ(g.size(), 1u);
  EXPECT_EQ(counts.now().calls, 3u);
  EXPECT_EQ(counts.now().kernels, 1u);
  const Tensor fresh = random(Layout{2000}, xylem::f64, xv);
  xylem::blas::copy(backend, fresh, x);
  g.replay()->wait();
  const std::vector<double> got = y.to_doubles();
  for (std::size_t i = 0; i < xv.size(); ++i) ASSERT_NEAR(got[i], std::exp(xv[i]) * xv[i] - xv[i], 1e-10);
}

// y = x w^T + bias, then relu (nn::linear, nn::relu): where the framework
// has blas::gemm_epilogue, the gemm and its two calls run as one, and the
// pre-activation, whose handle is gone, is never stored. 600 rows of 2048:
// three bands of rows on the host. Elsewhere the gemm runs at once.
TEST_P(AutoFusion, GemmTailRunsAsItsEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int m = 600, n = 2048, k = 24;
  for (DType dtype : {xylem::f32, xylem::f64, xylem::bf16}) {
    SCOPED_TRACE(name(dtype));
    if (!backend.supports(xylem::Op::blas_gemm, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    std::vector<double> xv, wv, bv;
    const Tensor x = random(Layout{m, k}, dtype, xv);
    const Tensor w = random(Layout{n, k}, dtype, wv);
    const Tensor bias = random(Layout{n}, dtype, bv);
    const auto run = [&] { return xylem::nn::relu(backend, xylem::nn::linear(backend, x, w, bias)); };
    (void)run().version();  // its program seen once
    CountsSince counts;
    const std::vector<double> got = run().to_doubles();
    std::vector<double> want(std::size_t(m) * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = bv[std::size_t(j)];
        for (int l = 0; l < k; ++l) sum += xv[std::size_t(i * k + l)] * wv[std::size_t(j * k + l)];
        want[std::size_t(i) * n + std::size_t(j)] = std::max(0.0, sum);
      }
    const double tol = dtype == xylem::f64 ? 1e-11 : dtype == xylem::f32 ? 1e-5 : 3e-2;
    expect_near(got, want, tol, "relu(x w^T + bias)");
    const FusionCounts c = counts.now();
    if (!backend.supports(xylem::Op::blas_gemm_epilogue, dtype)) {
      EXPECT_EQ(c.epilogues, 0u);
      continue;
    }
    expect_counts(c, 1, 2, 1, 1);  // relu's result stored; the pre-activation dropped
    EXPECT_EQ(c.epilogues, 1u);
  }
}

// Both results still held: the epilogue stores the pre-activation and the
// activation. a transposed (op(a) = a^T), so its bands are columns.
TEST_P(AutoFusion, GemmEpilogueStoresWhatIsHeld) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int m = 300, n = 1500, k = 40;
  std::vector<double> av, bv;
  const Tensor a = random(Layout{k, m}, xylem::f32, av);
  const Tensor b = random(Layout{k, n}, xylem::f32, bv);
  Tensor c(Layout{m, n}, xylem::f32);
  const auto run = [&] {
    xylem::blas::gemm(backend, xylem::blas::Transpose::yes, xylem::blas::Transpose::no, 1.0, a, b, 0.0, c);
    return xylem::nn::tanh(backend, c);
  };
  (void)run().version();
  CountsSince counts;
  const Tensor t = run();
  const std::vector<double> got_c = c.to_doubles(), got_t = t.to_doubles();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < k; ++l) sum += av[std::size_t(l * m + i)] * bv[std::size_t(l * n + j)];
      const std::size_t at = std::size_t(i) * n + std::size_t(j);
      ASSERT_NEAR(got_c[at], sum, 1e-5 * (1 + std::abs(sum))) << at;
      ASSERT_NEAR(got_t[at], std::tanh(sum), 1e-5) << at;
    }
  if (!backend.supports(xylem::Op::blas_gemm_epilogue, xylem::f32)) return;
  const FusionCounts f = counts.now();
  expect_counts(f, 1, 1, 2, 0);
  EXPECT_EQ(f.epilogues, 1u);
}

// A gemm whose result is read before any call takes it up runs as itself;
// a call that writes the gemm's own operand never joins its epilogue (the
// gemm would read what the tail writes).
TEST_P(AutoFusion, GemmAloneAndTailIntoItsOperand) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int m = 200, n = 64;
  std::vector<double> av, bv;
  Tensor a = random(Layout{m, n}, xylem::f64, av);
  const Tensor b = random(Layout{n, n}, xylem::f64, bv);
  std::vector<double> want(std::size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int l = 0; l < n; ++l) sum += av[std::size_t(i * n + l)] * bv[std::size_t(l * n + j)];
      want[std::size_t(i) * n + std::size_t(j)] = sum;
    }
  CountsSince counts;
  const Tensor c = xylem::blas::matmul(backend, a, b);
  expect_near(c.to_doubles(), want, 1e-12, "a b, read at once");
  EXPECT_EQ(counts.now().epilogues, 0u);
  const Tensor c2 = xylem::blas::matmul(backend, a, b);
  xylem::add(backend, c2, c2, a);  // a = 2 a b: the gemm's operand written
  for (double& v : want) v *= 2;
  expect_near(a.to_doubles(), want, 1e-12, "a = 2 a b");
  EXPECT_EQ(counts.now().epilogues, 0u);
}

// A gemm whose product cannot be allocated raises out_of_memory at the
// call, deferred or not, naming c, and leaves its operands as they were;
// nothing is pending after it.
TEST_P(AutoFusion, GemmOutOfMemoryIsTheCallsError) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr std::int64_t huge = std::int64_t{1} << 20;  // c: 2^40 f32, 4 TiB
  std::vector<double> av, bv;
  const Tensor a = random(Layout{huge, 1}, xylem::f32, av);
  const Tensor b = random(Layout{1, huge}, xylem::f32, bv);
  Tensor c(Layout{huge, huge}, xylem::f32);
  CountsSince counts;
  XY_EXPECT_ERROR(ErrorCode::out_of_memory,
                  xylem::blas::gemm(backend, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, a, b, 0.0, c));
  expect_near(a.to_doubles(), av, 0, "a after the error");
  expect_near(b.to_doubles(), bv, 0, "b after the error");
  EXPECT_EQ(counts.now().epilogues, 0u);
}

// A capture records the gemm with its epilogue; a replay on new inputs
// computes it again.
TEST_P(AutoFusion, CaptureRecordsGemmEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int m = 128, n = 256, k = 32;
  std::vector<double> xv, wv, bv;
  Tensor x = random(Layout{m, k}, xylem::f32, xv);
  const Tensor w = random(Layout{n, k}, xylem::f32, wv);
  const Tensor bias = random(Layout{n}, xylem::f32, bv);
  // x, w and bias current on the backend, the program seen once.
  (void)xylem::nn::relu(backend, xylem::nn::linear(backend, x, w, bias)).version();
  Tensor y = xylem::zeros(backend, Layout{m, n}, xylem::f32);
  (void)y.version();
  CountsSince counts;
  xylem::Graph g;
  try {
    g = xylem::capture(backend, [&] { xylem::nn::relu(backend, xylem::nn::linear(backend, x, w, bias), y); });
  } catch (const xylem::Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    GTEST_SKIP() << e.message();
  }
  if (backend.supports(xylem::Op::blas_gemm_epilogue, xylem::f32)) {
    EXPECT_EQ(counts.now().epilogues, 1u);
  }
  const Tensor fresh = random(Layout{m, k}, xylem::f32, xv);
  Tensor x_flat = x.reshape({m * k});  // the same storage
  xylem::blas::copy(backend, fresh.reshape({m * k}), x_flat);
  g.replay()->wait();
  const std::vector<double> got = y.to_doubles();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = bv[std::size_t(j)];
      for (int l = 0; l < k; ++l) sum += xv[std::size_t(i * k + l)] * wv[std::size_t(j * k + l)];
      ASSERT_NEAR(got[std::size_t(i) * n + std::size_t(j)], std::max(0.0, sum), 1e-5 * (1 + std::abs(sum)));
    }
}

// y = act(conv2d(x, w) + bias), as nn::Conv2d computes it (the bias added
// in place): where the framework has nn::conv2d_epilogue, the convolution
// and its two calls run as one, the pre-activation never stored. Tails
// cuDNN fuses (relu, silu, gelu_tanh, sigmoid) and one it does not (clamp:
// the convolution, then our fused kernel). Against a float64 reference;
// CUDA's f32 convolutions may use TF32, as PyTorch's do. On CUDA each tail
// runs both ways: cuDNN's fused graph (XYLEM_CUDA_CUDNN_EPILOGUE=1) and the
// convolution, then the fused tail (its default without timing).
TEST_P(AutoFusion, ConvTailRunsAsItsEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int N = 2, C = 8, H = 10, W = 10, K = 16, R = 3;
  const xylem::nn::Conv2d geometry{.pad_h = 1, .pad_w = 1};
  struct Tail {
    const char* name;
    std::function<Tensor(const Backend&, const Tensor&)> run;
    std::function<double(double)> reference;
  };
  const std::vector<Tail> tails{
      {"relu", [](const Backend& b, const Tensor& t) { return xylem::nn::relu(b, t); },
       [](double v) { return std::max(0.0, v); }},
      {"silu", [](const Backend& b, const Tensor& t) { return xylem::nn::silu(b, t); },
       [](double v) { return v / (1 + std::exp(-v)); }},
      {"gelu_tanh", [](const Backend& b, const Tensor& t) { return xylem::nn::gelu_tanh(b, t); },
       [](double v) { return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }},
      {"sigmoid", [](const Backend& b, const Tensor& t) { return xylem::nn::sigmoid(b, t); },
       [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"clamp", [](const Backend& b, const Tensor& t) { return xylem::clamp(b, t, -0.5, 0.5); },
       [](double v) { return std::clamp(v, -0.5, 0.5); }},
  };
  for (DType dtype : {xylem::f32, xylem::f64, xylem::bf16}) {
    SCOPED_TRACE(name(dtype));
    if (!backend.supports(xylem::Op::nn_conv2d, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    std::vector<double> xv, wv, bv;
    const Tensor x = random(Layout{N, C, H, W}, dtype, xv, -1, 1);
    const Tensor w = random(Layout{K, C, R, R}, dtype, wv, -0.5, 0.5);
    const Tensor bias = random(Layout{K}, dtype, bv);
    std::vector<double> pre(std::size_t(N) * K * H * W);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        for (int i = 0; i < H; ++i)
          for (int j = 0; j < W; ++j) {
            double sum = bv[std::size_t(k)];
            for (int c = 0; c < C; ++c)
              for (int r = 0; r < R; ++r)
                for (int s = 0; s < R; ++s) {
                  const int yi = i + r - 1, xj = j + s - 1;
                  if (yi < 0 || yi >= H || xj < 0 || xj >= W) continue;
                  sum += xv[std::size_t(((n * C + c) * H + yi) * W + xj)] * wv[std::size_t(((k * C + c) * R + r) * R + s)];
                }
            pre[std::size_t(((n * K + k) * H + i) * W + j)] = sum;
          }
    const double tol = dtype == xylem::f64 ? 1e-10 : dtype == xylem::f32 ? 3e-3 : 3e-2;
    for (const Tail& tail : tails)
    for (const char* cudnn_epilogue : {"", "1"}) {
      SCOPED_TRACE(std::string(tail.name) + ", XYLEM_CUDA_CUDNN_EPILOGUE=" + cudnn_epilogue);
      const EnvSetting setting("XYLEM_CUDA_CUDNN_EPILOGUE", cudnn_epilogue);
      const auto run = [&] {
        Tensor y = xylem::nn::conv2d(backend, x, w, geometry);
        xylem::add(backend, y, bias.reshape({1, K, 1, 1}), y);
        return tail.run(backend, y);
      };
      (void)run().version();  // its program seen once
      CountsSince counts;
      const std::vector<double> got = run().to_doubles();
      std::vector<double> want(pre.size());
      for (std::size_t i = 0; i < pre.size(); ++i) want[i] = tail.reference(pre[i]);
      expect_near(got, want, tol, tail.name);
      EXPECT_EQ(counts.now().epilogues, backend.supports(xylem::Op::nn_conv2d_epilogue, dtype) ? 1u : 0u);
    }
  }
}

// The pre-activation still held: both results stored (on CUDA the
// convolution, then the fused tail writing two outputs); a NaN in x reaches
// the activation as the unfused ops would carry it, also with the
// pre-activation gone and XYLEM_CUDA_CUDNN_EPILOGUE=1: relu (cuDNN's turns
// NaN into 0, so it stays out of cuDNN's graph) and sigmoid (in it).
TEST_P(AutoFusion, ConvEpilogueStoresWhatIsHeldAndCarriesNaN) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr int N = 1, C = 4, H = 6, W = 6, K = 8;
  std::vector<double> xv, wv, bv;
  Tensor x = random(Layout{N, C, H, W}, xylem::f32, xv, -1, 1);
  const Tensor w = random(Layout{K, C, 1, 1}, xylem::f32, wv, -0.5, 0.5);
  const Tensor bias = random(Layout{K}, xylem::f32, bv);
  const auto want_at = [&](int k, int p) {
    double sum = bv[std::size_t(k)];
    for (int c = 0; c < C; ++c) sum += xv[std::size_t(c * H * W + p)] * wv[std::size_t(k * C + c)];
    return sum;
  };
  for (int round = 0; round < 2; ++round) {
    Tensor pre = xylem::nn::conv2d(backend, x, w);
    xylem::add(backend, pre, bias.reshape({1, K, 1, 1}), pre);
    const Tensor act = xylem::nn::relu(backend, pre);
    const std::vector<double> got_pre = pre.to_doubles(), got_act = act.to_doubles();
    const EnvSetting fused_graph("XYLEM_CUDA_CUDNN_EPILOGUE", "1");
    const auto alone = [&](bool sigmoid) {
      Tensor t = xylem::nn::conv2d(backend, x, w);
      xylem::add(backend, t, bias.reshape({1, K, 1, 1}), t);
      return sigmoid ? xylem::nn::sigmoid(backend, t) : xylem::nn::relu(backend, t);
    };
    (void)alone(false).version(), (void)alone(true).version();  // their programs seen once
    const std::vector<double> got_alone = alone(false).to_doubles(), got_sigmoid = alone(true).to_doubles();
    for (int k = 0; k < K; ++k)
      for (int p = 0; p < H * W; ++p) {
        const double v = want_at(k, p);
        const std::size_t at = std::size_t(k * H * W + p);
        if (std::isnan(v)) {
          ASSERT_TRUE(std::isnan(got_pre[at])) << at;
          ASSERT_TRUE(std::isnan(got_act[at])) << "relu keeps NaN, at " << at;
          ASSERT_TRUE(std::isnan(got_alone[at])) << "relu in the epilogue keeps NaN, at " << at;
          ASSERT_TRUE(std::isnan(got_sigmoid[at])) << "sigmoid in the epilogue keeps NaN, at " << at;
          continue;
        }
        ASSERT_NEAR(got_pre[at], v, 3e-3 * (1 + std::abs(v))) << at;
        ASSERT_NEAR(got_act[at], std::max(0.0, v), 3e-3 * (1 + std::abs(v))) << at;
        ASSERT_NEAR(got_alone[at], std::max(0.0, v), 3e-3 * (1 + std::abs(v))) << at;
        ASSERT_NEAR(got_sigmoid[at], 1 / (1 + std::exp(-v)), 3e-3) << at;
      }
    // Second round: a NaN at one pixel of channel 0, through the 1x1
    // convolution to every output channel at that pixel.
    xv[7] = std::nan("");
    std::vector<float> host(xv.begin(), xv.end());
    x = Tensor::from(host).reshape({N, C, H, W});
  }
}

// The float64 softmax (or log_softmax) of `x` [outer, r, inner] along axis 1.
std::vector<double> softmax_reference(const std::vector<double>& x, std::int64_t outer, std::int64_t r,
                                      std::int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t j) { return std::size_t((o * r + j) * inner + i); };
      double top = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < r; ++j) top = std::max(top, x[at(j)]);
      for (std::int64_t j = 0; j < r; ++j) sum += std::exp(x[at(j)] - top);
      for (std::int64_t j = 0; j < r; ++j)
        y[at(j)] = log ? x[at(j)] - top - std::log(sum) : std::exp(x[at(j)] - top) / sum;
    }
  return y;
}

// z = tanh(softmax(x, axis) * m), m a row broadcast over x [16, 64, 1100]
// (4.5 MiB in f32: bands of rows on the host), along the last, a middle and
// the first axis, softmax and log_softmax: where the framework has
// nn::softmax_epilogue, the softmax and its two calls run as one, neither
// the softmax nor the product stored. Elsewhere the softmax runs at once.
TEST_P(AutoFusion, SoftmaxTailRunsAsItsEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  const std::array<std::int64_t, 3> dims{16, 64, 1100};
  for (DType dtype : {xylem::f32, xylem::f64, xylem::bf16}) {
    if (!backend.supports(xylem::Op::nn_softmax, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    for (int axis : {2, 1, 0}) {
      for (bool log : {false, true}) {
        SCOPED_TRACE(std::string(name(dtype)) + ", axis " + std::to_string(axis) + (log ? ", log_softmax" : ""));
        std::vector<double> xv, mv;
        const Tensor x = random(Layout{dims[0], dims[1], dims[2]}, dtype, xv, -4, 4);
        const Tensor m = random(Layout{dims[2]}, dtype, mv, 0.5, 1.5);
        const auto run = [&] {
          const Tensor s = log ? xylem::nn::log_softmax(backend, x, axis) : xylem::nn::softmax(backend, x, axis);
          return xylem::nn::tanh(backend, xylem::mul(backend, s, m));
        };
        (void)run().version();  // its program seen once
        CountsSince counts;
        const std::vector<double> got = run().to_doubles();
        std::int64_t outer = 1, inner = 1;
        for (int a = 0; a < axis; ++a) outer *= dims[std::size_t(a)];
        for (int a = axis + 1; a < 3; ++a) inner *= dims[std::size_t(a)];
        std::vector<double> want = softmax_reference(xv, outer, dims[std::size_t(axis)], inner, log);
        for (std::size_t k = 0; k < want.size(); ++k) want[k] = std::tanh(want[k] * mv[k % std::size_t(dims[2])]);
        const double tol = dtype == xylem::f64 ? 1e-12 : dtype == xylem::f32 ? 2e-6 : 3e-2;
        expect_near(got, want, tol, "tanh(softmax(x) * m)");
        const FusionCounts c = counts.now();
        if (!backend.supports(xylem::Op::nn_softmax_epilogue, dtype)) {
          EXPECT_EQ(c.epilogues, 0u);
          continue;
        }
        expect_counts(c, 1, 2, 1, 2);  // tanh's result stored; the softmax and the product dropped
        EXPECT_EQ(c.epilogues, 1u);
      }
    }
  }
}

// The epilogue gives the bits of the softmax followed by its tail: the
// first run of a chain's program is call by call, the later ones fused,
// and a captured step is compared with an eager one. softmax(x) * m along
// rows held by a warp, by a block and by two packs a thread (and rows the
// registers do not fit in bf16: 2000 is not a multiple of its 8-element
// packs on CUDA), unfused with set_fusion(false), then fused.
TEST_P(AutoFusion, SoftmaxEpilogueGivesTheUnfusedBits) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  const std::array<std::array<std::int64_t, 2>, 4> shapes{{{300, 40}, {64, 1024}, {37, 2000}, {8, 4100}}};
  for (DType dtype : {xylem::f32, xylem::f64, xylem::bf16}) {
    if (!backend.supports(xylem::Op::nn_softmax, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    for (const auto& [rows, cols] : shapes) {
      SCOPED_TRACE(std::string(name(dtype)) + " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
      std::vector<double> xv, mv;
      const Tensor x = random(Layout{rows, cols}, dtype, xv, -4, 4);
      const Tensor m = random(Layout{cols}, dtype, mv, 0.5, 1.5);
      const auto run = [&] { return xylem::mul(backend, xylem::nn::softmax(backend, x, -1), m).to_doubles(); };
      xylem::set_fusion(false);
      const std::vector<double> unfused = run();
      xylem::set_fusion(true);
      (void)run();  // its program seen once
      CountsSince counts;
      const std::vector<double> fused = run();
      ASSERT_EQ(fused.size(), unfused.size());
      std::size_t differ = 0;
      for (std::size_t k = 0; k < fused.size(); ++k) differ += fused[k] != unfused[k] ? 1 : 0;
      EXPECT_EQ(differ, 0u) << "elements whose bits differ from the unfused chain's";
      if (backend.supports(xylem::Op::nn_softmax_epilogue, dtype)) {
        EXPECT_EQ(counts.now().epilogues, 1u);
      }
    }
  }
}

// A softmax or reduction head at the edges: empty along its axis or
// across it (the tail then runs on nothing, or on the reduction's zeros),
// and a result that cannot be allocated (a broadcast x of [2^28, 4096]:
// 4 TiB of f32), which raises out_of_memory at the call and leaves x as it
// was, with nothing pending after it.
TEST_P(AutoFusion, SoftmaxAndReduceHeadsAtTheEdges) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  const Tensor none_rows = xylem::zeros(backend, Layout{0, 64}, xylem::f32);
  const Tensor none_cols = xylem::zeros(backend, Layout{3000, 0}, xylem::f32);
  const Tensor m = xylem::full(backend, Layout{64}, xylem::f32, 2.0);
  const Tensor a = xylem::nn::tanh(backend, xylem::mul(backend, xylem::nn::softmax(backend, none_rows, -1), m));
  EXPECT_EQ(a.layout().dims_string(), Layout({0, 64}).dims_string());
  EXPECT_TRUE(a.to_doubles().empty());
  const Tensor b = xylem::nn::relu(backend, xylem::nn::log_softmax(backend, none_cols, 1));
  EXPECT_EQ(b.layout().dims_string(), Layout({3000, 0}).dims_string());
  EXPECT_TRUE(b.to_doubles().empty());
  const xylem::Reduction along_rows{.axes = {1}};
  const Tensor half = xylem::full(backend, Layout{3000}, xylem::f32, 0.5);
  const Tensor c = xylem::add(backend, xylem::sum(backend, none_cols, along_rows), half);
  const std::vector<double> got = c.to_doubles();
  ASSERT_EQ(got.size(), 3000u);
  for (double v : got) ASSERT_EQ(v, 0.5);

  constexpr std::int64_t huge = std::int64_t{1} << 28;
  std::vector<double> xv;
  const Tensor row = random(Layout{4096}, xylem::f32, xv);
  const std::int64_t dims[] = {huge, 4096}, strides[] = {0, 1};
  const Tensor x = row.as_strided(Layout::strided(dims, strides, 0));
  XY_EXPECT_ERROR(ErrorCode::out_of_memory,
                  (void)xylem::nn::tanh(backend, xylem::nn::softmax(backend, x, -1)).version());
  const std::int64_t long_dims[] = {std::int64_t{1} << 40, 4096};  // sums: 2^40 f32, 4 TiB
  const Tensor rows = row.as_strided(Layout::strided(long_dims, strides, 0));
  XY_EXPECT_ERROR(ErrorCode::out_of_memory,
                  (void)xylem::sqrt(backend, xylem::sum(backend, rows, along_rows)).version());
  expect_near(row.to_doubles(), xv, 0, "x after the errors");
}

// The softmax still held: the epilogue stores it and its tail. A softmax
// into its own input, or into a view, runs at once and stays right.
TEST_P(AutoFusion, SoftmaxEpilogueStoresWhatIsHeldAndInPlaceRunsAlone) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr std::int64_t rows = 300, cols = 1000;
  std::vector<double> xv;
  Tensor x = random(Layout{rows, cols}, xylem::f32, xv, -3, 3);
  const std::vector<double> want = softmax_reference(xv, rows, cols, 1, false);
  (void)xylem::mul(backend, xylem::nn::softmax(backend, x, 1), x).version();
  CountsSince counts;
  const Tensor s = xylem::nn::softmax(backend, x, 1);
  const Tensor p = xylem::mul(backend, s, x);
  const std::vector<double> got_s = s.to_doubles(), got_p = p.to_doubles();
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_NEAR(got_s[k], want[k], 1e-6 * (1 + want[k])) << k;
    ASSERT_NEAR(got_p[k], want[k] * xv[k], 1e-6 * (1 + std::abs(want[k] * xv[k]))) << k;
  }
  if (backend.supports(xylem::Op::nn_softmax_epilogue, xylem::f32)) {
    expect_counts(counts.now(), 1, 1, 2, 0);
    EXPECT_EQ(counts.now().epilogues, 1u);
  }
  const CountsSince in_place;
  xylem::nn::softmax(backend, x, 1, x);
  const Tensor doubled = xylem::add(backend, x, x);
  expect_near(doubled.to_doubles(), [&] {
    std::vector<double> w = want;
    for (double& v : w) v *= 2;
    return w;
  }(), 1e-6, "2 softmax(x), x overwritten");
  EXPECT_EQ(in_place.now().epilogues, 0u);
  Tensor wide(Layout{rows, 2 * cols}, xylem::f32);
  Tensor left = wide.slice(1, 0, cols);
  Tensor again(Layout{rows, cols}, xylem::f32);
  xylem::cast(Backend::native(), Tensor::from(xv).reshape({rows, cols}), again);
  xylem::nn::softmax(backend, again, 1, left);
  expect_near(left.to_doubles(), want, 1e-6, "softmax into a view");
  EXPECT_EQ(in_place.now().epilogues, 0u);
}

// A capture records the softmax with its epilogue; a replay on new inputs
// computes it again.
TEST_P(AutoFusion, CaptureRecordsSoftmaxEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr std::int64_t rows = 256, cols = 512;
  std::vector<double> xv, bv;
  Tensor x = random(Layout{rows, cols}, xylem::f32, xv);
  const Tensor bias = random(Layout{cols}, xylem::f32, bv);
  (void)xylem::add(backend, xylem::nn::softmax(backend, x, -1), bias).version();
  Tensor y = xylem::zeros(backend, Layout{rows, cols}, xylem::f32);
  (void)y.version();
  CountsSince counts;
  xylem::Graph g;
  try {
    g = xylem::capture(backend, [&] { xylem::add(backend, xylem::nn::softmax(backend, x, -1), bias, y); });
  } catch (const xylem::Error& e) {
    if (e.code() != ErrorCode::unsupported) throw;
    GTEST_SKIP() << e.message();
  }
  if (backend.supports(xylem::Op::nn_softmax_epilogue, xylem::f32)) {
    EXPECT_EQ(counts.now().epilogues, 1u);
  }
  const Tensor fresh = random(Layout{rows, cols}, xylem::f32, xv);
  Tensor x_flat = x.reshape({rows * cols});  // the same storage
  xylem::blas::copy(backend, fresh.reshape({rows * cols}), x_flat);
  g.replay()->wait();
  std::vector<double> want = softmax_reference(xv, rows, cols, 1, false);
  for (std::size_t k = 0; k < want.size(); ++k) want[k] += bv[k % std::size_t(cols)];
  expect_near(y.to_doubles(), want, 1e-6, "softmax(x) + bias, replayed");
}

// z = tanh(reduce(x) * s + 0.25), s a scale per result: sum, mean, max and
// min along the rows of [2048, 300] (a result of 2048 elements, each a
// row: inner == 1) and along the columns of [300, 2048] (inner 2048), in
// f32, f64 and bf16. Where the framework has math::reduce_epilogue, the
// reduction and its three calls run as one, its result never stored.
TEST_P(AutoFusion, ReduceTailRunsAsItsEpilogue) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr std::int64_t n = 2048, r = 300;
  for (DType dtype : {xylem::f32, xylem::f64, xylem::bf16}) {
    if (!backend.supports(xylem::Op::math_reduce, dtype) || !backend.supports(xylem::Op::math_binary, dtype)) continue;
    for (int axis : {1, 0}) {
      for (int code : {XY_RED_SUM, XY_RED_MEAN, XY_RED_MAX, XY_RED_MIN}) {
        SCOPED_TRACE(std::string(name(dtype)) + ", axis " + std::to_string(axis) + ", code " + std::to_string(code));
        std::vector<double> xv, sv;
        const Layout shape = axis == 1 ? Layout{n, r} : Layout{r, n};
        const Tensor x = random(shape, dtype, xv);
        const Tensor scale = random(Layout{n}, dtype, sv, 0.1, 0.3);
        const Tensor quarter = xylem::full(backend, Layout{n}, dtype, 0.25);
        const auto reduce = [&] {
          const xylem::Reduction along{.axes = {axis}};
          switch (code) {
            case XY_RED_SUM: return xylem::sum(backend, x, along);
            case XY_RED_MEAN: return xylem::mean(backend, x, along);
            case XY_RED_MAX: return xylem::max(backend, x, along);
            default: return xylem::min(backend, x, along);
          }
        };
        const auto run = [&] {
          return xylem::nn::tanh(backend, xylem::add(backend, xylem::mul(backend, reduce(), scale), quarter));
        };
        (void)run().version();  // its program seen once
        CountsSince counts;
        const std::vector<double> got = run().to_doubles();
        std::vector<double> want(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k) {
          const auto at = [&](std::int64_t j) { return std::size_t(axis == 1 ? k * r + j : j * n + k); };
          double v = code == XY_RED_SUM || code == XY_RED_MEAN ? 0 : xv[at(0)];
          for (std::int64_t j = 0; j < r; ++j) {
            const double e = xv[at(j)];
            v = code == XY_RED_MAX ? std::max(v, e) : code == XY_RED_MIN ? std::min(v, e) : v + e;
          }
          if (code == XY_RED_MEAN) v /= double(r);
          want[std::size_t(k)] = std::tanh(v * sv[std::size_t(k)] + 0.25);
        }
        const double tol = dtype == xylem::f64 ? 1e-12 : dtype == xylem::f32 ? 2e-5 : 3e-2;
        expect_near(got, want, tol, "tanh(reduce(x) * s + 0.25)");
        const FusionCounts c = counts.now();
        if (!backend.supports(xylem::Op::math_reduce_epilogue, dtype)) {
          EXPECT_EQ(c.epilogues, 0u);
          continue;
        }
        expect_counts(c, 1, 3, 1, 3);  // tanh's result stored; the reduction and two temporaries dropped
        EXPECT_EQ(c.epilogues, 1u);
      }
    }
  }
}

// NaN in a row: max and min carry it through the epilogue, as the unfused
// reduction does; a variance (no epilogue) and a small result run at once.
TEST_P(AutoFusion, ReduceEpilogueCarriesNaNAndLeavesOthersAlone) {
  SCOPED_TRACE(xylem_test::seed_message(seed));
  constexpr std::int64_t n = 1500, r = 40;
  std::vector<double> xv;
  const Tensor clean = random(Layout{n, r}, xylem::f32, xv);
  std::vector<float> with_nan(xv.begin(), xv.end());
  with_nan[std::size_t(7 * r + 3)] = NAN;
  const Tensor x = Tensor::from(with_nan).reshape({n, r});
  const Tensor one = xylem::full(backend, Layout{n}, xylem::f32, 1.0);
  for (int code : {XY_RED_MAX, XY_RED_MIN}) {
    const xylem::Reduction rows{.axes = {1}};
    const Tensor m = code == XY_RED_MAX ? xylem::max(backend, x, rows) : xylem::min(backend, x, rows);
    const std::vector<double> got = xylem::add(backend, m, one).to_doubles();
    for (std::int64_t k = 0; k < n; ++k) {
      if (k == 7) {
        ASSERT_TRUE(std::isnan(got[std::size_t(k)])) << "code " << code;
        continue;
      }
      double v = xv[std::size_t(k * r)];
      for (std::int64_t j = 1; j < r; ++j)
        v = code == XY_RED_MAX ? std::max(v, xv[std::size_t(k * r + j)]) : std::min(v, xv[std::size_t(k * r + j)]);
      ASSERT_NEAR(got[std::size_t(k)], v + 1, 1e-6) << "code " << code << " at " << k;
    }
  }
  const CountsSince counts;
  const Tensor v = xylem::var(backend, clean, {.axes = {1}});
  (void)xylem::add(backend, v, one).to_doubles();
  const Tensor total = xylem::sum(backend, clean);
  (void)xylem::add(backend, total, total).to_doubles();
  EXPECT_EQ(counts.now().epilogues, 0u);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, AutoFusion, ::testing::Values("native", "opencl", "cuda"),
                         [](const auto& p) { return p.param; });

}  // namespace

// Fault injection (xylem/testing.hpp): the Nth device allocation, kernel
// build, transfer or library call of the framework under test fails. A
// small program (uploads, an elementwise op, gemm, a row sum, conv2d, host
// reads) then either gives the float64 reference's answer or raises a typed
// error; after the error its inputs hold their values, its outputs their
// old values (or, where the failure happened inside queued work, raise that
// error when read), and the same program without faults gives the right
// answer again. An allocation that fails once is absorbed by the
// allocator's flush-and-retry; one that fails twice raises out_of_memory
// naming the byte count.
#include <cstdlib>
#include <optional>

#include "conformance/conformance.hpp"
#include "xylem/testing.hpp"

namespace conformance {
namespace {

using xylem::Error;
using xylem::ErrorCode;
using xylem::testing::FaultInjection;
using xylem::testing::FaultSite;

// Kernel builds first: a framework builds each program once per process,
// so only the first runs of a process make build calls (the builds a
// failure interrupted are made again by the next run).
constexpr FaultSite kSites[] = {FaultSite::kernel_build, FaultSite::allocation, FaultSite::transfer,
                                FaultSite::library_call};
// Each site fails calls 1, 2, ... until a run makes fewer calls than that.
constexpr std::uint64_t kMaxNth = 64;
constexpr double kTol = 1e-4;  // f32, relative to the sum of the terms' magnitudes

// The codes a failure at `site` may raise: the framework's real failure of
// that kind (fault.hpp).
bool expected_code(FaultSite site, ErrorCode code) {
  switch (site) {
    case FaultSite::allocation:
      return code == ErrorCode::out_of_memory;
    case FaultSite::kernel_build:
      return code == ErrorCode::compile_failed;
    case FaultSite::transfer:
    case FaultSite::library_call:
      return code == ErrorCode::device_lost || code == ErrorCode::out_of_memory || code == ErrorCode::internal;
  }
  return false;
}

// The program's inputs on the host, and its float64 answers.
struct HostData {
  static constexpr std::int64_t m = 4, k = 6, n = 5;
  std::vector<float> a, a2, b, x, w;
  std::vector<double> r, r_scale, y, y_scale;  // answers, and the magnitudes they are sums of
};

Dims dims_a() { return {HostData::m, HostData::k}; }
Dims dims_b() { return {HostData::k, HostData::n}; }
const Dims kX{2, 3, 5, 5}, kW{4, 3, 3, 3}, kY{2, 4, 3, 3};
const Dims kR{HostData::m};

HostData make_data(std::mt19937_64& rng) {
  HostData d;
  d.a = xylem_test::random_vector<float>(rng, d.m * d.k);
  d.a2 = xylem_test::random_vector<float>(rng, d.m * d.k);
  d.b = xylem_test::random_vector<float>(rng, d.k * d.n);
  d.x = xylem_test::random_vector<float>(rng, 2 * 3 * 5 * 5);
  d.w = xylem_test::random_vector<float>(rng, 4 * 3 * 3 * 3);
  // r[i] = sum_j ((a + a2) @ b)[i, j]
  d.r.assign(d.m, 0);
  d.r_scale.assign(d.m, 0);
  for (std::int64_t i = 0; i < d.m; ++i) {
    for (std::int64_t j = 0; j < d.n; ++j) {
      for (std::int64_t p = 0; p < d.k; ++p) {
        const double s = double(float(d.a[i * d.k + p] + d.a2[i * d.k + p]));
        d.r[i] += s * d.b[p * d.n + j];
        d.r_scale[i] += std::abs(s * d.b[p * d.n + j]);
      }
    }
  }
  // y = conv2d(x, w), no padding, stride 1.
  d.y.assign(2 * 4 * 3 * 3, 0);
  d.y_scale.assign(d.y.size(), 0);
  for (int img = 0; img < 2; ++img)
    for (int f = 0; f < 4; ++f)
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) {
          const std::size_t out = std::size_t(((img * 4 + f) * 3 + p) * 3 + q);
          for (int c = 0; c < 3; ++c)
            for (int u = 0; u < 3; ++u)
              for (int v = 0; v < 3; ++v) {
                const double term = double(d.x[std::size_t(((img * 3 + c) * 5 + p + u) * 5 + q + v)]) *
                                    d.w[std::size_t(((f * 3 + c) * 3 + u) * 3 + v)];
                d.y[out] += term;
                d.y_scale[out] += std::abs(term);
              }
        }
  return d;
}

struct Inputs {
  Tensor a, a2, b, x, w;
};
Inputs make_inputs(const HostData& d) {
  return {Tensor::from(d.a).reshape(dims_a()), Tensor::from(d.a2).reshape(dims_a()),
          Tensor::from(d.b).reshape(dims_b()), Tensor::from(d.x).reshape(kX), Tensor::from(d.w).reshape(kW)};
}

// The outputs, written before the run (with values no answer has), so a
// failed run can be seen to leave them alone.
struct Outputs {
  Tensor r, y;
};
constexpr double kOld = 7.25;
Outputs make_outputs(const Backend& backend) {
  Outputs o{Tensor(Layout(kR), DType::f32), Tensor(Layout(kY), DType::f32)};
  xylem::fill(backend, o.r, kOld);
  xylem::fill(backend, o.y, kOld);
  return o;
}

// Enqueues the program; the inputs upload on first use.
void run_program(const Backend& backend, const Inputs& in, Outputs& out) {
  const Tensor s = xylem::add(backend, in.a, in.a2);
  Tensor c(Layout({HostData::m, HostData::n}), DType::f32);
  xylem::blas::gemm(backend, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, s, in.b, 0.0, c);
  xylem::sum(backend, c, xylem::Reduction{{1}}, out.r);
  xylem::nn::conv2d(backend, in.x, in.w, out.y);
}

bool near(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& scale) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= kTol * (scale[i] + 1e-30))) return false;
  return true;
}

void expect_answers(const HostData& d, const Outputs& out, const std::string& what) {
  EXPECT_TRUE(near(out.r.to_doubles(), d.r, d.r_scale)) << what << ": row sums differ from the reference";
  EXPECT_TRUE(near(out.y.to_doubles(), d.y, d.y_scale)) << what << ": conv2d differs from the reference";
}

void expect_holds(const Tensor& t, const std::vector<float>& values, const std::string& what) {
  const auto got = t.to_doubles();
  ASSERT_EQ(got.size(), values.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != double(values[i])) {
      ADD_FAILURE() << what << " changed at " << i << ": " << got[i] << " != " << values[i];
      return;
    }
}

// After a failed run: an output holds its old value (version unchanged),
// or raises an error of the site when read (its writer failed in queued
// work), or holds the answer (its op ran before the failure).
void expect_output_after_failure(FaultSite site, const Tensor& t, std::uint64_t old_version,
                                 const std::vector<double>& answer, const std::vector<double>& scale,
                                 const std::string& what) {
  std::vector<double> got;
  try {
    got = t.to_doubles();
  } catch (const Error& e) {
    EXPECT_TRUE(expected_code(site, e.code())) << what << ": read raised " << e.what();
    return;
  }
  if (t.version() == old_version) {
    for (double v : got) EXPECT_EQ(v, kOld) << what << " was changed, yet its version was not";
  } else {
    EXPECT_TRUE(near(got, answer, scale)) << what << " was written with a wrong answer";
  }
}

class Faults : public Conformance {
 protected:
  // Whether the backend runs the program (a test framework may not).
  [[nodiscard]] bool runs_program() const {
    for (OpId op : {OpId::math_binary, OpId::blas_gemm, OpId::math_reduce, OpId::nn_conv2d})
      if (!backend.supports(op, DType::f32)) return false;
    return true;
  }

  // One run of the program with the nth call at `site` failing. Returns
  // false once the program makes fewer than nth such calls.
  bool run_with_fault(FaultSite site, std::uint64_t nth, const HostData& d, int& raised) {
    const std::string what =
        target.spec() + " " + std::string(xylem::testing::name(site)) + " #" + std::to_string(nth);
    SCOPED_TRACE(what);
    Inputs in = make_inputs(d);
    Outputs out = make_outputs(backend);
    backend.synchronize();
    const std::uint64_t r_version = out.r.version(), y_version = out.y.version();
    std::optional<Error> error;
    std::uint64_t calls = 0;
    {
      // An allocation fails for good when its retry fails too.
      FaultInjection fault(site, nth, target.framework, site == FaultSite::allocation ? 2 : 1);
      try {
        run_program(backend, in, out);
        const auto r = out.r.to_doubles();  // the host reads
        const auto y = out.y.to_doubles();
        EXPECT_TRUE(near(r, d.r, d.r_scale)) << what << ": a run that raised nothing has wrong row sums";
        EXPECT_TRUE(near(y, d.y, d.y_scale)) << what << ": a run that raised nothing has a wrong conv2d";
      } catch (const Error& e) {
        error = e;
      }
      calls = fault.calls();
    }
    try {
      backend.synchronize();  // work still queued after the error
    } catch (const Error& e) {
      EXPECT_TRUE(expected_code(site, e.code())) << what << ": synchronize raised " << e.what();
    }
    if (error) {
      ++raised;
      EXPECT_TRUE(expected_code(site, error->code())) << what << ": raised " << error->what();
      expect_holds(in.a, d.a, what + ": input a");
      expect_holds(in.a2, d.a2, what + ": input a2");
      expect_holds(in.b, d.b, what + ": input b");
      expect_holds(in.x, d.x, what + ": input x");
      expect_holds(in.w, d.w, what + ": input w");
      expect_output_after_failure(site, out.r, r_version, d.r, d.r_scale, what + ": output r");
      expect_output_after_failure(site, out.y, y_version, d.y, d.y_scale, what + ": output y");
      // The same inputs, no fault: the right answer.
      Outputs again = make_outputs(backend);
      run_program(backend, in, again);
      expect_answers(d, again, what + ", run again without the fault");
    }
    return calls >= nth;
  }
};

TEST_P(Faults, every_call_of_every_site) {
  if (!runs_program()) GTEST_SKIP() << target.spec() << " does not run gemm and conv2d";
  const HostData d = make_data(rng);
  for (FaultSite site : kSites) {
    int raised = 0;
    std::uint64_t nth = 1;
    while (nth <= kMaxNth && run_with_fault(site, nth, d, raised)) ++nth;
    std::cout << "[ FAULTS   ] " << target.spec() << " " << xylem::testing::name(site) << ": " << (nth - 1)
              << " calls failed one at a time, " << raised << " raised" << std::endl;
  }
}

// The allocator's cache is flushed and the allocation retried once: one
// failure is absorbed, two raise out_of_memory naming the bytes asked for.
TEST_P(Faults, out_of_memory_flushes_and_retries_once) {
  const std::int64_t n = 1000;
  const auto host = xylem_test::random_vector<float>(rng, n);
  const std::string bytes = std::to_string(n * 4);
  {
    const Tensor x = Tensor::from(host);
    FaultInjection fault(FaultSite::allocation, 1, target.framework, 1);
    const Tensor y = xylem::neg(backend, x);
    if (fault.calls() == 0) GTEST_SKIP() << target.spec() << " has no allocation fault point";
    const auto got = y.to_doubles();
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], -double(host[std::size_t(i)]));
    EXPECT_EQ(fault.failures(), 1u);
    EXPECT_EQ(fault.retries(), 1u) << "the failed allocation was not retried after a flush";
  }
  {
    const Tensor x = Tensor::from(host);
    Tensor y(Layout({n}), DType::f32);
    FaultInjection fault(FaultSite::allocation, 1, target.framework, 2);
    const std::string message = XY_EXPECT_ERROR(ErrorCode::out_of_memory, xylem::neg(backend, x, y));
    EXPECT_TRUE(xylem_test::contains(message, bytes)) << message;
    EXPECT_EQ(fault.failures(), 2u);
    EXPECT_EQ(fault.retries(), 1u);
    EXPECT_EQ(y.version(), 0u);
    expect_holds(x, host, "the input");
  }
}

// A library call that fails inside queued work (native kernels run on a
// task queue) surfaces at the latest at the next host read, also through
// ops that read the failed op's output; nothing terminates.
TEST_P(Faults, failure_inside_queued_work_reaches_the_reader) {
  if (!runs_program()) GTEST_SKIP() << target.spec() << " does not run gemm";
  const HostData d = make_data(rng);
  const Inputs in = make_inputs(d);
  Tensor c(Layout({HostData::m, HostData::n}), DType::f32);
  Tensor r(Layout(kR), DType::f32);
  std::optional<Error> error;
  {
    FaultInjection fault(FaultSite::library_call, 1, target.framework);
    try {
      xylem::blas::gemm(backend, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, in.a, in.b, 0.0, c);
      xylem::sum(backend, c, xylem::Reduction{{1}}, r);
      (void)r.to_doubles();
    } catch (const Error& e) {
      error = e;
    }
    if (fault.failures() == 0) GTEST_SKIP() << target.spec() << ": gemm makes no library call here";
  }
  ASSERT_TRUE(error.has_value()) << "a failed library call went unreported";
  EXPECT_TRUE(expected_code(FaultSite::library_call, error->code())) << error->what();
  expect_holds(in.a, d.a, "input a");
  expect_holds(in.b, d.b, "input b");
  // The inputs still work, and a fresh output takes the right answer.
  Tensor c2(Layout({HostData::m, HostData::n}), DType::f32);
  xylem::blas::gemm(backend, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, in.a, in.b, 0.0, c2);
  const auto got = c2.to_doubles();
  for (std::int64_t i = 0; i < HostData::m; ++i)
    for (std::int64_t j = 0; j < HostData::n; ++j) {
      double want = 0, scale = 0;
      for (std::int64_t p = 0; p < HostData::k; ++p) {
        want += double(d.a[i * HostData::k + p]) * d.b[p * HostData::n + j];
        scale += std::abs(double(d.a[i * HostData::k + p]) * d.b[p * HostData::n + j]);
      }
      EXPECT_NEAR(got[std::size_t(i * HostData::n + j)], want, kTol * scale);
    }
}

// The switch read from the environment is the same switch: a malformed
// XYLEM_FAULT is refused loudly (at the first fault point), so it is not
// tested here; the API refuses nth = 0.
TEST_P(Faults, nth_counts_from_one) {
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, FaultInjection(FaultSite::allocation, 0));
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Faults, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

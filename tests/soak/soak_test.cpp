// Soak test: many threads run random op sequences on native and OpenCL (when
// present), each op on a backend picked at random, so tensors cross between
// backends at every step; sequences start from fresh host data, from views of
// one tensor every thread shares, or from another thread's last result
// (handed over through a mailbox while its ops may still be queued). Every
// output is checked against a float64 reference computed on the host from
// its inputs as read back afterwards.
//
//   XYLEM_SOAK_SECONDS  how long (default 20; CI's Release and TSan runs)
//   XYLEM_SOAK_THREADS  how many threads (default 8)
//   XYLEM_TEST_SEED     the first thread's seed (thread i takes seed + i)
// A longer run: XYLEM_SOAK_SECONDS=3600 build/bin/xylem_soak_test
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

#include "common/support.hpp"
#include "fuzz/reference.hpp"

namespace {

using xylem::Backend;
using xylem::DType;
using xylem::Tensor;
using xylem_ref::Dims;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// One op of a sequence: its output, its inputs, and the reference that
// computes the output from the inputs' values.
struct Step {
  std::string what;
  Tensor out;
  std::vector<Tensor> ins;
  std::function<xylem_ref::Expect(const std::vector<xylem_ref::Array>&)> ref;
};

struct Totals {
  std::atomic<std::uint64_t> sequences{0}, ops{0}, opencl_ops{0}, handovers{0}, failures{0};
};

// Tensors shared by every thread: one read-only tensor that all of them view,
// and a mailbox of finished results.
struct Shared {
  Tensor common;
  std::mutex mutex;
  std::vector<Tensor> mailbox = std::vector<Tensor>(16);
};

Dims dims_of(const Tensor& t) { return Dims(t.layout().dims().begin(), t.layout().dims().end()); }

class Worker {
 public:
  Worker(std::vector<Backend> backends, Shared& shared, Totals& totals, std::uint64_t seed)
      : backends_(std::move(backends)), shared_(shared), totals_(totals), rng_(seed) {}

  void sequence() {
    std::vector<Step> steps;
    Tensor x = start();
    const int n = 3 + int(pick(6));
    for (int i = 0; i < n; ++i) {
      const Backend& b = backends_[pick(backends_.size())];
      if (b.framework() != "native") ++totals_.opencl_ops;
      ++totals_.ops;
      steps.push_back(next(b, x));
      x = steps.back().out;
    }
    if (pick(2) == 0) {
      std::lock_guard lock(shared_.mutex);
      shared_.mailbox[pick(shared_.mailbox.size())] = x;
    }
    verify(steps);
    ++totals_.sequences;
  }

 private:
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

  Tensor fresh(const Dims& dims, DType t) {
    std::vector<double> v(std::size_t(xylem_ref::numel(dims)));
    for (auto& e : v) e = std::uniform_real_distribution<double>(-2, 2)(rng_);
    Tensor host = Tensor::from(v, xylem::Layout(std::span<const std::int64_t>(dims)));
    return t == DType::f64 ? host : xylem::cast(backends_[pick(backends_.size())], host, t);
  }

  // Fresh data, a view of the shared tensor, or another thread's result.
  Tensor start() {
    switch (pick(3)) {
      case 0: {
        const Tensor& c = shared_.common;  // [64, 48] f32
        const std::int64_t r0 = std::int64_t(pick(32)), c0 = std::int64_t(pick(24));
        Tensor v = c.slice(0, r0, r0 + 1 + std::int64_t(pick(32)), 1 + std::int64_t(pick(2)))
                       .slice(1, c0, c0 + 1 + std::int64_t(pick(24)));
        return pick(2) ? v.transpose(0, 1) : v;
      }
      case 1: {
        std::lock_guard lock(shared_.mutex);
        const Tensor& t = shared_.mailbox[pick(shared_.mailbox.size())];
        if (t.defined()) {
          ++totals_.handovers;
          return t;
        }
        break;
      }
      default:
        break;
    }
    Dims dims;
    for (std::size_t r = 1 + pick(3); r > 0; --r) dims.push_back(1 + std::int64_t(pick(24)));
    return fresh(dims, pick(2) ? DType::f32 : DType::f64);
  }

  // One op on backend b reading x (and maybe a fresh operand).
  Step next(const Backend& b, const Tensor& x) {
    const Dims d = dims_of(x);
    const int rank = int(d.size());
    const auto elementwise = [](double (*f)(double)) {
      return [f](const std::vector<xylem_ref::Array>& in) {
        xylem_ref::Expect e;
        for (double v : in[0].v) e.push(f(v), 1e-3 * std::abs(v));
        return e;
      };
    };
    switch (pick(8)) {
      case 0: {
        Tensor y = xylem::exp(b, xylem::clamp(b, x, -4, 4));
        return {"exp(clamp)", y, {x}, elementwise([](double v) { return std::exp(std::clamp(v, -4.0, 4.0)); })};
      }
      case 1: {
        Tensor y(xylem::Layout(x.layout().dims()), x.dtype());
        xylem::nn::sigmoid(b, x, y);
        return {"sigmoid", y, {x}, elementwise([](double v) { return 1 / (1 + std::exp(-v)); })};
      }
      case 2: {  // broadcast against a fresh operand with some axes 1
        Dims od = d;
        for (auto& e : od)
          if (pick(3) == 0) e = 1;
        Tensor other = fresh(od, x.dtype());
        const bool mul = pick(2);
        Tensor y = mul ? xylem::mul(b, x, other) : xylem::sub(b, x, other);
        return {mul ? "mul" : "sub", y, {x, other}, [mul, d](const std::vector<xylem_ref::Array>& in) {
                  xylem_ref::Expect e;
                  for (std::int64_t k = 0; k < xylem_ref::numel(d); ++k) {
                    const double a = in[0].v[std::size_t(k)], c = xylem_ref::broadcast_at(in[1], d, k);
                    e.push(mul ? a * c : a - c, 1e-3 * (std::abs(a) + std::abs(c)));
                  }
                  return e;
                }};
      }
      case 3: {  // sum along one axis, keeping it
        const int axis = int(pick(std::size_t(rank)));
        Tensor y = xylem::sum(b, x, {{axis}, true});
        return {"sum", y, {x}, [axis](const std::vector<xylem_ref::Array>& in) {
                  return xylem_ref::reduce(xylem_ref::Reduce::sum, in[0], {axis});
                }};
      }
      case 4: {
        const int axis = int(pick(std::size_t(rank)));
        Tensor y(xylem::Layout(x.layout().dims()), x.dtype());
        xylem::nn::softmax(b, x, axis, y);
        return {"softmax", y, {x}, [axis](const std::vector<xylem_ref::Array>& in) {
                  return xylem_ref::softmax(in[0], axis, false);
                }};
      }
      case 5: {  // x [.., k] times a fresh [k, n]: as [m, k] @ [k, n]
        const std::int64_t k = d.back(), m = xylem_ref::numel(d) / std::max<std::int64_t>(k, 1);
        const std::int64_t n = 1 + std::int64_t(pick(16));
        Tensor w = fresh({k, n}, x.dtype());
        Tensor a = xylem::contiguous(b, x).reshape({m, k});
        Tensor y(xylem::Layout{m, n}, x.dtype());
        xylem::blas::gemm(b, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, a, w, 0.0, y);
        return {"gemm", y, {x, w}, [m, k, n](std::vector<xylem_ref::Array> in) {
                  in[0].dims = {m, k};
                  return xylem_ref::gemm(false, false, 1, in[0], in[1], 0, {{m, n}, {}});
                }};
      }
      case 6: {
        Tensor y = xylem::cast(b, x, x.dtype() == DType::f32 ? DType::f64 : DType::f32);
        return {"cast", y, {x}, elementwise([](double v) { return v; })};
      }
      default: {  // a transposed copy
        if (rank >= 2) {
          Tensor y = xylem::contiguous(b, x.transpose(0, rank - 1));
          return {"transpose", y, {x}, [rank](const std::vector<xylem_ref::Array>& in) {
                    Dims td = in[0].dims;
                    std::swap(td[0], td[std::size_t(rank - 1)]);
                    xylem_ref::Expect e;
                    for (std::int64_t k = 0; k < xylem_ref::numel(td); ++k) {
                      Dims idx = xylem_ref::unravel(td, k);
                      std::swap(idx[0], idx[std::size_t(rank - 1)]);
                      e.push(in[0].v[std::size_t(xylem_ref::ravel(in[0].dims, idx))], 0);
                    }
                    return e;
                  }};
        }
        Tensor y(xylem::Layout(x.layout().dims()), x.dtype());
        xylem::nn::tanh(b, x, y);
        return {"tanh", y, {x}, elementwise([](double v) { return std::tanh(v); })};
      }
    }
  }

  void verify(const std::vector<Step>& steps) {
    for (const Step& s : steps) {
      std::vector<xylem_ref::Array> in;
      for (const Tensor& t : s.ins) in.push_back({dims_of(t), t.to_doubles()});
      const xylem_ref::Expect e = s.ref(in);
      const auto got = s.out.to_doubles();
      bool ok = got.size() == e.v.size();
      std::size_t k = 0;
      for (; ok && k < got.size(); ++k) ok = xylem_ref::matches(s.out.dtype(), e.v[k], e.mag[k], got[k]);
      if (!ok && totals_.failures++ < 10)
        ADD_FAILURE() << s.what << " " << s.out.layout().dims_string() << " " << xylem::name(s.out.dtype())
                      << ": element " << k - 1 << " got " << (k ? got[k - 1] : 0) << ", expected "
                      << (k ? e.v[k - 1] : 0);
    }
  }

  std::vector<Backend> backends_;
  Shared& shared_;
  Totals& totals_;
  std::mt19937_64 rng_;
};

TEST(Soak, ThreadsAcrossBackends) {
  std::vector<Backend> backends{Backend::native()};
  try {
    backends.push_back(Backend::open("opencl"));
  } catch (const xylem::Error& e) {
    std::printf("soak: native only (%s)\n", e.what());
  }
  const int seconds = env_int("XYLEM_SOAK_SECONDS", 20), threads = env_int("XYLEM_SOAK_THREADS", 8);
  const std::uint64_t seed = xylem_test::fresh_seed();
  SCOPED_TRACE(xylem_test::seed_message(seed));

  Shared shared;
  {
    std::mt19937_64 rng(seed);
    std::vector<float> v(64 * 48);
    for (auto& e : v) e = std::uniform_real_distribution<float>(-2, 2)(rng);
    shared.common = Tensor::from(v, xylem::Layout{64, 48});
  }
  Totals totals;
  const std::uint64_t transfers0 = xylem::transfer_count();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      Worker w(backends, shared, totals, seed + std::uint64_t(i));
      try {
        while (std::chrono::steady_clock::now() < deadline && totals.failures < 10) w.sequence();
      } catch (const std::exception& e) {
        ++totals.failures;
        ADD_FAILURE() << "thread " << i << ": " << e.what();
      }
    });
  for (auto& t : pool) t.join();
  for (const Backend& b : backends) b.synchronize();

  std::printf("soak: %d threads, %d s, backends %zu: %llu sequences, %llu ops (%llu on opencl), %llu handovers "
              "between threads, %llu transfers, %llu failures\n",
              threads, seconds, backends.size(), (unsigned long long)totals.sequences.load(),
              (unsigned long long)totals.ops.load(), (unsigned long long)totals.opencl_ops.load(),
              (unsigned long long)totals.handovers.load(),
              (unsigned long long)(xylem::transfer_count() - transfers0), (unsigned long long)totals.failures.load());
  EXPECT_EQ(totals.failures.load(), 0u);
  EXPECT_GT(totals.sequences.load(), 0u);
}

}  // namespace

// xylem_bench_native: the native framework against its bounds and peers,
// each measured in the same run (figures from different runs or machines do
// not compare). Prints a table; --json FILE also writes the figures.
//
//   sigmoid   64M f32 through nn::sigmoid, against a parallel copy of the
//             same bytes (the memory-bandwidth bound) and, for context, a
//             plain single-thread std::exp loop
//   gemm      2048^3 f32 and f64 through blas::gemm, against cblas called
//             directly on host buffers
//   enqueue   host time to enqueue one small op (100k tiny relus, the loop
//             timed alone, then one synchronize); a tiny op on an idle
//             queue runs on the caller, so this is then its whole cost;
//             and a small op returning a new tensor (y = relu(x) of 1024
//             f32, the last y freed each time: allocation and free too)
//   fusion    y = relu(x*a + b)*c over 64M f32 as one math::fused kernel
//             and as its four ops (fusion_bench.hpp)
//   round trip  one tiny relu then a host read of its result, waited for
//             (what reading a loss each step costs), and an empty host task
//             waited for; the median of 20k (5k with --quick) of each
//
// Every figure is the median of --reps runs after a warm-up.
// --latency runs only the enqueue and round-trip rows.
#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "fusion_bench.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;
using xylem_bench::time_median;
using xylem_bench::time_pair;


struct Options : xylem_bench::CommonOptions {
  bool latency_only = false;
};

Options parse(int argc, char** argv) {
  Options o;
  xylem_bench::parse_options(argc, argv, "xylem_bench_native [--json FILE] [--reps N] [--quick] [--latency]", 1, o,
                             [&](std::string_view a, const char*) {
                               if (a != "--latency") return 0;
                               o.latency_only = true;
                               return 1;
                             });
  return o;
}



// Host memory for the peers, 64-byte aligned like xylem's, touched once so
// page faults are not timed.
template <class T>
struct HostBuffer {
  explicit HostBuffer(std::size_t n)
      : size(n), data(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {
    if (!data) throw std::bad_alloc();
    std::memset(data.get(), 0, n * sizeof(T));
  }
  T* get() const { return data.get(); }
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::size_t size;
  std::unique_ptr<T, Free> data;
};

// The bandwidth bound: a parallel memcpy of the same bytes, split like the
// kernels split their work.
void parallel_copy(const float* x, float* y, std::size_t n) {
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 64 * 1024), [&](const tbb::blocked_range<std::size_t>& r) {
    std::memcpy(y + r.begin(), x + r.begin(), r.size() * sizeof(float));
  });
}

struct Results {
  std::int64_t sigmoid_n = 0;
  double sigmoid_gbps = 0, copy_gbps = 0, exp_loop_gbps = 0;
  std::int64_t gemm_n = 0;
  double gemm_f32 = 0, cblas_f32 = 0, gemm_f64 = 0, cblas_f64 = 0;
  std::int64_t enqueue_ops = 0;
  double enqueue_us = 0, total_us = 0, new_tensor_us = 0;
  std::int64_t round_trips = 0;
  double read_round_trip_us = 0, task_round_trip_us = 0;
  xylem_bench::FusionFigures fusion;
  std::int64_t softmax_rows = 0;  // tanh(softmax(x) * m), x [softmax_rows, 4096] f32
  xylem_bench::EpilogueFigures softmax_epilogue;
};

void bench_sigmoid(const xylem::Backend& be, const Options& o, Results& r) {
  const std::int64_t n = o.quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 26);
  const double bytes = 2.0 * double(n) * sizeof(float);  // read x, write y
  r.sigmoid_n = n;

  xylem::Generator gen(42);
  xylem::Tensor x = xylem::uniform(be, {n}, xylem::f32, gen, -8, 8);
  xylem::Tensor y(xylem::Layout{n}, xylem::f32);
  const auto host_x = x.to_vector<float>();
  HostBuffer<float> hx{std::size_t(n)}, hy{std::size_t(n)};
  std::memcpy(hx.get(), host_x.data(), std::size_t(n) * sizeof(float));

  const auto [t_sigmoid, t_copy] = time_pair(
      o.reps,
      [&] {
        xylem::nn::sigmoid(be, x, y);
        be.synchronize();
      },
      [&] { parallel_copy(hx.get(), hy.get(), std::size_t(n)); });
  r.sigmoid_gbps = bytes / t_sigmoid * 1e-9;
  r.copy_gbps = bytes / t_copy * 1e-9;

  // Context: what a naive loop gets (one thread, libm's exp, no SIMD).
  const float* px = hx.get();
  float* py = hy.get();
  const double t_loop = time_median(std::max(1, o.reps / 3), [&] {
    for (std::int64_t i = 0; i < n; ++i) py[i] = 1.0f / (1.0f + std::exp(-px[i]));
  });
  r.exp_loop_gbps = bytes / t_loop * 1e-9;

  // A spot check, so a fast but wrong kernel cannot post a figure.
  const auto out = y.to_vector<float>();
  for (std::int64_t i = 0; i < n; i += 9973) {
    const double want = 1.0 / (1.0 + std::exp(-double(host_x[std::size_t(i)])));
    if (std::fabs(out[std::size_t(i)] - want) > 1e-6) {
      std::cerr << "sigmoid result wrong at " << i << ": " << out[std::size_t(i)] << " vs " << want << "\n";
      std::exit(1);
    }
  }
}

template <class T>
void bench_gemm(const xylem::Backend& be, const Options& o, std::int64_t n, double& ours, double& peer) {
  const xylem::DType dt = xylem::dtype_of_v<T>;
  xylem::Generator gen(7);
  xylem::Tensor a = xylem::uniform(be, {n, n}, dt, gen, -1, 1);
  xylem::Tensor b = xylem::uniform(be, {n, n}, dt, gen, -1, 1);
  xylem::Tensor c = xylem::zeros(be, {n, n}, dt);
  const auto ha_v = a.to_vector<T>(), hb_v = b.to_vector<T>();
  HostBuffer<T> ha{std::size_t(n * n)}, hb{std::size_t(n * n)}, hc{std::size_t(n * n)};
  std::memcpy(ha.get(), ha_v.data(), ha_v.size() * sizeof(T));
  std::memcpy(hb.get(), hb_v.data(), hb_v.size() * sizeof(T));
  const int bn = static_cast<int>(n);

  const int reps = std::max(3, o.reps / 2);
  const auto [t_ours, t_peer] = time_pair(
      reps,
      [&] {
        xylem::blas::gemm(be, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, a, b, 0.0, c);
        be.synchronize();
      },
      [&] {
        if constexpr (std::is_same_v<T, float>) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0f, ha.get(), bn, hb.get(), bn, 0.0f,
                      hc.get(), bn);
        } else {
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bn, bn, bn, 1.0, ha.get(), bn, hb.get(), bn, 0.0,
                      hc.get(), bn);
        }
      });
  const double flops = 2.0 * double(n) * double(n) * double(n);
  ours = flops / t_ours * 1e-9;
  peer = flops / t_peer * 1e-9;

  // Same inputs, same library: the results must agree closely.
  const auto hc_v = c.to_vector<T>();
  for (std::size_t i = 0; i < hc_v.size(); i += 4099) {
    if (std::fabs(double(hc_v[i]) - double(hc.get()[i])) > 1e-3 * (1 + std::fabs(double(hc.get()[i])))) {
      std::cerr << "gemm result differs from cblas at " << i << "\n";
      std::exit(1);
    }
  }
}

void bench_enqueue(const xylem::Backend& be, const Options& o, Results& r) {
  const std::int64_t ops = o.quick ? 10'000 : 100'000;
  r.enqueue_ops = ops;
  xylem::Tensor x = xylem::full(be, {16}, xylem::f32, -0.5);
  xylem::Tensor y = xylem::zeros(be, {16}, xylem::f32);
  be.synchronize();
  std::vector<double> enqueue, total;
  for (int rep = 0; rep < 1 + std::max(3, o.reps / 2); ++rep) {
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < ops; ++i) xylem::nn::relu(be, x, y);
    const double t_enqueue = seconds_since(t0);
    be.synchronize();
    const double t_total = seconds_since(t0);
    if (rep == 0) continue;  // warm-up
    enqueue.push_back(t_enqueue / double(ops) * 1e6);
    total.push_back(t_total / double(ops) * 1e6);
  }
  r.enqueue_us = median(enqueue);
  r.total_us = median(total);

  xylem::Tensor big = xylem::full(be, {1024}, xylem::f32, -0.5);
  xylem::Tensor out = xylem::nn::relu(be, big);
  std::vector<double> fresh;
  for (int rep = 0; rep < 1 + std::max(3, o.reps / 2); ++rep) {
    const auto t0 = Clock::now();
    for (std::int64_t i = 0; i < ops; ++i) out = xylem::nn::relu(be, big);
    be.synchronize();
    if (rep > 0) fresh.push_back(seconds_since(t0) / double(ops) * 1e6);
  }
  r.new_tensor_us = median(fresh);
}

// Latency, not throughput: each iteration is timed alone (the queue is
// empty when it starts) and the median kept, so one preempted iteration
// does not move the figure.
void bench_round_trip(const xylem::Backend& be, const Options& o, Results& r) {
  const int n = o.quick ? 5'000 : 20'000;
  r.round_trips = n;
  xylem::Tensor x = xylem::full(be, {16}, xylem::f32, -0.5);
  xylem::Tensor y = xylem::zeros(be, {16}, xylem::f32);
  be.synchronize();
  auto time = [&](auto&& once) {
    for (int i = 0; i < n / 10; ++i) once();  // warm-up
    std::vector<double> us(std::size_t(n), 0.0);
    for (auto& t : us) {
      const auto t0 = Clock::now();
      once();
      t = seconds_since(t0) * 1e6;
    }
    return median(std::move(us));
  };
  r.read_round_trip_us = time([&] {
    xylem::nn::relu(be, x, y);
    if (y.read<float>().get()[0] != 0.0f) {
      std::cerr << "relu result wrong in the round trip\n";
      std::exit(1);
    }
  });
  r.task_round_trip_us = time([&] { xylem::plugin::device_of(be).host_task([] {}, {})->wait(); });
}

void print_table(const xylem::Backend& be, const Results& r) {
  std::printf("xylem native benchmark on %s (%u hardware threads)\n", be.hardware().name.c_str(),
              std::thread::hardware_concurrency());
  std::printf("%-34s %12s %22s %8s\n", "measure", "xylem", "reference", "ratio");
  if (r.sigmoid_n > 0) {  // not with --latency
    std::printf("%-34s %9.2f GB/s %12s %4.2f GB/s %8.3f\n", ("sigmoid f32 n=" + std::to_string(r.sigmoid_n)).c_str(),
                r.sigmoid_gbps, "copy", r.copy_gbps, r.sigmoid_gbps / r.copy_gbps);
    std::printf("%-34s %9.2f GB/s %12s %4.2f GB/s %8.3f\n", "  scalar std::exp loop (1 thread)", r.exp_loop_gbps,
                "copy", r.copy_gbps, r.exp_loop_gbps / r.copy_gbps);
    std::printf("%-34s %9.2f GB/s %12s %4.2f GB/s %8.3f\n",
                ("fused relu(x*a+b)*c n=" + std::to_string(r.fusion.n)).c_str(), r.fusion.fused_gbps, "unfused",
                r.fusion.unfused_gbps, r.fusion.ratio());
    std::printf("%-34s %9.2f GB/s %12s %4.2f GB/s %8.3f\n", "  the same, eager calls auto-fused", r.fusion.auto_gbps,
                "unfused", r.fusion.unfused_gbps, r.fusion.auto_gbps / r.fusion.unfused_gbps);
    const xylem_bench::EpilogueFigures& e = r.softmax_epilogue;
    std::printf("%-34s %9.2f ms   %12s %4.2f ms   %8.3f\n",
                ("tanh(softmax*m) [" + std::to_string(r.softmax_rows) + ",4096]").c_str(), e.auto_ms, "unfused",
                e.unfused_ms, e.unfused_ms / e.auto_ms);
    std::printf("%-34s %9.2f ms   %12s %4.2f ms   %8.3f\n", "  softmax, then fused mul+tanh", e.gemm_then_fused_ms,
                "auto-fused", e.auto_ms, e.gemm_then_fused_ms / e.auto_ms);
    std::printf("%-34s %6.1f GFLOP/s %9s %6.1f GFLOP/s %6.3f\n", ("gemm f32 n=" + std::to_string(r.gemm_n)).c_str(),
                r.gemm_f32, "cblas", r.cblas_f32, r.gemm_f32 / r.cblas_f32);
    std::printf("%-34s %6.1f GFLOP/s %9s %6.1f GFLOP/s %6.3f\n", ("gemm f64 n=" + std::to_string(r.gemm_n)).c_str(),
                r.gemm_f64, "cblas", r.cblas_f64, r.gemm_f64 / r.cblas_f64);
  }
  std::printf("%-34s %9.3f us   %s %.3f us\n", "enqueue one small op (host)", r.enqueue_us, "enqueue+run per op",
              r.total_us);
  std::printf("%-34s %9.3f us\n", "small op into a new tensor (1024)", r.new_tensor_us);
  std::printf("%-34s %9.3f us   %s %.3f us\n", "round trip: relu + read, waited", r.read_round_trip_us,
              "empty host task, waited", r.task_round_trip_us);
}

void write_json(const std::string& path, const xylem::Backend& be, const Results& r) {
  std::ofstream f = xylem_bench::open_json(path);
  f << "{\n"
    << "  \"benchmark\": \"xylem_bench_native\",\n"
    << "  \"device\": \"" << be.id() << "\",\n"
    << "  \"hardware_threads\": " << std::thread::hardware_concurrency() << ",\n";
  if (r.sigmoid_n > 0) {
    f << "  \"sigmoid_f32\": {\"elements\": " << r.sigmoid_n << ", \"gbps\": " << r.sigmoid_gbps
      << ", \"copy_gbps\": " << r.copy_gbps << ", \"ratio\": " << r.sigmoid_gbps / r.copy_gbps << "},\n"
      << "  \"exp_loop_f32\": {\"elements\": " << r.sigmoid_n << ", \"gbps\": " << r.exp_loop_gbps
      << ", \"copy_gbps\": " << r.copy_gbps << ", \"ratio\": " << r.exp_loop_gbps / r.copy_gbps << "},\n"
      << "  \"fusion_f32\": {\"elements\": " << r.fusion.n << ", \"fused_gbps\": " << r.fusion.fused_gbps
      << ", \"unfused_gbps\": " << r.fusion.unfused_gbps << ", \"auto_gbps\": " << r.fusion.auto_gbps
      << ", \"ratio\": " << r.fusion.ratio() << "},\n"
      << "  \"softmax_epilogue_f32\": {\"rows\": " << r.softmax_rows << ", \"cols\": 4096, \"auto_ms\": "
      << r.softmax_epilogue.auto_ms << ", \"softmax_then_fused_ms\": " << r.softmax_epilogue.gemm_then_fused_ms
      << ", \"unfused_ms\": " << r.softmax_epilogue.unfused_ms << "},\n"
      << "  \"gemm_f32\": {\"n\": " << r.gemm_n << ", \"gflops\": " << r.gemm_f32 << ", \"cblas_gflops\": " << r.cblas_f32
      << ", \"ratio\": " << r.gemm_f32 / r.cblas_f32 << "},\n"
      << "  \"gemm_f64\": {\"n\": " << r.gemm_n << ", \"gflops\": " << r.gemm_f64 << ", \"cblas_gflops\": " << r.cblas_f64
      << ", \"ratio\": " << r.gemm_f64 / r.cblas_f64 << "},\n";
  }
  f << "  \"enqueue\": {\"ops\": " << r.enqueue_ops << ", \"enqueue_us_per_op\": " << r.enqueue_us
    << ", \"total_us_per_op\": " << r.total_us << ", \"new_tensor_1024_us_per_op\": " << r.new_tensor_us << "},\n"
    << "  \"round_trip\": {\"count\": " << r.round_trips << ", \"relu_read_us\": " << r.read_round_trip_us
    << ", \"host_task_us\": " << r.task_round_trip_us << "}\n"
    << "}\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Each row times single ops: automatic fusion would merge (and drop) the
  // repeated calls of a timing loop. The fusion row turns it on itself.
  xylem::set_fusion(false);
  const Options o = parse(argc, argv);
  try {
    const xylem::Backend be = xylem::Backend::native();
    Results r;
    if (!o.latency_only) {
      bench_sigmoid(be, o, r);
      r.fusion = xylem_bench::bench_fusion(be, o.quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 26), o.reps);
      r.softmax_rows = o.quick ? 1024 : 8192;
      r.softmax_epilogue = xylem_bench::bench_softmax_epilogue(be, r.softmax_rows, 4096, xylem::f32, o.reps);
      r.gemm_n = o.quick ? 512 : 2048;
      bench_gemm<float>(be, o, r.gemm_n, r.gemm_f32, r.cblas_f32);
      bench_gemm<double>(be, o, r.gemm_n, r.gemm_f64, r.cblas_f64);
    }
    bench_enqueue(be, o, r);
    bench_round_trip(be, o, r);
    print_table(be, r);
    if (!o.json.empty()) write_json(o.json, be, r);
  } catch (const xylem::Error& e) {
    std::cerr << "xylem_bench_native: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

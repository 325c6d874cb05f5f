// OpenCL against native, in one run: throughput of the memory-bound ops
// and of sigmoid (the headline figures), reductions, transfers,
// GEMM (our kernel and CLBlast raced against each other and OpenBLAS; our
// kernel tuned against its untuned default, whose row reads "tuned" in the
// opencl column and "default" in the native one), the
// accuracy of the f32 sigmoid and tanh, and the time to get the kernels at
// first use: compiled (cold cache) and loaded from the on-disk cache (warm),
// each measured in a fresh process.
//
//   xylem_bench_opencl [--device opencl:0] [--n ELEMENTS] [--runs R] [--json FILE] [--only OP,OP]
//
// --only measures just the named rows ("scal,axpy,tanh", "gemm", "download"),
// without the kernel load times: a quick check while tuning one kernel. A
// name also selects the rows it begins, up to a space ("conv2d": its three
// rows); "fusion" is the 4-op chain fused against its unfused ops, both
// on OpenCL (fusion_bench.hpp). The nn rows (conv2d, batch_norm, max_pool, avg_pool, lrn, sum
// axis0, exp bf16/f32) are in opencl_nn_bench.cpp.
#include <xylem/plugin/tune.hpp>
#include <xylem/xylem.hpp>

#include "bench_common.hpp"
#include "fusion_bench.hpp"
#include "opencl_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;

using namespace xylem;


// Median of `runs` timed calls after two warm-up calls; each call ends with
// the backend synchronised.
double median_seconds(const Backend& b, int runs, const std::function<void()>& op) {
  for (int i = 0; i < 2; ++i) op();
  b.synchronize();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    op();
    b.synchronize();
    t.push_back(seconds_since(t0));
  }
  std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
  return t[static_cast<std::size_t>(runs / 2)];
}

// Error of a float result in units in the last place of the float64 value
// (subnormal spacing below the normal range).
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(want)) return got == static_cast<float>(want) ? 0 : 1e9;
  int exponent = 0;
  std::frexp(want, &exponent);
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, std::max(exponent - 24, -149));
}

// Largest error of an f32 activation on b over a dense sweep of [-lo, hi]
// (2^22 points) against its float64 formula.
double max_ulp(const Backend& b, const std::function<void(const Backend&, const Tensor&, Tensor&)>& op,
               double (*reference)(double), float lo, float hi) {
  const std::int64_t n = 1 << 22;
  std::vector<float> x(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / n;
  Tensor tx = Tensor::from(x), ty(Layout{n}, f32);
  op(b, tx, ty);
  const std::vector<float> y = ty.to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulp_error(y[i], reference(x[i])));
  return worst;
}
double sigmoid64(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh64(double x) { return std::tanh(x); }

using xylem_bench::Row;

struct Options {
  std::string device = "opencl:0";
  std::int64_t n = 1 << 24;
  int runs = 21;
  std::string json;
  bool startup_child = false;
  std::string only;  // comma-separated rows to measure; empty: all

  [[nodiscard]] bool wants(const std::string& op) const {
    if (only.empty()) return true;
    const std::string list = "," + only + ",";
    const std::string head = op.substr(0, op.find(' '));
    return list.find("," + op + ",") != std::string::npos || list.find("," + head + ",") != std::string::npos;
  }
};

// Child mode: the first call of one op of each family, minus its steady
// time, is the cost of getting that family's kernels.
int startup_child(const Options& o) {
  const auto t_open = Clock::now();
  Backend b = Backend::open(o.device);
  const double open_s = seconds_since(t_open);
  const std::int64_t n = 4096;
  Tensor x(Layout{64, 64}, f32);
  Tensor y(Layout{64, 64}, f32);
  Tensor r(Layout{1}, f32);
  Tensor z(Layout{64, 64}, f32);
  struct Step {
    const char* family;
    std::function<void()> op;
  };
  std::vector<Step> steps = {
      {"creation", [&] { fill(b, x, 1.0); }},
      {"copy", [&] { (void)contiguous(b, x.transpose()); }},
      {"activation", [&] { nn::sigmoid(b, x, y); }},
      {"blas", [&] { blas::asum(b, x.reshape({n}), r); }},
      {"gemm", [&] { blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1.0, x, y, 0.0, z); }},
  };
  std::printf("{\"open_ms\": %.3f", open_s * 1e3);
  for (auto& s : steps) {
    const auto t0 = Clock::now();
    s.op();
    b.synchronize();
    const double first = seconds_since(t0);
    const double steady = median_seconds(b, 5, s.op);
    std::printf(", \"%s_ms\": %.3f", s.family, (first - steady) * 1e3);
  }
  std::printf("}\n");
  return 0;
}

// Runs this program in startup mode with the given cache directory.
// `pocl_cache` false turns PoCL's own cache of compiled kernels off
// (POCL_KERNEL_CACHE=0), so that an empty xylem cache means a real compile.
std::string run_child(const char* self, const Options& o, const std::string& cache, bool pocl_cache) {
  setenv("XYLEM_CACHE_DIR", cache.c_str(), 1);
  setenv("POCL_KERNEL_CACHE", pocl_cache ? "1" : "0", 1);
  const std::string cmd = std::string("'") + self + "' --startup --device " + o.device;
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

double field(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::atof(json.c_str() + at + key.size() + 4);
}

}  // namespace

int main(int argc, char** argv) {
  // Each row times single ops: automatic fusion would merge (and drop) the
  // repeated calls of a timing loop. The fusion row turns it on itself.
  xylem::set_fusion(false);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--device") o.device = next();
    else if (a == "--n") o.n = std::atoll(next().c_str());
    else if (a == "--runs") o.runs = std::max(3, std::atoi(next().c_str()));
    else if (a == "--json") o.json = next();
    else if (a == "--startup") o.startup_child = true;
    else if (a == "--only") o.only = next();
    else {
      std::fprintf(stderr, "usage: %s [--device opencl:0] [--n ELEMENTS] [--runs R] [--json FILE] [--only OP,OP]\n",
                   argv[0]);
      return 2;
    }
  }
  try {
    if (o.startup_child) return startup_child(o);

    // Kernel load times first, in fresh processes: an empty cache, then the
    // cache that run filled.
    const auto cache = (std::filesystem::temp_directory_path() /
                        ("xylem-bench-cache-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(cache);
    const bool startup = o.only.empty();
    // cold: nothing cached anywhere, a real compile. PoCL generates each
    // kernel's work-group function at its first launch and keeps that in
    // its own cache, not in the program binary: `warm_ours` (our binaries,
    // PoCL's cache still empty) shows that cost; `warm` is any later
    // process.
    const std::string cold = startup ? run_child(argv[0], o, cache, false) : "";
    const std::string warm_ours = startup ? run_child(argv[0], o, cache, true) : "";
    const std::string warm = startup ? run_child(argv[0], o, cache, true) : "";
    unsetenv("POCL_KERNEL_CACHE");
    std::filesystem::remove_all(cache);

    Backend ocl = Backend::open(o.device);
    Backend nat = Backend::native();
    std::printf("xylem OpenCL bench: %s (%s) against %s, n = %lld f32, median of %d\n", ocl.id().c_str(),
                ocl.hardware().name.c_str(), nat.id().c_str(), static_cast<long long>(o.n), o.runs);

    const std::int64_t n = o.n;
    const double bytes = static_cast<double>(n) * 4;
    std::vector<Row> rows;
    // One op on both backends, each on its own tensors made there. The runs
    // alternate between the two, so that both see the same machine load.
    const xylem_bench::Compare compare_in = [&](const std::string& op, const std::string& unit, double work,
                                                double need, const xylem_bench::MakeOp& make) {
      if (!o.wants(op)) return;
      Row row{op, unit, 0, 0, need};
      auto ours = make(ocl);
      auto theirs = make(nat);
      std::vector<double> t_ours, t_native, ratios;
      for (int i = 0; i < 2; ++i) ours(), theirs();
      ocl.synchronize();
      nat.synchronize();
      for (int i = 0; i < o.runs; ++i) {
        auto t0 = Clock::now();
        ours();
        ocl.synchronize();
        t_ours.push_back(seconds_since(t0));
        t0 = Clock::now();
        theirs();
        nat.synchronize();
        t_native.push_back(seconds_since(t0));
        ratios.push_back(t_native.back() / t_ours.back());
      }
      std::sort(t_ours.begin(), t_ours.end());
      std::sort(t_native.begin(), t_native.end());
      std::sort(ratios.begin(), ratios.end());
      row.ours = work / t_ours[t_ours.size() / 2] / 1e9;
      row.native = work / t_native[t_native.size() / 2] / 1e9;
      row.ratio_q1 = ratios[ratios.size() / 4];
      row.ratio_q3 = ratios[ratios.size() * 3 / 4];
      rows.push_back(row);
    };
    auto compare = [&](const std::string& op, double moved, double need, const xylem_bench::MakeOp& make) {
      compare_in(op, "GB/s", moved, need, make);
    };
    auto inputs = [n](const Backend& b, int k) {
      Generator g(7 + static_cast<std::uint64_t>(k));
      return uniform(b, Layout{n}, f32, g, -4, 4);
    };

    compare("fill", bytes, 0.9, [&](const Backend& b) {
      auto y = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, y] { fill(b, *y, 0.5); };
    });
    compare("copy", 2 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, y] { blas::copy(b, *x, *y); };
    });
    compare("scal", 2 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      return [&b, x] { blas::scal(b, 1.0000001, *x); };
    });
    compare("axpy", 3 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(inputs(b, 1));
      return [&b, x, y] { blas::axpy(b, 1e-7, *x, *y); };
    });
    compare("relu", 2 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, y] { nn::relu(b, *x, *y); };
    });
    compare("relu_grad", 3 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto dy = std::make_shared<Tensor>(inputs(b, 1));
      auto dx = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, dy, dx] { nn::relu_grad(b, *x, *dy, *dx); };
    });
    compare("sigmoid_grad", 3 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto dy = std::make_shared<Tensor>(inputs(b, 1));
      auto dx = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, dy, dx] { nn::sigmoid_grad(b, *x, *dy, *dx); };
    });
    compare("tanh_grad", 3 * bytes, 0.9, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto dy = std::make_shared<Tensor>(inputs(b, 1));
      auto dx = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, dy, dx] { nn::tanh_grad(b, *x, *dy, *dx); };
    });
    compare("sigmoid", 2 * bytes, 0.8, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, y] { nn::sigmoid(b, *x, *y); };
    });
    compare("tanh", 2 * bytes, 0, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(zeros(b, Layout{n}, f32));
      return [&b, x, y] { nn::tanh(b, *x, *y); };
    });
    compare("transpose copy", 2 * bytes, 0, [&](const Backend& b) {
      const std::int64_t side = 4096;
      auto x = std::make_shared<Tensor>(uniform(b, Layout{side, n / side}, f32, *std::make_unique<Generator>(3)));
      return [&b, x] { (void)contiguous(b, x->transpose()); };
    });
    compare("dot", 2 * bytes, 0, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto y = std::make_shared<Tensor>(inputs(b, 1));
      auto r = std::make_shared<Tensor>(Layout{1}, f32);
      return [&b, x, y, r] { blas::dot(b, *x, *y, *r); };
    });
    compare("asum", bytes, 0, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto r = std::make_shared<Tensor>(Layout{1}, f32);
      return [&b, x, r] { blas::asum(b, *x, *r); };
    });
    compare("nrm2", bytes, 0, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto r = std::make_shared<Tensor>(Layout{1}, f32);
      return [&b, x, r] { blas::nrm2(b, *x, *r); };
    });
    compare("iamax", bytes, 0, [&](const Backend& b) {
      auto x = std::make_shared<Tensor>(inputs(b, 0));
      auto r = std::make_shared<Tensor>(Layout{1}, i64);
      return [&b, x, r] { blas::iamax(b, *x, *r); };
    });

    // Transfers through the tensor API, 4 bytes per element. download: a
    // tensor written on the backend read into a new host vector (its
    // allocation included; native: a copy out of native memory). upload: a
    // tensor written on native, then read by an OpenCL asum, less the same
    // asum on a tensor already there; its "native" figure is a host memcpy
    // of the same bytes, which is what a transfer to a CPU device is.
    if (o.wants("download") || o.wants("upload")) {
      Row down{"download", "GB/s", 0, 0, 0}, up{"upload", "GB/s", 0, 0, 0};
      Tensor on_ocl = inputs(ocl, 0), on_nat = inputs(nat, 0), resident = inputs(ocl, 1), r(Layout{1}, f32);
      std::vector<float> from(static_cast<std::size_t>(n), 1.0f), to(static_cast<std::size_t>(n), 0.0f);
      std::vector<double> t_down, t_down_nat, t_up, t_asum, t_memcpy;
      for (int i = 0; i < o.runs; ++i) {
        fill(ocl, on_ocl, 0.25);
        fill(nat, on_nat, 0.25);
        ocl.synchronize();
        nat.synchronize();
        auto t0 = Clock::now();
        (void)on_ocl.to_vector<float>();
        t_down.push_back(seconds_since(t0));
        t0 = Clock::now();
        (void)on_nat.to_vector<float>();
        t_down_nat.push_back(seconds_since(t0));
        fill(nat, on_nat, 0.5);
        nat.synchronize();
        t0 = Clock::now();
        blas::asum(ocl, on_nat, r);
        ocl.synchronize();
        t_up.push_back(seconds_since(t0));
        t0 = Clock::now();
        blas::asum(ocl, resident, r);
        ocl.synchronize();
        t_asum.push_back(seconds_since(t0));
        t0 = Clock::now();
        std::memcpy(to.data(), from.data(), static_cast<std::size_t>(bytes));
        t_memcpy.push_back(seconds_since(t0));
      }
      down.ours = bytes / median(t_down) / 1e9;
      down.native = bytes / median(t_down_nat) / 1e9;
      up.ours = bytes / std::max(median(t_up) - median(t_asum), 1e-9) / 1e9;
      up.native = bytes / median(t_memcpy) / 1e9;
      rows.push_back(down);
      rows.push_back(up);
    }

    xylem_bench::nn_rows(compare_in, n);

    // GEMM: our kernel and CLBlast (XYLEM_OPENCL_GEMM picks the engine at
    // each call) against OpenBLAS, the three alternating.
    for (std::int64_t m : {256, 1024}) {
      if (!o.wants("gemm")) break;
      const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(m);
      struct Engine {
        const char* name;
        const Backend* backend;
        const char* env;
        std::vector<double> times;
      };
      std::vector<Engine> engines = {{"ours", &ocl, "ours", {}}, {"CLBlast", &ocl, "clblast", {}}, {"native", &nat, nullptr, {}}};
      Generator g(11);
      Tensor a0 = uniform(nat, Layout{m, m}, f32, g), b0 = uniform(nat, Layout{m, m}, f32, g);
      Tensor ao = contiguous(ocl, a0), bo = contiguous(ocl, b0), co = zeros(ocl, Layout{m, m}, f32);
      Tensor an = contiguous(nat, a0), bn = contiguous(nat, b0), cn = zeros(nat, Layout{m, m}, f32);
      const int runs = std::max(3, o.runs / 2);
      for (int i = -1; i < runs; ++i) {  // i == -1: warm-up
        for (Engine& e : engines) {
          if (e.env) setenv("XYLEM_OPENCL_GEMM", e.env, 1);
          const bool on_ocl = e.backend == &ocl;
          const auto t0 = Clock::now();
          blas::gemm(*e.backend, blas::Transpose::no, blas::Transpose::no, 1.0, on_ocl ? ao : an, on_ocl ? bo : bn, 0.0,
                     on_ocl ? co : cn);
          e.backend->synchronize();
          if (i >= 0) e.times.push_back(seconds_since(t0));
        }
      }
      unsetenv("XYLEM_OPENCL_GEMM");
      auto rate = [&](Engine& e) {
        std::sort(e.times.begin(), e.times.end());
        return flops / e.times[e.times.size() / 2] / 1e9;
      };
      const double native_rate = rate(engines[2]);
      for (int k = 0; k < 2; ++k)
        rows.push_back(Row{"gemm " + std::to_string(m) + " " + engines[static_cast<std::size_t>(k)].name, "GFLOP/s",
                           rate(engines[static_cast<std::size_t>(k)]), native_rate, 0});
    }

    // GEMM tuned against the untuned default, both ours: the tuning cache
    // (a file of this run's own) measures the candidates once per size,
    // then the winner (the cached choice) and the default
    // (XYLEM_OPENCL_GEMM_CANDIDATE=0) alternate.
    if (o.wants("gemm")) {
      const auto tune_dir = std::filesystem::temp_directory_path() / ("xylem-bench-tune-" + std::to_string(getpid()));
      const auto old_tune_path = plugin::tune::path();
      plugin::tune::set_path(tune_dir / "tune.txt");
      setenv("XYLEM_OPENCL_GEMM", "ours", 1);
      for (std::int64_t m : {512, 1024}) {
        const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(m) * static_cast<double>(m);
        Generator g(12);
        Tensor a = uniform(ocl, Layout{m, m}, f32, g), bm = uniform(ocl, Layout{m, m}, f32, g);
        Tensor c = zeros(ocl, Layout{m, m}, f32);
        const auto call = [&] {
          blas::gemm(ocl, blas::Transpose::no, blas::Transpose::no, 1.0, a, bm, 0.0, c);
          ocl.synchronize();
        };
        const auto t_tune = Clock::now();
        plugin::tune::set_enabled(true);
        call();
        plugin::tune::set_enabled(false);
        const double tuning_seconds = seconds_since(t_tune);
        std::vector<double> tuned, untuned;
        const int runs = std::max(5, o.runs / 2);
        for (int i = -1; i < runs; ++i) {  // i == -1: warm-up
          setenv("XYLEM_OPENCL_GEMM_CANDIDATE", "0", 1);
          auto t0 = Clock::now();
          call();
          if (i >= 0) untuned.push_back(seconds_since(t0));
          unsetenv("XYLEM_OPENCL_GEMM_CANDIDATE");
          t0 = Clock::now();
          call();
          if (i >= 0) tuned.push_back(seconds_since(t0));
        }
        const auto entries = plugin::tune::entries();
        std::printf("gemm %lld tuned: %s, chosen in %.1f s\n", static_cast<long long>(m),
                    entries.empty() ? "(nothing stored)" : entries.back().winner.choice.c_str(), tuning_seconds);
        rows.push_back(Row{"gemm " + std::to_string(m) + " tuned/default", "GFLOP/s", flops / median(tuned) / 1e9,
                           flops / median(untuned) / 1e9, 1.3});
      }
      unsetenv("XYLEM_OPENCL_GEMM");
      plugin::tune::set_path(old_tune_path);
      std::error_code ec;
      std::filesystem::remove_all(tune_dir, ec);
    }
    xylem_bench::FusionFigures fusion;
    if (o.wants("fusion")) fusion = xylem_bench::bench_fusion(ocl, n, o.runs);
    // A softmax and its tail as one kernel (nn::softmax_epilogue) against the
    // softmax and one fused kernel, and against three ops; all on OpenCL.
    std::optional<xylem_bench::EpilogueFigures> softmax_epilogue;
    const std::int64_t softmax_rows = std::max<std::int64_t>(1, n / 4096);
    if (o.wants("fusion")) softmax_epilogue = xylem_bench::bench_softmax_epilogue(ocl, softmax_rows, 4096, f32, o.runs);

    bool all_met = true;
    std::printf("%-18s %8s %12s %12s %8s %13s %8s\n", "op", "unit", "opencl", "native", "ratio", "run ratios", "needed");
    for (const Row& r : rows) {
      const double ratio = r.ours / r.native;
      const bool met = r.need == 0 || ratio >= r.need;
      all_met = all_met && met;
      char need[16] = "-";
      if (r.need > 0) std::snprintf(need, sizeof need, ">=%.1f%s", r.need, met ? "" : " !");
      char spread[32] = "-";
      if (r.ratio_q3 > 0) std::snprintf(spread, sizeof spread, "%.2f-%.2f", r.ratio_q1, r.ratio_q3);
      std::printf("%-18s %8s %12.2f %12.2f %8.2f %13s %8s\n", r.op.c_str(), r.unit.c_str(), r.ours, r.native, ratio,
                  spread, need);
    }
    if (fusion.n > 0) {
      const bool met = fusion.ratio() >= 2;
      all_met = all_met && met;
      std::printf("fusion relu(x*a+b)*c f32: fused %.2f GB/s, unfused %.2f GB/s (both opencl), ratio %.2f (needed >=2%s)\n",
                  fusion.fused_gbps, fusion.unfused_gbps, fusion.ratio(), met ? "" : " !");
      std::printf("fusion, the same as eager calls fused automatically: %.2f GB/s, %.2fx unfused\n", fusion.auto_gbps,
                  fusion.auto_gbps / fusion.unfused_gbps);
    }
    if (softmax_epilogue) {
      std::printf("tanh(softmax(x) * m) [%lld,4096] f32: auto-fused %.2f ms, softmax then fused %.2f ms, three ops "
                  "%.2f ms (unfused / auto-fused %.2f)\n",
                  static_cast<long long>(softmax_rows), softmax_epilogue->auto_ms, softmax_epilogue->gemm_then_fused_ms,
                  softmax_epilogue->unfused_ms, softmax_epilogue->unfused_ms / softmax_epilogue->auto_ms);
    }
    // f32 accuracy of the transcendental activations, both backends.
    const auto sigmoid_op = [](const Backend& b, const Tensor& x, Tensor& y) { nn::sigmoid(b, x, y); };
    const auto tanh_op = [](const Backend& b, const Tensor& x, Tensor& y) { nn::tanh(b, x, y); };
    const double sig_ocl = max_ulp(ocl, sigmoid_op, sigmoid64, -87, 88), sig_nat = max_ulp(nat, sigmoid_op, sigmoid64, -87, 88);
    const double tanh_ocl = max_ulp(ocl, tanh_op, tanh64, -12, 12), tanh_nat = max_ulp(nat, tanh_op, tanh64, -12, 12);
    std::printf("f32 max error vs float64 (2^22 points): sigmoid on [-87, 88] %.2f ulp (native %.2f), tanh on [-12, 12] "
                "%.2f ulp (native %.2f)\n",
                sig_ocl, sig_nat, tanh_ocl, tanh_nat);
    const double warm_total = field(warm, "creation_ms") + field(warm, "copy_ms") + field(warm, "activation_ms") +
                              field(warm, "blas_ms") + field(warm, "gemm_ms");
    const double cold_total = field(cold, "creation_ms") + field(cold, "copy_ms") + field(cold, "activation_ms") +
                              field(cold, "blas_ms") + field(cold, "gemm_ms");
    if (startup) {
      std::printf("kernels at first use, all five families: %.1f ms compiled (empty cache), %.1f ms loaded (warm cache, "
                  "needed <= 50 ms%s)\n",
                  cold_total, warm_total, warm_total <= 50 ? "" : " !");
      std::printf("  cold: %s\n  warm, PoCL's kernel cache still empty: %s\n  warm: %s\n", cold.c_str(),
                  warm_ours.c_str(), warm.c_str());
    }

    if (!o.json.empty()) {
      std::ofstream f(o.json);
      f << "{\n  \"device\": \"" << ocl.id() << "\",\n  \"hardware\": \"" << ocl.hardware().name
        << "\",\n  \"n\": " << n << ",\n  \"runs\": " << o.runs << ",\n  \"ops\": [\n";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        f << "    {\"op\": \"" << r.op << "\", \"unit\": \"" << r.unit << "\", \"opencl\": " << r.ours
          << ", \"native\": " << r.native << ", \"ratio\": " << r.ours / r.native << ", \"ratio_q1\": " << r.ratio_q1
          << ", \"ratio_q3\": " << r.ratio_q3 << ", \"needed\": " << r.need
          << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
      }
      f << "  ],\n  \"startup_cold\": " << (cold.empty() ? "null" : cold) << ",\n  \"startup_warm_pocl_cache_empty\": "
        << (warm_ours.empty() ? "null" : warm_ours) << ",\n  \"startup_warm\": " << (warm.empty() ? "null" : warm) << ",\n  \"kernels_cold_ms\": " << (startup ? std::to_string(cold_total) : "null")
        << ",\n  \"kernels_warm_ms\": " << (startup ? std::to_string(warm_total) : "null") << ",\n  \"sigmoid_f32_max_ulp\": " << sig_ocl
        << ",\n  \"tanh_f32_max_ulp\": " << tanh_ocl;
      if (fusion.n > 0)
        f << ",\n  \"fusion_f32\": {\"fused_gbps\": " << fusion.fused_gbps << ", \"unfused_gbps\": " << fusion.unfused_gbps << ", \"auto_gbps\": " << fusion.auto_gbps
          << ", \"ratio\": " << fusion.ratio() << "}";
      f << "\n}\n";
    }
    return all_met ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xylem_bench_opencl: %s\n", e.what());
    return 2;
  }
}

// The ops bench/python_small_op.py times through Python, timed from C++ the
// same way, at the sizes it passes: so "Python / C++" compares one op at one
// size, measured one way, in one run.
//
//   small op  nn::sigmoid of --small f32 (default 1024) into an existing
//             output: host time per call
//   sigmoid   nn::sigmoid of --elements f32 (ones): read + write GB/s
//   gemm      blas::gemm of two --gemm n x n f32 matrices (ones): GFLOP/s
//
// Each row is per_call: max(3, calls/10) warm-up calls and a wait, then
// --reps rounds of `calls` calls followed by one Backend::synchronize, the
// median seconds per call (python_small_op.py's per_call, line for line).
// --backend picks the framework (native, opencl, cuda:0...). Prints a
// table; --json FILE writes the figures under python_small_op.py's row names.
#include <cstdio>
#include <map>
#include <string>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem_bench;

struct Options : CommonOptions {
  std::string backend = "native";
  std::int64_t small = 1024;
  std::int64_t elements = std::int64_t{1} << 24;
  std::int64_t gemm = 512;
  int small_calls = 2000, sigmoid_calls = 3, gemm_calls = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  o.reps = 5;
  parse_options(argc, argv,
                "xylem_bench_same_ops [--backend SPEC] [--small N] [--elements N] [--gemm N] [--small-calls N] "
                "[--sigmoid-calls N] [--gemm-calls N] [--reps N] [--json FILE]",
                1, o, [&](std::string_view a, const char* value) {
                  if (!value) return 0;
                  if (a == "--backend") {
                    o.backend = value;
                  } else if (a == "--small") {
                    o.small = std::atoll(value);
                  } else if (a == "--elements") {
                    o.elements = std::atoll(value);
                  } else if (a == "--gemm") {
                    o.gemm = std::atoll(value);
                  } else if (a == "--small-calls") {
                    o.small_calls = std::atoi(value);
                  } else if (a == "--sigmoid-calls") {
                    o.sigmoid_calls = std::atoi(value);
                  } else if (a == "--gemm-calls") {
                    o.gemm_calls = std::atoi(value);
                  } else {
                    return 0;
                  }
                  return 2;
                });
  return o;
}

// Median seconds per call of `calls` calls of f followed by one wait.
template <class F>
double per_call(const xylem::Backend& be, int calls, int rounds, F&& f) {
  for (int i = 0; i < std::max(3, calls / 10); ++i) f();
  be.synchronize();
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    be.synchronize();
    times.push_back(seconds_since(t0) / calls);
  }
  return median(times);
}

std::map<std::string, double> run(const xylem::Backend& be, const Options& o) {
  using xylem::f32;
  using xylem::Layout;
  const std::string suffix = "/xylem-" + be.framework();
  std::map<std::string, double> rows;

  const xylem::Tensor x = xylem::ones(be, Layout{o.small}, f32);
  xylem::Tensor y(Layout{o.small}, f32);
  rows["small_op_sigmoid_us" + suffix] =
      1e6 * per_call(be, o.small_calls, o.reps, [&] { xylem::nn::sigmoid(be, x, y); });

  const xylem::Tensor big = xylem::ones(be, Layout{o.elements}, f32);
  xylem::Tensor out(Layout{o.elements}, f32);
  const double t_sigmoid = per_call(be, o.sigmoid_calls, o.reps, [&] { xylem::nn::sigmoid(be, big, out); });
  rows["sigmoid_gbs" + suffix] = 8.0 * double(o.elements) / t_sigmoid / 1e9;  // 4 bytes read, 4 written

  const std::int64_t n = o.gemm;
  const xylem::Tensor a = xylem::ones(be, Layout{n, n}, f32);
  xylem::Tensor c(Layout{n, n}, f32);
  const double t_gemm = per_call(be, o.gemm_calls, o.reps, [&] {
    xylem::blas::gemm(be, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1.0, a, a, 0.0, c);
  });
  rows["gemm_f32_gflops" + suffix] = 2.0 * double(n) * double(n) * double(n) / t_gemm / 1e9;
  return rows;
}

void report(const std::string& framework, const Options& o, const std::map<std::string, double>& rows) {
  std::printf("%s: small op n=%lld, sigmoid n=%lld, gemm n=%lld, median of %d rounds\n", framework.c_str(),
              static_cast<long long>(o.small), static_cast<long long>(o.elements), static_cast<long long>(o.gemm),
              o.reps);
  for (const auto& [name, value] : rows) std::printf("%-40s %12.3f\n", name.c_str(), value);
  if (o.json.empty()) return;
  std::ofstream f = open_json(o.json);
  f << "{\"benchmark\": \"xylem_bench_same_ops\", \"backend\": \"" << framework
    << "\", \"sizes\": {\"small\": " << o.small << ", \"elements\": " << o.elements << ", \"gemm\": " << o.gemm
    << "}, \"rounds\": " << o.reps << ",\n \"rows\": {";
  const char* sep = "";
  for (const auto& [name, value] : rows) {
    f << sep << "\"" << name << "\": " << value;
    sep = ", ";
  }
  f << "}}\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Each row times single ops: automatic fusion would merge (and drop) the
  // repeated calls of a timing loop. The fusion row turns it on itself.
  xylem::set_fusion(false);
  const Options o = parse(argc, argv);
  try {
    const xylem::Backend be = xylem::Backend::open(o.backend);
    report(be.framework(), o, run(be, o));
  } catch (const xylem::Error& e) {  // an unavailable framework, say: its reason, not an abort
    std::fprintf(stderr, "xylem_bench_same_ops: %s\n", e.what());
    return 1;
  }
  return 0;
}

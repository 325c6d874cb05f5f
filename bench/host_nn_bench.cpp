// xylem_bench_host_nn: native convolutions through xylem's two engines, in
// one run: oneDNN (the default for f32 when built in) against im2col +
// OpenBLAS (XYLEM_NATIVE_CONV=im2col), same tensors, calls alternated.
//
//   conv2d, conv2d_grad_data, conv2d_grad_filter in f32 on
//     resnet3x3   8x64x56x56, 64 filters 3x3, pad 1 (a ResNet-50 stage-1 layer)
//     stem7x7     8x3x224x224, 64 filters 7x7, stride 2, pad 3 (a ResNet stem)
//     grouped     8x128x56x56, 128 filters 3x3, 32 groups, stride 2, pad 1 (ResNeXt)
//     small       1x16x14x14, 16 filters 3x3, pad 1, 100 calls per run (per-call
//                 overhead)
//   relu after conv: nn::relu on y (8x64x56x56) timed right after each
//     engine's forward conv, against relu after an idle gap: oneDNN's
//     OpenMP threads spin for a while after their work and may slow our
//     oneTBB threads.
//
// Each figure is the median of --reps (>= 7) alternated runs after a
// warm-up, each run started after 50 ms idle; the spread is (max - min) /
// median over the runs. The table header shows OMP_WAIT_POLICY, which
// decides how oneDNN's OpenMP threads wait (see conv2d_onednn.cpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;

struct Options : xylem_bench::CommonOptions {
  Options() { reps = 9; }
};

Options parse(int argc, char** argv) {
  Options o;
  xylem_bench::parse_options(argc, argv, "xylem_bench_host_nn [--json FILE] [--reps N (>= 7)] [--quick]", 7, o);
  return o;
}

// The engine native convolutions use, switched between runs. The queue is
// drained before each switch, so no kernel reads the variable meanwhile.
void use_im2col(bool on) {
  if (on)
    setenv("XYLEM_NATIVE_CONV", "im2col", 1);
  else
    unsetenv("XYLEM_NATIVE_CONV");
}

struct Timing {
  double median = 0, spread = 0;
};
Timing timing(const std::vector<double>& t) {
  const double m = median(t);
  return {m, (*std::max_element(t.begin(), t.end()) - *std::min_element(t.begin(), t.end())) / m};
}

// Lets idle threads of the previous run go to sleep (libgomp's spin for up
// to a few ms after a parallel region, OpenBLAS's and oneTBB's briefly), so
// neither engine's run is slowed by the other's leftover spinning: that
// interaction is measured apart (relu after conv).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// Runs f with each engine, alternated: warm-up, then reps pairs.
std::pair<Timing, Timing> time_engines(int reps, const std::function<void()>& f) {
  std::vector<double> onednn, im2col;
  for (int r = -1; r < reps; ++r) {
    for (bool forced : {false, true}) {
      use_im2col(forced);
      settle();
      const auto t0 = Clock::now();
      f();
      const double t = seconds_since(t0);
      if (r >= 0) (forced ? im2col : onednn).push_back(t);
    }
  }
  use_im2col(false);
  return {timing(onednn), timing(im2col)};
}

struct Case {
  const char* name;
  std::int64_t n, c, h, w, k, r, s;
  xylem::nn::Conv2d p;
  int calls = 1;  // per timed run: enough that a small case takes milliseconds
};

struct Row {
  std::string name, pass;
  double gflop = 0;
  Timing onednn, im2col;
  double max_rel_diff = 0;  // between the engines' results
};

// Largest |a - b| / max|b|: the engines sum in different orders, so a
// difference near f32 rounding is expected; a wrong result is far above.
double relative_difference(const xylem::Tensor& a, const xylem::Tensor& b) {
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::fabs(double(va[i]) - double(vb[i])));
    scale = std::max(scale, std::fabs(double(vb[i])));
  }
  return diff / std::max(scale, 1e-30);
}

void bench_case(const xylem::Backend& be, const Case& c, int reps, std::vector<Row>& rows) {
  xylem::Generator gen(11);
  const xylem::Layout xs{c.n, c.c, c.h, c.w}, ws{c.k, c.c / c.p.groups, c.r, c.s};
  const xylem::Layout ys = xylem::nn::conv2d_output_shape(xs, ws, c.p);
  const xylem::Tensor x = xylem::uniform(be, xs, xylem::f32, gen, -1, 1);
  const xylem::Tensor w = xylem::uniform(be, ws, xylem::f32, gen, -1, 1);
  const xylem::Tensor dy = xylem::uniform(be, ys, xylem::f32, gen, -1, 1);
  xylem::Tensor y(ys, xylem::f32), dx(xs, xylem::f32), dw(ws, xylem::f32);
  xylem::Tensor check(ys, xylem::f32);
  const double gflop = 2.0 * double(ys.numel()) * double(ws.numel() / c.k) * 1e-9 * c.calls;

  struct Pass {
    const char* name;
    std::function<void(xylem::Tensor&)> run;
    xylem::Tensor* out;
  };
  const std::vector<Pass> passes{
      {"forward", [&](xylem::Tensor& out) { xylem::nn::conv2d(be, x, w, out, c.p); }, &y},
      {"grad_data", [&](xylem::Tensor& out) { xylem::nn::conv2d_grad_data(be, dy, w, out, c.p); }, &dx},
      {"grad_filter", [&](xylem::Tensor& out) { xylem::nn::conv2d_grad_filter(be, x, dy, out, c.p); }, &dw},
  };
  for (const Pass& pass : passes) {
    Row row{c.name, pass.name, gflop, {}, {}, 0};
    const auto [onednn, im2col] = time_engines(reps, [&] {
      for (int i = 0; i < c.calls; ++i) pass.run(*pass.out);
      be.synchronize();
    });
    row.onednn = onednn;
    row.im2col = im2col;
    // Both engines' results, compared.
    xylem::Tensor other(pass.out->layout(), xylem::f32);
    pass.run(*pass.out);
    be.synchronize();  // the kernel reads XYLEM_NATIVE_CONV when it runs
    use_im2col(true);
    pass.run(other);
    be.synchronize();
    use_im2col(false);
    row.max_rel_diff = relative_difference(*pass.out, other);
    rows.push_back(row);
  }
}

// relu on y right after a forward conv of each engine, and after an idle
// gap (the spinning threads have gone to sleep by then).
struct ReluAfterConv {
  std::int64_t elements = 0;
  Timing after_onednn, after_im2col, after_idle;
};

ReluAfterConv bench_relu_after_conv(const xylem::Backend& be, int reps) {
  xylem::Generator gen(5);
  const Case c{"resnet3x3", 8, 64, 56, 56, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}};
  const xylem::Layout xs{c.n, c.c, c.h, c.w}, ws{c.k, c.c, c.r, c.s};
  const xylem::Tensor x = xylem::uniform(be, xs, xylem::f32, gen, -1, 1);
  const xylem::Tensor w = xylem::uniform(be, ws, xylem::f32, gen, -1, 1);
  xylem::Tensor y(xylem::nn::conv2d_output_shape(xs, ws, c.p), xylem::f32), z(y.layout(), xylem::f32);
  std::vector<double> t_onednn, t_im2col, t_idle;
  const auto relu_seconds = [&] {
    const auto t0 = Clock::now();
    xylem::nn::relu(be, y, z);
    be.synchronize();
    return seconds_since(t0);
  };
  for (int r = -1; r < 2 * reps; ++r) {
    for (bool forced : {false, true}) {
      use_im2col(forced);
      xylem::nn::conv2d(be, x, w, y, c.p);
      be.synchronize();
      const double t = relu_seconds();
      if (r >= 0) (forced ? t_im2col : t_onednn).push_back(t);
    }
    use_im2col(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double t = relu_seconds();
    if (r >= 0) t_idle.push_back(t);
  }
  return {y.layout().numel(), timing(t_onednn), timing(t_im2col), timing(t_idle)};
}

void print_table(const xylem::Backend& be, const std::vector<Row>& rows, const ReluAfterConv& relu) {
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("xylem native convolution engines on %s (%u hardware threads), OMP_WAIT_POLICY=%s\n",
              be.hardware().name.c_str(), std::thread::hardware_concurrency(), wait_policy ? wait_policy : "(unset)");
  std::printf("%-10s %-12s %8s %20s %20s %7s %9s\n", "case", "pass", "GFLOP", "oneDNN GFLOP/s (spr)",
              "im2col GFLOP/s (spr)", "ratio", "rel diff");
  for (const Row& r : rows) {
    std::printf("%-10s %-12s %8.3f %11.1f (%5.1f%%) %11.1f (%5.1f%%) %7.2f %9.1e\n", r.name.c_str(), r.pass.c_str(),
                r.gflop, r.gflop / r.onednn.median, 100 * r.onednn.spread, r.gflop / r.im2col.median,
                100 * r.im2col.spread, r.im2col.median / r.onednn.median, r.max_rel_diff);
  }
  if (relu.elements == 0) return;
  std::printf("relu f32 n=%lld: %.3f ms after a oneDNN conv (spr %.0f%%), %.3f ms after an im2col conv (spr %.0f%%), "
              "%.3f ms after 200 ms idle (spr %.0f%%)\n",
              static_cast<long long>(relu.elements), relu.after_onednn.median * 1e3, 100 * relu.after_onednn.spread,
              relu.after_im2col.median * 1e3, 100 * relu.after_im2col.spread, relu.after_idle.median * 1e3,
              100 * relu.after_idle.spread);
}

void write_json(const std::string& path, const xylem::Backend& be, const std::vector<Row>& rows,
                const ReluAfterConv& relu) {
  std::ofstream f = xylem_bench::open_json(path);
  f << "{\n"
    << "  \"benchmark\": \"xylem_bench_host_nn\",\n"
    << "  \"device\": \"" << be.id() << "\",\n"
    << "  \"hardware_threads\": " << std::thread::hardware_concurrency() << ",\n"
    << "  \"omp_wait_policy\": \"" << (std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "")
    << "\",\n"
    << "  \"conv2d_f32\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    f << "    {\"case\": \"" << r.name << "\", \"pass\": \"" << r.pass << "\", \"gflop\": " << r.gflop
      << ", \"onednn_gflops\": " << r.gflop / r.onednn.median << ", \"onednn_spread\": " << r.onednn.spread
      << ", \"im2col_gflops\": " << r.gflop / r.im2col.median << ", \"im2col_spread\": " << r.im2col.spread
      << ", \"ratio\": " << r.im2col.median / r.onednn.median << ", \"max_rel_diff\": " << r.max_rel_diff << "}"
      << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "  ],\n"
    << "  \"relu_after_conv\": {\"elements\": " << relu.elements
    << ", \"after_onednn_ms\": " << relu.after_onednn.median * 1e3
    << ", \"after_im2col_ms\": " << relu.after_im2col.median * 1e3
    << ", \"after_idle_ms\": " << relu.after_idle.median * 1e3 << "}\n"
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
    std::vector<Case> cases{{"small", 1, 16, 14, 14, 16, 3, 3, {1, 1, 1, 1, 1, 1, 1}, 100}};
    if (!o.quick) {
      cases.insert(cases.begin(), {{"resnet3x3", 8, 64, 56, 56, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
                                   {"stem7x7", 8, 3, 224, 224, 64, 7, 7, {2, 2, 3, 3, 1, 1, 1}},
                                   {"grouped", 8, 128, 56, 56, 128, 3, 3, {2, 2, 1, 1, 1, 1, 32}}});
    }
    std::vector<Row> rows;
    for (const Case& c : cases) bench_case(be, c, o.reps, rows);
    const ReluAfterConv relu = o.quick ? ReluAfterConv{} : bench_relu_after_conv(be, o.reps);
    print_table(be, rows, relu);
    if (!o.json.empty()) write_json(o.json, be, rows, relu);
  } catch (const xylem::Error& e) {
    std::cerr << "xylem_bench_host_nn: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// xylem_bench_capture: what one tiny op costs replayed from a captured graph
// against launched eagerly, on each framework present (native, OpenCL,
// CUDA), measured in the same run.
//
//   a chain of N in-place adds on 16 f32 (xylem::add(x, one, x)): launched
//   eagerly (each op through the wrapper, the dispatch and the queue), then
//   synchronize; and the same chain captured once and replayed (native: one
//   queue task calling the N kernels; OpenCL: one command buffer or the
//   kernels enqueued in order; CUDA: one graph launch), waited for. Per op:
//   the median of --reps runs, each divided by N. N is 1000 on native and
//   100 elsewhere (--quick: 100 everywhere); PyTorch's peer is
//   bench/torch_capture.py.
//
// Each framework is measured twice: automatic fusion off (each add its own
// kernel, eager and in the graph), then on (the adds fused, about 13 to a
// kernel, eager and in the graph: the graph records the fused kernels).
//
// The load average is printed: the machine may be shared.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one, five;
  f >> one >> five;
  return f ? one + " " + five : "unknown";
}

struct Row {
  std::string framework;
  int chain = 0;
  bool fused = false;
  double eager_us = 0, replay_us = 0;
};

Row measure(const xylem::Backend& b, int n, int reps, bool fused) {
  using namespace xylem;
  set_fusion(fused);
  Tensor x = zeros(b, {16}, f32);
  const Tensor one = ones(b, {16}, f32);
  const auto chain = [&] {
    for (int i = 0; i < n; ++i) xylem::add(b, x, one, x);
  };
  Graph g = capture(b, chain);
  const auto [eager, replay] = xylem_bench::time_pair(
      reps,
      [&] {
        chain();
        b.synchronize();
      },
      [&] { g.replay()->wait(); });
  set_fusion(false);
  return {b.id(), n, fused, eager / n * 1e6, replay / n * 1e6};
}

}  // namespace

int main(int argc, char** argv) {
  // Off but for the rows that say fused (measure() sets it for each row).
  xylem::set_fusion(false);
  xylem_bench::CommonOptions o;
  o.reps = 50;
  xylem_bench::parse_options(argc, argv, "xylem_bench_capture [--json FILE] [--reps N] [--quick]", 5, o);
  std::vector<Row> rows;
  for (const char* name : {"native", "opencl", "cuda"}) {
    xylem::Backend b = xylem::Backend::native();
    try {
      b = xylem::Backend::open(name);
    } catch (const xylem::Error& e) {
      std::printf("%s: skipped (%s)\n", name, e.message().c_str());
      continue;
    }
    const int n = !o.quick && std::string(name) == "native" ? 1000 : 100;
    rows.push_back(measure(b, n, o.reps, false));
    rows.push_back(measure(b, n, o.reps, true));
  }
  std::printf("load average (1, 5 min): %s\n", load_average().c_str());
  std::printf("%-40s %10s %10s\n", "per op, us", "eager", "replay");
  for (const Row& r : rows)
    std::printf("%-40s %10.3f %10.3f   (%.1fx)\n",
                (r.framework + ": add 16 f32, chain of " + std::to_string(r.chain) + (r.fused ? ", fused" : "")).c_str(),
                r.eager_us, r.replay_us,
                r.eager_us / r.replay_us);
  if (!o.json.empty()) {
    auto f = xylem_bench::open_json(o.json);
    f << "{\"load\": \"" << load_average() << "\", \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i)
      f << (i ? ", " : "") << "{\"backend\": \"" << rows[i].framework << "\", \"chain\": " << rows[i].chain
        << ", \"eager_us_per_op\": " << rows[i].eager_us << ", \"replay_us_per_op\": " << rows[i].replay_us << "}";
    f << "]}\n";
  }
  return 0;
}

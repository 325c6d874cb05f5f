// xylem_bench_capture: what one tiny op costs replayed from a captured graph
// against launched eagerly, on native, measured in the same run.
//
//   a chain of N in-place adds on 16 f32 (xylem::add(x, one, x)): launched
//   eagerly (each op through the wrapper, the dispatch and the queue; a tiny
//   op on an idle queue runs on the caller), then synchronize; and the same
//   chain captured once and replayed (one queue task calling the N kernels),
//   waited for. Per op: the median of --reps runs, each divided by N.
//
// The load average is printed: the machine may be shared.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one, five;
  f >> one >> five;
  return f ? one + " " + five : "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  xylem_bench::CommonOptions o;
  o.reps = 50;
  xylem_bench::parse_options(argc, argv, "xylem_bench_capture [--json FILE] [--reps N] [--quick]", 5, o);
  using namespace xylem;
  const Backend b = Backend::native();
  const int n = o.quick ? 100 : 1000;
  Tensor x = zeros(b, {16}, f32);
  const Tensor one = ones(b, {16}, f32);
  const auto chain = [&] {
    for (int i = 0; i < n; ++i) xylem::add(b, x, one, x);
  };
  Graph g = capture(b, chain);
  const auto [eager, replay] = xylem_bench::time_pair(
      o.reps,
      [&] {
        chain();
        b.synchronize();
      },
      [&] { g.replay()->wait(); });
  const double eager_us = eager / n * 1e6, replay_us = replay / n * 1e6;
  std::printf("load average (1, 5 min): %s\n", load_average().c_str());
  std::printf("%-32s %10s %10s\n", "per op, us", "eager", "replay");
  std::printf("%-32s %10.3f %10.3f   (%.1fx)\n", ("add 16 f32, chain of " + std::to_string(n)).c_str(), eager_us,
              replay_us, eager_us / replay_us);
  if (!o.json.empty()) {
    auto f = xylem_bench::open_json(o.json);
    f << "{\"chain\": " << n << ", \"eager_us_per_op\": " << eager_us << ", \"replay_us_per_op\": " << replay_us
      << ", \"load\": \"" << load_average() << "\"}\n";
  }
  return 0;
}

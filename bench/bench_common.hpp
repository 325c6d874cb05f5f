#pragma once
// Timing and option helpers every xylem benchmark uses.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xylem_bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The median of a set of timings (mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per call of f: one warm-up call, then the median of reps.
template <class F>
double time_median(int reps, F&& f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(seconds_since(t0));
  }
  return median(t);
}

// Two measurements alternated run by run, so drift (frequency, other load)
// hits both alike. Returns the two medians.
template <class F, class G>
std::pair<double, double> time_pair(int reps, F&& f, G&& g) {
  f();
  g();
  std::vector<double> tf, tg;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    tf.push_back(seconds_since(t0));
    t0 = Clock::now();
    g();
    tg.push_back(seconds_since(t0));
  }
  return {median(tf), median(tg)};
}

// The options every benchmark takes: --json FILE (write the figures),
// --reps N (timed repetitions, at least min_reps) and --quick (small sizes,
// for a smoke run). Benchmarks derive their Options from it.
struct CommonOptions {
  std::string json;
  int reps = 10;
  bool quick = false;
};

// Reads argv into o. A benchmark's own options go through own(arg, value):
// value is the next argument or nullptr; own returns how many arguments it
// took (0: not its option). Anything else prints `usage` and exits (0 for
// --help).
template <class Own>
void parse_options(int argc, char** argv, std::string_view usage, int min_reps, CommonOptions& o, Own&& own) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--json" && value) {
      o.json = argv[++i];
    } else if (a == "--reps" && value) {
      o.reps = std::max(min_reps, std::atoi(argv[++i]));
    } else if (a == "--quick") {
      o.quick = true;
    } else if (const int used = own(a, value); used > 0) {
      i += used - 1;
    } else {
      std::cerr << "usage: " << usage << "\n";
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
}
inline void parse_options(int argc, char** argv, std::string_view usage, int min_reps, CommonOptions& o) {
  parse_options(argc, argv, usage, min_reps, o, [](std::string_view, const char*) { return 0; });
}

// The --json output file, opened for writing with 6 significant digits;
// exits with a message when it cannot be.
inline std::ofstream open_json(const std::string& path) {
  std::ofstream f(path);
  if (!f) {
    std::cerr << "cannot write " << path << "\n";
    std::exit(1);
  }
  f.precision(6);
  return f;
}

}  // namespace xylem_bench

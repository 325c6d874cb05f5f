#pragma once
// Timing helpers every xylem benchmark uses.
#include <algorithm>
#include <chrono>
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

}  // namespace xylem_bench

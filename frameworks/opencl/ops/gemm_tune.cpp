// Which of our gemm kernel's candidates (ops/gemm_candidates.hpp) a call
// runs: forced, cached, measured now, or the default. Measuring runs every
// candidate on buffers of the call's shape class of its own (so the call's
// operands are never touched) and blocks until done: it happens once per
// device and shape class, with tuning on (XYLEM_TUNE=1, `xylem tune`), and
// the winner goes to the tuning cache (xylem/plugin/tune.hpp).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <string>

#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/gemm_candidates.hpp"
#include "xylem/plugin/tune.hpp"

namespace xylem::opencl {

namespace {

// Below this many flops a launch costs more than any choice saves: the
// default runs, with no lookup.
constexpr double kTuneMinFlops = double(1 << 22);
// Timed runs per candidate after one untimed (which builds its program);
// the fastest counts, as the least disturbed by other work. Runs longer
// than kLongRun are timed once.
constexpr int kTimedRuns = 3;
constexpr double kLongRun = 0.25;
// How much faster than the default a candidate must run to replace it.
constexpr double kMargin = 0.95;

int forced_candidate() {
  const char* v = std::getenv("XYLEM_OPENCL_GEMM_CANDIDATE");
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long index = std::strtol(v, &end, 10);
  return *end == '\0' && index >= 0 && index < kGemmCandidateCount ? static_cast<int>(index) : -1;
}

std::int64_t shape_class(std::int64_t dim) {
  return static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(std::max<std::int64_t>(dim, 1))));
}

// Calls whose dims round up to the same powers of two share a choice.
plugin::tune::Key tune_key(const DeviceInfo& info, DType dtype, const GemmDims& g) {
  return {info.name,
          info.driver + " (" + info.platform_version + ")",
          "opencl gemm",
          std::string(name(dtype)) + " m" + std::to_string(shape_class(g.m)) + " n" + std::to_string(shape_class(g.n)) +
              " k" + std::to_string(shape_class(g.k)) + (g.trans_a ? " ta" : ""),
          kGemmCandidatesVersion};
}

int candidate_named(const std::string& choice) {
  for (int i = 0; i < kGemmCandidateCount; ++i)
    if (gemm_candidate_name(i) == choice) return i;
  return -1;
}

void fill_ones(Launcher& launch, cl_mem buffer, DType dtype, std::int64_t elements) {
  const cl_command_queue queue = launch.device().queue();
  const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * size_of(dtype);
  const float one_f = 1;
  const double one_d = 1;
  const void* pattern = dtype == DType::f64 ? static_cast<const void*>(&one_d) : &one_f;
  check(clEnqueueFillBuffer(queue, buffer, pattern, size_of(dtype), 0, bytes, 0, nullptr, nullptr),
        [&] { return launch.describe() + ": filling a tuning buffer"; });
}

// Seconds of one candidate's fastest run; infinity when it cannot run.
double time_candidate(Launcher& launch, int candidate, DType dtype, const GemmDims& g, const OurGemmOperands& ops) {
  const cl_command_queue queue = launch.device().queue();
  double best = std::numeric_limits<double>::infinity();
  try {
    for (int run = 0; run <= kTimedRuns; ++run) {
      const auto start = std::chrono::steady_clock::now();
      Launcher timed(launch.device(), launch.call(), Deps{});
      enqueue_our_gemm(timed, candidate, dtype, g, ops);
      check(clFinish(queue), [&] { return launch.describe() + ": timing a gemm candidate"; });
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (run > 0) best = std::min(best, seconds);
      if (run > 0 && seconds > kLongRun) break;
    }
  } catch (const Error&) {
    // A candidate this device cannot build or run loses; the default
    // itself failing fails the call later, where it runs.
    (void)clFinish(queue);
  }
  return best;
}

// Runs every candidate on ones of the call's shape, returns the fastest
// (the default when none ran) and stores it.
int measure(Launcher& launch, DType dtype, const GemmDims& call_dims, const plugin::tune::Key& key) {
  const cl_command_queue queue = launch.device().queue();
  // What is already queued must not be timed.
  check(clFinish(queue), [&] { return launch.describe() + ": waiting for the queue before tuning"; });
  GemmDims g = call_dims;
  g.alpha = 1;
  g.beta = 0;
  const Mem a = temporary_buffer(launch, g.m * g.k, dtype), b = temporary_buffer(launch, g.k * g.n, dtype),
            c = temporary_buffer(launch, g.m * g.n, dtype);
  fill_ones(launch, a.get(), dtype, g.m * g.k);
  fill_ones(launch, b.get(), dtype, g.k * g.n);
  const cl_long lda = g.trans_a ? g.m : g.k;
  const OurGemmOperands ops{a.get(), 0, g.trans_a ? 1 : lda, g.trans_a ? lda : 1, b.get(), 0, g.n,
                            c.get(), 0, g.n};
  // The default stays unless a candidate beats it clearly: on a loaded
  // machine a near tie is noise, and the default is the tested path.
  int winner = 0;
  double best = time_candidate(launch, 0, dtype, g, ops) * kMargin;
  for (int i = 1; i < kGemmCandidateCount; ++i) {
    const double seconds = time_candidate(launch, i, dtype, g, ops);
    if (seconds < best) {
      best = seconds;
      winner = i;
    }
  }
  if (winner == 0) best /= kMargin;
  if (best < std::numeric_limits<double>::infinity())
    (void)plugin::tune::store(key, {gemm_candidate_name(winner), best});
  return winner;
}

}  // namespace

int gemm_candidate_for(Launcher& launch, DType dtype, const GemmDims& g) {
  if (const int forced = forced_candidate(); forced >= 0) return forced;
  if (2.0 * double(g.m) * double(g.n) * double(g.k) < kTuneMinFlops) return 0;
  const plugin::tune::Key key = tune_key(launch.device().info(), dtype, g);
  if (const auto cached = plugin::tune::lookup(key)) {
    if (const int index = candidate_named(cached->choice); index >= 0) return index;
  }
  // A recording replays what it collected: nothing may be timed then.
  if (!plugin::tune::enabled() || launch.collecting()) return 0;
  try {
    return measure(launch, dtype, g, key);
  } catch (const Error& e) {
    // No room for the measurement's own buffers: the call itself may still fit.
    if (e.code() != ErrorCode::out_of_memory) throw;
    return 0;
  }
}

}  // namespace xylem::opencl

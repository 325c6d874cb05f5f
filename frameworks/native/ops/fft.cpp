// fft::c2c, r2c, c2r natively, through FFTW (fftw3 and fftw3f). Plans are
// made once per (transform, precision, lengths, batch, alignment) and kept
// until exit, on scratch buffers (so that planning may run transforms).
//
// Which plan: FFTW_MEASURE's where FFTW's wisdom has one, else 1-D
// transforms take FFTW_ESTIMATE and 2-D ones FFTW_MEASURE. MEASURE ran a
// 2^20-point c64 transform in 19 ms against ESTIMATE's 33 (13 against 26 on
// the 2-core EPYC VM) but took 4-8 s to plan it; ESTIMATE's plan of a
// 1024 x 1024 c128 transform walks the columns so badly that it took 101 ms
// (numpy.fft 33 ms), MEASURE's 10 ms, for 1 s of planning. So 1-D
// transforms are measured only when tuning is on (XYLEM_TUNE=1, `xylem
// tune`), and every measured plan's wisdom is kept in the cache directory
// (fftw-wisdom-f32.txt, -f64.txt, beside the tuning cache): later processes
// plan from it in microseconds. FFTW_TIMELIMIT was no way out: at 0.1-2 s
// it found plans no better than ESTIMATE's. A wisdom file FFTW cannot read
// (damaged, another FFTW) is ignored and rewritten by the next measurement.
//
// Transforms of kParallelElements and more are planned for the backend's
// threads (oneTBB's concurrency, which XYLEM_NATIVE_THREADS caps); FFTW's
// parallel loops then run on oneTBB's workers (fftw_threads_set_callback)
// rather than on a pool of FFTW's own beside them. Planned for one thread,
// a 2^20-point c64 transform on the 16-core H100 host took 30.7 ms against
// PyTorch's 0.75.
#include <fftw3.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/args.hpp"
#include "xylem/plugin/tune.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

enum class Kind { c2c_forward, c2c_inverse, r2c, c2r };

// One precision of FFTW's API: fftwf_* for float, fftw_* for double.
template <class R>
struct Fftw;
template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static constexpr auto dft = fftwf_plan_many_dft;
  static constexpr auto r2c = fftwf_plan_many_dft_r2c;
  static constexpr auto c2r = fftwf_plan_many_dft_c2r;
  static constexpr auto execute_dft = fftwf_execute_dft;
  static constexpr auto execute_r2c = fftwf_execute_dft_r2c;
  static constexpr auto execute_c2r = fftwf_execute_dft_c2r;
  static constexpr auto alloc = fftwf_malloc;
  static constexpr auto free = fftwf_free;
  static constexpr auto alignment_of = fftwf_alignment_of;
  static constexpr auto init_threads = fftwf_init_threads;
  static constexpr auto plan_with_nthreads = fftwf_plan_with_nthreads;
  static constexpr auto threads_set_callback = fftwf_threads_set_callback;
  static constexpr auto import_wisdom = fftwf_import_wisdom_from_filename;
  static constexpr auto export_wisdom = fftwf_export_wisdom_to_filename;
  static constexpr auto forget_wisdom = fftwf_forget_wisdom;
  static constexpr const char* name = "f32";
};
template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static constexpr auto dft = fftw_plan_many_dft;
  static constexpr auto r2c = fftw_plan_many_dft_r2c;
  static constexpr auto c2r = fftw_plan_many_dft_c2r;
  static constexpr auto execute_dft = fftw_execute_dft;
  static constexpr auto execute_r2c = fftw_execute_dft_r2c;
  static constexpr auto execute_c2r = fftw_execute_dft_c2r;
  static constexpr auto alloc = fftw_malloc;
  static constexpr auto free = fftw_free;
  static constexpr auto alignment_of = fftw_alignment_of;
  static constexpr auto init_threads = fftw_init_threads;
  static constexpr auto plan_with_nthreads = fftw_plan_with_nthreads;
  static constexpr auto threads_set_callback = fftw_threads_set_callback;
  static constexpr auto import_wisdom = fftw_import_wisdom_from_filename;
  static constexpr auto export_wisdom = fftw_export_wisdom_to_filename;
  static constexpr auto forget_wisdom = fftw_forget_wisdom;
  static constexpr const char* name = "f64";
};

// Below this many elements a call (every transform of the batch) stays on
// one thread: the hand-off would cost more than it saves.
constexpr std::int64_t kParallelElements = std::int64_t{1} << 16;

// FFTW's parallel loop on oneTBB: job i is work(jobs + i * size).
void tbb_loop(void* (*work)(char*), char* jobs, std::size_t size, int count, void*) {
  tbb::parallel_for(0, count, [&](int i) { (void)work(jobs + size * std::size_t(i)); });
}

// A transform's shape: rank 1 or 2 lengths of the real-side signal, and the batch.
struct Shape {
  int rank = 1;
  std::array<int, 2> n{};
  int batch = 0;
  // Elements of one transform on the full side and on the half (complex) side of r2c/c2r.
  [[nodiscard]] std::int64_t full() const { return std::int64_t(n[0]) * (rank == 2 ? n[1] : 1); }
  [[nodiscard]] std::int64_t half() const {
    return rank == 2 ? std::int64_t(n[0]) * (n[1] / 2 + 1) : std::int64_t(n[0] / 2 + 1);
  }
};

// FFTW buffers for planning (FFTW_MEASURE runs transforms in them) and for
// c2r's input, which FFTW overwrites.
template <class R>
struct Buffer {
  void* p;
  explicit Buffer(std::size_t bytes) : p(Fftw<R>::alloc(std::max<std::size_t>(bytes, 1))) {
    if (p == nullptr) throw Error(ErrorCode::out_of_memory, "fft: " + std::to_string(bytes) + " bytes of FFTW buffer");
  }
  ~Buffer() { Fftw<R>::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// FFTW's planner is not thread safe (executing a plan is): plans of either
// precision are made under this one lock, and kept for the process.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// Where one precision's wisdom is kept (empty: no cache directory).
template <class R>
std::filesystem::path wisdom_path() {
  const std::filesystem::path dir = plugin::tune::cache_directory();
  return dir.empty() ? dir : dir / (std::string("fftw-wisdom-") + Fftw<R>::name + ".txt");
}

// FFTW's wisdom from `file`; what it cannot read leaves none (a partly
// read file is not trusted).
template <class R>
void load_wisdom(const std::filesystem::path& file) {
  std::error_code ec;
  if (file.empty() || !std::filesystem::exists(file, ec)) return;
  if (Fftw<R>::import_wisdom(file.c_str()) == 0) Fftw<R>::forget_wisdom();
}

// All wisdom so far into `file`: what other processes stored meanwhile is
// read in first, then the whole is written to a temporary file renamed over
// the old, so a reader never sees part of one. Errors are ignored: the
// wisdom still serves this process.
template <class R>
void save_wisdom(const std::filesystem::path& file) {
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  load_wisdom<R>(file);
  const std::filesystem::path part = file.string() + "." + std::to_string(::getpid()) + ".part";
  if (Fftw<R>::export_wisdom(part.c_str()) != 0) std::filesystem::rename(part, file, ec);
  if (ec || std::filesystem::exists(part, ec)) std::filesystem::remove(part, ec);
}

template <class R>
class PlanCache {
 public:
  using Plan = typename Fftw<R>::Plan;
  PlanCache() : wisdom_(wisdom_path<R>()) {
    std::lock_guard lock(planner_mutex());  // FFTW's set-up calls are no more thread safe than its planner
    Fftw<R>::init_threads();
    Fftw<R>::threads_set_callback(&tbb_loop, nullptr);
    load_wisdom<R>(wisdom_);
  }

  Plan get(Kind kind, const Shape& s, bool aligned) {
    const int threads = s.full() * s.batch >= kParallelElements ? tbb::this_task_arena::max_concurrency() : 1;
    const auto key = std::make_tuple(int(kind), s.rank, s.n[0], s.n[1], s.batch, aligned, threads);
    std::lock_guard lock(planner_mutex());
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    Fftw<R>::plan_with_nthreads(threads);
    const unsigned alignment = aligned ? 0u : FFTW_UNALIGNED;
    Plan plan = make(kind, s, FFTW_MEASURE | FFTW_WISDOM_ONLY | alignment);
    if (plan == nullptr && s.rank == 1 && !plugin::tune::enabled()) plan = make(kind, s, FFTW_ESTIMATE | alignment);
    if (plan == nullptr) plan = measure(kind, s, alignment);
    if (plan == nullptr) throw Error(ErrorCode::internal, "fft: FFTW made no plan for this transform");
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  // FFTW_MEASURE's plan, its wisdom stored; a line on stderr where it took
  // long (seconds for a 2^20-point transform), as tuning does elsewhere.
  Plan measure(Kind kind, const Shape& s, unsigned alignment) {
    const auto start = std::chrono::steady_clock::now();
    const Plan plan = make(kind, s, FFTW_MEASURE | alignment);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (plan != nullptr) save_wisdom<R>(wisdom_);
    if (seconds >= 0.5)
      std::fprintf(stderr, "xylem fft: measured FFTW's plans for %s %d-point%s transforms x %d in %.1f s%s%s\n",
                   Fftw<R>::name, s.rank == 2 ? s.n[0] * s.n[1] : s.n[0], s.rank == 2 ? " 2-D" : "", s.batch,
                   seconds, wisdom_.empty() ? "" : ", kept in ", wisdom_.c_str());
    return plan;
  }

  static Plan make(Kind kind, const Shape& s, unsigned flags) {
    using C = typename Fftw<R>::Complex;
    // Each buffer holds either side: batch transforms of the complex side or of the real one.
    const std::int64_t complex_side = kind == Kind::c2c_forward || kind == Kind::c2c_inverse ? s.full() : s.half();
    const std::size_t bytes = std::size_t(std::max(2 * complex_side, s.full()) * s.batch) * sizeof(R);
    Buffer<R> in(bytes);
    Buffer<R> out(bytes);
    const int* n = s.n.data();
    switch (kind) {
      case Kind::c2c_forward:
      case Kind::c2c_inverse:
        return Fftw<R>::dft(s.rank, n, s.batch, static_cast<C*>(in.p), nullptr, 1, int(s.full()),
                            static_cast<C*>(out.p), nullptr, 1, int(s.full()),
                            kind == Kind::c2c_forward ? FFTW_FORWARD : FFTW_BACKWARD, flags);
      case Kind::r2c:
        return Fftw<R>::r2c(s.rank, n, s.batch, static_cast<R*>(in.p), nullptr, 1, int(s.full()),
                            static_cast<C*>(out.p), nullptr, 1, int(s.half()), flags);
      case Kind::c2r:
        return Fftw<R>::c2r(s.rank, n, s.batch, static_cast<C*>(in.p), nullptr, 1, int(s.half()),
                            static_cast<R*>(out.p), nullptr, 1, int(s.full()), flags);
    }
    return nullptr;
  }
  std::filesystem::path wisdom_;
  std::map<std::tuple<int, int, int, int, int, bool, int>, Plan> plans_;
};

// Never destroyed: a transform still queued when the program exits runs
// after static destructors (the device's exit wait is registered before the
// first plan is made), so its plan must outlive them.
template <class R>
PlanCache<R>& plans() {
  static PlanCache<R>* const cache = new PlanCache<R>;
  return *cache;
}

// FFTW takes int lengths and batches.
int as_int(std::int64_t v) {
  if (v > std::int64_t(INT32_MAX))
    throw Error(ErrorCode::invalid_argument, "fft: " + std::to_string(v) + " is over FFTW's limit of 2^31 - 1");
  return int(v);
}

// The shape of a call: x's or y's view (the real side for r2c and c2r).
Shape shape_of(const TensorArg& full_side) {
  const Layout& v = full_side.view;
  Shape s;
  s.rank = v.rank() - 1;
  s.batch = as_int(v.dims()[0]);
  for (int a = 0; a < s.rank; ++a) s.n[std::size_t(a)] = as_int(v.dims()[std::size_t(a) + 1]);
  return s;
}

// The norm's scale (an inverse's 1/n by default), over the backend's
// threads like the transform: on one thread it took longer than a 16-thread
// transform of the same data.
template <class R>
void scale_by(R* p, std::int64_t count, double scale) {
  if (scale == 1.0) return;
  const R f = static_cast<R>(scale);
  parallel_chunks(count, kParallelElements, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) p[i] *= f;
  });
}

template <class R>
bool aligned(const void* a, const void* b) {
  using F = Fftw<R>;
  return F::alignment_of(static_cast<R*>(const_cast<void*>(a))) == 0 &&
         F::alignment_of(static_cast<R*>(const_cast<void*>(b))) == 0;
}

template <class R>
void c2c(const OpCall& call) {
  using C = typename Fftw<R>::Complex;
  const auto args = plugin::unpack<plugin::args::fft_c2c>(call);
  const Shape s = shape_of(args.x);
  auto* x = element_ptr<C>(args.x);
  auto* y = element_ptr<C>(args.y);
  const Kind kind = args.inverse ? Kind::c2c_inverse : Kind::c2c_forward;
  Fftw<R>::execute_dft(plans<R>().get(kind, s, aligned<R>(x, y)), x, y);
  scale_by(reinterpret_cast<R*>(y), 2 * s.full() * s.batch, args.scale);
}

template <class R>
void r2c(const OpCall& call) {
  using C = typename Fftw<R>::Complex;
  const auto args = plugin::unpack<plugin::args::fft_r2c>(call);
  const Shape s = shape_of(args.x);
  auto* x = element_ptr<R>(args.x);
  auto* y = element_ptr<C>(args.y);
  Fftw<R>::execute_r2c(plans<R>().get(Kind::r2c, s, aligned<R>(x, y)), x, y);
  scale_by(reinterpret_cast<R*>(y), 2 * s.half() * s.batch, args.scale);
}

// FFTW's c2r overwrites its input, which the op must keep: it reads a copy.
template <class R>
void c2r(const OpCall& call) {
  using C = typename Fftw<R>::Complex;
  const auto args = plugin::unpack<plugin::args::fft_c2r>(call);
  const Shape s = shape_of(args.y);
  const std::size_t bytes = std::size_t(s.half() * s.batch) * sizeof(C);
  Buffer<R> copy(bytes);
  std::memcpy(copy.p, element_ptr<C>(args.x), bytes);
  auto* y = element_ptr<R>(args.y);
  Fftw<R>::execute_c2r(plans<R>().get(Kind::c2r, s, aligned<R>(copy.p, y)), static_cast<C*>(copy.p), y);
  scale_by(y, s.full() * s.batch, args.scale);
}

}  // namespace

void register_fft(KernelTable& table) {
  table.set(OpId::fft_c2c, DType::c64, &c2c<float>);
  table.set(OpId::fft_c2c, DType::c128, &c2c<double>);
  table.set(OpId::fft_r2c, DType::f32, &r2c<float>);
  table.set(OpId::fft_r2c, DType::f64, &r2c<double>);
  table.set(OpId::fft_c2r, DType::c64, &c2r<float>);
  table.set(OpId::fft_c2r, DType::c128, &c2r<double>);
}

}  // namespace xylem::native

// xylem_bench_eigen: the native framework against Eigen on the same data,
// in one run (the target: softmax and elementwise ops ahead of Eigen).
//
// On a 4096 x 4096 f32 matrix (and a [4096] row for the broadcast): softmax
// along rows; add, mul, div, maximum; a broadcast add; exp, sigmoid, sqrt,
// log, tanh; sum of everything, of rows (axis 1), of columns (axis 0); max
// of everything, of rows and of columns; min of everything and of rows.
//
// Two peers, each with its fastest code for the op:
//   Eigen       Eigen/Core expressions, vectorised, on ONE thread (Eigen
//               parallelises only its matrix products);
//   Eigen pool  the same ops through Eigen's Tensor module on a
//               ThreadPoolDevice with as many threads as xylem's oneTBB
//               (the threaded Eigen).
// Each repetition runs xylem, Eigen, Eigen pool in turn (drift hits all three
// alike); every figure is a median. Results are checked against Eigen's, so a
// fast wrong answer posts nothing.
//
//   --threads N   limit xylem's oneTBB and the Eigen pool to N threads
//                 (N = 1: single thread against single thread)
//   --reps N, --quick (512 x 512), --json FILE
#define EIGEN_USE_THREADS
#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>

#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Index = Eigen::Index;
using TMatrix = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
using TVector = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor>>;
using xylem_bench::median;
using xylem_bench::seconds_since;

struct Options : xylem_bench::CommonOptions {
  Options() { reps = 15; }
  int threads = 0;  // 0: oneTBB's default (every hardware thread)
};

// --quick also means 3 repetitions (unless --reps says otherwise).
Options parse(int argc, char** argv) {
  Options o;
  bool reps_given = false;
  xylem_bench::parse_options(argc, argv, "xylem_bench_eigen [--threads N] [--reps N] [--quick] [--json FILE]", 1, o,
                             [&](std::string_view a, const char* value) {
                               if (a == "--threads" && value) {
                                 o.threads = std::max(1, std::atoi(value));
                                 return 2;
                               }
                               return 0;
                             });
  for (int i = 1; i < argc; ++i) reps_given = reps_given || std::string_view(argv[i]) == "--reps";
  if (o.quick && !reps_given) o.reps = 3;
  return o;
}

struct Row {
  std::string what;
  double bytes = 0;                  // moved per call, for GB/s
  double ours = 0, eigen = 0, pool = 0;  // median seconds per call
};

// The three alternated, one warm-up call each.
Row time_three(const std::string& what, double bytes, int reps, const std::function<void()>& ours,
               const std::function<void()>& eigen, const std::function<void()>& pool) {
  const std::function<void()>* fs[3] = {&ours, &eigen, &pool};
  std::vector<double> t[3];
  for (const auto* f : fs) (*f)();
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 3; ++k) {
      const auto t0 = xylem_bench::Clock::now();
      (*fs[k])();
      t[k].push_back(seconds_since(t0));
    }
  }
  return {what, bytes, median(t[0]), median(t[1]), median(t[2])};
}

// Checks a result against Eigen's (every 997th element).
void agree(const std::string& what, const float* got, const float* eigen, std::size_t n, double tolerance) {
  for (std::size_t i = 0; i < n; i += 997) {
    if (!(std::fabs(double(got[i]) - double(eigen[i])) <= tolerance * (1 + std::fabs(double(eigen[i]))))) {
      std::cerr << what << ": result differs from Eigen's at " << i << ": " << got[i] << " vs " << eigen[i] << "\n";
      std::exit(1);
    }
  }
}

struct Summary {
  double min_eigen = 1e300, min_pool = 1e300;
  std::string at_eigen, at_pool;
};

Summary print(const std::vector<Row>& rows, int threads) {
  std::printf("xylem native (%d oneTBB threads) vs Eigen %d.%d.%d: 1 thread, and a pool of %d\n", threads,
              EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, threads);
  std::printf("%-26s %10s %10s %7s %10s %7s\n", "op", "xylem GB/s", "Eigen GB/s", "ratio", "pool GB/s", "ratio");
  Summary s;
  for (const auto& r : rows) {
    const double ours = r.bytes / r.ours * 1e-9, eigen = r.bytes / r.eigen * 1e-9, pool = r.bytes / r.pool * 1e-9;
    std::printf("%-26s %10.2f %10.2f %6.2fx %10.2f %6.2fx\n", r.what.c_str(), ours, eigen, ours / eigen, pool,
                ours / pool);
    if (ours / eigen < s.min_eigen) s.min_eigen = ours / eigen, s.at_eigen = r.what;
    if (ours / pool < s.min_pool) s.min_pool = ours / pool, s.at_pool = r.what;
  }
  std::printf("min ratio: %.2fx vs Eigen (%s), %.2fx vs Eigen pool (%s)\n", s.min_eigen, s.at_eigen.c_str(),
              s.min_pool, s.at_pool.c_str());
  return s;
}

void write_json(const std::string& path, const std::vector<Row>& rows, const Summary& s, int threads, Index n) {
  std::ofstream f = xylem_bench::open_json(path);
  f << "{\n  \"benchmark\": \"xylem_bench_eigen\",\n  \"threads\": " << threads << ",\n  \"n\": " << n
    << ",\n  \"ops\": [\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    f << "    {\"op\": \"" << r.what << "\", \"xylem_gbps\": " << r.bytes / r.ours * 1e-9
      << ", \"eigen_gbps\": " << r.bytes / r.eigen * 1e-9 << ", \"eigen_pool_gbps\": " << r.bytes / r.pool * 1e-9
      << "}" << (k + 1 < rows.size() ? ",\n" : "\n");
  }
  f << "  ],\n  \"min_ratio_eigen\": " << s.min_eigen << ",\n  \"min_ratio_eigen_pool\": " << s.min_pool << "\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Each row times single ops: automatic fusion would merge (and drop) the
  // repeated calls of a timing loop. The fusion row turns it on itself.
  xylem::set_fusion(false);
  const Options o = parse(argc, argv);
  // oneTBB is one runtime per process: this limit holds for libxylem too.
  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0)
    limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, o.threads);
  const int threads = o.threads > 0 ? o.threads : tbb::info::default_concurrency();
  Eigen::ThreadPool pool(threads);
  const Eigen::ThreadPoolDevice dev(&pool, threads);

  const Index n = o.quick ? 512 : 4096;
  const auto nn = std::size_t(n * n);
  const double fbytes = double(n * n) * sizeof(float);
  try {
    const xylem::Backend be = xylem::Backend::native();
    xylem::Generator gen(11);
    const xylem::Tensor xa = xylem::uniform(be, {n, n}, xylem::f32, gen, -4, 4);
    const xylem::Tensor xb = xylem::uniform(be, {n, n}, xylem::f32, gen, -4, 4);
    const xylem::Tensor xp = xylem::uniform(be, {n, n}, xylem::f32, gen, 0.01, 8);  // for sqrt, log
    const xylem::Tensor xv = xylem::uniform(be, {n}, xylem::f32, gen, -4, 4);
    xylem::Tensor y(xylem::Layout{n, n}, xylem::f32), y_all(xylem::Layout{}, xylem::f32);
    xylem::Tensor y_row(xylem::Layout{n}, xylem::f32);
    const auto ha = xa.to_vector<float>(), hb = xb.to_vector<float>(), hp = xp.to_vector<float>();
    const auto hv = xv.to_vector<float>();
    Matrix a = Eigen::Map<const Matrix>(ha.data(), n, n), b = Eigen::Map<const Matrix>(hb.data(), n, n);
    Matrix p = Eigen::Map<const Matrix>(hp.data(), n, n);
    Eigen::RowVectorXf v = Eigen::Map<const Eigen::RowVectorXf>(hv.data(), n);
    Matrix out(n, n), out_pool(n, n);
    Eigen::VectorXf col(n), col_pool(n);
    // The pool reads its own copies: reading the arrays Eigen has just read
    // would find part of them still in the last-level cache.
    Matrix pa = a, pb = b, pp = p;
    const TMatrix ta(pa.data(), n, n), tb(pb.data(), n, n), tp(pp.data(), n, n);
    const TVector tv(v.data(), n);
    TMatrix to(out_pool.data(), n, n);
    TVector tcol(col_pool.data(), n);
    Eigen::Tensor<float, 0, Eigen::RowMajor> t_all;
    float e_all = 0;
    const Eigen::array<Index, 1> axis1{1}, axis0{0};
    std::vector<Row> rows;

    // One op: time the three, then check xylem and the pool against Eigen.
    // out_kind: 'm' an n x n result, 'r' a row of n, 's' a scalar.
    const auto bench = [&](const std::string& what, double bytes, char out_kind, double tol,
                           const std::function<void()>& ours, const std::function<void()>& eigen,
                           const std::function<void()>& threaded) {
      rows.push_back(time_three(
          what, bytes, o.reps,
          [&] {
            ours();
            be.synchronize();
          },
          eigen, threaded));
      if (out_kind == 'm') {
        agree(what, y.to_vector<float>().data(), out.data(), nn, tol);
        agree(what + " (pool)", out_pool.data(), out.data(), nn, tol);
      } else if (out_kind == 'r') {
        agree(what, y_row.to_vector<float>().data(), col.data(), std::size_t(n), tol);
        agree(what + " (pool)", col_pool.data(), col.data(), std::size_t(n), tol);
      } else {
        agree(what, y_all.to_vector<float>().data(), &e_all, 1, tol);
        agree(what + " (pool)", t_all.data(), &e_all, 1, tol);
      }
    };

    // softmax of rows [first, last) of x into o: Eigen's vectorised row
    // loop (the one-expression form with rowwise broadcasts falls back to
    // scalar exp, which would flatter xylem).
    const auto softmax_rows = [](const Matrix& x, Matrix& o_, Index first, Index last) {
      for (Index r = first; r < last; ++r) {
        auto orow = o_.row(r).array();
        orow = (x.row(r).array() - x.row(r).maxCoeff()).exp();
        orow *= 1.0f / orow.sum();
      }
    };
    const Eigen::TensorOpCost row_cost(double(n) * 4, double(n) * 4, double(n) * 30);
    bench(
        "softmax rows", 2 * fbytes, 'm', 1e-5, [&] { xylem::nn::softmax(be, xa, 1, y); },
        [&] { softmax_rows(a, out, 0, n); },
        [&] { dev.parallelFor(n, row_cost, [&](Index first, Index last) { softmax_rows(pa, out_pool, first, last); }); });

#define XYLEM_BENCH_BINARY(name, fn, core, tensor)                                                     \
  bench(                                                                                               \
      name, 3 * fbytes, 'm', 1e-6, [&] { xylem::fn(be, xa, xb, y); }, [&] { out.array() = core; }, \
      [&] { to.device(dev) = tensor; })
    XYLEM_BENCH_BINARY("add", add, a.array() + b.array(), ta + tb);
    XYLEM_BENCH_BINARY("mul", mul, a.array() * b.array(), ta * tb);
    XYLEM_BENCH_BINARY("div", div, a.array() / b.array(), ta / tb);
    XYLEM_BENCH_BINARY("maximum", maximum, a.array().max(b.array()), ta.cwiseMax(tb));
#undef XYLEM_BENCH_BINARY
    const Eigen::array<Index, 2> as_row{1, n}, down{n, 1};
    bench(
        "add [n, n] + [n]", 2 * fbytes, 'm', 1e-6, [&] { xylem::add(be, xa, xv, y); },
        [&] { out.noalias() = a.rowwise() + v; },
        [&] { to.device(dev) = ta + tv.reshape(as_row).broadcast(down); });

#define XYLEM_BENCH_UNARY(name, call, x, core, tensor) \
  bench(name, 2 * fbytes, 'm', 1e-5, [&] { call(be, x, y); }, [&] { out.array() = core; }, [&] { to.device(dev) = tensor; })
    XYLEM_BENCH_UNARY("exp", xylem::exp, xa, a.array().exp(), ta.exp());
    XYLEM_BENCH_UNARY("sigmoid", xylem::nn::sigmoid, xa, (1.0f + (-a.array()).exp()).inverse(), ta.sigmoid());
    XYLEM_BENCH_UNARY("tanh", xylem::nn::tanh, xa, a.array().tanh(), ta.tanh());
    XYLEM_BENCH_UNARY("sqrt", xylem::sqrt, xp, p.array().sqrt(), tp.sqrt());
    XYLEM_BENCH_UNARY("log", xylem::log, xp, p.array().log(), tp.log());
#undef XYLEM_BENCH_UNARY

    // Sums of 4096 values in [-4, 4] differ by rounding only: 1e-4 of the
    // magnitude; of 16M values, the tolerance covers Eigen's own error.
    bench(
        "sum all", fbytes, 's', 1e-3, [&] { xylem::sum(be, xa, {}, y_all); }, [&] { e_all = a.sum(); },
        [&] { t_all.device(dev) = ta.sum(); });
    bench(
        "sum rows (axis 1)", fbytes, 'r', 1e-4, [&] { xylem::sum(be, xa, {{1}}, y_row); },
        [&] { col = a.rowwise().sum(); }, [&] { tcol.device(dev) = ta.sum(axis1); });
    bench(
        "sum columns (axis 0)", fbytes, 'r', 1e-4, [&] { xylem::sum(be, xa, {{0}}, y_row); },
        [&] { col = a.colwise().sum().transpose(); }, [&] { tcol.device(dev) = ta.sum(axis0); });
    bench(
        "max all", fbytes, 's', 0, [&] { xylem::max(be, xa, {}, y_all); }, [&] { e_all = a.maxCoeff(); },
        [&] { t_all.device(dev) = ta.maximum(); });
    bench(
        "max rows (axis 1)", fbytes, 'r', 0, [&] { xylem::max(be, xa, {{1}}, y_row); },
        [&] { col = a.rowwise().maxCoeff(); }, [&] { tcol.device(dev) = ta.maximum(axis1); });
    bench(
        "max columns (axis 0)", fbytes, 'r', 0, [&] { xylem::max(be, xa, {{0}}, y_row); },
        [&] { col = a.colwise().maxCoeff().transpose(); }, [&] { tcol.device(dev) = ta.maximum(axis0); });
    bench(
        "min all", fbytes, 's', 0, [&] { xylem::min(be, xa, {}, y_all); }, [&] { e_all = a.minCoeff(); },
        [&] { t_all.device(dev) = ta.minimum(); });
    bench(
        "min rows (axis 1)", fbytes, 'r', 0, [&] { xylem::min(be, xa, {{1}}, y_row); },
        [&] { col = a.rowwise().minCoeff(); }, [&] { tcol.device(dev) = ta.minimum(axis1); });

    const Summary s = print(rows, threads);
    if (!o.json.empty()) write_json(o.json, rows, s, threads, n);
  } catch (const xylem::Error& e) {
    std::cerr << "xylem_bench_eigen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

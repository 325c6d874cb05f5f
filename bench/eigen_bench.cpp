// xylem_bench_eigen: the native framework against Eigen on the same data,
// in one run (issue 5: softmax and elementwise ops ahead of Eigen).
//
//   softmax      rows of a 4096 x 4096 f32 matrix
//   add          two 16M f32 vectors, and a [4096, 4096] + [4096] broadcast
//   exp, sigmoid 16M f32
//   sum          16M f32 to one number; rows of 4096 x 4096
//
// Eigen evaluates coefficient-wise expressions on one thread (it
// parallelises only products), so the table also gives the ratio per
// hardware thread: xylem's speed over the number of threads it used.
// Every figure is the median of --reps alternated runs.
#include <Eigen/Core>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXf;
using xylem_bench::time_pair;

struct Row {
  std::string what;
  double bytes = 0;  // moved per call, for GB/s
  double ours = 0, eigen = 0;
};

void print(const std::vector<Row>& rows) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::printf("xylem native vs Eigen %d.%d.%d (%u hardware threads; Eigen uses 1 for these)\n", EIGEN_WORLD_VERSION,
              EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, threads);
  std::printf("%-30s %12s %12s %8s %12s\n", "op", "xylem GB/s", "Eigen GB/s", "ratio", "per thread");
  for (const auto& r : rows) {
    const double ours = r.bytes / r.ours * 1e-9, eigen = r.bytes / r.eigen * 1e-9;
    std::printf("%-30s %12.2f %12.2f %7.2fx %11.2fx\n", r.what.c_str(), ours, eigen, ours / eigen,
                ours / eigen / threads);
  }
}

// Checks xylem's result against Eigen's, so a fast wrong answer posts nothing.
void agree(const char* what, const std::vector<float>& ours, const float* eigen, double tolerance) {
  for (std::size_t i = 0; i < ours.size(); i += 997) {
    if (std::fabs(double(ours[i]) - double(eigen[i])) > tolerance * (1 + std::fabs(double(eigen[i])))) {
      std::cerr << what << ": xylem and Eigen differ at " << i << ": " << ours[i] << " vs " << eigen[i] << "\n";
      std::exit(1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  if (quick) reps = 3;
  const std::int64_t rows_n = quick ? 512 : 4096, n = rows_n * rows_n;
  try {
    const xylem::Backend be = xylem::Backend::native();
    xylem::Generator gen(11);
    xylem::Tensor xa = xylem::uniform(be, {rows_n, rows_n}, xylem::f32, gen, -4, 4);
    xylem::Tensor xb = xylem::uniform(be, {rows_n, rows_n}, xylem::f32, gen, -4, 4);
    xylem::Tensor xv = xylem::uniform(be, {rows_n}, xylem::f32, gen, -4, 4);
    xylem::Tensor y(xylem::Shape{rows_n, rows_n}, xylem::f32);
    const auto ha = xa.to_vector<float>(), hb = xb.to_vector<float>(), hv = xv.to_vector<float>();
    Matrix a = Eigen::Map<const Matrix>(ha.data(), rows_n, rows_n);
    Matrix b = Eigen::Map<const Matrix>(hb.data(), rows_n, rows_n);
    Eigen::RowVectorXf v = Eigen::Map<const Eigen::RowVectorXf>(hv.data(), rows_n);
    Matrix out(rows_n, rows_n);
    Vector col(rows_n);
    const double fbytes = double(n) * sizeof(float);
    std::vector<Row> rows;

    auto run = [&](const char* what, double bytes, auto&& ours, auto&& eigen) {
      const auto [t_ours, t_eigen] = time_pair(
          reps,
          [&] {
            ours();
            be.synchronize();
          },
          eigen);
      rows.push_back({what, bytes, t_ours, t_eigen});
    };

    run("softmax rows f32", 2 * fbytes, [&] { xylem::nn::softmax(be, xa, 1, y); },
        [&] {
          out = (a.colwise() - a.rowwise().maxCoeff()).array().exp().matrix();
          out.array().colwise() /= out.array().rowwise().sum();
        });
    agree("softmax", y.to_vector<float>(), out.data(), 1e-5);

    run("add f32", 3 * fbytes, [&] { xylem::add(be, xa, xb, y); }, [&] { out.noalias() = a + b; });
    agree("add", y.to_vector<float>(), out.data(), 1e-6);

    run("add [n, n] + [n] broadcast", 2 * fbytes, [&] { xylem::add(be, xa, xv, y); },
        [&] { out.noalias() = a.rowwise() + v; });
    agree("broadcast add", y.to_vector<float>(), out.data(), 1e-6);

    run("exp f32", 2 * fbytes, [&] { xylem::exp(be, xa, y); }, [&] { out.array() = a.array().exp(); });
    agree("exp", y.to_vector<float>(), out.data(), 1e-5);

    run("sigmoid f32", 2 * fbytes, [&] { xylem::nn::sigmoid(be, xa, y); },
        [&] { out.array() = (1.0f + (-a.array()).exp()).inverse(); });
    agree("sigmoid", y.to_vector<float>(), out.data(), 1e-5);

    xylem::Tensor total(xylem::Shape{}, xylem::f32), row_sums(xylem::Shape{rows_n}, xylem::f32);
    float eigen_total = 0;
    run("sum all f32", fbytes, [&] { xylem::sum(be, xa, {}, total); }, [&] { eigen_total = a.sum(); });
    agree("sum", total.to_vector<float>(), &eigen_total, 1e-3);

    run("sum rows f32", fbytes, [&] { xylem::sum(be, xa, {{1}}, row_sums); }, [&] { col = a.rowwise().sum(); });
    agree("row sums", row_sums.to_vector<float>(), col.data(), 1e-4);

    print(rows);
  } catch (const xylem::Error& e) {
    std::cerr << "xylem_bench_eigen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

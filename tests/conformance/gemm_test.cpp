// xylem::blas::gemm: every transpose combination, alpha and beta (beta = 0
// with a NaN-poisoned C, which must not leak), odd sizes, and operands that
// are views: transposed (the core normalises them), padded submatrices
// (row stride > columns), a transposed C. Then OpenCL's tuned kernel:
// every candidate, and tuning on first use over a damaged cache.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <utility>

#include "conformance/conformance.hpp"
#include "frameworks/opencl/ops/gemm_candidates.hpp"
#include "unit/child_process.hpp"
#include "xylem/plugin/tune.hpp"

namespace conformance {
namespace {

using xylem::blas::Transpose;

struct Size {
  std::int64_t m, n, k;
};

class Gemm : public Conformance {
 protected:
  // The storage of an operand whose op() is rows x cols, stored transposed
  // when `t`, laid out as `layout`.
  template <class T>
  Arg operand(bool t, std::int64_t rows, std::int64_t cols, ViewKind layout) {
    return input<T>(layout, t ? Dims{cols, rows} : Dims{rows, cols});
  }

  template <class T>
  void check(Size s, bool ta, bool tb, double alpha, double beta, ViewKind layout) {
    auto a = operand<T>(ta, s.m, s.k, layout);
    auto b = operand<T>(tb, s.k, s.n, layout);
    // C: poisoned (beta = 0) or random input, in the same layout family.
    Arg c = beta == 0 ? output<T>(layout, {s.m, s.n}) : input<T>(layout, {s.m, s.n});
    const auto a_at = [&](std::int64_t i, std::int64_t p) {  // op(a)[i][p]
      return a.at(static_cast<std::size_t>(ta ? p * s.m + i : i * s.k + p));
    };
    const auto b_at = [&](std::int64_t p, std::int64_t j) {  // op(b)[p][j]
      return b.at(static_cast<std::size_t>(tb ? j * s.k + p : p * s.n + j));
    };
    std::vector<double> expect(static_cast<std::size_t>(s.m * s.n)), scale(expect.size());
    for (std::int64_t i = 0; i < s.m; ++i) {
      for (std::int64_t j = 0; j < s.n; ++j) {
        double sum = 0, mag = 0;
        for (std::int64_t p = 0; p < s.k; ++p) {
          sum += a_at(i, p) * b_at(p, j);
          mag += std::abs(a_at(i, p) * b_at(p, j));
        }
        const auto e = static_cast<std::size_t>(i * s.n + j);
        const double c0 = beta == 0 ? 0.0 : c.at(e);
        expect[e] = alpha * sum + beta * c0;
        scale[e] = std::abs(alpha) * mag + std::abs(beta * c0);
      }
    }
    xylem::blas::gemm(backend, ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, alpha,
                      a.view, b.view, beta, c.view);
    const double rel = std::max(Tol<T>::elem, 2.0 * double(s.k + 2) * Tol<T>::eps);
    expect_result<T>(c, expect, [&](std::size_t e) { return rel * scale[e] + 1e-300; }, "gemm");
  }

  // Every transposition, scalar pair and view family of one size.
  template <class T>
  void check_variants(Size s, std::span<const std::pair<double, double>> scalars) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (auto [alpha, beta] : scalars) {
        for (ViewKind layout : {ViewKind::contiguous, ViewKind::transposed, ViewKind::padded}) {
          SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " op(a)="
                                            << (ta ? "a^T" : "a") << " op(b)=" << (tb ? "b^T" : "b")
                                            << " alpha=" << alpha << " beta=" << beta << " views "
                                            << name(layout));
          check<T>(s, ta, tb, alpha, beta, layout);
        }
      }
    }
  }
};

TEST_P(Gemm, gemm) {
  const Size sizes[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {64, 64, 64}};
  const std::pair<double, double> scalars[] = {{1, 0}, {-1.5, 0}, {0.5, 2}, {1, 1}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_gemm, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a.view, a.view, 1, a.view);
        })) {
      return;
    }
    for (auto s : sizes) {
      check_variants<T>(s, scalars);
    }
  });
}

// A larger product, where blocked and threaded kernels take over.
TEST_P(Gemm, gemm_large) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!backend.supports(OpId::blas_gemm, xylem::dtype_of_v<T>)) return;  // reported by gemm
    SCOPED_TRACE("m=257 n=129 k=300, a^T b, beta=0");
    check<T>({257, 129, 300}, true, false, 1.0, 0.0, ViewKind::contiguous);
  });
}

// Products with one small side (a linear layer at a small batch), which
// the native framework hands to oneDNN's gemm in blocks of c.
TEST_P(Gemm, gemm_skinny) {
  const Size sizes[] = {{8, 600, 700}, {700, 600, 8}, {600, 8, 700}};
  const std::pair<double, double> skinny_scalars[] = {{1, 0}, {0.5, 2}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!backend.supports(OpId::blas_gemm, xylem::dtype_of_v<T>)) return;  // reported by gemm
    for (auto s : sizes) {
      check_variants<T>(s, skinny_scalars);
    }
  });
}

// blas::matmul into a new tensor: rank 2; a batch; a rank-2 operand and one
// of batch 1 serving every product of the batch; then shapes that do not
// fit, each a shape_mismatch that leaves the operands as they were.
TEST_P(Gemm, matmul) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!backend.supports(OpId::blas_gemm, xylem::dtype_of_v<T>)) return;  // reported by gemm
    constexpr std::int64_t batch = 3, m = 5, k = 7, n = 4;
    auto a3 = input<T>(ViewKind::contiguous, {batch, m, k});
    auto b3 = input<T>(ViewKind::contiguous, {batch, k, n});
    auto a2 = input<T>(ViewKind::transposed, {m, k});
    auto b1 = input<T>(ViewKind::contiguous, {1, k, n});
    auto b2 = input<T>(ViewKind::padded, {k, n});
    // a @ b for a of batch_a (0: rank 2) and b of batch_b.
    const auto check = [&](const Arg& a, std::int64_t batch_a, const Arg& b, std::int64_t batch_b) {
      const Tensor c = xylem::blas::matmul(backend, a.view, b.view);
      const std::int64_t out_batch = std::max<std::int64_t>({batch_a, batch_b, 1});
      const bool rank2 = batch_a == 0 && batch_b == 0;
      ASSERT_EQ(c.layout().dims_string(),
                (rank2 ? xylem::Layout{m, n} : xylem::Layout{out_batch, m, n}).dims_string());
      const std::vector<double> got = c.to_doubles();
      const double rel = std::max(Tol<T>::elem, 2.0 * double(k + 2) * Tol<T>::eps);
      for (std::int64_t q = 0; q < out_batch; ++q)
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0, mag = 0;
            for (std::int64_t p = 0; p < k; ++p) {
              const double x = a.at(std::size_t((batch_a > 1 ? q * m * k : 0) + i * k + p));
              const double y = b.at(std::size_t((batch_b > 1 ? q * k * n : 0) + p * n + j));
              sum += x * y;
              mag += std::abs(x * y);
            }
            ASSERT_NEAR(got[std::size_t((q * m + i) * n + j)], sum, rel * mag + 1e-300)
                << "batch " << q << " at " << i << ", " << j;
          }
    };
    check(a2, 0, b2, 0);
    check(a2, 0, b3, batch);
    check(a3, batch, b3, batch);
    check(a3, batch, b1, 1);
    check(a2, 0, b1, 1);
    const std::vector<double> kept = a3.values();
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, (void)xylem::blas::matmul(backend, a3.view, a3.view));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                    (void)xylem::blas::matmul(backend, a3.view, input<T>(ViewKind::contiguous, {2, k, n}).view));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                    (void)xylem::blas::matmul(backend, input<T>(ViewKind::contiguous, {k}).view, b3.view));
    EXPECT_EQ(a3.values(), kept);
  });
}

// Sets an environment variable for a scope (the tests run on one thread).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// Every candidate the tuning cache may choose for OpenCL's kernel
// (frameworks/opencl/ops/gemm_candidates.hpp), forced in turn, on sizes
// that cut its tiles at every edge: each one's result must be the
// reference's. Other frameworks ignore the variable and check their one way.
TEST_P(Gemm, gemm_every_tuning_candidate) {
  // The last slices k (300: 256 + 44, 128 + 128 + 44); 300 rows end in a
  // cut band of every banded tile.
  const Size sizes[] = {{33, 47, 65}, {70, 100, 30}, {40, 50, 300}, {300, 70, 20}};
  for (int candidate = 0; candidate < xylem::opencl::kGemmCandidateCount; ++candidate) {
    const ScopedEnv force("XYLEM_OPENCL_GEMM_CANDIDATE", std::to_string(candidate));
    SCOPED_TRACE("candidate " + xylem::opencl::gemm_candidate_name(candidate));
    for_each_dtype([&](auto tag) {
      using T = decltype(tag);
      if (!backend.supports(OpId::blas_gemm, xylem::dtype_of_v<T>)) return;  // reported by gemm
      for (auto s : sizes) {
        check<T>(s, false, false, 1.0, 0.0, ViewKind::contiguous);
        check<T>(s, true, true, 0.5, 2.0, ViewKind::padded);
      }
    });
  }
}

// Tuning on, over a tuning cache that is garbage: the first call of a shape
// class measures (OpenCL) and gives the reference's result, the cache file
// is rewritten whole with the winner, and a call of the same class uses it.
TEST_P(Gemm, gemm_tuned_on_first_use) {
  const xylem_test::TempDir dir;
  const auto file = dir.path() / "tune.txt";
  {
    std::ofstream(file) << "not a tuning cache\n\x01\x02";
  }
  const auto old_path = xylem::plugin::tune::path();
  xylem::plugin::tune::set_path(file);
  xylem::plugin::tune::set_enabled(true);
  struct Restore {
    std::filesystem::path path;
    ~Restore() {
      xylem::plugin::tune::set_enabled(false);
      xylem::plugin::tune::set_path(path);
    }
  } restore{old_path};
  if (!backend.supports(OpId::blas_gemm, xylem::DType::f32)) return;  // reported by gemm
  check<float>({256, 200, 256}, false, false, 1.0, 0.0, ViewKind::contiguous);
  check<float>({250, 256, 250}, false, true, 0.5, 2.0, ViewKind::contiguous);
  if (backend.id().rfind("opencl", 0) != 0) return;
  const auto entries = xylem::plugin::tune::entries();
  ASSERT_EQ(entries.size(), 1u) << "one shape class, one entry";
  EXPECT_EQ(entries[0].key.op, "opencl gemm");
  EXPECT_EQ(entries[0].key.shape, "f32 m256 n256 k256");
  EXPECT_GT(entries[0].winner.seconds, 0);
  std::ifstream in(file);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "xylem-tune 1") << "the garbage was replaced";
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Gemm, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

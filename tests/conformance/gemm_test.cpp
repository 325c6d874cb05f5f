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

// a @ b as NumPy computes it, from the operands' logical values: vectors
// promoted to a row (a) or a column (b) and dropped from the result, batch
// axes broadcast. Returns the result's dims and values, and each value's
// sum of |terms| (the scale of its rounding error).
struct MatmulReference {
  std::vector<std::int64_t> dims;
  std::vector<double> values, scale;
};

MatmulReference matmul_reference(const Arg& a, Dims ad, const Arg& b, Dims bd) {
  const bool a_vector = ad.size() == 1, b_vector = bd.size() == 1;
  if (a_vector) ad.insert(ad.begin(), 1);
  if (b_vector) bd.push_back(1);
  const std::int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  const std::size_t rank = std::max(ad.size(), bd.size()) - 2;
  Dims batch(rank);
  const auto dim_at = [&](const Dims& d, std::size_t i) {  // batch axis i of d, right-aligned; 1 where absent
    const std::size_t own = d.size() - 2;
    return i + own >= rank ? d[i + own - rank] : std::int64_t{1};
  };
  for (std::size_t i = 0; i < rank; ++i) batch[i] = dim_at(ad, i) == 1 ? dim_at(bd, i) : dim_at(ad, i);
  // The element offset of matrix `q` (row-major over `batch`) in d's values.
  const auto matrix_offset = [&](const Dims& d, std::int64_t q) {
    std::int64_t offset = 0, stride = d[d.size() - 2] * d.back();
    for (std::size_t i = rank; i-- > 0;) {
      const std::int64_t index = q % batch[i];
      q /= batch[i];
      const std::int64_t own = dim_at(d, i);
      if (i + (d.size() - 2) >= rank) {
        offset += (own == 1 ? 0 : index) * stride;
        stride *= own;
      }
    }
    return offset;
  };
  std::int64_t matrices = 1;
  for (std::int64_t d : batch) matrices *= d;
  MatmulReference r;
  r.dims = batch;
  if (!a_vector) r.dims.push_back(m);
  if (!b_vector) r.dims.push_back(n);
  for (std::int64_t q = 0; q < matrices; ++q)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double x = a.at(std::size_t(matrix_offset(ad, q) + i * k + p));
          const double y = b.at(std::size_t(matrix_offset(bd, q) + p * n + j));
          sum += x * y;
          mag += std::abs(x * y);
        }
        r.values.push_back(sum);
        r.scale.push_back(mag);
      }
  return r;
}

// blas::matmul into a new tensor, against NumPy's rules: matrices, vectors
// either side, stacks whose batch axes broadcast (rank 2 or size-1 batch
// axes serving every product, views whose batch axes merge and ones that
// must be copied), empty batches; then shapes that do not fit, each a
// shape_mismatch that leaves the operands as they were.
TEST_P(Gemm, matmul) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!backend.supports(OpId::blas_gemm, xylem::dtype_of_v<T>)) return;  // reported by gemm
    constexpr std::int64_t batch = 3, m = 5, k = 7, n = 4;
    const auto check = [&](ViewKind a_kind, const Dims& ad, ViewKind b_kind, const Dims& bd) {
      const Arg a = input<T>(a_kind, ad), b = input<T>(b_kind, bd);
      SCOPED_TRACE(a.view.layout().dims_string() + " @ " + b.view.layout().dims_string());
      const Tensor c = xylem::blas::matmul(backend, a.view, b.view);
      const MatmulReference want = matmul_reference(a, ad, b, bd);
      ASSERT_EQ(c.layout().dims_string(), xylem::Layout(want.dims).dims_string());
      const std::vector<double> got = c.to_doubles();
      const double rel = std::max(Tol<T>::elem, 2.0 * double(k + 2) * Tol<T>::eps);
      for (std::size_t e = 0; e < got.size(); ++e)
        ASSERT_NEAR(got[e], want.values[e], rel * want.scale[e] + 1e-300) << "element " << e;
    };
    check(ViewKind::transposed, {m, k}, ViewKind::padded, {k, n});
    check(ViewKind::transposed, {m, k}, ViewKind::contiguous, {batch, k, n});
    check(ViewKind::contiguous, {batch, m, k}, ViewKind::contiguous, {batch, k, n});
    check(ViewKind::contiguous, {batch, m, k}, ViewKind::contiguous, {1, k, n});
    check(ViewKind::transposed, {m, k}, ViewKind::contiguous, {1, k, n});
    check(ViewKind::contiguous, {k}, ViewKind::contiguous, {batch, k, n});
    check(ViewKind::contiguous, {batch, m, k}, ViewKind::strided, {k});
    check(ViewKind::contiguous, {2, 1, m, k}, ViewKind::contiguous, {batch, k, n});
    check(ViewKind::padded, {2, batch, m, k}, ViewKind::transposed, {2, 1, k, n});
    check(ViewKind::transposed, {2, batch, m, k}, ViewKind::contiguous, {k, n});
    check(ViewKind::contiguous, {0, m, k}, ViewKind::contiguous, {k, n});
    check(ViewKind::contiguous, {2, 1, 2, m, k}, ViewKind::contiguous, {batch, 1, k, n});
    const Arg a3 = input<T>(ViewKind::contiguous, {batch, m, k});
    const std::vector<double> kept = a3.values();
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, (void)xylem::blas::matmul(backend, a3.view, a3.view));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                    (void)xylem::blas::matmul(backend, a3.view, input<T>(ViewKind::contiguous, {2, k, n}).view));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                    (void)xylem::blas::matmul(backend, input<T>(ViewKind::contiguous, {k}).view, a3.view));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                    (void)xylem::blas::matmul(backend, xylem::Tensor::from(std::vector<double>{1.0}).reshape(std::span<const std::int64_t>{}), a3.view));
    // Batches that broadcast to 2^40 products: out of memory, raised by the
    // call, the operands as they were.
    const Arg wide_a = input<T>(ViewKind::contiguous, {1 << 20, 1, 1, 1});
    const Arg wide_b = input<T>(ViewKind::contiguous, {1 << 20, 1, 1});
    const std::vector<double> wide_kept = wide_a.values();
    XY_EXPECT_ERROR(xylem::ErrorCode::out_of_memory, (void)xylem::blas::matmul(backend, wide_a.view, wide_b.view));
    EXPECT_EQ(wide_a.values(), wide_kept);
    EXPECT_EQ(a3.values(), kept);
  });
}

// Every candidate the tuning cache may choose for OpenCL's kernel
// (frameworks/opencl/ops/gemm_candidates.hpp), forced in turn, on sizes
// that cut its tiles at every edge: each one's result must be the
// reference's. Other frameworks ignore the variable and check their one way.
TEST_P(Gemm, gemm_every_tuning_candidate) {
  // The last slices k (300: 256 + 44, 128 + 128 + 44); 300 rows end in a
  // cut band of every banded tile.
  const Size sizes[] = {{33, 47, 65}, {70, 100, 30}, {40, 50, 300}, {300, 70, 20}};
  for (int candidate = 0; candidate < xylem::opencl::kGemmCandidateCount; ++candidate) {
    const xylem_test::ScopedEnv force("XYLEM_OPENCL_GEMM_CANDIDATE", std::to_string(candidate));
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

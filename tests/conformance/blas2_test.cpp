// xylem::blas rot and gemv (f32, f64), and gemm over strided batches (f16,
// bf16, f32, f64): every transpose, beta 0 over NaN-poisoned outputs, odd and
// empty sizes, operand views (padded, transposed, reversed vectors, batch
// gaps, interleaved batches, batch 1 and stride-0 batches serving every
// product); rejected shapes.
#include "conformance/math_common.hpp"
#include "frameworks/opencl/ops/gemm_candidates.hpp"

namespace conformance {
namespace {

using xylem::blas::Transpose;

Transpose flag(bool t) { return t ? Transpose::yes : Transpose::no; }

class Blas2 : public MathConformance {
 protected:
  // A vector of n elements laid out contiguously, every other element, or
  // backwards (a negative stride).
  enum class Vec { contiguous, strided, reversed };

  template <class T>
  Arg vec(Vec kind, std::int64_t n, bool poison = false) {
    if (kind != Vec::reversed) {
      const ViewKind layout = kind == Vec::strided ? ViewKind::strided : ViewKind::contiguous;
      return poison ? output<T>(layout, {n}) : input<T>(layout, {n});
    }
    Arg a = poison ? output<T>(ViewKind::contiguous, {n}) : input<T>(ViewKind::contiguous, {n});
    if (n == 0) return a;
    const std::int64_t dims[] = {n}, strides[] = {-1};
    a.view = a.base.as_strided(Layout::strided(dims, strides, n - 1));
    a.pos = positions(a.view.layout());
    return a;
  }
};

TEST_P(Blas2, rot) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_rot, xylem::dtype_of_v<T>, [&] {
          auto x = input<T>(ViewKind::contiguous, {3});
          auto y = input<T>(ViewKind::contiguous, {3});
          xylem::blas::rot(backend, x.view, y.view, 0.6, 0.8);
        })) {
      return;
    }
    std::uniform_real_distribution<double> angle(-3.2, 3.2);
    const double theta = angle(rng);
    const std::pair<double, double> rotations[] = {{std::cos(theta), std::sin(theta)}, {0, 1}, {1, 0}, {2, -0.5}};
    std::vector<std::tuple<std::int64_t, Vec, Vec>> shapes;
    for (auto n : kSizes) shapes.emplace_back(n, Vec::contiguous, Vec::contiguous);
    for (std::int64_t n : {1, 7, 4099}) shapes.emplace_back(n, Vec::strided, Vec::contiguous);
    shapes.emplace_back(1000, Vec::contiguous, Vec::strided);
    shapes.emplace_back(1001, Vec::reversed, Vec::strided);
    shapes.emplace_back(0, Vec::contiguous, Vec::contiguous);
    for (auto [c, s] : rotations) {
      for (auto [n, x_kind, y_kind] : shapes) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " x kind " << int(x_kind) << " y kind " << int(y_kind)
                                          << " c=" << c << " s=" << s);
        auto x = vec<T>(x_kind, n);
        auto y = vec<T>(y_kind, n);
        std::vector<double> ex(x.pos.size()), ey(y.pos.size()), scale(x.pos.size());
        for (std::size_t i = 0; i < ex.size(); ++i) {
          ex[i] = c * x.at(i) + s * y.at(i);
          ey[i] = c * y.at(i) - s * x.at(i);
          scale[i] = std::abs(c * x.at(i)) + std::abs(s * y.at(i)) + std::abs(c * y.at(i)) + std::abs(s * x.at(i));
        }
        xylem::blas::rot(backend, x.view, y.view, c, s);
        const auto allowed = [&](std::size_t i) { return 4 * Tol<T>::eps * scale[i] + 1e-300; };
        expect_result<T>(x, ex, allowed, "rot x");
        expect_result<T>(y, ey, allowed, "rot y");
      }
    }
    auto x = input<T>(ViewKind::contiguous, {3});
    auto y = input<T>(ViewKind::contiguous, {4});
    expect_rejected(xylem::ErrorCode::shape_mismatch, "rot", {"[3]", "[4]"}, {x.base, y.base},
                    [&] { xylem::blas::rot(backend, x.view, y.view, 1, 0); });
  });
}

TEST_P(Blas2, gemv) {
  struct Size {
    std::int64_t m, n;
  };
  const Size sizes[] = {{1, 1}, {7, 5}, {33, 65}, {64, 64}, {257, 129}, {0, 5}, {5, 0}};
  const std::pair<double, double> scalars[] = {{1, 0}, {-1.5, 0}, {0.5, 2}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_gemv, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          auto x = input<T>(ViewKind::contiguous, {2});
          xylem::blas::gemv(backend, Transpose::no, 1, a.view, x.view, 1, x.view);
        })) {
      return;
    }
    for (auto [m, n] : sizes) {
      for (bool ta : {false, true}) {
        for (auto [alpha, beta] : scalars) {
          for (ViewKind layout : {ViewKind::contiguous, ViewKind::padded, ViewKind::transposed}) {
            // Vectors: contiguous with contiguous matrices, else strided x and reversed y.
            const Vec x_kind = layout == ViewKind::contiguous ? Vec::contiguous : Vec::strided;
            const Vec y_kind = layout == ViewKind::contiguous ? Vec::contiguous : Vec::reversed;
            SCOPED_TRACE(::testing::Message() << "a [" << m << ", " << n << "] " << name(layout)
                                              << (ta ? " transposed" : "") << " alpha=" << alpha << " beta=" << beta);
            const std::int64_t rows = ta ? n : m, cols = ta ? m : n;  // op(a) is rows x cols
            auto a = input<T>(layout, {m, n});
            auto x = vec<T>(x_kind, cols);
            auto y = vec<T>(y_kind, rows, beta == 0);
            std::vector<double> expect(static_cast<std::size_t>(rows)), scale(expect.size());
            for (std::int64_t i = 0; i < rows; ++i) {
              double sum = 0, mag = 0;
              for (std::int64_t p = 0; p < cols; ++p) {
                const double v = a.at(static_cast<std::size_t>(ta ? p * n + i : i * n + p)) * x.at(std::size_t(p));
                sum += v;
                mag += std::abs(v);
              }
              const auto e = static_cast<std::size_t>(i);
              const double y0 = beta == 0 ? 0.0 : y.at(e);
              expect[e] = alpha * sum + beta * y0;
              scale[e] = std::abs(alpha) * mag + std::abs(beta * y0);
            }
            xylem::blas::gemv(backend, flag(ta), alpha, a.view, x.view, beta, y.view);
            const double rel = std::max(Tol<T>::elem, 2.0 * double(cols + 2) * Tol<T>::eps);
            expect_result<T>(y, expect, [&](std::size_t e) { return rel * scale[e] + 1e-300; }, "gemv");
          }
        }
      }
    }
    auto a = input<T>(ViewKind::contiguous, {3, 4});
    auto x5 = input<T>(ViewKind::contiguous, {5});
    auto x4 = input<T>(ViewKind::contiguous, {4});
    auto y3 = output<T>(ViewKind::contiguous, {3});
    auto y4 = output<T>(ViewKind::contiguous, {4});
    const std::vector<Tensor> all{a.base, x5.base, x4.base, y3.base, y4.base};
    expect_rejected(xylem::ErrorCode::shape_mismatch, "gemv", {"[3, 4]", "[5]"}, all,
                    [&] { xylem::blas::gemv(backend, Transpose::no, 1, a.view, x5.view, 0, y3.view); });
    expect_rejected(xylem::ErrorCode::shape_mismatch, "gemv", {"[3, 4]", "[4]"}, all,
                    [&] { xylem::blas::gemv(backend, Transpose::no, 1, a.view, x4.view, 0, y4.view); });
    expect_rejected(xylem::ErrorCode::shape_mismatch, "gemv", {"[4, 3]", "[4]"}, all,  // op(a) is [4, 3]
                    [&] { xylem::blas::gemv(backend, Transpose::yes, 1, a.view, x4.view, 0, y4.view); });
  });
}

// ---- gemm over strided batches --------------------------------------------

// How a batch of matrices [batch, rows, cols] lies in its storage.
enum class Batch {
  contiguous,
  gaps,         // every other matrix of a larger batch, rows padded: batch stride > rows * row stride
  interleaved,  // the transpose of [rows, batch, cols]: batch stride < the matrix's extent
  transposed,   // each matrix stored transposed (the core normalises it)
  broadcast,    // one matrix, seen through batch stride 0
};

const char* name(Batch b) {
  switch (b) {
    case Batch::contiguous:
      return "contiguous";
    case Batch::gaps:
      return "gaps";
    case Batch::interleaved:
      return "interleaved";
    case Batch::transposed:
      return "transposed";
    case Batch::broadcast:
      return "stride 0";
  }
  return "?";
}

struct BatchCase {
  Batch a, b, c;
  bool a_single = false, b_single = false;  // a or b of batch 1, serving every product
};

std::string describe(const BatchCase& v) {
  return std::string("a ") + name(v.a) + (v.a_single ? " (batch 1)" : "") + ", b " + name(v.b) +
         (v.b_single ? " (batch 1)" : "") + ", c " + name(v.c);
}

class GemmBatched : public MathConformance {
 protected:
  // A batch of rows x cols matrices of dtype: random multiples of 1/64 in
  // [-2, 2] (exact in every float dtype), or poisoned with NaN on the backend.
  Arg batch(DType dtype, Batch kind, std::int64_t count, std::int64_t rows, std::int64_t cols, bool poison) {
    Dims base_dims;
    switch (kind) {
      case Batch::contiguous:
        base_dims = {count, rows, cols};
        break;
      case Batch::gaps:
        base_dims = {2 * count, rows, cols + 3};
        break;
      case Batch::interleaved:
        base_dims = {rows, count, cols};
        break;
      case Batch::transposed:
        base_dims = {count, cols, rows};
        break;
      case Batch::broadcast:
        base_dims = {1, rows, cols};
        break;
    }
    const Layout base_shape{std::span<const std::int64_t>(base_dims)};
    Arg a;
    a.base_values.resize(static_cast<std::size_t>(base_shape.numel()));
    std::uniform_int_distribution<int> sixty_fourths(-128, 128);
    for (auto& v : a.base_values) v = poison ? kNaN : sixty_fourths(rng) / 64.0;
    const auto bytes = encode(dtype, a.base_values);
    a.base = Tensor::from_bytes(bytes.data(), bytes.size(), base_shape, dtype);
    if (poison) xylem::fill(backend, a.base, kNaN);
    switch (kind) {
      case Batch::contiguous:
        a.view = a.base;
        break;
      case Batch::gaps:
        a.view = a.base.slice(0, 0, 2 * count, 2).slice(2, 1, cols + 1);
        break;
      case Batch::interleaved:
        a.view = a.base.transpose(0, 1);
        break;
      case Batch::transposed:
        a.view = a.base.transpose(1, 2);
        break;
      case Batch::broadcast: {
        const std::int64_t dims[] = {count, rows, cols}, strides[] = {0, cols, 1};
        a.view = a.base.as_strided(Layout::strided(dims, strides, 0));
        break;
      }
    }
    a.pos = positions(a.view.layout());
    return a;
  }

  void check(DType dtype, std::int64_t count, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb,
             double alpha, double beta, const BatchCase& v) {
    const std::int64_t a_count = v.a_single ? 1 : count, b_count = v.b_single ? 1 : count;
    // Stored a is [.., m, k], or [.., k, m] when op(a) transposes it; likewise b.
    auto a = batch(dtype, v.a, a_count, ta ? k : m, ta ? m : k, false);
    auto b = batch(dtype, v.b, b_count, tb ? n : k, tb ? k : n, false);
    auto c = batch(dtype, v.c, count, m, n, beta == 0);
    const auto a_at = [&](std::int64_t q, std::int64_t i, std::int64_t p) {  // op(a_q)[i][p]
      const std::int64_t base = (a_count == 1 ? 0 : q) * m * k;
      return a.at(static_cast<std::size_t>(base + (ta ? p * m + i : i * k + p)));
    };
    const auto b_at = [&](std::int64_t q, std::int64_t p, std::int64_t j) {  // op(b_q)[p][j]
      const std::int64_t base = (b_count == 1 ? 0 : q) * k * n;
      return b.at(static_cast<std::size_t>(base + (tb ? j * k + p : p * n + j)));
    };
    std::vector<double> expect(static_cast<std::size_t>(count * m * n)), scale(expect.size());
    for (std::int64_t q = 0; q < count; ++q) {
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0, mag = 0;
          for (std::int64_t p = 0; p < k; ++p) {
            sum += a_at(q, i, p) * b_at(q, p, j);
            mag += std::abs(a_at(q, i, p) * b_at(q, p, j));
          }
          const auto e = static_cast<std::size_t>((q * m + i) * n + j);
          const double c0 = beta == 0 ? 0.0 : c.at(e);
          expect[e] = alpha * sum + beta * c0;
          scale[e] = std::abs(alpha) * mag + std::abs(beta * c0);
        }
      }
    }
    xylem::blas::gemm(backend, flag(ta), flag(tb), alpha, a.view, b.view, beta, c.view);
    // f32 accumulation for f32 and the half types, plus the final rounding.
    const double accumulate = dtype == DType::f64 ? Tol<double>::eps : Tol<float>::eps;
    const double rounding = dtype == DType::f16 ? 0x1p-11 : dtype == DType::bf16 ? 0x1p-8 : 0.0;
    expect_result(c, expect, [&](std::size_t e) {
      return rounding * std::abs(expect[e]) + 2.0 * double(k + 2) * accumulate * scale[e] + 1e-300;
    }, "batched gemm");
    EXPECT_EQ(a.base.version(), 1u) << "a was written";
  }
};

TEST_P(GemmBatched, gemm) {
  struct Size {
    std::int64_t count, m, n, k;
  };
  const Size sizes[] = {{1, 1, 1, 1}, {3, 7, 5, 3}, {4, 33, 17, 65}, {2, 64, 64, 64}, {5, 1, 9, 4}};
  const BatchCase cases[] = {
      {Batch::contiguous, Batch::contiguous, Batch::contiguous},
      {Batch::contiguous, Batch::contiguous, Batch::contiguous, true, false},
      {Batch::gaps, Batch::contiguous, Batch::contiguous, false, true},
      {Batch::broadcast, Batch::interleaved, Batch::contiguous},
      {Batch::gaps, Batch::interleaved, Batch::gaps},
      {Batch::transposed, Batch::transposed, Batch::transposed},
      {Batch::contiguous, Batch::broadcast, Batch::interleaved},
  };
  const std::pair<double, double> scalars[] = {{1, 0}, {0.5, -0.5}};
  for_each_float_dtype([&](DType dtype) {
    if (!runs(OpId::blas_gemm_batched, dtype, [&] {
          auto a = batch(dtype, Batch::contiguous, 2, 2, 2, false);
          xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a.view, a.view, 1, a.view);
        })) {
      return;
    }
    for (auto s : sizes) {
      for (int t = 0; t < 4; ++t) {
        for (auto [alpha, beta] : scalars) {
          for (const auto& v : cases) {
            SCOPED_TRACE(::testing::Message() << "batch=" << s.count << " m=" << s.m << " n=" << s.n << " k=" << s.k
                                              << " ta=" << (t & 1) << " tb=" << (t >> 1) << " alpha=" << alpha
                                              << " beta=" << beta << ", " << describe(v));
            check(dtype, s.count, s.m, s.n, s.k, t & 1, t & 2, alpha, beta, v);
          }
        }
      }
    }
    {
      SCOPED_TRACE("a larger batch, where blocked and threaded kernels take over");
      check(dtype, 3, 129, 257, 200, true, false, 1.0, 0.0, {Batch::contiguous, Batch::contiguous, Batch::contiguous});
    }
    {
      SCOPED_TRACE("an empty batch");
      check(dtype, 0, 3, 3, 3, false, false, 1.0, 0.0, {Batch::contiguous, Batch::contiguous, Batch::contiguous});
    }
  });
}

// Every candidate of OpenCL's gemm kernel over a batch, which runs as one
// launch: the banded tiles pack each matrix's b (a shared b once), and
// 300 rows end in a cut band of each.
TEST_P(GemmBatched, every_tuning_candidate) {
  if (backend.id().rfind("opencl", 0) != 0) GTEST_SKIP() << "the candidates of OpenCL's gemm kernel";
  for (int candidate = 0; candidate < xylem::opencl::kGemmCandidateCount; ++candidate) {
    const xylem_test::ScopedEnv force("XYLEM_OPENCL_GEMM_CANDIDATE", std::to_string(candidate));
    SCOPED_TRACE("candidate " + xylem::opencl::gemm_candidate_name(candidate));
    for (DType dtype : {DType::f32, DType::f64}) {
      if (!backend.supports(OpId::blas_gemm_batched, dtype)) continue;
      check(dtype, 3, 70, 100, 30, false, true, 1.0, 0.0, {Batch::contiguous, Batch::contiguous, Batch::contiguous});
      check(dtype, 2, 300, 70, 40, true, false, 0.5, 2.0, {Batch::gaps, Batch::broadcast, Batch::interleaved});
      check(dtype, 4, 33, 47, 65, false, false, 1.0, 0.0, {Batch::broadcast, Batch::transposed, Batch::gaps});
    }
  }
}

// An empty inner dimension: c = beta*c, as BLAS (and 2-D gemm) define it.
TEST_P(GemmBatched, empty_inner_dimension) {
  for_each_float_dtype([&](DType dtype) {
    if (!backend.supports(OpId::blas_gemm_batched, dtype)) return;  // reported by gemm
    check(dtype, 2, 3, 4, 0, false, false, 1.0, 0.0, {Batch::contiguous, Batch::contiguous, Batch::contiguous});
  });
}

TEST_P(GemmBatched, rejects_bad_arguments) {
  const DType f = DType::f32;
  auto a = batch(f, Batch::contiguous, 3, 4, 5, false);
  auto b2 = batch(f, Batch::contiguous, 2, 5, 6, false);
  auto b = batch(f, Batch::contiguous, 3, 5, 6, false);
  auto b_inner = batch(f, Batch::contiguous, 3, 6, 7, false);
  auto c = batch(f, Batch::contiguous, 3, 4, 6, true);
  auto c1 = batch(f, Batch::contiguous, 1, 4, 6, true);
  auto c64 = batch(DType::f64, Batch::contiguous, 3, 4, 6, true);
  const std::vector<Tensor> all{a.base, b2.base, b.base, b_inner.base, c.base, c1.base, c64.base};
  const auto gemm = [&](const Arg& x, const Arg& y, Arg& z) {
    return [&] { xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, x.view, y.view, 0, z.view); };
  };
  expect_rejected(xylem::ErrorCode::shape_mismatch, "gemm", {"[3, 4, 5]", "[2, 5, 6]"}, all, gemm(a, b2, c));
  expect_rejected(xylem::ErrorCode::shape_mismatch, "gemm", {"[3, 4, 5]", "[3, 6, 7]"}, all, gemm(a, b_inner, c));
  expect_rejected(xylem::ErrorCode::shape_mismatch, "gemm", {"[1, 4, 6]"}, all, gemm(a, b, c1));
  expect_rejected(xylem::ErrorCode::dtype_mismatch, "gemm", {}, all, gemm(a, b, c64));
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Blas2, ::testing::ValuesIn(available_targets()), target_label);
INSTANTIATE_TEST_SUITE_P(Frameworks, GemmBatched, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

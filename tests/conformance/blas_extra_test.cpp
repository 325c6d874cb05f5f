// xylem::blas iamin, ger, syrk, trsm, geam and the list-batched gemm (f32,
// f64) against float64 references: every flag combination, operand views
// (padded, transposed, strided, reversed vectors), scales of 0 over NaN
// operands, unread triangles poisoned with NaN, empty sizes; rejected
// arguments leave every tensor as it was.
#include "conformance/math_common.hpp"

namespace conformance {
namespace {

using xylem::blas::Diag;
using xylem::blas::Side;
using xylem::blas::Transpose;
using xylem::blas::Uplo;

Transpose flag(bool t) { return t ? Transpose::yes : Transpose::no; }

constexpr ViewKind kMatrixViews[] = {ViewKind::contiguous, ViewKind::padded, ViewKind::transposed,
                                     ViewKind::strided};

class BlasExtra : public MathConformance {
 protected:
  // A vector holding `logical` backwards in its storage (stride -1).
  template <class T>
  Arg reversed(const std::vector<double>& logical) {
    const auto n = std::int64_t(logical.size());
    Arg a = input<T>(ViewKind::contiguous, {n});
    if (n == 0) return a;
    std::vector<T> stored(logical.size());
    for (std::size_t k = 0; k < stored.size(); ++k) stored[stored.size() - 1 - k] = static_cast<T>(logical[k]);
    a.base = Tensor::from(stored, Layout{n});
    a.base_values.assign(stored.begin(), stored.end());
    const std::int64_t dims[] = {n}, strides[] = {-1};
    a.view = a.base.as_strided(Layout::strided(dims, strides, n - 1));
    a.pos = positions(a.view.layout());
    return a;
  }

  // A vector of n elements: contiguous (kind 0), every other element (1),
  // or backwards (2).
  template <class T>
  Arg vec(int kind, std::int64_t n, const std::vector<double>* logical = nullptr) {
    if (kind == 2) return reversed<T>(logical ? *logical : random_values(std::size_t(n)));
    return input<T>(kind == 0 ? ViewKind::contiguous : ViewKind::strided, {n}, -1, 1, logical);
  }

  // A matrix whose logical elements are `logical`, laid out as `layout`.
  template <class T>
  Arg matrix(ViewKind layout, std::int64_t rows, std::int64_t cols, const std::vector<double>& logical) {
    return input<T>(layout, {rows, cols}, -1, 1, &logical);
  }

  std::vector<double> random_values(std::size_t n, double low = -1, double high = 1) {
    std::uniform_real_distribution<double> u(low, high);
    std::vector<double> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  }
};

// ---- iamin -------------------------------------------------------------------

TEST_P(BlasExtra, iamin) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_iamin, xylem::dtype_of_v<T>, [&] {
          auto x = input<T>(ViewKind::contiguous, {3});
          (void)xylem::blas::iamin(backend, x.view).get();
        })) {
      return;
    }
    for (std::int64_t n : {1, 7, 1000, 100003}) {
      for (int kind : {0, 1, 2}) {
        for (int variant : {0, 1, 2}) {  // random, a tie of the minimum, a NaN
          SCOPED_TRACE(::testing::Message() << "n=" << n << " vector kind " << kind << " variant " << variant);
          std::vector<double> values = random_values(std::size_t(n), 0.5, 2);
          for (std::size_t i = 0; i < values.size(); ++i)
            if (i % 3 == 0) values[i] = -values[i];
          std::uniform_int_distribution<std::int64_t> at(0, n - 1);
          if (variant == 1 && n > 2) {
            const std::int64_t i = at(rng) / 2, j = i + 1 + at(rng) / 2;
            values[std::size_t(i)] = 0.25;
            values[std::size_t(std::min(j, n - 1))] = -0.25;
          }
          if (variant == 2) {
            values[std::size_t(at(rng))] = kNaN;
            values[std::size_t(at(rng))] = kNaN;
          }
          const Arg x = vec<T>(kind, n, &values);
          std::int64_t expect = -1;
          double best = 0;
          for (std::size_t k = 0; k < x.pos.size(); ++k) {
            const double v = std::abs(x.at(k));
            if (std::isnan(v)) {
              expect = std::int64_t(k);
              break;
            }
            if (expect < 0 || v < best) expect = std::int64_t(k), best = v;
          }
          EXPECT_EQ(xylem::blas::iamin(backend, x.view).get(), expect);
        }
      }
    }
    auto empty = input<T>(ViewKind::contiguous, {0});
    expect_rejected(xylem::ErrorCode::invalid_argument, "iamin", {"[0]"}, {empty.base},
                    [&] { (void)xylem::blas::iamin(backend, empty.view); });
    auto x = input<T>(ViewKind::contiguous, {4});
    auto wrong = input<T>(ViewKind::contiguous, {1});  // a result must be i64
    expect_rejected(xylem::ErrorCode::dtype_mismatch, "iamin", {}, {x.base, wrong.base},
                    [&] { xylem::blas::iamin(backend, x.view, wrong.view); });
  });
}

// ---- ger ---------------------------------------------------------------------

TEST_P(BlasExtra, ger) {
  struct Size {
    std::int64_t m, n;
  };
  const Size sizes[] = {{1, 1}, {7, 5}, {33, 65}, {0, 4}, {4, 0}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_ger, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          auto x = input<T>(ViewKind::contiguous, {2});
          xylem::blas::ger(backend, 1, x.view, x.view, a.view);
        })) {
      return;
    }
    for (auto [m, n] : sizes) {
      for (ViewKind layout : kMatrixViews) {
        for (int kind : {0, 1, 2}) {
          for (double alpha : {1.0, -0.75, 0.0}) {
            SCOPED_TRACE(::testing::Message() << "a [" << m << ", " << n << "] " << name(layout) << " vectors "
                                              << kind << " alpha=" << alpha);
            auto a = input<T>(layout, {m, n});
            auto x = vec<T>(kind, m);
            auto y = vec<T>(2 - kind, n);
            std::vector<double> expect(a.pos.size());
            for (std::int64_t i = 0; i < m; ++i)
              for (std::int64_t j = 0; j < n; ++j) {
                const auto e = std::size_t(i * n + j);
                expect[e] = a.at(e) + alpha * x.at(std::size_t(i)) * y.at(std::size_t(j));
              }
            xylem::blas::ger(backend, alpha, x.view, y.view, a.view);
            expect_result<T>(a, expect, [&](std::size_t e) { return 4 * Tol<T>::eps * (std::abs(expect[e]) + 2); },
                             "ger");
          }
        }
      }
    }
    auto a = input<T>(ViewKind::contiguous, {3, 4});
    auto x3 = input<T>(ViewKind::contiguous, {3});
    auto x4 = input<T>(ViewKind::contiguous, {4});
    const std::vector<Tensor> all{a.base, x3.base, x4.base};
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::ger", {"[3, 4]", "[4]"}, all,
                    [&] { xylem::blas::ger(backend, 1, x4.view, x4.view, a.view); });
    auto other = input<std::conditional_t<std::is_same_v<T, float>, double, float>>(ViewKind::contiguous, {4});
    expect_rejected(xylem::ErrorCode::dtype_mismatch, "blas::ger", {}, {a.base, x3.base, other.base},
                    [&] { xylem::blas::ger(backend, 1, x3.view, other.view, a.view); });
  });
}

// ---- syrk --------------------------------------------------------------------

TEST_P(BlasExtra, syrk) {
  struct Size {
    std::int64_t n, k;
  };
  // 300 x 40: native's f32 takes its tiles on oneDNN there (two tile rows,
  // the second partial, diagonal tiles through the scratch square).
  const Size sizes[] = {{1, 1}, {5, 3}, {17, 40}, {33, 1}, {4, 0}, {0, 3}, {300, 40}};
  const std::pair<double, double> scalars[] = {{1, 0}, {-0.5, 1.5}, {0, 2}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_syrk, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          auto c = input<T>(ViewKind::contiguous, {2, 2});
          xylem::blas::syrk(backend, Uplo::upper, Transpose::no, 1, a.view, 0, c.view);
        })) {
      return;
    }
    for (auto [n, k] : sizes) {
      for (bool upper : {true, false}) {
        for (bool trans : {false, true}) {
          for (auto [alpha, beta] : scalars) {
            for (ViewKind layout : kMatrixViews) {
              SCOPED_TRACE(::testing::Message() << "n=" << n << " k=" << k << (upper ? " upper" : " lower")
                                                << (trans ? " transposed" : "") << " " << name(layout)
                                                << " alpha=" << alpha << " beta=" << beta);
              auto a = input<T>(layout, trans ? Dims{k, n} : Dims{n, k});
              // beta 0: the triangle written holds NaN, which must not be read.
              std::vector<double> c0 = random_values(std::size_t(n * n));
              const auto in_triangle = [&](std::int64_t i, std::int64_t j) { return upper ? j >= i : j <= i; };
              for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t j = 0; j < n; ++j)
                  if (beta == 0 && in_triangle(i, j)) c0[std::size_t(i * n + j)] = kNaN;
              // The views of c: the same kinds, the transposed one exercising
              // the exchanged triangle.
              auto c = matrix<T>(layout, n, n, c0);
              std::vector<double> expect(c.pos.size()), scale(c.pos.size());
              const auto op_a = [&](std::int64_t i, std::int64_t p) {
                return a.at(std::size_t(trans ? p * n + i : i * k + p));
              };
              for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t j = 0; j < n; ++j) {
                  const auto e = std::size_t(i * n + j);
                  if (!in_triangle(i, j)) {
                    expect[e] = c.at(e);
                    continue;
                  }
                  double s = 0, mag = 0;
                  for (std::int64_t p = 0; p < k; ++p) {
                    s += op_a(i, p) * op_a(j, p);
                    mag += std::abs(op_a(i, p) * op_a(j, p));
                  }
                  const double old = beta == 0 ? 0.0 : beta * c.at(e);
                  expect[e] = alpha * s + old;
                  scale[e] = std::abs(alpha) * mag + std::abs(old);
                }
              xylem::blas::syrk(backend, upper ? Uplo::upper : Uplo::lower, flag(trans), alpha, a.view, beta, c.view);
              const double rel = 2.0 * double(k + 2) * Tol<T>::eps;
              expect_result<T>(c, expect, [&](std::size_t e) { return rel * scale[e] + 1e-300; }, "syrk");
            }
          }
        }
      }
    }
    auto a = input<T>(ViewKind::contiguous, {3, 4});
    auto c3 = input<T>(ViewKind::contiguous, {3, 3});
    auto c4 = input<T>(ViewKind::contiguous, {4, 3});
    const std::vector<Tensor> all{a.base, c3.base, c4.base};
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::syrk", {"[3, 4]", "[4, 3]"}, all, [&] {
      xylem::blas::syrk(backend, Uplo::upper, Transpose::no, 1, a.view, 1, c4.view);
    });
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::syrk", {"[4, 3]", "[3, 3]"}, all, [&] {
      xylem::blas::syrk(backend, Uplo::lower, Transpose::yes, 1, a.view, 1, c3.view);  // op(a) is [4, 3]
    });
    auto ints = Tensor::from(std::vector<std::int32_t>(9, 1), Layout{3, 3});
    expect_rejected(xylem::ErrorCode::dtype_mismatch, "blas::syrk", {}, {a.base, ints},
                    [&] { xylem::blas::syrk(backend, Uplo::upper, Transpose::no, 1, a.view, 1, ints); });
  });
}

// ---- trsm --------------------------------------------------------------------

TEST_P(BlasExtra, trsm) {
  struct Size {
    std::int64_t m, n;
  };
  // 150 x 40 and 200 x 16 left: native's f32 solves by oneDNN blocks there
  // (two of 128 rows, the second partial), in 3 column panels (block by
  // block on fewer threads) and in one (panel by panel).
  const Size sizes[] = {{1, 1}, {6, 4}, {37, 19}, {0, 3}, {3, 0}, {150, 40}, {200, 16}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_trsm, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2}, 1, 2);
          auto b = input<T>(ViewKind::contiguous, {2, 2});
          xylem::blas::trsm(backend, Side::left, Uplo::upper, Transpose::no, Diag::non_unit, 1, a.view, b.view);
        })) {
      return;
    }
    for (auto [m, n] : sizes) {
      for (bool left : {true, false}) {
        for (bool upper : {true, false}) {
          for (bool trans : {false, true}) {
            for (bool unit : {false, true}) {
              for (double alpha : {1.0, -2.5}) {
                // Contiguous operands, then a transposed a with a padded b,
                // then a padded a with a transposed b, then strided views.
                for (int views = 0; views < 4; ++views) {
                  const ViewKind a_layout = views == 1   ? ViewKind::transposed
                                            : views == 2 ? ViewKind::padded
                                            : views == 3 ? ViewKind::strided
                                                         : ViewKind::contiguous;
                  const ViewKind b_layout = views == 1   ? ViewKind::padded
                                            : views == 2 ? ViewKind::transposed
                                            : views == 3 ? ViewKind::strided
                                                         : ViewKind::contiguous;
                  SCOPED_TRACE(::testing::Message() << "b [" << m << ", " << n << "] " << (left ? "left" : "right")
                                                    << (upper ? " upper" : " lower") << (trans ? " transposed" : "")
                                                    << (unit ? " unit" : "") << " alpha=" << alpha << " a "
                                                    << name(a_layout) << ", b " << name(b_layout));
                  const std::int64_t k = left ? m : n;
                  // Well conditioned: |diagonal| in [1, 2], the rest small;
                  // the triangle not read (and a unit diagonal) holds NaN.
                  const double off = 0.5 / double(std::max<std::int64_t>(k, 1));
                  std::vector<double> av = random_values(std::size_t(k * k), -off, off);
                  const std::vector<double> diag = random_values(std::size_t(k), 1, 2);
                  for (std::int64_t i = 0; i < k; ++i)
                    for (std::int64_t j = 0; j < k; ++j) {
                      double& v = av[std::size_t(i * k + j)];
                      if (i == j) v = unit ? kNaN : (i % 2 ? -diag[std::size_t(i)] : diag[std::size_t(i)]);
                      else if (upper ? j < i : j > i) v = kNaN;
                    }
                  auto a = matrix<T>(a_layout, k, k, av);
                  auto b = input<T>(b_layout, {m, n});
                  // The reference: op(a) in double, with the unit diagonal.
                  const auto op_a = [&](std::int64_t i, std::int64_t j) {
                    if (i == j && unit) return 1.0;
                    const std::int64_t r = trans ? j : i, c = trans ? i : j;
                    const bool stored = upper ? c >= r : c <= r;
                    return stored ? a.at(std::size_t(r * k + c)) : 0.0;
                  };
                  std::vector<double> x(b.pos.size());
                  if (left) {  // op(a) x = alpha b, column by column
                    for (std::int64_t col = 0; col < n; ++col) {
                      const bool lower_op = upper == trans;
                      for (std::int64_t s = 0; s < m; ++s) {
                        const std::int64_t i = lower_op ? s : m - 1 - s;
                        double acc = alpha * b.at(std::size_t(i * n + col));
                        for (std::int64_t j = 0; j < m; ++j)
                          if (j != i && (lower_op ? j < i : j > i)) acc -= op_a(i, j) * x[std::size_t(j * n + col)];
                        x[std::size_t(i * n + col)] = acc / op_a(i, i);
                      }
                    }
                  } else {  // x op(a) = alpha b, row by row: x[r, j] sums x[r, i] op(a)[i, j]
                    for (std::int64_t row = 0; row < m; ++row) {
                      const bool upper_op = upper != trans;
                      for (std::int64_t s = 0; s < n; ++s) {
                        const std::int64_t j = upper_op ? s : n - 1 - s;
                        double acc = alpha * b.at(std::size_t(row * n + j));
                        for (std::int64_t i = 0; i < n; ++i)
                          if (i != j && (upper_op ? i < j : i > j)) acc -= x[std::size_t(row * n + i)] * op_a(i, j);
                        x[std::size_t(row * n + j)] = acc / op_a(j, j);
                      }
                    }
                  }
                  xylem::blas::trsm(backend, left ? Side::left : Side::right, upper ? Uplo::upper : Uplo::lower,
                                    flag(trans), unit ? Diag::unit : Diag::non_unit, alpha, a.view, b.view);
                  double largest_x = 0;
                  for (double v : x) largest_x = std::max(largest_x, std::abs(v));
                  const double allowed = 8.0 * double(k + 2) * Tol<T>::eps * (largest_x + std::abs(alpha));
                  expect_result<T>(b, x, [&](std::size_t) { return allowed; }, "trsm");
                }
              }
            }
          }
        }
      }
    }
    // alpha 0 writes zeros, reading neither matrix.
    std::vector<double> nan_a(9, kNaN);
    auto a_nan = matrix<T>(ViewKind::contiguous, 3, 3, nan_a);
    auto b = input<T>(ViewKind::contiguous, {3, 2});
    b.base_values.assign(b.base_values.size(), kNaN);
    xylem::fill(backend, b.base, kNaN);
    xylem::blas::trsm(backend, Side::left, Uplo::lower, Transpose::no, Diag::non_unit, 0, a_nan.view, b.view);
    expect_result<T>(b, std::vector<double>(6, 0.0), [](std::size_t) { return 0.0; }, "trsm alpha 0");

    auto a = input<T>(ViewKind::contiguous, {3, 3}, 1, 2);
    auto b34 = input<T>(ViewKind::contiguous, {3, 4});
    auto a23 = input<T>(ViewKind::contiguous, {2, 3});
    const std::vector<Tensor> all{a.base, b34.base, a23.base};
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::trsm", {"[3, 3]", "[3, 4]"}, all, [&] {
      xylem::blas::trsm(backend, Side::right, Uplo::upper, Transpose::no, Diag::non_unit, 1, a.view, b34.view);
    });
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::trsm", {"[2, 3]"}, all, [&] {
      xylem::blas::trsm(backend, Side::left, Uplo::upper, Transpose::no, Diag::non_unit, 1, a23.view, b34.view);
    });
  });
}

// ---- geam --------------------------------------------------------------------

TEST_P(BlasExtra, geam) {
  struct Size {
    std::int64_t m, n;
  };
  const Size sizes[] = {{1, 1}, {7, 5}, {64, 33}, {0, 3}, {3, 0}};
  const std::pair<double, double> scalars[] = {{1, 1}, {-0.5, 2}, {0, 1.5}, {1.25, 0}, {0, 0}};
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_geam, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          auto c = output<T>(ViewKind::contiguous, {2, 2});
          xylem::blas::geam(backend, Transpose::no, Transpose::no, 1, a.view, 1, a.view, c.view);
        })) {
      return;
    }
    for (auto [m, n] : sizes) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (auto [alpha, beta] : scalars) {
            for (ViewKind layout : kMatrixViews) {
              SCOPED_TRACE(::testing::Message() << "c [" << m << ", " << n << "] " << name(layout)
                                                << (ta ? " a^T" : "") << (tb ? " b^T" : "") << " alpha=" << alpha
                                                << " beta=" << beta);
              // An operand whose scale is 0 holds NaN: it must not be read.
              std::vector<double> av = random_values(std::size_t(m * n)), bv = random_values(std::size_t(m * n));
              if (alpha == 0) av.assign(av.size(), kNaN);
              if (beta == 0) bv.assign(bv.size(), kNaN);
              auto a = matrix<T>(layout, ta ? n : m, ta ? m : n, av);
              const ViewKind b_layout = layout == ViewKind::transposed ? ViewKind::contiguous : ViewKind::transposed;
              auto bm = matrix<T>(b_layout, tb ? n : m, tb ? m : n, bv);
              auto c = output<T>(layout, {m, n});
              std::vector<double> expect(c.pos.size());
              for (std::int64_t i = 0; i < m; ++i)
                for (std::int64_t j = 0; j < n; ++j) {
                  const double x = a.at(std::size_t(ta ? j * m + i : i * n + j));
                  const double y = bm.at(std::size_t(tb ? j * m + i : i * n + j));
                  expect[std::size_t(i * n + j)] = (alpha == 0 ? 0.0 : alpha * x) + (beta == 0 ? 0.0 : beta * y);
                }
              xylem::blas::geam(backend, flag(ta), flag(tb), alpha, a.view, beta, bm.view, c.view);
              expect_result<T>(c, expect, [&](std::size_t e) { return 4 * Tol<T>::eps * (std::abs(expect[e]) + 4); },
                               "geam");
            }
          }
        }
      }
    }
    // c the same memory as a: as if a were read first.
    auto a = input<T>(ViewKind::contiguous, {3, 3});
    auto bm = input<T>(ViewKind::contiguous, {3, 3});
    std::vector<double> expect(9);
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        expect[std::size_t(i * 3 + j)] = 2 * a.at(std::size_t(j * 3 + i)) - bm.at(std::size_t(i * 3 + j));
    xylem::blas::geam(backend, Transpose::yes, Transpose::no, 2, a.view, -1, bm.view, a.view);
    expect_result<T>(a, expect, [&](std::size_t e) { return 4 * Tol<T>::eps * (std::abs(expect[e]) + 4); },
                     "geam in place");

    auto a34 = input<T>(ViewKind::contiguous, {3, 4});
    auto b43 = input<T>(ViewKind::contiguous, {4, 3});
    auto c34 = output<T>(ViewKind::contiguous, {3, 4});
    const std::vector<Tensor> all{a34.base, b43.base, c34.base};
    expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::geam", {"[3, 4]", "[4, 3]"}, all, [&] {
      xylem::blas::geam(backend, Transpose::no, Transpose::no, 1, a34.view, 1, b43.view, c34.view);
    });
    auto other = input<std::conditional_t<std::is_same_v<T, float>, double, float>>(ViewKind::contiguous, {4, 3});
    expect_rejected(xylem::ErrorCode::dtype_mismatch, "blas::geam", {}, {a34.base, other.base, c34.base}, [&] {
      xylem::blas::geam(backend, Transpose::no, Transpose::yes, 1, a34.view, 1, other.view, c34.view);
    });
  });
}

// ---- gemm over lists ---------------------------------------------------------

TEST_P(BlasExtra, gemm_batched_lists) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!runs(OpId::blas_gemm, xylem::dtype_of_v<T>, [&] {
          auto a = input<T>(ViewKind::contiguous, {2, 2});
          auto c = output<T>(ViewKind::contiguous, {2, 2});
          xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a.view, a.view, 0, c.view);
        })) {
      return;
    }
    struct Size {
      std::int64_t m, n, k;
    };
    for (auto [m, n, k] : {Size{5, 7, 3}, Size{16, 9, 33}, Size{4, 3, 0}, Size{0, 3, 2}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (double beta : {0.0, 0.5}) {
            SCOPED_TRACE(::testing::Message() << "m=" << m << " n=" << n << " k=" << k << (ta ? " a^T" : "")
                                              << (tb ? " b^T" : "") << " beta=" << beta);
            constexpr int kCount = 3;
            std::vector<Arg> as, bs, cs;
            for (int i = 0; i < kCount; ++i) {
              as.push_back(input<T>(i == 1 ? ViewKind::padded : ViewKind::contiguous, ta ? Dims{k, m} : Dims{m, k}));
              bs.push_back(input<T>(i == 2 ? ViewKind::transposed : ViewKind::contiguous, tb ? Dims{n, k} : Dims{k, n}));
              cs.push_back(beta == 0 ? output<T>(i == 2 ? ViewKind::transposed : ViewKind::contiguous, {m, n})
                                     : input<T>(ViewKind::padded, {m, n}));
            }
            std::vector<Tensor> a_list, b_list, c_list;
            for (int i = 0; i < kCount; ++i) {
              a_list.push_back(as[std::size_t(i)].view);
              b_list.push_back(bs[std::size_t(i)].view);
              c_list.push_back(cs[std::size_t(i)].view);
            }
            const double alpha = -1.5;
            xylem::blas::gemm_batched(backend, flag(ta), flag(tb), alpha, a_list, b_list, beta, c_list);
            for (int i = 0; i < kCount; ++i) {
              const Arg &a = as[std::size_t(i)], &b = bs[std::size_t(i)], &c = cs[std::size_t(i)];
              std::vector<double> expect(c.pos.size()), scale(c.pos.size());
              for (std::int64_t r = 0; r < m; ++r)
                for (std::int64_t col = 0; col < n; ++col) {
                  double s = 0, mag = 0;
                  for (std::int64_t p = 0; p < k; ++p) {
                    const double v = a.at(std::size_t(ta ? p * m + r : r * k + p)) *
                                     b.at(std::size_t(tb ? col * k + p : p * n + col));
                    s += v;
                    mag += std::abs(v);
                  }
                  const auto e = std::size_t(r * n + col);
                  const double old = beta == 0 ? 0.0 : beta * c.at(e);
                  expect[e] = alpha * s + old;
                  scale[e] = std::abs(alpha) * mag + std::abs(old);
                }
              const double rel = 2.0 * double(k + 2) * Tol<T>::eps;
              expect_result<T>(c, expect, [&](std::size_t e) { return rel * scale[e] + 1e-300; },
                               "gemm_batched " + std::to_string(i));
            }
          }
        }
      }
    }
    // Slices of batches (one strided batched gemm): a the same matrix for
    // every product, b slices of a batch, c slices of a batch seen
    // transposed.
    {
      constexpr std::int64_t count = 4, m = 5, n = 6, k = 3;
      auto a = input<T>(ViewKind::contiguous, {m, k});
      auto b = input<T>(ViewKind::contiguous, {count, k, n});
      auto c = output<T>(ViewKind::contiguous, {count, n, m});
      std::vector<Tensor> al, bl, cl;
      for (std::int64_t i = 0; i < count; ++i) {
        al.push_back(a.view);
        const std::int64_t b_dims[] = {k, n}, b_strides[] = {n, 1};
        bl.push_back(b.base.as_strided(Layout::strided(b_dims, b_strides, i * k * n)));
        const std::int64_t c_dims[] = {m, n}, c_strides[] = {1, m};
        cl.push_back(c.base.as_strided(Layout::strided(c_dims, c_strides, i * n * m)));
      }
      xylem::blas::gemm_batched(backend, Transpose::no, Transpose::no, 2, al, bl, 0, cl);
      std::vector<double> expect(c.pos.size()), scale(c.pos.size());
      for (std::int64_t i = 0; i < count; ++i)
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t col = 0; col < n; ++col) {
            double sum = 0, mag = 0;
            for (std::int64_t p = 0; p < k; ++p) {
              const double v = a.at(std::size_t(r * k + p)) * b.at(std::size_t((i * k + p) * n + col));
              sum += v;
              mag += std::abs(v);
            }
            const auto e = std::size_t((i * n + col) * m + r);  // c[i] is stored transposed
            expect[e] = 2 * sum;
            scale[e] = 2 * mag;
          }
      const double rel = 2.0 * double(k + 2) * Tol<T>::eps;
      expect_result<T>(c, expect, [&](std::size_t e) { return rel * scale[e] + 1e-300; }, "gemm_batched slices");
    }
    // An empty list does nothing; lists of other lengths, a product of
    // other dims or a c named twice change nothing.
    xylem::blas::gemm_batched(backend, Transpose::no, Transpose::no, 1, {}, {}, 0, {});
    auto a = input<T>(ViewKind::contiguous, {2, 3});
    auto a_wide = input<T>(ViewKind::contiguous, {2, 4});
    auto b = input<T>(ViewKind::contiguous, {3, 2});
    auto c0 = input<T>(ViewKind::contiguous, {2, 2});
    auto c1 = input<T>(ViewKind::contiguous, {2, 2});
    const std::vector<Tensor> all{a.base, a_wide.base, b.base, c0.base, c1.base};
    {
      std::vector<Tensor> al{a.view, a.view}, bl{b.view}, cl{c0.view, c1.view};
      expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::gemm_batched", {}, all,
                      [&] { xylem::blas::gemm_batched(backend, Transpose::no, Transpose::no, 1, al, bl, 1, cl); });
    }
    {
      std::vector<Tensor> al{a.view, a_wide.view}, bl{b.view, b.view}, cl{c0.view, c1.view};
      expect_rejected(xylem::ErrorCode::shape_mismatch, "blas::gemm_batched", {"[2, 4]"}, all,
                      [&] { xylem::blas::gemm_batched(backend, Transpose::no, Transpose::no, 1, al, bl, 1, cl); });
    }
    {
      std::vector<Tensor> al{a.view, a.view}, bl{b.view, b.view}, cl{c0.view, c0.view};
      expect_rejected(xylem::ErrorCode::invalid_argument, "blas::gemm_batched", {}, all,
                      [&] { xylem::blas::gemm_batched(backend, Transpose::no, Transpose::no, 1, al, bl, 1, cl); });
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, BlasExtra, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

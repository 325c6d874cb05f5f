// xylem::nn rms_norm, group_norm and instance_norm, forward and backward, in
// f16, bf16, f32 and f64 against float64 references: optional weight/bias,
// rank 2 to 4, views, groups of one channel and of all; gradients also
// against finite differences of the backend's forward op in f64; empty
// batches; bad arguments raise the right error and change nothing.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;

constexpr double kEps = 1e-5;

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// ---- rms_norm ------------------------------------------------------------------

struct RmsCase {
  Dims dims;
  int normalized_rank;
  bool weight;
  ViewKind layout = ViewKind::contiguous;
};

std::vector<RmsCase> rms_cases() {
  return {{{7, 33}, 1, true},   {{7, 33}, 1, false}, {{2, 3, 5, 4}, 2, true},
          {{1, 1}, 1, true},    {{3, 4096}, 1, true}, {{5, 64}, 1, true, ViewKind::strided},
          {{16, 40}, 1, true, ViewKind::transposed}};
}

std::string describe(const RmsCase& c) {
  return std::string(name(c.layout)) + " " + dims_text(c.dims) + " normalized_rank " +
         std::to_string(c.normalized_rank) + (c.weight ? " weight" : " no weight");
}

// 1/sqrt(mean(x^2) + eps) per row.
std::vector<double> rms_rstd(const std::vector<double>& x, std::int64_t rows, std::int64_t n) {
  std::vector<double> r(idx(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < n; ++j) s += x[idx(i * n + j)] * x[idx(i * n + j)];
    r[idx(i)] = 1 / std::sqrt(s / double(n) + kEps);
  }
  return r;
}

// ---- group_norm ----------------------------------------------------------------

struct GroupCase {
  Dims dims;
  int groups;  // 0: instance_norm (one group per channel)
  bool affine;
  ViewKind layout = ViewKind::contiguous;
  double offset = 0;  // added to x: a large mean
};

std::vector<GroupCase> group_cases() {
  return {{{2, 6, 5}, 3, true},
          {{2, 6, 5}, 3, false},
          {{3, 4, 3, 3}, 2, true},
          {{2, 4, 3, 3}, 4, true},
          {{2, 4, 3, 3}, 0, true},
          {{2, 5, 7}, 0, false},
          {{4, 8}, 2, true},
          {{1, 1, 1}, 1, true},
          {{2, 6, 4, 4}, 3, true, ViewKind::strided},
          {{6, 4}, 2, true, ViewKind::transposed},
          {{2, 32, 8, 8}, 8, true},
          {{2, 4, 16}, 1, true, ViewKind::contiguous, 10}};
}

std::string describe(const GroupCase& c) {
  return std::string(name(c.layout)) + " " + dims_text(c.dims) +
         (c.groups ? " groups " + std::to_string(c.groups) : std::string(" instance_norm")) +
         (c.affine ? " weight, bias" : " no weight, bias") +
         (c.offset != 0 ? " offset " + std::to_string(c.offset) : "");
}

// x [N, C, S] with C channels in `groups` groups.
struct Groups {
  std::int64_t n, c, s, groups;
  Groups(const Dims& dims, int g)
      : n(dims[0]), c(dims[1]), s(product(dims) / (dims[0] * dims[1])), groups(g ? g : dims[1]) {}
  [[nodiscard]] std::int64_t per_group() const { return c / groups; }
  [[nodiscard]] std::int64_t count() const { return per_group() * s; }
  // Element k of group (i, g): channel g*C/G + k/S, position k%S.
  [[nodiscard]] std::size_t at(std::int64_t i, std::int64_t g, std::int64_t k) const {
    return idx((i * c + g * per_group() + k / s) * s + k % s);
  }
  [[nodiscard]] std::int64_t channel(std::int64_t g, std::int64_t k) const { return g * per_group() + k / s; }
};

// Per (sample, group): mean and rstd.
void group_stats(const std::vector<double>& x, const Groups& g, std::vector<double>& mean, std::vector<double>& rstd) {
  mean.assign(idx(g.n * g.groups), 0);
  rstd.assign(mean.size(), 0);
  for (std::int64_t i = 0; i < g.n; ++i)
    for (std::int64_t q = 0; q < g.groups; ++q) {
      double s = 0, v = 0;
      for (std::int64_t k = 0; k < g.count(); ++k) s += x[g.at(i, q, k)];
      const double m = s / double(g.count());
      for (std::int64_t k = 0; k < g.count(); ++k) v += std::pow(x[g.at(i, q, k)] - m, 2);
      mean[idx(i * g.groups + q)] = m;
      rstd[idx(i * g.groups + q)] = 1 / std::sqrt(v / double(g.count()) + kEps);
    }
}

class RmsGroupNorm : public Conformance {
 protected:
  xylem::nn::NormStats run_group(const GroupCase& c, const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
    return c.groups ? xylem::nn::group_norm(backend, x, c.groups, w, b, kEps, y)
                    : xylem::nn::instance_norm(backend, x, w, b, kEps, y);
  }
  void run_group_grad(const GroupCase& c, const Tensor& x, const Tensor& w, const xylem::nn::NormStats& stats,
                      const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db) {
    if (c.groups)
      xylem::nn::group_norm_grad(backend, x, c.groups, w, stats, dy, dx, dw, db);
    else
      xylem::nn::instance_norm_grad(backend, x, w, stats, dy, dx, dw, db);
  }

  // ---- rms_norm ----
  void rms_forward(DType dtype) {
    if (!runs(OpId::nn_layer_norm, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto y = output(dtype, ViewKind::contiguous, {2, 3});
          (void)xylem::nn::rms_norm(backend, x.view, 1, Tensor{}, kEps, y.view);
        })) {
      return;
    }
    for (const auto& c : rms_cases()) {
      SCOPED_TRACE(describe(c));
      const Dims features(c.dims.end() - c.normalized_rank, c.dims.end());
      const std::int64_t n = product(features), rows = product(c.dims) / n;
      auto x = input(dtype, c.layout, c.dims, -2, 2);
      auto w = input(dtype, ViewKind::contiguous, features, 0.5, 1.5);
      auto y = output(dtype, c.layout, c.dims);
      const Tensor rstd = xylem::nn::rms_norm(backend, x.view, c.normalized_rank, c.weight ? w.view : Tensor{}, kEps, y.view);
      const auto xs = x.values();
      const auto ref = rms_rstd(xs, rows, n);
      std::vector<double> expect(xs.size()), allowed(xs.size());
      const double a = acc(dtype, n);
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = idx(i * n + j);
          const double g = c.weight ? w.at(idx(j)) : 1.0, xh = xs[k] * ref[idx(i)];
          expect[k] = xh * g;
          allowed[k] = tol(dtype).elem * std::abs(expect[k]) + 4 * a * std::abs(xh * g) + floor_of(dtype);
        }
      expect_result(y, expect, [&](std::size_t k) { return allowed[k]; }, "rms_norm y");
      ASSERT_EQ(rstd.dtype(), stat_dtype(dtype));
      const auto got = rstd.to_doubles();
      ASSERT_EQ(got.size(), idx(rows));
      for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], ref[i], 4 * a * ref[i]) << "rstd of row " << i;
    }
  }

  void rms_backward(DType dtype) {
    if (!runs(OpId::nn_layer_norm_grad_input, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          Tensor none;
          const Tensor rstd = stat_dtype(dtype) == xylem::f64 ? Tensor::from(std::vector<double>{1, 1})
                                                              : Tensor::from(std::vector<float>{1, 1});
          xylem::nn::rms_norm_grad(backend, x.view, 1, Tensor{}, rstd, x.view, dx.view, none);
        })) {
      return;
    }
    int variant = 0;
    for (const auto& c : rms_cases()) {
      SCOPED_TRACE(describe(c));
      const Dims features(c.dims.end() - c.normalized_rank, c.dims.end());
      const std::int64_t n = product(features), rows = product(c.dims) / n;
      auto x = input(dtype, c.layout, c.dims, -2, 2);
      auto w = input(dtype, ViewKind::contiguous, features, 0.5, 1.5);
      auto dy = input(dtype, c.layout, c.dims, -1, 1);
      const Tensor wv = c.weight ? w.view : Tensor{};
      Tensor y(shape_of(c.dims), dtype);
      const Tensor rstd = xylem::nn::rms_norm(backend, x.view, c.normalized_rank, wv, kEps, y);
      const bool want_dx = variant % 3 != 2, want_dw = variant % 3 != 1;
      ++variant;
      auto dx = output(dtype, c.layout, c.dims);
      auto dw = output(dtype, ViewKind::strided, features);
      Tensor dx_arg = want_dx ? dx.view : Tensor{}, dw_arg = want_dw ? dw.view : Tensor{};
      xylem::nn::rms_norm_grad(backend, x.view, c.normalized_rank, wv, rstd, dy.view, dx_arg, dw_arg);
      const auto xs = x.values(), dys = dy.values(), r = rstd.to_doubles();
      std::vector<double> edx(xs.size()), adx(xs.size()), edw(idx(n), 0), adw(idx(n), 0);
      const double a = acc(dtype, std::max(n, rows));
      for (std::int64_t i = 0; i < rows; ++i) {
        double mgx = 0, agx = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = idx(i * n + j);
          const double g = dys[k] * (c.weight ? w.at(idx(j)) : 1.0), xh = xs[k] * r[idx(i)];
          mgx += g * xh / double(n), agx += std::abs(g * xh) / double(n);
          edw[idx(j)] += dys[k] * xh, adw[idx(j)] += std::abs(dys[k] * xh);
        }
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = idx(i * n + j);
          const double g = dys[k] * (c.weight ? w.at(idx(j)) : 1.0), xh = xs[k] * r[idx(i)];
          edx[k] = r[idx(i)] * (g - xh * mgx);
          adx[k] = tol(dtype).elem * std::abs(edx[k]) + 4 * a * r[idx(i)] * (std::abs(g) + std::abs(xh) * agx) +
                   floor_of(dtype);
        }
      }
      if (want_dx) expect_result(dx, edx, [&](std::size_t k) { return adx[k]; }, "rms_norm_grad dx");
      else EXPECT_EQ(dx.base.version(), 1u) << "dx was not asked for";
      if (want_dw)
        expect_result(dw, edw, [&](std::size_t k) { return tol(dtype).elem * std::abs(edw[k]) + 4 * a * adw[k] + floor_of(dtype); },
                      "rms_norm_grad dweight");
      else EXPECT_EQ(dw.base.version(), 1u) << "dweight was not asked for";
    }
  }

  void rms_finite_differences() {
    if (!backend.supports(OpId::nn_layer_norm, xylem::f64) || !backend.supports(OpId::nn_layer_norm_grad_input, xylem::f64))
      return;
    SCOPED_TRACE("rms_norm_grad, finite differences");
    const Layout shape{3, 4, 5}, fshape{4, 5};
    const auto xs = xylem_test::random_vector<double>(rng, 60, -2, 2);
    const auto ws = xylem_test::random_vector<double>(rng, 20, 0.5, 1.5);
    const auto dys = xylem_test::random_vector<double>(rng, 60, -1, 1);
    auto run = [&](const std::vector<double>& x, const std::vector<double>& w, Tensor* rstd) {
      Tensor y(shape, xylem::f64);
      const Tensor r = xylem::nn::rms_norm(backend, Tensor::from(x, shape), 2, Tensor::from(w, fshape), kEps, y);
      if (rstd) *rstd = r;
      return y;
    };
    Tensor rstd;
    (void)run(xs, ws, &rstd);
    Tensor dx(shape, xylem::f64), dw(fshape, xylem::f64);
    xylem::nn::rms_norm_grad(backend, Tensor::from(xs, shape), 2, Tensor::from(ws, fshape), rstd,
                             Tensor::from(dys, shape), dx, dw);
    const auto adx = dx.to_doubles(), adw = dw.to_doubles();
    expect_gradient(adx, xs, shape, dys, [&](const Tensor& x) { return run(x.to_doubles(), ws, nullptr); },
                    some_coordinates(rng, 60), mean_abs(adx), "rms_norm_grad dx");
    expect_gradient(adw, ws, fshape, dys, [&](const Tensor& w) { return run(xs, w.to_doubles(), nullptr); },
                    some_coordinates(rng, 20), mean_abs(adw), "rms_norm_grad dweight");
  }

  // ---- group_norm ----
  bool group_runs(DType dtype) {
    for (OpId op : {OpId::nn_layer_norm, OpId::nn_layer_norm_grad_input, OpId::nn_batch_norm_apply,
                    OpId::nn_batch_norm_grad_params, OpId::math_binary}) {
      if (!backend.supports(op, dtype)) {
        return runs(op, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 2, 3});
          auto w = input(dtype, ViewKind::contiguous, {2});
          auto y = output(dtype, ViewKind::contiguous, {2, 2, 3});
          const auto stats = xylem::nn::group_norm(backend, x.view, 1, w.view, w.view, kEps, y.view);
          Tensor dx(x.view.layout(), dtype), dw(Layout{2}, dtype), db(Layout{2}, dtype);
          xylem::nn::group_norm_grad(backend, x.view, 1, w.view, stats, x.view, dx, dw, db);
        });
      }
    }
    return true;
  }

  void group_forward(DType dtype) {
    if (!group_runs(dtype)) return;
    for (const auto& c : group_cases()) {
      SCOPED_TRACE(describe(c));
      const Groups g(c.dims, c.groups);
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto w = input(dtype, ViewKind::contiguous, {g.c}, 0.5, 1.5);
      auto b = input(dtype, ViewKind::strided, {g.c}, -0.5, 0.5);
      auto y = output(dtype, c.layout, c.dims);
      const auto stats = run_group(c, x.view, c.affine ? w.view : Tensor{}, c.affine ? b.view : Tensor{}, y.view);
      const auto xs = x.values();
      std::vector<double> mean, rstd;
      group_stats(xs, g, mean, rstd);
      std::vector<double> expect(xs.size()), allowed(xs.size());
      const double a = acc(dtype, g.count());
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t q = 0; q < g.groups; ++q) {
          const double m = mean[idx(i * g.groups + q)], r = rstd[idx(i * g.groups + q)];
          for (std::int64_t k = 0; k < g.count(); ++k) {
            const std::size_t e = g.at(i, q, k);
            const auto ch = idx(g.channel(q, k));
            const double wv = c.affine ? w.at(ch) : 1.0, bv = c.affine ? b.at(ch) : 0.0;
            const double xh = (xs[e] - m) * r;
            expect[e] = xh * wv + bv;
            // Rounded after the normalisation, the weight and the bias.
            allowed[e] = 3 * tol(dtype).elem * (std::abs(xh * wv) + std::abs(bv)) +
                         4 * std::abs(wv) * (std::abs(xh) * a + r * a * (std::abs(xs[e]) + std::abs(m))) +
                         floor_of(dtype);
          }
        }
      expect_result(y, expect, [&](std::size_t k) { return allowed[k]; }, "group_norm y");
      ASSERT_EQ(stats.mean.dtype(), stat_dtype(dtype));
      EXPECT_TRUE(stats.mean.layout().same_dims(Layout{g.n, g.groups}));
      const auto gm = stats.mean.to_doubles(), gr = stats.rstd.to_doubles();
      for (std::size_t i = 0; i < gm.size(); ++i) {
        EXPECT_NEAR(gm[i], mean[i], 4 * a * (std::abs(mean[i]) + 1)) << "mean of group " << i;
        EXPECT_NEAR(gr[i], rstd[i], 4 * a * rstd[i] * (1 + std::abs(mean[i]))) << "rstd of group " << i;
      }
    }
  }

  void group_backward(DType dtype) {
    if (!group_runs(dtype)) return;
    int variant = 0;
    for (const auto& c : group_cases()) {
      SCOPED_TRACE(describe(c));
      const Groups g(c.dims, c.groups);
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto w = input(dtype, ViewKind::contiguous, {g.c}, 0.5, 1.5);
      auto dy = input(dtype, c.layout, c.dims, -1, 1);
      const Tensor wv = c.affine ? w.view : Tensor{};
      Tensor y(shape_of(c.dims), dtype);
      const auto stats = run_group(c, x.view, wv, Tensor{}, y);
      const bool want_dx = variant % 3 != 2, want_params = variant % 3 != 1;
      ++variant;
      auto dx = output(dtype, c.layout, c.dims);
      auto dw = output(dtype, ViewKind::contiguous, {g.c});
      auto db = output(dtype, ViewKind::strided, {g.c});
      Tensor dx_arg = want_dx ? dx.view : Tensor{};
      Tensor dw_arg = want_params ? dw.view : Tensor{}, db_arg = want_params ? db.view : Tensor{};
      run_group_grad(c, x.view, wv, stats, dy.view, dx_arg, dw_arg, db_arg);
      const auto xs = x.values(), dys = dy.values();
      const auto mean = stats.mean.to_doubles(), rstd = stats.rstd.to_doubles();
      std::vector<double> edx(xs.size()), adx(xs.size());
      std::vector<double> edw(idx(g.c), 0), edb(edw), adw(edw), adb(edw);
      const double a = acc(dtype, std::max(g.count(), g.n * g.s));
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t q = 0; q < g.groups; ++q) {
          const double m = mean[idx(i * g.groups + q)], r = rstd[idx(i * g.groups + q)];
          double mg = 0, mgx = 0, ag = 0, agx = 0;
          const double cnt = double(g.count());
          for (std::int64_t k = 0; k < g.count(); ++k) {
            const std::size_t e = g.at(i, q, k);
            const auto ch = idx(g.channel(q, k));
            const double gv = dys[e] * (c.affine ? w.at(ch) : 1.0), xh = (xs[e] - m) * r;
            mg += gv / cnt, mgx += gv * xh / cnt, ag += std::abs(gv) / cnt, agx += std::abs(gv * xh) / cnt;
            edw[ch] += dys[e] * xh, adw[ch] += std::abs(dys[e] * xh);
            edb[ch] += dys[e], adb[ch] += std::abs(dys[e]);
          }
          for (std::int64_t k = 0; k < g.count(); ++k) {
            const std::size_t e = g.at(i, q, k);
            const auto ch = idx(g.channel(q, k));
            const double gv = dys[e] * (c.affine ? w.at(ch) : 1.0), xh = (xs[e] - m) * r;
            edx[e] = r * (gv - mg - xh * mgx);
            // g = dy*w is rounded to the dtype before the row kernel.
            adx[e] = tol(dtype).elem * (std::abs(edx[e]) + 2 * r * (std::abs(gv) + ag)) +
                     4 * a * r * (std::abs(gv) + ag + std::abs(xh) * agx) + 4 * a * r * std::abs(mgx) * r * std::abs(m) +
                     floor_of(dtype);
          }
        }
      if (want_dx) expect_result(dx, edx, [&](std::size_t k) { return adx[k]; }, "group_norm_grad dx");
      else EXPECT_EQ(dx.base.version(), 1u) << "dx was not asked for";
      if (want_params) {
        // The normalised values are rounded to the dtype before the sums.
        expect_result(dw, edw, [&](std::size_t k) {
          return 2 * tol(dtype).elem * (std::abs(edw[k]) + adw[k]) + 4 * a * adw[k] * (1 + std::abs(c.offset)) + floor_of(dtype);
        }, "group_norm_grad dweight");
        expect_result(db, edb, [&](std::size_t k) { return tol(dtype).elem * std::abs(edb[k]) + 4 * a * adb[k] + floor_of(dtype); },
                      "group_norm_grad dbias");
      } else {
        EXPECT_EQ(dw.base.version(), 1u) << "dweight was not asked for";
      }
    }
  }

  void group_finite_differences() {
    if (!group_runs(xylem::f64)) return;
    SCOPED_TRACE("group_norm_grad, finite differences");
    const Layout shape{2, 6, 5}, cshape{6};
    const auto xs = xylem_test::random_vector<double>(rng, 60, -2, 2);
    const auto ws = xylem_test::random_vector<double>(rng, 6, 0.5, 1.5);
    const auto bs = xylem_test::random_vector<double>(rng, 6, -1, 1);
    const auto dys = xylem_test::random_vector<double>(rng, 60, -1, 1);
    auto run = [&](const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                   xylem::nn::NormStats* stats) {
      Tensor y(shape, xylem::f64);
      auto s = xylem::nn::group_norm(backend, Tensor::from(x, shape), 3, Tensor::from(w, cshape), Tensor::from(b, cshape),
                                     kEps, y);
      if (stats) *stats = s;
      return y;
    };
    xylem::nn::NormStats stats;
    (void)run(xs, ws, bs, &stats);
    const auto grads = xylem::nn::group_norm_grad(backend, Tensor::from(xs, shape), 3, Tensor::from(ws, cshape), stats,
                                                  Tensor::from(dys, shape));
    const auto adx = grads.dx.to_doubles(), adw = grads.dgamma.to_doubles(), adb = grads.dbeta.to_doubles();
    expect_gradient(adx, xs, shape, dys, [&](const Tensor& x) { return run(x.to_doubles(), ws, bs, nullptr); },
                    some_coordinates(rng, 60), mean_abs(adx), "group_norm_grad dx");
    expect_gradient(adw, ws, cshape, dys, [&](const Tensor& w) { return run(xs, w.to_doubles(), bs, nullptr); },
                    some_coordinates(rng, 6), mean_abs(adw), "group_norm_grad dweight");
    expect_gradient(adb, bs, cshape, dys, [&](const Tensor& b) { return run(xs, ws, b.to_doubles(), nullptr); },
                    some_coordinates(rng, 6), mean_abs(adb), "group_norm_grad dbias");
  }
};

TEST_P(RmsGroupNorm, rms_norm) {
  for_each_float_dtype([&](DType d) { rms_forward(d); });
}
TEST_P(RmsGroupNorm, rms_norm_grad) {
  for_each_float_dtype([&](DType d) { rms_backward(d); });
  rms_finite_differences();
}
TEST_P(RmsGroupNorm, group_norm) {
  for_each_float_dtype([&](DType d) { group_forward(d); });
}
TEST_P(RmsGroupNorm, group_norm_grad) {
  for_each_float_dtype([&](DType d) { group_backward(d); });
  group_finite_differences();
}

// Empty batches, empty groups: written outputs, NaN statistics of no values,
// parameter gradients of 0.
TEST_P(RmsGroupNorm, empty) {
  if (!group_runs(xylem::f32)) return;
  {
    SCOPED_TRACE("group_norm, N = 0");
    Tensor y(Layout{0, 4, 3}, xylem::f32);
    const auto w = xylem::ones(backend, Layout{4}, xylem::f32);
    const auto stats = xylem::nn::group_norm(backend, Tensor::from(std::vector<float>{}, Layout{0, 4, 3}), 2, w, w, kEps, y);
    EXPECT_TRUE(stats.mean.layout().same_dims(Layout{0, 2}));
    EXPECT_EQ(y.to_doubles().size(), 0u);
    const auto g = xylem::nn::group_norm_grad(backend, Tensor::from(std::vector<float>{}, Layout{0, 4, 3}), 2, w, stats,
                                              Tensor::from(std::vector<float>{}, Layout{0, 4, 3}));
    EXPECT_EQ(g.dgamma.to_doubles(), std::vector<double>(4, 0.0));
    EXPECT_EQ(g.dbeta.to_doubles(), std::vector<double>(4, 0.0));
  }
  {
    SCOPED_TRACE("group_norm, no spatial values");
    const auto x = Tensor::from(std::vector<float>{}, Layout{2, 4, 0});
    const auto r = xylem::nn::group_norm(backend, x, 2, Tensor{}, Tensor{}, kEps);
    for (double m : r.stats.mean.to_doubles()) EXPECT_TRUE(std::isnan(m));
    EXPECT_EQ(r.stats.mean.numel(), 4);
  }
  {
    SCOPED_TRACE("rms_norm, no rows");
    const auto x = Tensor::from(std::vector<float>{}, Layout{0, 5});
    const auto r = xylem::nn::rms_norm(backend, x, 1, xylem::ones(backend, Layout{5}, xylem::f32), kEps);
    EXPECT_EQ(r.rstd.numel(), 0);
    const auto g = xylem::nn::rms_norm_grad(backend, x, 1, Tensor{}, r.rstd, x);
    EXPECT_EQ(g.dweight.to_doubles(), std::vector<double>(5, 0.0));
  }
}

TEST_P(RmsGroupNorm, errors) {
  auto x = Tensor::from(std::vector<float>(24, 1.0f), Layout{2, 6, 2});
  auto y = Tensor::from(std::vector<float>(24, 0.0f), Layout{2, 6, 2});
  auto w6 = Tensor::from(std::vector<float>(6, 1.0f)), w5 = Tensor::from(std::vector<float>(5, 1.0f));
  auto w6d = Tensor::from(std::vector<double>(6, 1.0));
  auto w2 = Tensor::from(std::vector<float>(2, 1.0f)), w3 = Tensor::from(std::vector<float>(3, 1.0f));
  auto flat = Tensor::from(std::vector<float>(6, 1.0f)), flat_y = Tensor::from(std::vector<float>(6, 0.0f));
  auto dx = Tensor::from(std::vector<float>(24, 0.0f), Layout{2, 6, 2});
  auto dw = Tensor::from(std::vector<float>(6, 0.0f));
  const auto sy = xylem_test::snapshot(y), sw = xylem_test::snapshot(w6), sdx = xylem_test::snapshot(dx),
             sdw = xylem_test::snapshot(dw), sx = xylem_test::snapshot(x);
  Tensor none;
  // group_norm: groups not dividing C, weight of the wrong size or dtype, rank 1
  auto message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::group_norm(backend, x, 4, w6, w6, kEps, y));
  EXPECT_NE(message.find("groups 4"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 6, 2]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::group_norm(backend, x, 0, none, none, kEps, y));
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::group_norm(backend, x, 2, w5, none, kEps, y));
  EXPECT_NE(message.find("weight"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::group_norm(backend, x, 2, none, w5, kEps, y));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::group_norm(backend, x, 2, w6d, none, kEps, y));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::group_norm(backend, flat, 1, none, none, kEps, flat_y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::group_norm(backend, x, 2, none, none, -1.0, y));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::instance_norm(backend, x, w5, none, kEps, y));
  // Statistics of another grouping, a dweight and an rstd of the wrong size.
  if (backend.supports(OpId::nn_layer_norm, xylem::f32) && backend.supports(OpId::math_binary, xylem::f32)) {
    const auto stats = xylem::nn::group_norm(backend, x, 2, w6, w6, kEps);
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                    xylem::nn::group_norm_grad(backend, x, 3, w6, stats.stats, x, dx, dw, dw));
    Tensor dw5 = w5;
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                    xylem::nn::group_norm_grad(backend, x, 2, w6, stats.stats, x, dx, dw5, none));
  }
  // rms_norm: weight of the wrong size or dtype, a bad rank, rstd of the wrong shape
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::rms_norm(backend, x, 1, w3, kEps, y));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::rms_norm(backend, x, 2, w2, kEps, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::rms_norm(backend, x, 4, none, kEps, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::rms_norm(backend, x, 1, none, -1.0, y));
  if (backend.supports(OpId::nn_layer_norm, xylem::f32)) {
    const auto r = xylem::nn::rms_norm(backend, x, 1, w2, kEps);
    message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                              xylem::nn::rms_norm_grad(backend, x, 2, none, r.rstd, x, dx, dw));
    EXPECT_NE(message.find("rstd"), std::string::npos) << message;
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::rms_norm_grad(backend, x, 1, none, Tensor{}, x, dx, dw));
  }
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(w6, sw);
  XY_EXPECT_UNCHANGED(dx, sdx);
  XY_EXPECT_UNCHANGED(dw, sdw);
  XY_EXPECT_UNCHANGED(x, sx);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, RmsGroupNorm, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

// xylem::nn layer_norm, batch_norm (training and inference, running
// statistics) and local response normalisation, forward and backward, in
// f16, bf16, f32 and f64 against float64 references: optional gamma/beta,
// size-1 axes, views, rows with a large mean (numerically sound variance);
// gradients also against finite differences of the backend's forward op in
// f64; bad arguments raise the right error and change nothing.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {



Dims tail(const Dims& dims, int count) { return Dims(dims.end() - count, dims.end()); }


// A host tensor of exact values (f64 or the stat dtype).
Tensor host(DType dtype, const std::vector<double>& values, const Dims& dims) {
  const auto bytes = encode(dtype, values);
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape_of(dims), dtype);
}

// ---- layer_norm ---------------------------------------------------------------

struct LayerCase {
  Dims dims;
  int normalized_rank;
  bool affine;
  ViewKind layout = ViewKind::contiguous;
  double offset = 0;  // added to x: a large mean
};

std::vector<LayerCase> layer_cases() {
  return {{{7, 33}, 1, true},
          {{7, 33}, 1, false},
          {{2, 3, 5, 4}, 2, true},
          {{2, 3, 7}, 3, true},
          {{1, 1}, 1, true},
          {{4, 1}, 1, false},
          {{3, 4096}, 1, true},
          {{5, 64}, 1, true, ViewKind::strided},
          {{16, 40}, 1, true, ViewKind::transposed},
          {{6, 512}, 1, true, ViewKind::contiguous, 1000}};
}

std::string describe(const LayerCase& c) {
  return std::string(name(c.layout)) + " " + dims_text(c.dims) + " normalized_rank " +
         std::to_string(c.normalized_rank) + (c.affine ? " gamma, beta" : " no gamma, beta") +
         (c.offset != 0 ? " offset " + std::to_string(c.offset) : "");
}

struct LayerRef {
  std::int64_t rows = 0, n = 0;
  std::vector<double> mean, rstd;
};

LayerRef layer_stats(const std::vector<double>& x, std::int64_t rows, std::int64_t n, double eps) {
  LayerRef r{rows, n, std::vector<double>(static_cast<std::size_t>(rows)), std::vector<double>(static_cast<std::size_t>(rows))};
  for (std::int64_t i = 0; i < rows; ++i) {
    double s = 0, v = 0;
    for (std::int64_t j = 0; j < n; ++j) s += x[static_cast<std::size_t>(i * n + j)];
    const double m = s / double(n);
    for (std::int64_t j = 0; j < n; ++j) v += std::pow(x[static_cast<std::size_t>(i * n + j)] - m, 2);
    r.mean[static_cast<std::size_t>(i)] = m;
    r.rstd[static_cast<std::size_t>(i)] = 1 / std::sqrt(v / double(n) + eps);
  }
  return r;
}

// ---- batch_norm ------------------------------------------------------------------

struct BatchCase {
  Dims dims;
  bool affine;
  ViewKind layout = ViewKind::contiguous;
  double offset = 0;
};

std::vector<BatchCase> batch_cases() {
  return {{{4, 3, 5, 6}, true},
          {{8, 5}, false},
          {{2, 3, 7}, true},
          {{1, 2, 3, 3}, true},
          {{2, 3, 1, 1}, true},
          {{3, 4, 5, 5}, true, ViewKind::strided},
          {{6, 4, 3}, false, ViewKind::transposed},
          {{16, 2, 9, 9}, true, ViewKind::contiguous, 100}};
}

std::string describe(const BatchCase& c) {
  return std::string(name(c.layout)) + " " + dims_text(c.dims) + (c.affine ? " gamma, beta" : " no gamma, beta") +
         (c.offset != 0 ? " offset " + std::to_string(c.offset) : "");
}

// [N, C, S] geometry of an [N, C, ...] tensor.
struct Channels {
  std::int64_t n, c, s;
  explicit Channels(const Dims& dims) : n(dims[0]), c(dims[1]), s(product(dims) / (dims[0] * dims[1])) {}
  [[nodiscard]] std::size_t at(std::int64_t i, std::int64_t ch, std::int64_t k) const {
    return static_cast<std::size_t>((i * c + ch) * s + k);
  }
  [[nodiscard]] std::int64_t count() const { return n * s; }
};

// Per channel: mean and biased variance.
void channel_stats(const std::vector<double>& x, const Channels& g, std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(static_cast<std::size_t>(g.c), 0);
  var.assign(static_cast<std::size_t>(g.c), 0);
  for (std::int64_t ch = 0; ch < g.c; ++ch) {
    double s = 0, v = 0;
    for (std::int64_t i = 0; i < g.n; ++i) {
      for (std::int64_t k = 0; k < g.s; ++k) s += x[g.at(i, ch, k)];
    }
    const double m = s / double(g.count());
    for (std::int64_t i = 0; i < g.n; ++i) {
      for (std::int64_t k = 0; k < g.s; ++k) v += std::pow(x[g.at(i, ch, k)] - m, 2);
    }
    mean[static_cast<std::size_t>(ch)] = m;
    var[static_cast<std::size_t>(ch)] = v / double(g.count());
  }
}

// ---- lrn -------------------------------------------------------------------------

struct LrnCase {
  Dims dims;
  xylem::nn::Lrn p;
  ViewKind layout = ViewKind::contiguous;
};

std::vector<LrnCase> lrn_cases() {
  return {{{2, 7, 3, 4}, {5, 0.5, 0.75, 2.0}},
          {{2, 7, 3, 4}, {}},
          {{2, 3, 2, 2}, {5, 0.5, 0.75, 1.0}},
          {{3, 6}, {2, 1.0, 0.5, 1.0}},
          {{2, 5, 7}, {1, 0.3, 0.75, 2.0}},
          {{1, 1, 1, 1}, {3, 0.5, 0.75, 2.0}},
          {{2, 16, 5, 5}, {4, 0.5, 0.6, 1.5}, ViewKind::strided}};
}

std::string describe(const LrnCase& c) {
  return std::string(name(c.layout)) + " " + dims_text(c.dims) + " size " + std::to_string(c.p.size) + " alpha " +
         std::to_string(c.p.alpha) + " beta " + std::to_string(c.p.beta) + " k " + std::to_string(c.p.k);
}

// scale = k + alpha/size * sum of x^2 over channels [c - (size-1)/2, c + size/2].
std::vector<double> lrn_scale(const std::vector<double>& x, const Channels& g, const xylem::nn::Lrn& p) {
  std::vector<double> scale(x.size());
  for (std::int64_t i = 0; i < g.n; ++i)
    for (std::int64_t ch = 0; ch < g.c; ++ch)
      for (std::int64_t k = 0; k < g.s; ++k) {
        double sum = 0;
        for (std::int64_t d = ch - (p.size - 1) / 2; d <= ch + p.size / 2; ++d) {
          if (d >= 0 && d < g.c) sum += x[g.at(i, d, k)] * x[g.at(i, d, k)];
        }
        scale[g.at(i, ch, k)] = p.k + p.alpha / p.size * sum;
      }
  return scale;
}

class Norm : public Conformance {
 protected:
  static constexpr double kEps = 1e-5;

  // ---- layer_norm ----
  void layer_forward(DType dtype) {
    if (!runs(OpId::nn_layer_norm, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto y = output(dtype, ViewKind::contiguous, {2, 3});
          (void)xylem::nn::layer_norm(backend, x.view, 1, Tensor{}, Tensor{}, kEps, y.view);
        })) {
      return;
    }
    for (const auto& c : layer_cases()) {
      SCOPED_TRACE(describe(c));
      const Dims features = tail(c.dims, c.normalized_rank);
      const std::int64_t n = product(features), rows = product(c.dims) / n;
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto gamma = input(dtype, ViewKind::contiguous, features, 0.5, 1.5);
      auto beta = input(dtype, ViewKind::contiguous, features, -0.5, 0.5);
      auto y = output(dtype, c.layout, c.dims);
      const auto stats = xylem::nn::layer_norm(backend, x.view, c.normalized_rank, c.affine ? gamma.view : Tensor{},
                                               c.affine ? beta.view : Tensor{}, kEps, y.view);
      const auto xs = x.values();
      const auto ref = layer_stats(xs, rows, n, kEps);
      std::vector<double> expect(xs.size()), allowed(xs.size());
      const double a = acc(dtype, n);
      for (std::int64_t i = 0; i < rows; ++i) {
        double mag = 0;
        for (std::int64_t j = 0; j < n; ++j) mag += std::abs(xs[static_cast<std::size_t>(i * n + j)]) / double(n);
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = static_cast<std::size_t>(i * n + j);
          const double g = c.affine ? gamma.at(static_cast<std::size_t>(j)) : 1.0;
          const double b = c.affine ? beta.at(static_cast<std::size_t>(j)) : 0.0;
          const double m = ref.mean[static_cast<std::size_t>(i)], r = ref.rstd[static_cast<std::size_t>(i)];
          const double xh = (xs[k] - m) * r;
          expect[k] = xh * g + b;
          allowed[k] = tol(dtype).elem * std::abs(expect[k]) +
                       4 * std::abs(g) * (std::abs(xh) * a + r * a * (std::abs(xs[k]) + mag)) +
                       4 * tol(dtype).eps * std::abs(b) + floor_of(dtype);
        }
      }
      expect_result(y, expect, [&](std::size_t k) { return allowed[k]; }, "layer_norm y");
      ASSERT_EQ(stats.mean.dtype(), stat_dtype(dtype));
      ASSERT_EQ(stats.rstd.dtype(), stat_dtype(dtype));
      EXPECT_EQ(stats.mean.numel(), rows);
      const auto mean = stats.mean.to_doubles(), rstd = stats.rstd.to_doubles();
      ASSERT_EQ(mean.size(), static_cast<std::size_t>(rows));
      ASSERT_EQ(rstd.size(), static_cast<std::size_t>(rows));
      for (std::size_t i = 0; i < mean.size(); ++i) {
        EXPECT_NEAR(mean[i], ref.mean[i], 4 * a * (std::abs(ref.mean[i]) + 1)) << "mean of row " << i;
        EXPECT_NEAR(rstd[i], ref.rstd[i], 4 * a * ref.rstd[i] * (1 + std::abs(ref.mean[i]))) << "rstd of row " << i;
      }
    }
  }

  void layer_backward(DType dtype) {
    if (!runs(OpId::nn_layer_norm_grad_input, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          Tensor none;
          const xylem::nn::NormStats stats{host(stat_dtype(dtype), {0, 0}, {2}), host(stat_dtype(dtype), {1, 1}, {2})};
          xylem::nn::layer_norm_grad(backend, x.view, 1, Tensor{}, stats, x.view, dx.view, none, none);
        })) {
      return;
    }
    int variant = 0;
    for (const auto& c : layer_cases()) {
      SCOPED_TRACE(describe(c));
      const Dims features = tail(c.dims, c.normalized_rank);
      const std::int64_t n = product(features), rows = product(c.dims) / n;
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto gamma = input(dtype, ViewKind::contiguous, features, 0.5, 1.5);
      auto dy = input(dtype, c.layout, c.dims, -1, 1);
      // Statistics as the backend's forward op gives them.
      Tensor y(shape_of(c.dims), dtype);
      const auto stats = xylem::nn::layer_norm(backend, x.view, c.normalized_rank, c.affine ? gamma.view : Tensor{},
                                               Tensor{}, kEps, y);
      // Every third case leaves dgamma/dbeta out, every third leaves dx out.
      const bool want_dx = variant % 3 != 2, want_params = variant % 3 != 1;
      ++variant;
      auto dx = output(dtype, c.layout, c.dims);
      auto dgamma = output(dtype, ViewKind::contiguous, features);
      auto dbeta = output(dtype, ViewKind::strided, features);
      Tensor dx_arg = want_dx ? dx.view : Tensor{};
      Tensor dg_arg = want_params ? dgamma.view : Tensor{};
      Tensor db_arg = want_params ? dbeta.view : Tensor{};
      xylem::nn::layer_norm_grad(backend, x.view, c.normalized_rank, c.affine ? gamma.view : Tensor{}, stats, dy.view,
                                 dx_arg, dg_arg, db_arg);
      const auto xs = x.values(), dys = dy.values();
      const auto mean = stats.mean.to_doubles(), rstd = stats.rstd.to_doubles();
      std::vector<double> edx(xs.size()), adx(xs.size());
      std::vector<double> edg(static_cast<std::size_t>(n), 0), edb(edg), adg(edg), adb(edg);
      const double a = acc(dtype, std::max(n, rows));
      for (std::int64_t i = 0; i < rows; ++i) {
        const double m = mean[static_cast<std::size_t>(i)], r = rstd[static_cast<std::size_t>(i)];
        double mg = 0, mgx = 0, ag = 0, agx = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = static_cast<std::size_t>(i * n + j);
          const double g = dys[k] * (c.affine ? gamma.at(static_cast<std::size_t>(j)) : 1.0);
          const double xh = (xs[k] - m) * r;
          mg += g / double(n), mgx += g * xh / double(n);
          ag += std::abs(g) / double(n), agx += std::abs(g * xh) / double(n);
          edg[static_cast<std::size_t>(j)] += dys[k] * xh;
          adg[static_cast<std::size_t>(j)] += std::abs(dys[k] * xh);
          edb[static_cast<std::size_t>(j)] += dys[k];
          adb[static_cast<std::size_t>(j)] += std::abs(dys[k]);
        }
        for (std::int64_t j = 0; j < n; ++j) {
          const auto k = static_cast<std::size_t>(i * n + j);
          const double g = dys[k] * (c.affine ? gamma.at(static_cast<std::size_t>(j)) : 1.0);
          const double xh = (xs[k] - m) * r;
          edx[k] = r * (g - mg - xh * mgx);
          adx[k] = tol(dtype).elem * std::abs(edx[k]) + 4 * a * r * (std::abs(g) + ag + std::abs(xh) * agx) +
                   4 * a * r * std::abs(mgx) * r * std::abs(m) + floor_of(dtype);
        }
      }
      if (want_dx) expect_result(dx, edx, [&](std::size_t k) { return adx[k]; }, "layer_norm_grad dx");
      if (want_params) {
        expect_result(dgamma, edg, [&](std::size_t k) { return tol(dtype).elem * std::abs(edg[k]) + 4 * a * adg[k] * (1 + std::abs(c.offset)) + floor_of(dtype); },
                      "layer_norm_grad dgamma");
        expect_result(dbeta, edb, [&](std::size_t k) { return tol(dtype).elem * std::abs(edb[k]) + 4 * a * adb[k] + floor_of(dtype); },
                      "layer_norm_grad dbeta");
      }
      if (!want_dx) {
        EXPECT_EQ(dx.base.version(), 1u) << "dx was not asked for";
      }
      if (!want_params) {
        EXPECT_EQ(dgamma.base.version(), 1u) << "dgamma was not asked for";
      }
    }
  }

  void layer_finite_differences() {
    if (!backend.supports(OpId::nn_layer_norm, xylem::f64) ||
        !backend.supports(OpId::nn_layer_norm_grad_input, xylem::f64) ||
        !backend.supports(OpId::nn_layer_norm_grad_params, xylem::f64))
      return;
    SCOPED_TRACE("layer_norm_grad, finite differences");
    const Dims dims{3, 4, 5};
    const Layout shape = shape_of(dims), fshape{4, 5};
    const auto xs = xylem_test::random_vector<double>(rng, 60, -2, 2);
    const auto gs = xylem_test::random_vector<double>(rng, 20, 0.5, 1.5);
    const auto bs = xylem_test::random_vector<double>(rng, 20, -1, 1);
    const auto dys = xylem_test::random_vector<double>(rng, 60, -1, 1);
    auto run = [&](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b,
                   xylem::nn::NormStats* stats) {
      Tensor y(shape, xylem::f64);
      auto s = xylem::nn::layer_norm(backend, Tensor::from(x, shape), 2, Tensor::from(g, fshape),
                                     Tensor::from(b, fshape), 1e-5, y);
      if (stats) *stats = s;
      return y;
    };
    xylem::nn::NormStats stats;
    (void)run(xs, gs, bs, &stats);
    Tensor dx(shape, xylem::f64), dg(fshape, xylem::f64), db(fshape, xylem::f64);
    xylem::nn::layer_norm_grad(backend, Tensor::from(xs, shape), 2, Tensor::from(gs, fshape), stats,
                               Tensor::from(dys, shape), dx, dg, db);
    const auto adx = dx.to_doubles(), adg = dg.to_doubles(), adb = db.to_doubles();
    expect_gradient(adx, xs, shape, dys, [&](const Tensor& x) { return run(x.to_doubles(), gs, bs, nullptr); },
                    some_coordinates(rng, 60), mean_abs(adx), "layer_norm_grad dx");
    expect_gradient(adg, gs, fshape, dys, [&](const Tensor& g) { return run(xs, g.to_doubles(), bs, nullptr); },
                    some_coordinates(rng, 20), mean_abs(adg), "layer_norm_grad dgamma");
    expect_gradient(adb, bs, fshape, dys, [&](const Tensor& b) { return run(xs, gs, b.to_doubles(), nullptr); },
                    some_coordinates(rng, 20), mean_abs(adb), "layer_norm_grad dbeta");
  }

  // ---- batch_norm ----
  bool batch_runs(DType dtype, bool training) {
    return runs(training ? OpId::nn_batch_norm_stats : OpId::nn_batch_norm_apply, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {2, 3});
      auto y = output(dtype, ViewKind::contiguous, {2, 3});
      Tensor rm = host(stat_dtype(dtype), {0, 0, 0}, {3}), rv = host(stat_dtype(dtype), {1, 1, 1}, {3});
      (void)xylem::nn::batch_norm(backend, x.view, Tensor{}, Tensor{}, rm, rv, training, 0.1, kEps, y.view);
    });
  }

  void batch_forward(DType dtype, bool training) {
    if (!batch_runs(dtype, training)) return;
    constexpr double momentum = 0.1;
    for (const auto& c : batch_cases()) {
      SCOPED_TRACE(describe(c));
      const Channels g(c.dims);
      if (training && g.count() < 2) continue;
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto gamma = input(dtype, ViewKind::contiguous, {g.c}, 0.5, 1.5);
      auto beta = input(dtype, ViewKind::contiguous, {g.c}, -0.5, 0.5);
      const auto rm0 = xylem_test::random_vector<double>(rng, g.c, c.offset - 0.5, c.offset + 0.5);
      const auto rv0 = xylem_test::random_vector<double>(rng, g.c, 0.2, 0.5);
      Tensor rm = host(stat_dtype(dtype), rm0, {g.c}), rv = host(stat_dtype(dtype), rv0, {g.c});
      auto y = output(dtype, c.layout, c.dims);
      const auto stats = xylem::nn::batch_norm(backend, x.view, c.affine ? gamma.view : Tensor{},
                                               c.affine ? beta.view : Tensor{}, rm, rv, training, momentum, kEps, y.view);
      const auto xs = x.values();
      std::vector<double> bm, bv;
      channel_stats(xs, g, bm, bv);
      std::vector<double> um = training ? bm : std::vector<double>(), uv = training ? bv : std::vector<double>();
      if (!training) {
        for (auto v : rm0) um.push_back(round_to(stat_dtype(dtype), v));
        for (auto v : rv0) uv.push_back(round_to(stat_dtype(dtype), v));
      }
      const double a = acc(dtype, g.count());
      std::vector<double> expect(xs.size()), allowed(xs.size());
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t ch = 0; ch < g.c; ++ch)
          for (std::int64_t k = 0; k < g.s; ++k) {
            const auto e = g.at(i, ch, k);
            const auto cc = static_cast<std::size_t>(ch);
            const double r = 1 / std::sqrt(uv[cc] + kEps);
            const double xh = (xs[e] - um[cc]) * r;
            const double gm = c.affine ? gamma.at(cc) : 1.0, bt = c.affine ? beta.at(cc) : 0.0;
            expect[e] = xh * gm + bt;
            allowed[e] = tol(dtype).elem * std::abs(expect[e]) +
                         4 * std::abs(gm) * (std::abs(xh) * a + r * a * (std::abs(xs[e]) + std::abs(c.offset) + 1)) +
                         4 * tol(dtype).eps * std::abs(bt) + floor_of(dtype);
          }
      expect_result(y, expect, [&](std::size_t k) { return allowed[k]; }, "batch_norm y");
      // The statistics used, and the running ones.
      const auto sm = stats.mean.to_doubles(), sv = stats.var.to_doubles();
      const auto rm1 = rm.to_doubles(), rv1 = rv.to_doubles();
      ASSERT_EQ(sm.size(), static_cast<std::size_t>(g.c));
      ASSERT_EQ(sv.size(), static_cast<std::size_t>(g.c));
      EXPECT_EQ(stats.mean.dtype(), stat_dtype(dtype));
      const double unbiased = double(g.count()) / double(g.count() - 1);
      for (std::size_t ch = 0; ch < sm.size(); ++ch) {
        const double m0 = round_to(stat_dtype(dtype), rm0[ch]), v0 = round_to(stat_dtype(dtype), rv0[ch]);
        EXPECT_NEAR(sm[ch], um[ch], 4 * a * (std::abs(um[ch]) + 1)) << "mean of channel " << ch;
        EXPECT_NEAR(sv[ch], uv[ch], 4 * a * (uv[ch] + 1e-3) * (1 + std::abs(c.offset))) << "var of channel " << ch;
        const double em = training ? (1 - momentum) * m0 + momentum * bm[ch] : m0;
        const double ev = training ? (1 - momentum) * v0 + momentum * unbiased * bv[ch] : v0;
        EXPECT_NEAR(rm1[ch], em, 4 * a * (std::abs(em) + 1)) << "running mean of channel " << ch;
        EXPECT_NEAR(rv1[ch], ev, 4 * a * (ev + 1e-3) * (1 + std::abs(c.offset))) << "running var of channel " << ch;
      }
    }
  }

  void batch_backward(DType dtype, bool training) {
    if (!runs(OpId::nn_batch_norm_grad_input, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          auto dg = output(dtype, ViewKind::contiguous, {3});
          auto db = output(dtype, ViewKind::contiguous, {3});
          const xylem::nn::BatchNormStats stats{host(stat_dtype(dtype), {0, 0, 0}, {3}),
                                                host(stat_dtype(dtype), {1, 1, 1}, {3})};
          xylem::nn::batch_norm_grad(backend, x.view, Tensor{}, stats, training, kEps, x.view, dx.view, dg.view,
                                     db.view);
        })) {
      return;
    }
    for (const auto& c : batch_cases()) {
      SCOPED_TRACE(describe(c));
      const Channels g(c.dims);
      if (training && g.count() < 2) continue;
      auto x = input(dtype, c.layout, c.dims, c.offset - 1, c.offset + 1);
      auto gamma = input(dtype, ViewKind::contiguous, {g.c}, 0.5, 1.5);
      auto dy = input(dtype, c.layout, c.dims, -1, 1);
      xylem::nn::BatchNormStats stats;
      if (training) {
        Tensor rm = host(stat_dtype(dtype), std::vector<double>(static_cast<std::size_t>(g.c), 0), {g.c});
        Tensor rv = host(stat_dtype(dtype), std::vector<double>(static_cast<std::size_t>(g.c), 1), {g.c});
        Tensor y(shape_of(c.dims), dtype);
        stats = xylem::nn::batch_norm(backend, x.view, Tensor{}, Tensor{}, rm, rv, true, 0.1, kEps, y);
      } else {
        stats = {host(stat_dtype(dtype), xylem_test::random_vector<double>(rng, g.c, c.offset - 0.5, c.offset + 0.5), {g.c}),
                 host(stat_dtype(dtype), xylem_test::random_vector<double>(rng, g.c, 0.2, 0.5), {g.c})};
      }
      auto dx = output(dtype, c.layout, c.dims);
      auto dgamma = output(dtype, ViewKind::contiguous, {g.c});
      auto dbeta = output(dtype, ViewKind::strided, {g.c});
      xylem::nn::batch_norm_grad(backend, x.view, c.affine ? gamma.view : Tensor{}, stats, training, kEps, dy.view,
                                 dx.view, dgamma.view, dbeta.view);
      const auto xs = x.values(), dys = dy.values();
      const auto mean = stats.mean.to_doubles(), var = stats.var.to_doubles();
      const double a = acc(dtype, g.count());
      std::vector<double> edg(static_cast<std::size_t>(g.c), 0), edb(edg), adg(edg), adb(edg);
      for (std::int64_t ch = 0; ch < g.c; ++ch) {
        const auto cc = static_cast<std::size_t>(ch);
        const double r = 1 / std::sqrt(var[cc] + kEps);
        for (std::int64_t i = 0; i < g.n; ++i)
          for (std::int64_t k = 0; k < g.s; ++k) {
            const auto e = g.at(i, ch, k);
            const double xh = (xs[e] - mean[cc]) * r;
            edg[cc] += dys[e] * xh, adg[cc] += std::abs(dys[e] * xh);
            edb[cc] += dys[e], adb[cc] += std::abs(dys[e]);
          }
      }
      std::vector<double> edx(xs.size()), adx(xs.size());
      const double m = double(g.count());
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t ch = 0; ch < g.c; ++ch)
          for (std::int64_t k = 0; k < g.s; ++k) {
            const auto e = g.at(i, ch, k);
            const auto cc = static_cast<std::size_t>(ch);
            const double r = 1 / std::sqrt(var[cc] + kEps);
            const double xh = (xs[e] - mean[cc]) * r;
            const double gr = (c.affine ? gamma.at(cc) : 1.0) * r;
            edx[e] = training ? gr * (dys[e] - edb[cc] / m - xh * edg[cc] / m) : gr * dys[e];
            adx[e] = tol(dtype).elem * (std::abs(edx[e]) + std::abs(gr) * (std::abs(edb[cc]) + std::abs(xh * edg[cc])) / m) +
                     4 * a * std::abs(gr) * (std::abs(dys[e]) + (adb[cc] + std::abs(xh) * adg[cc]) / m) *
                         (1 + r * std::abs(c.offset)) +
                     floor_of(dtype);
          }
      expect_result(dx, edx, [&](std::size_t k) { return adx[k]; }, "batch_norm_grad dx");
      const double big = 1 + std::sqrt(1 / (var[0] + kEps)) * std::abs(c.offset);
      expect_result(dgamma, edg, [&](std::size_t k) { return tol(dtype).elem * std::abs(edg[k]) + 4 * a * adg[k] * big + floor_of(dtype); },
                    "batch_norm_grad dgamma");
      expect_result(dbeta, edb, [&](std::size_t k) { return tol(dtype).elem * std::abs(edb[k]) + 4 * a * adb[k] + floor_of(dtype); },
                    "batch_norm_grad dbeta");
    }
  }

  void batch_finite_differences(bool training) {
    for (OpId op : {OpId::nn_batch_norm_stats, OpId::nn_batch_norm_apply, OpId::nn_batch_norm_grad_params,
                    OpId::nn_batch_norm_grad_input}) {
      if (!backend.supports(op, xylem::f64)) return;
    }
    SCOPED_TRACE(std::string("batch_norm_grad, finite differences, ") + (training ? "training" : "inference"));
    const Dims dims{3, 2, 4, 3};
    const Layout shape = shape_of(dims), cshape{2};
    const auto xs = xylem_test::random_vector<double>(rng, 72, -2, 2);
    const auto gs = xylem_test::random_vector<double>(rng, 2, 0.5, 1.5);
    const auto bs = xylem_test::random_vector<double>(rng, 2, -1, 1);
    const auto dys = xylem_test::random_vector<double>(rng, 72, -1, 1);
    const std::vector<double> rm0{0.1, -0.2}, rv0{0.5, 1.5};
    auto run = [&](const std::vector<double>& x, const std::vector<double>& g, const std::vector<double>& b,
                   xylem::nn::BatchNormStats* stats) {
      Tensor y(shape, xylem::f64);
      Tensor rm = Tensor::from(rm0), rv = Tensor::from(rv0);
      auto s = xylem::nn::batch_norm(backend, Tensor::from(x, shape), Tensor::from(g, cshape), Tensor::from(b, cshape),
                                     rm, rv, training, 0.1, 1e-5, y);
      if (stats) *stats = {contiguous(backend, s.mean), contiguous(backend, s.var)};
      return y;
    };
    xylem::nn::BatchNormStats stats;
    (void)run(xs, gs, bs, &stats);
    Tensor dx(shape, xylem::f64), dg(cshape, xylem::f64), db(cshape, xylem::f64);
    xylem::nn::batch_norm_grad(backend, Tensor::from(xs, shape), Tensor::from(gs, cshape), stats, training, 1e-5,
                               Tensor::from(dys, shape), dx, dg, db);
    const auto adx = dx.to_doubles(), adg = dg.to_doubles(), adb = db.to_doubles();
    expect_gradient(adx, xs, shape, dys, [&](const Tensor& x) { return run(x.to_doubles(), gs, bs, nullptr); },
                    some_coordinates(rng, 72), mean_abs(adx), "batch_norm_grad dx");
    expect_gradient(adg, gs, cshape, dys, [&](const Tensor& g) { return run(xs, g.to_doubles(), bs, nullptr); },
                    {0, 1}, mean_abs(adg), "batch_norm_grad dgamma");
    expect_gradient(adb, bs, cshape, dys, [&](const Tensor& b) { return run(xs, gs, b.to_doubles(), nullptr); },
                    {0, 1}, mean_abs(adb), "batch_norm_grad dbeta");
  }

  // ---- lrn ----
  void lrn_forward(DType dtype) {
    if (!runs(OpId::nn_lrn, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {1, 3, 1, 1});
          auto y = output(dtype, ViewKind::contiguous, {1, 3, 1, 1});
          xylem::nn::lrn(backend, x.view, y.view);
        })) {
      return;
    }
    for (const auto& c : lrn_cases()) {
      SCOPED_TRACE(describe(c));
      const Channels g(c.dims);
      auto x = input(dtype, c.layout, c.dims, -2, 2);
      auto y = output(dtype, c.layout, c.dims);
      xylem::nn::lrn(backend, x.view, y.view, c.p);
      const auto xs = x.values();
      const auto scale = lrn_scale(xs, g, c.p);
      std::vector<double> expect(xs.size());
      for (std::size_t k = 0; k < xs.size(); ++k) expect[k] = xs[k] * std::pow(scale[k], -c.p.beta);
      const double a = acc(dtype, c.p.size) * 4;
      expect_result(y, expect, [&](std::size_t k) {
        return (tol(dtype).elem + a * (1 + std::abs(std::log(scale[k])))) * std::abs(expect[k]) + floor_of(dtype);
      }, "lrn");
    }
  }

  void lrn_backward(DType dtype) {
    if (!runs(OpId::nn_lrn_grad, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {1, 3, 1, 1});
          auto dx = output(dtype, ViewKind::contiguous, {1, 3, 1, 1});
          xylem::nn::lrn_grad(backend, x.view, x.view, x.view, dx.view);
        })) {
      return;
    }
    for (const auto& c : lrn_cases()) {
      SCOPED_TRACE(describe(c));
      const Channels g(c.dims);
      auto x = input(dtype, c.layout, c.dims, -2, 2);
      const auto xs = x.values();
      const auto scale = lrn_scale(xs, g, c.p);
      std::vector<double> ys(xs.size());
      for (std::size_t k = 0; k < xs.size(); ++k) ys[k] = xs[k] * std::pow(scale[k], -c.p.beta);
      auto y = input(dtype, ViewKind::contiguous, c.dims, 0, 0, &ys);
      auto dy = input(dtype, c.layout, c.dims, -1, 1);
      auto dx = output(dtype, c.layout, c.dims);
      xylem::nn::lrn_grad(backend, x.view, y.view, dy.view, dx.view, c.p);
      const auto yv = y.values(), dys = dy.values();
      std::vector<double> expect(xs.size()), allowed(xs.size());
      const double factor = 2 * c.p.alpha * c.p.beta / c.p.size;
      const double a = acc(dtype, c.p.size) * 4;
      for (std::int64_t i = 0; i < g.n; ++i)
        for (std::int64_t ch = 0; ch < g.c; ++ch)
          for (std::int64_t k = 0; k < g.s; ++k) {
            const auto e = g.at(i, ch, k);
            double sum = 0, mag = 0;
            // The channels whose window holds ch: [ch - size/2, ch + (size-1)/2].
            for (std::int64_t d = ch - c.p.size / 2; d <= ch + (c.p.size - 1) / 2; ++d) {
              if (d < 0 || d >= g.c) continue;
              const auto o = g.at(i, d, k);
              sum += dys[o] * yv[o] / scale[o];
              mag += std::abs(dys[o] * yv[o] / scale[o]);
            }
            const double first = dys[e] * std::pow(scale[e], -c.p.beta);
            expect[e] = first - factor * xs[e] * sum;
            allowed[e] = tol(dtype).elem * std::abs(expect[e]) +
                         a * (1 + std::abs(std::log(scale[e]))) * (std::abs(first) + factor * std::abs(xs[e]) * mag) +
                         floor_of(dtype);
          }
      expect_result(dx, expect, [&](std::size_t k) { return allowed[k]; }, "lrn_grad");
    }
  }

  void lrn_finite_differences() {
    if (!backend.supports(OpId::nn_lrn, xylem::f64) || !backend.supports(OpId::nn_lrn_grad, xylem::f64)) return;
    SCOPED_TRACE("lrn_grad, finite differences");
    for (const xylem::nn::Lrn p : {xylem::nn::Lrn{5, 0.5, 0.75, 2.0}, xylem::nn::Lrn{2, 1.0, 0.5, 1.0}}) {
      const Layout shape{2, 6, 2, 3};
      const auto xs = xylem_test::random_vector<double>(rng, shape.numel(), -2, 2);
      const auto dys = xylem_test::random_vector<double>(rng, shape.numel(), -1, 1);
      auto f = [&](const Tensor& x) {
        Tensor y(shape, xylem::f64);
        xylem::nn::lrn(backend, x, y, p);
        return y;
      };
      const Tensor x = Tensor::from(xs, shape);
      const Tensor y = f(x);
      Tensor dx(shape, xylem::f64);
      xylem::nn::lrn_grad(backend, x, y, Tensor::from(dys, shape), dx, p);
      const auto analytic = dx.to_doubles();
      expect_gradient(analytic, xs, shape, dys, f, some_coordinates(rng, xs.size()), mean_abs(analytic),
                      "lrn_grad size " + std::to_string(p.size));
    }
  }
};

TEST_P(Norm, layer_norm) {
  for_each_float_dtype([&](DType d) { layer_forward(d); });
}
TEST_P(Norm, layer_norm_grad) {
  for_each_float_dtype([&](DType d) { layer_backward(d); });
  layer_finite_differences();
}
TEST_P(Norm, batch_norm_training) {
  for_each_float_dtype([&](DType d) { batch_forward(d, true); });
}
TEST_P(Norm, batch_norm_inference) {
  for_each_float_dtype([&](DType d) { batch_forward(d, false); });
}
TEST_P(Norm, batch_norm_grad_training) {
  for_each_float_dtype([&](DType d) { batch_backward(d, true); });
  batch_finite_differences(true);
}
TEST_P(Norm, batch_norm_grad_inference) {
  for_each_float_dtype([&](DType d) { batch_backward(d, false); });
  batch_finite_differences(false);
}
TEST_P(Norm, lrn) {
  for_each_float_dtype([&](DType d) { lrn_forward(d); });
}
TEST_P(Norm, lrn_grad) {
  for_each_float_dtype([&](DType d) { lrn_backward(d); });
  lrn_finite_differences();
}

TEST_P(Norm, errors) {
  using xylem::ErrorCode;
  auto x = Tensor::from(std::vector<float>(24, 1.0f), Layout{2, 3, 4});
  auto y = Tensor::from(std::vector<float>(24, 0.0f), Layout{2, 3, 4});
  auto y_bad = Tensor::from(std::vector<float>(24, 0.0f), Layout{2, 4, 3});
  auto y64 = Tensor::from(std::vector<double>(24, 0.0), Layout{2, 3, 4});
  auto g4 = Tensor::from(std::vector<float>(4, 1.0f));
  auto g5 = Tensor::from(std::vector<float>(5, 1.0f));
  auto g4d = Tensor::from(std::vector<double>(4, 1.0));
  auto rm = Tensor::from(std::vector<float>(3, 0.0f)), rv = Tensor::from(std::vector<float>(3, 1.0f));
  auto rm64 = Tensor::from(std::vector<double>(3, 0.0));
  auto rm4 = Tensor::from(std::vector<float>(4, 0.0f));
  const auto sy = xylem_test::snapshot(y), sbad = xylem_test::snapshot(y_bad), s64 = xylem_test::snapshot(y64);
  const auto srm = xylem_test::snapshot(rm), srv = xylem_test::snapshot(rv);
  Tensor none;
  // layer_norm
  auto message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::layer_norm(backend, x, 1, none, none, 1e-5, y_bad));
  EXPECT_NE(message.find("layer_norm"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 3, 4]"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 4, 3]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::layer_norm(backend, x, 1, none, none, 1e-5, y64));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::layer_norm(backend, x, 1, g5, none, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::layer_norm(backend, x, 1, g4d, none, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::layer_norm(backend, x, 0, none, none, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::layer_norm(backend, x, 4, none, none, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::layer_norm(backend, x, 1, g4, none, -1.0, y));
  // batch_norm
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                            (void)xylem::nn::batch_norm(backend, x, g4, none, rm, rv, true, 0.1, 1e-5, y));
  EXPECT_NE(message.find("batch_norm"), std::string::npos) << message;
  EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::batch_norm(backend, x, none, none, rm, rv, true, 0.1, 1e-5, y_bad));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::batch_norm(backend, x, none, none, rm4, rv, true, 0.1, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::batch_norm(backend, x, none, none, rm64, rv, true, 0.1, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::batch_norm(backend, x, none, none, rm, rv, true, 0.1, 1e-5, y64));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::batch_norm(backend, x, none, none, rm, rv, true, 1.5, 1e-5, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::batch_norm(backend, x, none, none, rm, rv, true, 0.1, -1.0, y));
  {
    auto one = Tensor::from(std::vector<float>(3, 1.0f), Layout{1, 3});  // one value per channel
    auto y1 = Tensor::from(std::vector<float>(3, 0.0f), Layout{1, 3});
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::batch_norm(backend, one, none, none, rm, rv, true, 0.1, 1e-5, y1));
    auto flat = Tensor::from(std::vector<float>(3, 1.0f));
    auto flat_y = Tensor::from(std::vector<float>(3, 0.0f));
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::batch_norm(backend, flat, none, none, rm, rv, false, 0.1, 1e-5, flat_y));
  }
  // lrn
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::lrn(backend, x, y_bad));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::lrn(backend, x, y64));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::lrn(backend, x, y, xylem::nn::Lrn{0, 1e-4, 0.75, 2}));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::lrn_grad(backend, x, y, y_bad, y));
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(y_bad, sbad);
  XY_EXPECT_UNCHANGED(y64, s64);
  XY_EXPECT_UNCHANGED(rm, srm);
  XY_EXPECT_UNCHANGED(rv, srv);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Norm, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

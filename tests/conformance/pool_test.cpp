// xylem::nn max and average pooling, forward and backward, in f16, bf16,
// f32 and f64 against float64 references: default and overlapping strides,
// padding (which never wins a max), count_include_pad both ways, whole-image
// and 1x1 windows, ties (the first maximum takes the gradient), NaN (it is
// the maximum), views; gradients also against finite differences of the
// backend's forward op (f64); bad arguments.
#include <numeric>

#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

using xylem::nn::Pool2d;



struct PoolCase {
  Dims x;
  Pool2d p;
  ViewKind layout = ViewKind::contiguous;
};

std::vector<PoolCase> cases() {
  return {{{2, 3, 8, 8}, {2, 2}},
          {{2, 3, 7, 9}, {3, 3, 2, 2, 1, 1}},
          {{1, 2, 7, 6}, {3, 2, 1, 2, 1, 1}},
          {{2, 2, 5, 5}, {5, 5}},
          {{1, 1, 1, 1}, {1, 1}},
          {{2, 3, 9, 7}, {3, 3, 1, 1, 1, 1}},
          {{1, 2, 6, 6}, {4, 4, 2, 2, 2, 2}},
          {{2, 3, 10, 8}, {2, 3, 2, 2, 0, 1}, ViewKind::strided},
          {{3, 2, 6, 5}, {2, 2, 1, 1}, ViewKind::transposed}};
}

std::string describe(const PoolCase& c) {
  const auto& p = c.p;
  return "x " + dims_text(c.x) + " (" + name(c.layout) + ") window " + std::to_string(p.kernel_h) + "x" +
         std::to_string(p.kernel_w) + " stride " + std::to_string(p.stride_h) + "," + std::to_string(p.stride_w) +
         " pad " + std::to_string(p.pad_h) + "," + std::to_string(p.pad_w) +
         (p.count_include_pad ? " count_include_pad" : " real elements only");
}

// The windows of a pooling: for each output element, the logical indices of
// the real input elements it covers (row-major), and its divisor.
struct Windows {
  Dims y_dims;
  std::vector<std::vector<std::size_t>> members;
  std::vector<double> divisor;
  Windows(const Dims& x, const Pool2d& p) {
    const std::int64_t sh = p.stride_h ? p.stride_h : p.kernel_h, sw = p.stride_w ? p.stride_w : p.kernel_w;
    const std::int64_t n = x[0], c = x[1], h = x[2], w = x[3];
    const std::int64_t ph = (h + 2 * p.pad_h - p.kernel_h) / sh + 1, pw = (w + 2 * p.pad_w - p.kernel_w) / sw + 1;
    y_dims = {n, c, ph, pw};
    for (std::int64_t b = 0; b < n * c; ++b)
      for (std::int64_t i = 0; i < ph; ++i)
        for (std::int64_t j = 0; j < pw; ++j) {
          std::vector<std::size_t> m;
          for (std::int64_t a = 0; a < p.kernel_h; ++a)
            for (std::int64_t e = 0; e < p.kernel_w; ++e) {
              const std::int64_t hh = i * sh - p.pad_h + a, ww = j * sw - p.pad_w + e;
              if (hh >= 0 && hh < h && ww >= 0 && ww < w) m.push_back(static_cast<std::size_t>((b * h + hh) * w + ww));
            }
          divisor.push_back(p.count_include_pad ? double(p.kernel_h * p.kernel_w) : double(m.size()));
          members.push_back(std::move(m));
        }
  }
  // The window's first maximum; a NaN is the maximum (the first NaN).
  static std::size_t first_max(const std::vector<double>& x, const std::vector<std::size_t>& m) {
    std::size_t best = m.front();
    for (std::size_t k : m) {
      if (std::isnan(x[best])) break;
      if (std::isnan(x[k]) || x[k] > x[best]) best = k;
    }
    return best;
  }
};

class Pool : public Conformance {
 protected:
  bool pool_runs(OpId op, DType dtype) {
    return runs(op, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {1, 1, 2, 2});
      auto y = output(dtype, ViewKind::contiguous, {1, 1, 1, 1});
      auto dx = output(dtype, ViewKind::contiguous, {1, 1, 2, 2});
      const Pool2d p{2, 2};
      if (op == OpId::nn_max_pool2d) xylem::nn::max_pool2d(backend, x.view, y.view, p);
      if (op == OpId::nn_avg_pool2d) xylem::nn::avg_pool2d(backend, x.view, y.view, p);
      if (op == OpId::nn_max_pool2d_grad) xylem::nn::max_pool2d_grad(backend, x.view, y.view, dx.view, p);
      if (op == OpId::nn_avg_pool2d_grad) xylem::nn::avg_pool2d_grad(backend, y.view, dx.view, p);
    });
  }

  // kind: 0 random, 1 all negative (padding must not win), 2 small integers
  // (ties), 3 random with NaNs.
  Arg pool_input(DType dtype, const PoolCase& c, int kind) {
    const auto n = static_cast<std::size_t>(shape_of(c.x).numel());
    std::vector<double> v = xylem_test::random_vector<double>(rng, static_cast<std::int64_t>(n), -1, 1);
    std::uniform_int_distribution<int> small(0, 2);
    for (std::size_t k = 0; k < n; ++k) {
      if (kind == 1) v[k] = v[k] / 2 - 1.5;
      if (kind == 2) v[k] = small(rng);
      if (kind == 3 && k % 17 == 5) v[k] = kNaN;
    }
    return input(dtype, c.layout, c.x, 0, 0, &v);
  }

  void max_forward(DType dtype) {
    if (!pool_runs(OpId::nn_max_pool2d, dtype)) return;
    for (const auto& c : cases()) {
      for (int kind = 0; kind < 4; ++kind) {
        SCOPED_TRACE(describe(c) + " input kind " + std::to_string(kind));
        const Windows win(c.x, c.p);
        EXPECT_EQ(xylem::nn::pool2d_output_shape(shape_of(c.x), c.p), shape_of(win.y_dims));
        auto x = pool_input(dtype, c, kind);
        auto y = output(dtype, c.layout == ViewKind::transposed ? ViewKind::strided : c.layout, win.y_dims);
        xylem::nn::max_pool2d(backend, x.view, y.view, c.p);
        const auto xs = x.values();
        std::vector<double> expect;
        for (const auto& m : win.members) expect.push_back(xs[Windows::first_max(xs, m)]);
        expect_result(y, expect, [](std::size_t) { return 0.0; }, "max_pool2d");
      }
    }
  }

  void max_backward(DType dtype) {
    if (!pool_runs(OpId::nn_max_pool2d_grad, dtype)) return;
    for (const auto& c : cases()) {
      for (int kind = 0; kind < 4; ++kind) {
        SCOPED_TRACE(describe(c) + " input kind " + std::to_string(kind));
        const Windows win(c.x, c.p);
        auto x = pool_input(dtype, c, kind);
        auto dy = input(dtype, ViewKind::contiguous, win.y_dims);
        auto dx = output(dtype, c.layout, c.x);
        xylem::nn::max_pool2d_grad(backend, x.view, dy.view, dx.view, c.p);
        const auto xs = x.values(), dys = dy.values();
        std::vector<double> expect(xs.size(), 0), mag(xs.size(), 0);
        std::vector<std::int64_t> count(xs.size(), 0);
        for (std::size_t o = 0; o < win.members.size(); ++o) {
          const std::size_t k = Windows::first_max(xs, win.members[o]);
          expect[k] += dys[o], mag[k] += std::abs(dys[o]), ++count[k];
        }
        expect_result(dx, expect, [&](std::size_t k) {
          return tol(dtype).elem * std::abs(expect[k]) + 4 * acc(dtype, count[k]) * mag[k];
        }, "max_pool2d_grad");
      }
    }
  }

  void avg_forward(DType dtype) {
    if (!pool_runs(OpId::nn_avg_pool2d, dtype)) return;
    for (auto c : cases()) {
      for (bool include : {true, false}) {
        c.p.count_include_pad = include;
        SCOPED_TRACE(describe(c));
        const Windows win(c.x, c.p);
        auto x = pool_input(dtype, c, 0);
        auto y = output(dtype, c.layout, win.y_dims);
        xylem::nn::avg_pool2d(backend, x.view, y.view, c.p);
        const auto xs = x.values();
        std::vector<double> expect, mag;
        for (std::size_t o = 0; o < win.members.size(); ++o) {
          double s = 0, a = 0;
          for (std::size_t k : win.members[o]) s += xs[k], a += std::abs(xs[k]);
          expect.push_back(s / win.divisor[o]);
          mag.push_back(a / win.divisor[o]);
        }
        const std::int64_t terms = c.p.kernel_h * c.p.kernel_w;
        expect_result(y, expect, [&](std::size_t k) {
          return tol(dtype).elem * std::abs(expect[k]) + 4 * acc(dtype, terms) * mag[k] + floor_of(dtype);
        }, "avg_pool2d");
      }
    }
  }

  void avg_backward(DType dtype) {
    if (!pool_runs(OpId::nn_avg_pool2d_grad, dtype)) return;
    for (auto c : cases()) {
      for (bool include : {true, false}) {
        c.p.count_include_pad = include;
        SCOPED_TRACE(describe(c));
        const Windows win(c.x, c.p);
        auto dy = input(dtype, c.layout == ViewKind::transposed ? ViewKind::strided : ViewKind::contiguous, win.y_dims);
        auto dx = output(dtype, c.layout, c.x);
        xylem::nn::avg_pool2d_grad(backend, dy.view, dx.view, c.p);
        const auto dys = dy.values();
        std::vector<double> expect(dx.pos.size(), 0), mag(expect.size(), 0);
        for (std::size_t o = 0; o < win.members.size(); ++o) {
          for (std::size_t k : win.members[o]) expect[k] += dys[o] / win.divisor[o], mag[k] += std::abs(dys[o]) / win.divisor[o];
        }
        const std::int64_t terms = c.p.kernel_h * c.p.kernel_w;
        expect_result(dx, expect, [&](std::size_t k) {
          return tol(dtype).elem * std::abs(expect[k]) + 4 * acc(dtype, terms) * mag[k] + floor_of(dtype);
        }, "avg_pool2d_grad");
      }
    }
  }

  // Gradients against d/dx sum(dy * pool(x)), f64; max pooling on values at
  // least 1e-2 apart, so a step of 1e-5 never changes a window's maximum.
  void finite_differences(bool max) {
    if (!backend.supports(max ? OpId::nn_max_pool2d : OpId::nn_avg_pool2d, xylem::f64) ||
        !backend.supports(max ? OpId::nn_max_pool2d_grad : OpId::nn_avg_pool2d_grad, xylem::f64))
      return;
    SCOPED_TRACE("finite differences");
    for (auto c : {cases()[1], cases()[6]}) {
      c.p.count_include_pad = false;
      SCOPED_TRACE(describe(c));
      const Windows win(c.x, c.p);
      const Layout xshape = shape_of(c.x), yshape = shape_of(win.y_dims);
      std::vector<double> xs(static_cast<std::size_t>(xshape.numel()));
      std::iota(xs.begin(), xs.end(), 0.0);
      std::shuffle(xs.begin(), xs.end(), rng);
      for (auto& v : xs) v = v * 1e-2 - 1;
      const auto dys = xylem_test::random_vector<double>(rng, yshape.numel());
      auto f = [&](const Tensor& x) {
        Tensor y(yshape, xylem::f64);
        max ? xylem::nn::max_pool2d(backend, x, y, c.p) : xylem::nn::avg_pool2d(backend, x, y, c.p);
        return y;
      };
      Tensor dx(xshape, xylem::f64);
      if (max) {
        xylem::nn::max_pool2d_grad(backend, Tensor::from(xs, xshape), Tensor::from(dys, yshape), dx, c.p);
      } else {
        xylem::nn::avg_pool2d_grad(backend, Tensor::from(dys, yshape), dx, c.p);
      }
      const auto analytic = dx.to_doubles();
      expect_gradient(analytic, xs, xshape, dys, f, some_coordinates(rng, xs.size(), 10), mean_abs(analytic),
                      max ? "max_pool2d_grad" : "avg_pool2d_grad");
    }
  }
};

TEST_P(Pool, max_pool2d) {
  for_each_float_dtype([&](DType d) { max_forward(d); });
}
TEST_P(Pool, max_pool2d_grad) {
  for_each_float_dtype([&](DType d) { max_backward(d); });
  finite_differences(true);
}
TEST_P(Pool, avg_pool2d) {
  for_each_float_dtype([&](DType d) { avg_forward(d); });
}
TEST_P(Pool, avg_pool2d_grad) {
  for_each_float_dtype([&](DType d) { avg_backward(d); });
  finite_differences(false);
}

TEST_P(Pool, errors) {
  using xylem::ErrorCode;
  auto host = [](const Dims& dims) {
    const Layout s = shape_of(dims);
    return Tensor::from(std::vector<float>(static_cast<std::size_t>(s.numel()), 1.0f), s);
  };
  auto x = host({1, 2, 5, 5});
  auto y = host({1, 2, 2, 2});
  auto y_bad = host({1, 2, 3, 3});
  auto y64 = Tensor::from(std::vector<double>(8, 0.0), Layout{1, 2, 2, 2});
  const auto sy = xylem_test::snapshot(y), sbad = xylem_test::snapshot(y_bad), s64 = xylem_test::snapshot(y64);
  const Pool2d p{2, 2};
  auto message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::max_pool2d(backend, x, y_bad, p));
  EXPECT_NE(message.find("max_pool2d"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 2, 3, 3]"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 2, 2, 2]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::avg_pool2d(backend, x, y_bad, p));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::max_pool2d(backend, x, y64, p));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::max_pool2d(backend, host({2, 5, 5}), y, p));
  // A window larger than the padded input; padding over half the window.
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::max_pool2d(backend, x, y, Pool2d{6, 6}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::avg_pool2d(backend, x, y, Pool2d{2, 2, 2, 2, 2, 0}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::max_pool2d(backend, x, y, Pool2d{0, 2}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::max_pool2d(backend, x, y, Pool2d{2, 2, -1, 2}));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::max_pool2d_grad(backend, x, y_bad, y, p));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::avg_pool2d_grad(backend, y_bad, y_bad, p));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::avg_pool2d_grad(backend, y, y64, Pool2d{1, 1}));
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(y_bad, sbad);
  XY_EXPECT_UNCHANGED(y64, s64);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Pool, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

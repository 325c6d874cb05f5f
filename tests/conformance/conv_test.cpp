// xylem::nn conv2d forward, grad_data and grad_filter in f16, bf16, f32 and
// f64 against float64 references: strides, padding, dilation, groups
// (depthwise too), 1x1 and whole-image kernels, size-1 images, pixels no
// window covers, odd sizes, views; gradients also against finite
// differences of the backend's forward op (f64); bad arguments.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

using xylem::nn::Conv2d;



struct ConvCase {
  Dims x, w;
  Conv2d p;
  ViewKind x_layout = ViewKind::contiguous, y_layout = ViewKind::contiguous;
};

std::vector<ConvCase> cases() {
  return {{{2, 3, 7, 9}, {4, 3, 3, 3}, {}},
          {{1, 5, 11, 10}, {3, 5, 3, 2}, {2, 3, 1, 0, 1, 1, 1}},
          {{2, 2, 9, 9}, {3, 2, 3, 3}, {1, 1, 2, 1, 2, 1, 1}},
          {{2, 4, 6, 7}, {6, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 2}},
          {{1, 3, 8, 8}, {3, 1, 3, 3}, {2, 2, 1, 1, 1, 1, 3}},
          {{3, 6, 5, 5}, {8, 6, 1, 1}, {}},
          {{2, 3, 5, 6}, {2, 3, 5, 6}, {}},
          {{1, 1, 1, 1}, {1, 1, 1, 1}, {}},
          {{1, 3, 8, 8}, {2, 3, 3, 3}, {2, 2, 0, 0, 1, 1, 1}},
          {{2, 4, 7, 7}, {4, 2, 3, 3}, {1, 1, 2, 2, 2, 2, 2}},
          {{1, 2, 3, 3}, {2, 2, 5, 5}, {1, 1, 1, 1, 1, 1, 1}},
          {{2, 3, 6, 7}, {4, 3, 3, 3}, {1, 2, 1, 1, 1, 1, 1}, ViewKind::strided, ViewKind::padded},
          {{2, 16, 14, 14}, {16, 16, 3, 3}, {1, 1, 1, 1, 1, 1, 1}},
          {{2, 32, 9, 9}, {32, 16, 3, 3}, {2, 2, 1, 1, 2, 2, 2}},
          {{2, 32, 10, 11}, {64, 32, 3, 3}, {1, 2, 2, 1, 1, 1, 1}},
          {{1, 48, 7, 7}, {48, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 48}},
          {{2, 32, 8, 9}, {32, 32, 3, 2}, {2, 1, 0, 1, 1, 2, 1}, ViewKind::strided, ViewKind::padded},
          {{2, 16, 6, 6}, {32, 16, 1, 1}, {2, 2, 0, 0, 1, 1, 1}},
          // Fewer filters than a block of oneDNN's layout (padded to it).
          {{3, 16, 6, 6}, {12, 16, 3, 3}, {1, 1, 1, 1, 1, 1, 1}}};
}

std::string describe(const ConvCase& c) {
  const auto& p = c.p;
  return "x " + dims_text(c.x) + " (" + name(c.x_layout) + ") w " + dims_text(c.w) + " stride " +
         std::to_string(p.stride_h) + "," + std::to_string(p.stride_w) + " pad " + std::to_string(p.pad_h) + "," +
         std::to_string(p.pad_w) + " dilation " + std::to_string(p.dilation_h) + "," + std::to_string(p.dilation_w) +
         " groups " + std::to_string(p.groups) + ", y " + name(c.y_layout);
}

// Every (output, input, weight) product of a convolution, by logical index.
struct Geometry {
  std::int64_t n, c, h, w, k, r, s, p, q, cg, kg;
  Conv2d prm;
  Geometry(const Dims& x, const Dims& wd, const Conv2d& pr)
      : n(x[0]), c(x[1]), h(x[2]), w(x[3]), k(wd[0]), r(wd[2]), s(wd[3]), cg(wd[1]), kg(wd[0] / pr.groups), prm(pr) {
    p = (h + 2 * pr.pad_h - pr.dilation_h * (r - 1) - 1) / pr.stride_h + 1;
    q = (w + 2 * pr.pad_w - pr.dilation_w * (s - 1) - 1) / pr.stride_w + 1;
  }
  [[nodiscard]] Dims y_dims() const { return {n, k, p, q}; }
  template <class F>
  void each(F&& f) const {
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t o = 0; o < k; ++o)
        for (std::int64_t i = 0; i < p; ++i)
          for (std::int64_t j = 0; j < q; ++j) {
            const auto yi = static_cast<std::size_t>(((b * k + o) * p + i) * q + j);
            for (std::int64_t ci = 0; ci < cg; ++ci) {
              const std::int64_t ch = (o / kg) * cg + ci;
              for (std::int64_t a = 0; a < r; ++a) {
                const std::int64_t hh = i * prm.stride_h - prm.pad_h + a * prm.dilation_h;
                if (hh < 0 || hh >= h) continue;
                for (std::int64_t e = 0; e < s; ++e) {
                  const std::int64_t ww = j * prm.stride_w - prm.pad_w + e * prm.dilation_w;
                  if (ww < 0 || ww >= w) continue;
                  f(yi, static_cast<std::size_t>(((b * c + ch) * h + hh) * w + ww),
                    static_cast<std::size_t>(((o * cg + ci) * r + a) * s + e));
                }
              }
            }
          }
  }
};

class Conv : public Conformance {
 protected:
  bool conv_runs(OpId op, DType dtype) {
    return runs(op, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {1, 1, 2, 2});
      auto w = input(dtype, ViewKind::contiguous, {1, 1, 1, 1});
      auto y = output(dtype, ViewKind::contiguous, {1, 1, 2, 2});
      if (op == OpId::nn_conv2d) xylem::nn::conv2d(backend, x.view, w.view, y.view);
      if (op == OpId::nn_conv2d_grad_data) xylem::nn::conv2d_grad_data(backend, x.view, w.view, y.view);
      if (op == OpId::nn_conv2d_grad_filter) xylem::nn::conv2d_grad_filter(backend, x.view, x.view, w.view);
    });
  }

  static std::function<double(std::size_t)> allowed(DType dtype, const std::vector<double>& expect,
                                                    const std::vector<double>& mag, std::int64_t terms) {
    return [&expect, &mag, dtype, terms](std::size_t k) {
      return tol(dtype).elem * std::abs(expect[k]) + 4 * acc(dtype, terms) * mag[k] + floor_of(dtype);
    };
  }

  void forward(DType dtype) {
    if (!conv_runs(OpId::nn_conv2d, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      const Geometry g(c.x, c.w, c.p);
      EXPECT_EQ(xylem::nn::conv2d_output_shape(shape_of(c.x), shape_of(c.w), c.p), shape_of(g.y_dims()));
      auto x = input(dtype, c.x_layout, c.x);
      auto w = input(dtype, ViewKind::contiguous, c.w);
      auto y = output(dtype, c.y_layout, g.y_dims());
      xylem::nn::conv2d(backend, x.view, w.view, y.view, c.p);
      const auto xs = x.values(), ws = w.values();
      std::vector<double> expect(y.pos.size(), 0), mag(expect.size(), 0);
      g.each([&](std::size_t yi, std::size_t xi, std::size_t wi) {
        expect[yi] += xs[xi] * ws[wi];
        mag[yi] += std::abs(xs[xi] * ws[wi]);
      });
      expect_result(y, expect, allowed(dtype, expect, mag, g.cg * g.r * g.s), "conv2d");
    }
  }

  void grad_data(DType dtype) {
    if (!conv_runs(OpId::nn_conv2d_grad_data, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      const Geometry g(c.x, c.w, c.p);
      auto dy = input(dtype, c.y_layout == ViewKind::padded ? ViewKind::strided : c.y_layout, g.y_dims());
      auto w = input(dtype, ViewKind::contiguous, c.w);
      auto dx = output(dtype, c.x_layout, c.x);
      xylem::nn::conv2d_grad_data(backend, dy.view, w.view, dx.view, c.p);
      const auto dys = dy.values(), ws = w.values();
      std::vector<double> expect(dx.pos.size(), 0), mag(expect.size(), 0);
      g.each([&](std::size_t yi, std::size_t xi, std::size_t wi) {
        expect[xi] += dys[yi] * ws[wi];
        mag[xi] += std::abs(dys[yi] * ws[wi]);
      });
      expect_result(dx, expect, allowed(dtype, expect, mag, g.kg * g.r * g.s), "conv2d_grad_data");
    }
  }

  void grad_filter(DType dtype) {
    if (!conv_runs(OpId::nn_conv2d_grad_filter, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      const Geometry g(c.x, c.w, c.p);
      auto x = input(dtype, c.x_layout, c.x);
      auto dy = input(dtype, c.y_layout == ViewKind::padded ? ViewKind::transposed : c.y_layout, g.y_dims());
      auto dw = output(dtype, c.x_layout == ViewKind::strided ? ViewKind::strided : ViewKind::contiguous, c.w);
      xylem::nn::conv2d_grad_filter(backend, x.view, dy.view, dw.view, c.p);
      const auto xs = x.values(), dys = dy.values();
      std::vector<double> expect(dw.pos.size(), 0), mag(expect.size(), 0);
      g.each([&](std::size_t yi, std::size_t xi, std::size_t wi) {
        expect[wi] += xs[xi] * dys[yi];
        mag[wi] += std::abs(xs[xi] * dys[yi]);
      });
      expect_result(dw, expect, allowed(dtype, expect, mag, g.n * g.p * g.q), "conv2d_grad_filter");
    }
  }

  // grad_data and grad_filter against d/dx and d/dw of sum(dy * conv2d(x, w)), f64.
  void finite_differences() {
    for (OpId op : {OpId::nn_conv2d, OpId::nn_conv2d_grad_data, OpId::nn_conv2d_grad_filter}) {
      if (!backend.supports(op, xylem::f64)) return;
    }
    SCOPED_TRACE("finite differences");
    for (const auto& c : {cases()[1], cases()[3], cases()[9]}) {
      SCOPED_TRACE(describe(c));
      const Geometry g(c.x, c.w, c.p);
      const Layout xs_shape = shape_of(c.x), ws_shape = shape_of(c.w), ys_shape = shape_of(g.y_dims());
      const auto xs = xylem_test::random_vector<double>(rng, xs_shape.numel());
      const auto ws = xylem_test::random_vector<double>(rng, ws_shape.numel());
      const auto dys = xylem_test::random_vector<double>(rng, ys_shape.numel());
      auto run = [&](const Tensor& x, const Tensor& w) {
        Tensor y(ys_shape, xylem::f64);
        xylem::nn::conv2d(backend, x, w, y, c.p);
        return y;
      };
      Tensor dx(xs_shape, xylem::f64), dw(ws_shape, xylem::f64);
      xylem::nn::conv2d_grad_data(backend, Tensor::from(dys, ys_shape), Tensor::from(ws, ws_shape), dx, c.p);
      xylem::nn::conv2d_grad_filter(backend, Tensor::from(xs, xs_shape), Tensor::from(dys, ys_shape), dw, c.p);
      const auto adx = dx.to_doubles(), adw = dw.to_doubles();
      expect_gradient(adx, xs, xs_shape, dys, [&](const Tensor& x) { return run(x, Tensor::from(ws, ws_shape)); },
                      some_coordinates(rng, xs.size()), mean_abs(adx), "conv2d_grad_data");
      expect_gradient(adw, ws, ws_shape, dys, [&](const Tensor& w) { return run(Tensor::from(xs, xs_shape), w); },
                      some_coordinates(rng, ws.size()), mean_abs(adw), "conv2d_grad_filter");
    }
  }
};

TEST_P(Conv, conv2d) {
  for_each_float_dtype([&](DType d) { forward(d); });
}
TEST_P(Conv, conv2d_grad_data) {
  for_each_float_dtype([&](DType d) { grad_data(d); });
  finite_differences();
}
TEST_P(Conv, conv2d_grad_filter) {
  for_each_float_dtype([&](DType d) { grad_filter(d); });
}

TEST_P(Conv, errors) {
  using xylem::ErrorCode;
  auto host = [](const Dims& dims, auto value) {
    using T = decltype(value);
    const Layout s = shape_of(dims);
    return Tensor::from(std::vector<T>(static_cast<std::size_t>(s.numel()), value), s);
  };
  auto x = host({1, 3, 5, 5}, 1.0f);
  auto w = host({4, 3, 3, 3}, 1.0f);
  auto y = host({1, 4, 3, 3}, 0.0f);
  auto y_bad = host({1, 4, 5, 5}, 0.0f);
  auto w64 = host({4, 3, 3, 3}, 1.0);
  auto w_c = host({4, 2, 3, 3}, 1.0f);
  auto w_big = host({4, 3, 6, 6}, 1.0f);
  auto x3 = host({3, 5, 5}, 1.0f);
  const auto sy = xylem_test::snapshot(y), sbad = xylem_test::snapshot(y_bad);
  auto message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::conv2d(backend, x, w, y_bad));
  EXPECT_NE(message.find("conv2d"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 4, 5, 5]"), std::string::npos) << message;
  EXPECT_NE(message.find("[1, 4, 3, 3]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::conv2d(backend, x, w64, y));
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::conv2d(backend, x, w_c, y));
  EXPECT_NE(message.find("[4, 2, 3, 3]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::conv2d(backend, x3, w, y));
  // groups must divide C (3) and K (4).
  message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w, y, Conv2d{1, 1, 1, 1, 1, 1, 2}));
  EXPECT_NE(message.find("conv2d"), std::string::npos) << message;
  // A kernel larger than the padded input.
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w_big, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w, y, Conv2d{0, 1, 0, 0, 1, 1, 1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w, y, Conv2d{1, 1, -1, 0, 1, 1, 1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w, y, Conv2d{1, 1, 0, 0, 0, 1, 1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::conv2d(backend, x, w, y, Conv2d{1, 1, 0, 0, 1, 1, 0}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::conv2d_output_shape(x.layout(), w_big.layout(), {}));
  // Gradients: the image shape must fit dy.
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::conv2d_grad_data(backend, y_bad, w, y));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::conv2d_grad_filter(backend, x, y_bad, w_c));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::conv2d_grad_filter(backend, x, y, w64));
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(y_bad, sbad);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Conv, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

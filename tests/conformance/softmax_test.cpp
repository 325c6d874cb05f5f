// xylem::nn softmax and log_softmax along any axis, and their gradients, in
// f16, bf16, f32 and f64: every rank up to 4, negative axes, size-1 axes,
// long rows, views, rows of huge values (no overflow) and masked (-Inf)
// elements, against float64 references; gradients also against finite
// differences of the backend's forward op; bad arguments.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();


// dims around `axis`: element (o, j, i) is logical index (o * r + j) * inner + i.
struct Rows {
  std::int64_t outer = 1, r = 1, inner = 1;
  Rows(const Dims& dims, int axis) {
    const int rank = static_cast<int>(dims.size());
    const int a = axis < 0 ? axis + rank : axis;
    for (int d = 0; d < rank; ++d) (d < a ? outer : d == a ? r : inner) *= dims[static_cast<std::size_t>(d)];
  }
  [[nodiscard]] std::size_t at(std::int64_t o, std::int64_t j, std::int64_t i) const {
    return static_cast<std::size_t>((o * r + j) * inner + i);
  }
  // f(o, i) for every row.
  template <class F>
  void each(F&& f) const {
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) f(o, i);
  }
};

// Softmax (log: log_softmax) of x along the rows, in f64.
std::vector<double> softmax_ref(const std::vector<double>& x, const Rows& g, bool log) {
  std::vector<double> y(x.size());
  g.each([&](std::int64_t o, std::int64_t i) {
    double m = -kInf;
    for (std::int64_t j = 0; j < g.r; ++j) m = std::max(m, x[g.at(o, j, i)]);
    double s = 0;
    for (std::int64_t j = 0; j < g.r; ++j) s += std::exp(x[g.at(o, j, i)] - m);
    for (std::int64_t j = 0; j < g.r; ++j) {
      const double v = x[g.at(o, j, i)];
      y[g.at(o, j, i)] = log ? v - m - std::log(s) : std::exp(v - m) / s;
    }
  });
  return y;
}

struct Case {
  Dims dims;
  int axis;
  ViewKind in = ViewKind::contiguous, out = ViewKind::contiguous;
};

std::vector<Case> cases() {
  return {{{1}, 0},
          {{7}, -1},
          {{1, 1}, 0},
          {{5, 1000}, 1},
          {{1000, 3}, 0},
          {{3, 7, 5}, 0},
          {{3, 7, 5}, 1},
          {{3, 7, 5}, -1},
          {{3, 1, 5}, 1},
          {{2, 3, 4, 5}, 1},
          {{2, 3, 4, 5}, -2},
          {{3, 20011}, -1},
          {{6, 33}, -1, ViewKind::strided, ViewKind::contiguous},
          {{6, 33}, 0, ViewKind::contiguous, ViewKind::strided},
          {{9, 13}, 1, ViewKind::transposed, ViewKind::padded},
          {{9, 13}, 0, ViewKind::padded, ViewKind::transposed}};
}

std::string describe(const Case& c) {
  std::string s = std::string(name(c.in)) + " -> " + name(c.out) + " [";
  for (std::size_t i = 0; i < c.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(c.dims[i]);
  return s + "] axis " + std::to_string(c.axis);
}

using SoftmaxFn = void (*)(const Backend&, const Tensor&, int, Tensor&);
using SoftmaxGradFn = void (*)(const Backend&, const Tensor&, const Tensor&, int, Tensor&);

class Softmax : public Conformance {
 protected:
  // (The writing forms: each name also has a returning overload.)
  static SoftmaxFn forward_fn(bool log) {
    return log ? SoftmaxFn{xylem::nn::log_softmax} : SoftmaxFn{xylem::nn::softmax};
  }
  static SoftmaxGradFn grad_fn(bool log) {
    return log ? SoftmaxGradFn{xylem::nn::log_softmax_grad} : SoftmaxGradFn{xylem::nn::softmax_grad};
  }
  static const char* op_name(bool log) { return log ? "log_softmax" : "softmax"; }

  // exp and the sum in the compute type, the result rounded to storage.
  static std::function<double(std::size_t)> allowed(DType dtype, bool log, const std::vector<double>& x,
                                                    const std::vector<double>& expect, const Rows& g) {
    std::vector<double> scale(x.size());  // |x - max| + log r + 1 per element
    g.each([&](std::int64_t o, std::int64_t i) {
      double m = -kInf;
      for (std::int64_t j = 0; j < g.r; ++j) m = std::max(m, x[g.at(o, j, i)]);
      for (std::int64_t j = 0; j < g.r; ++j) {
        const double v = x[g.at(o, j, i)];
        scale[g.at(o, j, i)] = (std::isinf(v) ? 0.0 : std::abs(v - m)) + std::log(double(g.r)) + 1;
      }
    });
    const DTol t = tol(dtype);
    const double floor = floor_of(dtype);
    return [=](std::size_t k) {
      const double e = std::abs(expect[k]);
      return log ? t.elem * e + 8 * t.eps * scale[k] : t.elem * e + 8 * t.eps * scale[k] * e + floor;
    };
  }

  bool forward_runs(bool log, DType dtype) {
    return runs(OpId::nn_softmax, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {2, 3});
      auto y = output(dtype, ViewKind::contiguous, {2, 3});
      forward_fn(log)(backend, x.view, 1, y.view);
    });
  }

  // Runs the op on x (any values) and checks y.
  void check_forward(bool log, DType dtype, const Case& c, const std::vector<double>* values, double low,
                     double high) {
    auto x = input(dtype, c.in, c.dims, low, high, values);
    auto y = output(dtype, c.out, c.dims);
    forward_fn(log)(backend, x.view, c.axis, y.view);
    const Rows g(c.dims, c.axis);
    const auto xs = x.values();
    const auto expect = softmax_ref(xs, g, log);
    expect_result(y, expect, allowed(dtype, log, xs, expect, g), op_name(log));
    EXPECT_EQ(x.base.version(), 1u) << "the input was written";
  }

  void forward(bool log, DType dtype) {
    if (!forward_runs(log, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      check_forward(log, dtype, c, nullptr, -5, 5);
    }
  }

  // Rows around 1e4, and rows of the dtype's largest finite value (all equal,
  // or alternating with half of it): exp must not overflow.
  void huge(bool log, DType dtype) {
    if (!forward_runs(log, dtype)) return;
    const double big = dtype == DType::f16 ? 65504.0
                       : dtype == DType::f64 ? std::numeric_limits<double>::max()
                                             : double(std::numeric_limits<float>::max());
    const double most = round_to(dtype, big * (1 - 1e-3));  // finite in the dtype
    const Case c{{4, 257}, 1};
    std::vector<double> values(4 * 257);
    std::uniform_real_distribution<double> noise(-10, 10);
    for (std::size_t j = 0; j < 257; ++j) {
      values[j] = 1e4 + noise(rng);
      values[257 + j] = -1e4 + noise(rng);
      values[2 * 257 + j] = most;
      values[3 * 257 + j] = j % 2 ? most : most / 2;
    }
    check_forward(log, dtype, c, &values, 0, 0);
    // The same along axis 0, the rows strided in memory.
    std::vector<double> transposed(values.size());
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 257; ++j) transposed[j * 4 + i] = values[i * 257 + j];
    check_forward(log, dtype, {{257, 4}, 0}, &transposed, 0, 0);
  }

  // -Inf elements (a mask) get probability 0 (log: -Inf), first or anywhere.
  void masked(bool log, DType dtype) {
    if (!forward_runs(log, dtype)) return;
    std::vector<double> values = xylem_test::random_vector<double>(rng, 3 * 100, -5, 5);
    for (std::size_t j = 0; j < 100; j += 3) values[j] = -kInf;
    values[100] = -kInf;
    values[199] = -kInf;
    for (std::size_t j = 200; j < 300; j += 2) values[j] = -kInf;
    check_forward(log, dtype, {{3, 100}, 1}, &values, 0, 0);
  }

  // A NaN anywhere in a row makes the whole row NaN, in rows long enough to
  // reach the kernels' unrolled loops, along the last axis and along the first.
  void nan_rows(bool log, DType dtype) {
    if (!forward_runs(log, dtype)) return;
    std::vector<double> values = xylem_test::random_vector<double>(rng, 3 * 300, -5, 5);
    values[300 + 250] = kNaN;  // row 1 of [3, 300]; column 250 % 3 of [300, 3]
    values[2 * 300 + 7] = kNaN;
    check_forward(log, dtype, {{3, 300}, 1}, &values, 0, 0);
    check_forward(log, dtype, {{300, 3}, 0}, &values, 0, 0);
  }

  void backward(bool log, DType dtype) {
    if (!runs(OpId::nn_softmax_grad, dtype, [&] {
          auto y = input(dtype, ViewKind::contiguous, {2, 3}, 0, 1);
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          grad_fn(log)(backend, y.view, y.view, 1, dx.view);
        })) {
      return;
    }
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      const Rows g(c.dims, c.axis);
      std::int64_t n = 1;
      for (auto d : c.dims) n *= d;
      // y: the forward output of random logits (rounded to the dtype).
      const auto ys = softmax_ref(xylem_test::random_vector<double>(rng, n, -4, 4), g, log);
      auto y = input(dtype, c.in, c.dims, 0, 0, &ys);
      auto dy = input(dtype, c.out == ViewKind::padded ? ViewKind::contiguous : c.out, c.dims, -1, 1);
      auto dx = output(dtype, c.out, c.dims);
      grad_fn(log)(backend, y.view, dy.view, c.axis, dx.view);
      const auto yv = y.values(), dyv = dy.values();
      std::vector<double> expect(yv.size()), scale(yv.size());
      g.each([&](std::int64_t o, std::int64_t i) {
        double sum = 0, mag = 0;
        for (std::int64_t j = 0; j < g.r; ++j) {
          const auto k = g.at(o, j, i);
          sum += log ? dyv[k] : dyv[k] * yv[k];
          mag += log ? std::abs(dyv[k]) : std::abs(dyv[k] * yv[k]);
        }
        for (std::int64_t j = 0; j < g.r; ++j) {
          const auto k = g.at(o, j, i);
          expect[k] = log ? dyv[k] - std::exp(yv[k]) * sum : yv[k] * (dyv[k] - sum);
          scale[k] = log ? std::abs(dyv[k]) + std::exp(yv[k]) * mag : std::abs(yv[k]) * (std::abs(dyv[k]) + mag);
        }
      });
      const DTol t = tol(dtype);
      expect_result(dx, expect, [&](std::size_t k) { return t.elem * std::abs(expect[k]) + t.reduce * scale[k] + floor_of(dtype); },
                    std::string(op_name(log)) + "_grad");
    }
  }

  // softmax_grad(softmax(x), dy) against d/dx sum(dy * softmax(x)), f64.
  void finite_differences(bool log) {
    if (!backend.supports(OpId::nn_softmax, xylem::f64) || !backend.supports(OpId::nn_softmax_grad, xylem::f64))
      return;
    SCOPED_TRACE("finite differences");
    for (const Case& c : {Case{{3, 7, 5}, 1}, Case{{4, 9}, -1}}) {
      const Layout shape(std::span<const std::int64_t>(c.dims));
      const auto xs = xylem_test::random_vector<double>(rng, shape.numel(), -3, 3);
      const auto dys = xylem_test::random_vector<double>(rng, shape.numel(), -1, 1);
      auto f = [&](const Tensor& x) {
        Tensor y(shape, xylem::f64);
        forward_fn(log)(backend, x, c.axis, y);
        return y;
      };
      const Tensor y = f(Tensor::from(xs, shape));
      Tensor dx(shape, xylem::f64);
      grad_fn(log)(backend, y, Tensor::from(dys, shape), c.axis, dx);
      const auto analytic = dx.to_doubles();
      expect_gradient(analytic, xs, shape, dys, f, some_coordinates(rng, xs.size()), mean_abs(analytic),
                      std::string(op_name(log)) + "_grad");
    }
  }
};

TEST_P(Softmax, softmax) {
  for_each_float_dtype([&](DType d) { forward(false, d); });
}
TEST_P(Softmax, log_softmax) {
  for_each_float_dtype([&](DType d) { forward(true, d); });
}
TEST_P(Softmax, huge_values) {
  for (bool log : {false, true}) {
    SCOPED_TRACE(op_name(log));
    for_each_float_dtype([&](DType d) { huge(log, d); });
  }
}
TEST_P(Softmax, masked) {
  for (bool log : {false, true}) {
    SCOPED_TRACE(op_name(log));
    for_each_float_dtype([&](DType d) { masked(log, d); });
  }
}
TEST_P(Softmax, nan_rows) {
  for (bool log : {false, true}) {
    SCOPED_TRACE(op_name(log));
    for_each_float_dtype([&](DType d) { nan_rows(log, d); });
  }
}
TEST_P(Softmax, softmax_grad) {
  for_each_float_dtype([&](DType d) { backward(false, d); });
  finite_differences(false);
}
TEST_P(Softmax, log_softmax_grad) {
  for_each_float_dtype([&](DType d) { backward(true, d); });
  finite_differences(true);
}

TEST_P(Softmax, errors) {
  auto x = Tensor::from(std::vector<float>(12, 1.0f), Layout{3, 4});
  auto y = Tensor::from(std::vector<float>(12, 0.0f), Layout{4, 3});
  auto y64 = Tensor::from(std::vector<double>(12, 0.0), Layout{3, 4});
  auto yi = Tensor::from(std::vector<std::int32_t>(12, 0), Layout{3, 4});
  const auto sy = xylem_test::snapshot(y), s64 = xylem_test::snapshot(y64), si = xylem_test::snapshot(yi);
  for (bool log : {false, true}) {
    SCOPED_TRACE(op_name(log));
    const auto message = XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, forward_fn(log)(backend, x, 1, y));
    EXPECT_NE(message.find(op_name(log)), std::string::npos) << message;
    EXPECT_NE(message.find("[3, 4]"), std::string::npos) << message;
    EXPECT_NE(message.find("[4, 3]"), std::string::npos) << message;
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, forward_fn(log)(backend, x, 1, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, forward_fn(log)(backend, yi, 1, yi));
    auto x64 = Tensor::from(std::vector<double>(12, 1.0), Layout{3, 4});
    XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, forward_fn(log)(backend, x64, 2, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, forward_fn(log)(backend, x64, -3, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, grad_fn(log)(backend, x, y, 1, y));
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, grad_fn(log)(backend, x, x, 1, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, grad_fn(log)(backend, x64, x64, 5, y64));
  }
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(y64, s64);
  XY_EXPECT_UNCHANGED(yi, si);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Softmax, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

// xylem::nn activations and their gradients, in f16, bf16, f32 and f64:
// every layout, odd sizes, in place, very large and very small values, Inf
// and NaN (as math.h's formulas define them), against float64 references;
// gradients also against finite differences of the backend's own forward op;
// bad arguments raise the right error and change nothing.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using Forward = std::function<void(const Backend&, const Tensor&, Tensor&)>;
using Backward = std::function<void(const Backend&, const Tensor&, const Tensor&, Tensor&)>;
// The writing forms (each activation also has a returning overload).
using WriteForward = void (*)(const Backend&, const Tensor&, Tensor&);
using WriteBackward = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);

struct Activation {
  std::string name;  // the test that runs it: "leaky_relu", ...
  std::string variant;
  Forward run;
  std::function<double(double)> ref;
  Backward grad;
  // dx from the forward output y (sigmoid, tanh) or input x (the others), and dy
  std::function<double(double, double)> grad_ref;
  bool grad_from_input = true;
  double grad_low = -4, grad_high = 4;  // where the gradient's first argument lies
  std::function<bool(double)> smooth = [](double) { return true; };  // differentiable at x (for finite differences)
};

// The references follow math.h's branches, so Inf and NaN come out as the contract says.
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_cdf(double x) { return 0.5 * (1.0 + std::erf(x * 0.70710678118654752440)); }
bool away_from_zero(double x) { return std::abs(x) > 1e-2; }
double gelu_tanh_inner(double x) { return 0.79788456080286535588 * (x + 0.044715 * x * x * x); }

std::vector<Activation> all_activations() {
  std::vector<Activation> out;
  out.push_back({"sigmoid", "", static_cast<WriteForward>(xylem::nn::sigmoid),
                 sigmoid_ref,
                 static_cast<WriteBackward>(xylem::nn::sigmoid_grad),
                 [](double y, double dy) { return dy * y * (1 - y); }, false, 0, 1});
  out.push_back({"relu", "", static_cast<WriteForward>(xylem::nn::relu),
                 [](double x) { return x < 0 ? 0.0 : x; },
                 static_cast<WriteBackward>(xylem::nn::relu_grad),
                 [](double x, double dy) { return x > 0 ? dy : 0.0; }, true, -4, 4, away_from_zero});
  out.push_back({"tanh", "", static_cast<WriteForward>(xylem::nn::tanh),
                 [](double x) { return std::tanh(x); },
                 static_cast<WriteBackward>(xylem::nn::tanh_grad),
                 [](double y, double dy) { return dy * (1 - y * y); }, false, -1, 1});
  for (double slope : {0.01, 0.2}) {
    out.push_back({"leaky_relu", "slope " + std::to_string(slope),
                   [slope](const Backend& b, const Tensor& x, Tensor& y) { xylem::nn::leaky_relu(b, x, y, slope); },
                   [slope](double x) { return x < 0 ? x * slope : x; },
                   [slope](const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
                     xylem::nn::leaky_relu_grad(b, x, dy, dx, slope);
                   },
                   [slope](double x, double dy) { return x > 0 ? dy : dy * slope; }, true, -4, 4, away_from_zero});
  }
  for (double alpha : {1.0, 0.5}) {
    out.push_back({"elu", "alpha " + std::to_string(alpha),
                   [alpha](const Backend& b, const Tensor& x, Tensor& y) { xylem::nn::elu(b, x, y, alpha); },
                   [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x); },
                   [alpha](const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
                     xylem::nn::elu_grad(b, x, dy, dx, alpha);
                   },
                   [alpha](double x, double dy) { return x > 0 ? dy : dy * alpha * std::exp(x); }, true, -4, 4,
                   away_from_zero});
  }
  out.push_back({"gelu", "", static_cast<WriteForward>(xylem::nn::gelu),
                 [](double x) { return x * gelu_cdf(x); },
                 static_cast<WriteBackward>(xylem::nn::gelu_grad),
                 [](double x, double dy) {
                   return dy * (gelu_cdf(x) + x * 0.39894228040143267794 * std::exp(-0.5 * x * x));
                 }});
  for (auto [beta, threshold] : {std::pair{1.0, 20.0}, std::pair{2.0, 3.0}}) {
    out.push_back({"softplus", "beta " + std::to_string(beta) + " threshold " + std::to_string(threshold),
                   [=](const Backend& b, const Tensor& x, Tensor& y) { xylem::nn::softplus(b, x, y, beta, threshold); },
                   [=](double x) { return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta; },
                   [=](const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx) {
                     xylem::nn::softplus_grad(b, x, dy, dx, beta, threshold);
                   },
                   [=](double x, double dy) { return x * beta > threshold ? dy : dy * sigmoid_ref(x * beta); }, true,
                   -4, 4, [=](double x) { return std::abs(x * beta - threshold) > 1e-2; }});
  }
  out.push_back({"silu", "", static_cast<WriteForward>(xylem::nn::silu),
                 [](double x) { return x / (1 + std::exp(-x)); },
                 static_cast<WriteBackward>(xylem::nn::silu_grad),
                 [](double x, double dy) {
                   const double s = sigmoid_ref(x);
                   return dy * s * (1 + x * (1 - s));
                 }});
  // PyTorch's tanh form: the kernels compute x sigmoid(2u), the same function.
  out.push_back({"gelu_tanh", "", static_cast<WriteForward>(xylem::nn::gelu_tanh),
                 [](double x) { return 0.5 * x * (1 + std::tanh(gelu_tanh_inner(x))); },
                 static_cast<WriteBackward>(xylem::nn::gelu_tanh_grad),
                 [](double x, double dy) {
                   const double t = std::tanh(gelu_tanh_inner(x));
                   return dy * (0.5 * (1 + t) +
                                0.5 * x * (1 - t * t) * 0.79788456080286535588 * (1 + 3 * 0.044715 * x * x));
                 }});
  return out;
}

std::vector<Activation> activations(std::string_view name) {
  std::vector<Activation> out;
  for (auto& a : all_activations()) {
    if (a.name == name) out.push_back(std::move(a));
  }
  return out;
}

struct Case {
  ViewKind in, out;
  Dims dims;
};

// Contiguous odd sizes, strided vectors, 2-D transposed and padded views.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto n : kSizes) out.push_back({ViewKind::contiguous, ViewKind::contiguous, {n}});
  out.push_back({ViewKind::strided, ViewKind::strided, {1000}});
  out.push_back({ViewKind::strided, ViewKind::contiguous, {7}});
  out.push_back({ViewKind::contiguous, ViewKind::strided, {1001}});
  out.push_back({ViewKind::transposed, ViewKind::contiguous, {37, 29}});
  out.push_back({ViewKind::contiguous, ViewKind::transposed, {29, 37}});
  out.push_back({ViewKind::transposed, ViewKind::padded, {16, 5}});
  out.push_back({ViewKind::strided, ViewKind::strided, {3, 4, 5}});
  out.push_back({ViewKind::contiguous, ViewKind::contiguous, {1, 1, 1}});
  return out;
}

std::string describe(const Case& c) {
  std::string s = std::string(name(c.in)) + " -> " + name(c.out) + " [";
  for (std::size_t i = 0; i < c.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(c.dims[i]);
  return s + "]";
}

// Very large and very small values, signed zeros, Inf and NaN.
std::vector<double> edge_values(const Activation& a) {
  std::vector<double> v = {0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 1e-3, -1e-3, 30, -30, 100, -100, 1000, -1000,
                           3e4, -3e4, 1e30, -1e30, kNaN};
  if (a.name != "gelu") {  // x * Phi(x) is Inf * 0 at -Inf: left out
    v.push_back(kInf);
    v.push_back(-kInf);
  }
  if (a.name == "gelu_tanh") {
    // x^2 overflows f32 at 1e30: the gradient is NaN there (as PyTorch's
    // formula), where the float64 reference is not.
    std::erase_if(v, [](double x) { return std::abs(x) == 1e30; });
  }
  return v;
}

class Nn : public Conformance {
 protected:
  // A few ulp of the storage type, and an absolute floor for results near 0
  // (f32 underflows where f64 does not).
  static std::function<double(std::size_t)> elementwise(DType dtype, const std::vector<double>& expect) {
    return [&expect, t = tol(dtype)](std::size_t k) { return t.elem * std::abs(expect[k]) + t.elem * 0.1; };
  }

  bool forward_runs(const Activation& a, DType dtype) {
    return runs(OpId::math_unary, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {4});
      auto y = output(dtype, ViewKind::contiguous, {4});
      a.run(backend, x.view, y.view);
    });
  }

  bool backward_runs(const Activation& a, DType dtype) {
    return runs(OpId::math_binary, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {4});
      auto dx = output(dtype, ViewKind::contiguous, {4});
      a.grad(backend, x.view, x.view, dx.view);
    });
  }

  void forward(const Activation& a, DType dtype) {
    SCOPED_TRACE(a.name + " " + a.variant);
    if (!forward_runs(a, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      auto x = input(dtype, c.in, c.dims, -8, 8);
      auto y = output(dtype, c.out, c.dims);
      a.run(backend, x.view, y.view);
      std::vector<double> expect(x.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.ref(x.at(k));
      expect_result(y, expect, elementwise(dtype, expect), a.name);
      EXPECT_EQ(x.base.version(), 1u) << "the input was written";
    }
    // In place, whole and through a strided view.
    for (ViewKind layout : {ViewKind::contiguous, ViewKind::strided}) {
      SCOPED_TRACE(std::string("in place, ") + name(layout));
      auto x = input(dtype, layout, {1003}, -8, 8);
      std::vector<double> expect(x.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.ref(x.at(k));
      a.run(backend, x.view, x.view);
      expect_result(x, expect, elementwise(dtype, expect), a.name + " in place");
    }
    // Large, tiny, Inf and NaN (rounded to the dtype first: 1e30 is Inf in f16).
    SCOPED_TRACE("edge values");
    const auto values = edge_values(a);
    auto x = input(dtype, ViewKind::contiguous, {static_cast<std::int64_t>(values.size())}, 0, 0, &values);
    auto y = output(dtype, ViewKind::contiguous, {static_cast<std::int64_t>(values.size())});
    a.run(backend, x.view, y.view);
    std::vector<double> expect(values.size());
    for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.ref(x.at(k));
    expect_result(y, expect, elementwise(dtype, expect), a.name + " of edge values");
  }

  void backward(const Activation& a, DType dtype) {
    SCOPED_TRACE(a.name + "_grad " + a.variant);
    if (!backward_runs(a, dtype)) return;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      auto in = input(dtype, c.in, c.dims, a.grad_low, a.grad_high);
      auto dy = input(dtype, c.out == ViewKind::padded ? ViewKind::contiguous : c.out, c.dims, -1, 1);
      auto dx = output(dtype, c.out, c.dims);
      a.grad(backend, in.view, dy.view, dx.view);
      std::vector<double> expect(in.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.grad_ref(in.at(k), dy.at(k));
      // 1 - y*y and 1 - y lose relative accuracy near |y| = 1: allow error
      // relative to |dy| as well.
      expect_result(dx, expect, [&, t = tol(dtype)](std::size_t k) {
        return t.elem * (std::abs(expect[k]) + std::abs(dy.at(k))) + floor_of(dtype);
      }, a.name + "_grad");
    }
    // In place into dy.
    {
      auto in = input(dtype, ViewKind::contiguous, {777}, a.grad_low, a.grad_high);
      auto dy = input(dtype, ViewKind::contiguous, {777}, -1, 1);
      std::vector<double> expect(777);
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.grad_ref(in.at(k), dy.at(k));
      a.grad(backend, in.view, dy.view, dy.view);
      expect_result(dy, expect, [&, t = tol(dtype)](std::size_t k) { return t.elem * (std::abs(expect[k]) + 1) + floor_of(dtype); },
                    a.name + "_grad in place");
    }
    // Edge values of the input, and NaN, Inf and large incoming gradients.
    SCOPED_TRACE("edge values");
    std::vector<double> ins = a.grad_from_input ? edge_values(a) : std::vector<double>{0.0, 1.0, -1.0, 0.5, kNaN};
    std::vector<double> dys;
    for (std::size_t k = 0; k < ins.size(); ++k) dys.push_back(k % 2 ? -0.75 : 1e4);
    for (double d : {kNaN, kInf, -kInf}) {
      ins.push_back(a.grad_from_input ? 2.0 : 0.5);
      dys.push_back(d);
    }
    const auto n = static_cast<std::int64_t>(ins.size());
    auto in = input(dtype, ViewKind::contiguous, {n}, 0, 0, &ins);
    auto dy = input(dtype, ViewKind::contiguous, {n}, 0, 0, &dys);
    auto dx = output(dtype, ViewKind::contiguous, {n});
    a.grad(backend, in.view, dy.view, dx.view);
    std::vector<double> expect(ins.size());
    for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.grad_ref(in.at(k), dy.at(k));
    expect_result(dx, expect, [&, t = tol(dtype)](std::size_t k) {
      return t.elem * (std::abs(expect[k]) + 0.1 * std::abs(dy.at(k))) + floor_of(dtype);
    }, a.name + "_grad of edge values");
  }

  // The gradient op against central differences of the backend's forward op
  // (f64). Elementwise: perturbing every element at once differentiates each.
  void finite_differences(const Activation& a) {
    SCOPED_TRACE(a.name + "_grad " + a.variant + ", finite differences");
    if (!backend.supports(OpId::math_unary, xylem::f64) || !backend.supports(OpId::math_binary, xylem::f64)) return;
    constexpr std::int64_t n = 501;
    constexpr double h = 1e-5;
    auto xs = xylem_test::random_vector<double>(rng, n, -3, 3);
    for (auto& x : xs) {
      while (!a.smooth(x)) x += 0.05;  // away from kinks
    }
    auto dys = xylem_test::random_vector<double>(rng, n, -1, 1);
    std::vector<double> plus(xs), minus(xs);
    for (std::size_t i = 0; i < xs.size(); ++i) plus[i] += h, minus[i] -= h;
    auto x = Tensor::from(xs), dy = Tensor::from(dys);
    auto xp = Tensor::from(plus), xm = Tensor::from(minus);
    Tensor y(Layout{n}, xylem::f64), yp(Layout{n}, xylem::f64), ym(Layout{n}, xylem::f64), dx(Layout{n}, xylem::f64);
    a.run(backend, x, y);
    a.run(backend, xp, yp);
    a.run(backend, xm, ym);
    a.grad(backend, a.grad_from_input ? x : y, dy, dx);
    const auto got = dx.to_vector<double>();
    const auto fp = yp.to_vector<double>(), fm = ym.to_vector<double>();
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double numeric = dys[i] * (fp[i] - fm[i]) / (2 * h);
      ASSERT_NEAR(got[i], numeric, 1e-6 * (std::abs(numeric) + 1)) << a.name << "_grad at x = " << xs[i];
    }
  }

  void forward_all(std::string_view name) {
    for (const auto& a : activations(name)) for_each_float_dtype([&](DType d) { forward(a, d); });
  }
  void backward_all(std::string_view name) {
    for (const auto& a : activations(name)) {
      for_each_float_dtype([&](DType d) { backward(a, d); });
      finite_differences(a);
    }
  }
};

#define XY_ACTIVATION_TESTS(op)                 \
  TEST_P(Nn, op) { forward_all(#op); }          \
  TEST_P(Nn, op##_grad) { backward_all(#op); }

XY_ACTIVATION_TESTS(sigmoid)
XY_ACTIVATION_TESTS(relu)
XY_ACTIVATION_TESTS(tanh)
XY_ACTIVATION_TESTS(leaky_relu)
XY_ACTIVATION_TESTS(elu)
XY_ACTIVATION_TESTS(gelu)
XY_ACTIVATION_TESTS(softplus)
XY_ACTIVATION_TESTS(silu)
XY_ACTIVATION_TESTS(gelu_tanh)

// Wrong shapes, wrong dtypes: the error names the op and the shapes, and no
// tensor changes.
TEST_P(Nn, activation_errors) {
  for (const auto& a : all_activations()) {
    SCOPED_TRACE(a.name);
    auto x = Tensor::from(std::vector<float>{1, -2, 3, -4});
    auto y5 = Tensor::from(std::vector<float>{0, 0, 0, 0, 0});
    auto y64 = Tensor::from(std::vector<double>{0, 0, 0, 0});
    auto xi = Tensor::from(std::vector<std::int32_t>{1, 2, 3, 4});
    auto yi = Tensor::from(std::vector<std::int32_t>{0, 0, 0, 0});
    const auto s5 = xylem_test::snapshot(y5), s64 = xylem_test::snapshot(y64), si = xylem_test::snapshot(yi);
    const auto message = XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, a.run(backend, x, y5));
    EXPECT_NE(message.find(a.name), std::string::npos) << message;
    EXPECT_NE(message.find("[4]"), std::string::npos) << message;
    EXPECT_NE(message.find("[5]"), std::string::npos) << message;
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, a.run(backend, x, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, a.run(backend, xi, yi));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, a.grad(backend, x, y5, y5));
    XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, a.grad(backend, x, x, y5));
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, a.grad(backend, x, y64, y64));
    XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, a.grad(backend, xi, yi, yi));
    XY_EXPECT_UNCHANGED(y5, s5);
    XY_EXPECT_UNCHANGED(y64, s64);
    XY_EXPECT_UNCHANGED(yi, si);
  }
}

// The Parenchyma example's numbers.
TEST_P(Nn, parenchyma_example) {
  if (!backend.supports(OpId::math_unary, xylem::f64)) return;  // reported by the sigmoid test
  auto x = Tensor::from(std::vector<double>{3.5, 12.4, 0.5, 6.5});
  Tensor result(Layout{4}, xylem::f64);
  xylem::nn::sigmoid(backend, x, result);
  const auto r = result.to_vector<double>();
  const double expect[] = {0.9706877692486436, 0.999995881428255, 0.6224593312018546, 0.998498817743263};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i], expect[i], 1e-12) << i;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Nn, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

// xylem::nn activations and their gradients: every layout, odd sizes, in
// place, against float64 references; gradients also against finite
// differences of the backend's own forward op.
#include "conformance/conformance.hpp"

namespace conformance {
namespace {

using Forward = void (*)(const Backend&, const Tensor&, Tensor&);
using Backward = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);

struct Activation {
  const char* name;
  OpId op;
  Forward run;
  double (*ref)(double);
  OpId grad_op;
  Backward grad;
  // dx from the forward output y (sigmoid, tanh) or input x (relu), and dy
  double (*grad_ref)(double, double);
  bool grad_from_input;
};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double relu_ref(double x) { return x > 0 ? x : 0.0; }
double tanh_ref(double x) { return std::tanh(x); }
double sigmoid_grad_ref(double y, double dy) { return dy * y * (1 - y); }
double relu_grad_ref(double x, double dy) { return x > 0 ? dy : 0.0; }
double tanh_grad_ref(double y, double dy) { return dy * (1 - y * y); }

const Activation kSigmoid{"sigmoid", OpId::math_unary, xylem::nn::sigmoid, sigmoid_ref,
                          OpId::math_binary, xylem::nn::sigmoid_grad, sigmoid_grad_ref, false};
const Activation kRelu{"relu", OpId::math_unary, xylem::nn::relu, relu_ref,
                       OpId::math_binary, xylem::nn::relu_grad, relu_grad_ref, true};
const Activation kTanh{"tanh", OpId::math_unary, xylem::nn::tanh, tanh_ref,
                       OpId::math_binary, xylem::nn::tanh_grad, tanh_grad_ref, false};

struct Case {
  Layout in, out;
  Dims dims;
};

// Contiguous odd sizes, strided vectors, 2-D transposed and padded views.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (auto n : kSizes) out.push_back({Layout::contiguous, Layout::contiguous, {n}});
  out.push_back({Layout::strided, Layout::strided, {1000}});
  out.push_back({Layout::strided, Layout::contiguous, {7}});
  out.push_back({Layout::contiguous, Layout::strided, {1001}});
  out.push_back({Layout::transposed, Layout::contiguous, {37, 29}});
  out.push_back({Layout::contiguous, Layout::transposed, {29, 37}});
  out.push_back({Layout::transposed, Layout::padded, {16, 5}});
  out.push_back({Layout::strided, Layout::strided, {3, 4, 5}});
  return out;
}

std::string describe(const Case& c) {
  std::string s = std::string(name(c.in)) + " -> " + name(c.out) + " [";
  for (std::size_t i = 0; i < c.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(c.dims[i]);
  return s + "]";
}

class Nn : public Conformance {
 protected:
  template <class T>
  std::function<double(std::size_t)> tolerance(const std::vector<double>& expect) {
    return [&expect](std::size_t k) { return Tol<T>::elem * std::abs(expect[k]) + Tol<T>::elem * 0.1; };
  }

  template <class T>
  void forward(const Activation& a) {
    const DType dt = xylem::dtype_of_v<T>;
    if (!runs(a.op, dt, [&] {
          auto x = input<T>(Layout::contiguous, {4});
          auto y = Tensor(Shape{4}, dt);
          a.run(backend, x.view, y);
        })) {
      return;
    }
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      auto x = input<T>(c.in, c.dims, -8, 8);
      auto y = output<T>(c.out, c.dims);
      a.run(backend, x.view, y.view);
      std::vector<double> expect(x.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.ref(x.at(k));
      expect_result<T>(y, expect, tolerance<T>(expect), a.name);
      EXPECT_EQ(x.base.version(), 1u) << "the input was written";
    }
    // In place, whole and through a strided view.
    for (Layout layout : {Layout::contiguous, Layout::strided}) {
      SCOPED_TRACE(std::string("in place, ") + name(layout));
      auto x = input<T>(layout, {1003}, -8, 8);
      std::vector<double> expect(x.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.ref(x.at(k));
      a.run(backend, x.view, x.view);
      expect_result<T>(x, expect, tolerance<T>(expect), std::string(a.name) + " in place");
    }
  }

  template <class T>
  void backward(const Activation& a) {
    const DType dt = xylem::dtype_of_v<T>;
    if (!runs(a.grad_op, dt, [&] {
          auto y = input<T>(Layout::contiguous, {4});
          auto dx = Tensor(Shape{4}, dt);
          a.grad(backend, y.view, y.view, dx);
        })) {
      return;
    }
    // Forward outputs lie in sigmoid's (0, 1) or tanh's (-1, 1); relu takes any x.
    const double low = std::string_view(a.name) == "sigmoid" ? 0 : std::string_view(a.name) == "tanh" ? -1 : -2;
    const double high = std::string_view(a.name) == "relu" ? 2 : 1;
    for (const auto& c : cases()) {
      SCOPED_TRACE(describe(c));
      auto y = input<T>(c.in, c.dims, low, high);
      auto dy = input<T>(c.out == Layout::padded ? Layout::contiguous : c.out, c.dims, -1, 1);
      auto dx = output<T>(c.out, c.dims);
      a.grad(backend, y.view, dy.view, dx.view);
      std::vector<double> expect(y.pos.size());
      for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.grad_ref(y.at(k), dy.at(k));
      // 1 - y*y and 1 - y lose relative accuracy near |y| = 1: allow error
      // relative to |dy| as well.
      expect_result<T>(dx, expect, [&](std::size_t k) {
        return Tol<T>::elem * (std::abs(expect[k]) + std::abs(dy.at(k)));
      }, std::string(a.name) + "_grad");
    }
    // In place into dy.
    auto y = input<T>(Layout::contiguous, {777}, low, high);
    auto dy = input<T>(Layout::contiguous, {777}, -1, 1);
    std::vector<double> expect(777);
    for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = a.grad_ref(y.at(k), dy.at(k));
    a.grad(backend, y.view, dy.view, dy.view);
    expect_result<T>(dy, expect, [&](std::size_t k) { return Tol<T>::elem * (std::abs(expect[k]) + 1); },
                     std::string(a.name) + "_grad in place");
  }

  // The gradient op against central differences of the backend's forward op (f64).
  void finite_differences(const Activation& a) {
    if (!backend.supports(a.op, xylem::f64) || !backend.supports(a.grad_op, xylem::f64)) return;
    constexpr std::int64_t n = 501;
    constexpr double h = 1e-5;
    auto xs = xylem_test::random_vector<double>(rng, n, -3, 3);
    for (auto& x : xs) {
      if (std::abs(x) < 1e-2) x += 0.1;  // keep relu away from its kink
    }
    auto dys = xylem_test::random_vector<double>(rng, n, -1, 1);
    std::vector<double> plus(xs), minus(xs);
    for (std::size_t i = 0; i < xs.size(); ++i) plus[i] += h, minus[i] -= h;
    auto x = Tensor::from(xs), dy = Tensor::from(dys);
    auto xp = Tensor::from(plus), xm = Tensor::from(minus);
    Tensor y(Shape{n}, xylem::f64), yp(Shape{n}, xylem::f64), ym(Shape{n}, xylem::f64), dx(Shape{n}, xylem::f64);
    a.run(backend, x, y);
    a.run(backend, xp, yp);
    a.run(backend, xm, ym);
    a.grad(backend, a.grad_from_input ? x : y, dy, dx);
    const auto got = dx.to_vector<double>();
    const auto fp = yp.to_vector<double>(), fm = ym.to_vector<double>();
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double numeric = dys[i] * (fp[i] - fm[i]) / (2 * h);
      ASSERT_NEAR(got[i], numeric, 1e-6) << a.name << "_grad at x = " << xs[i];
    }
  }
};

TEST_P(Nn, sigmoid) {
  for_each_dtype([&](auto t) { forward<decltype(t)>(kSigmoid); });
}
TEST_P(Nn, relu) {
  for_each_dtype([&](auto t) { forward<decltype(t)>(kRelu); });
}
TEST_P(Nn, tanh) {
  for_each_dtype([&](auto t) { forward<decltype(t)>(kTanh); });
}
TEST_P(Nn, sigmoid_grad) {
  for_each_dtype([&](auto t) { backward<decltype(t)>(kSigmoid); });
  finite_differences(kSigmoid);
}
TEST_P(Nn, relu_grad) {
  for_each_dtype([&](auto t) { backward<decltype(t)>(kRelu); });
  finite_differences(kRelu);
}
TEST_P(Nn, tanh_grad) {
  for_each_dtype([&](auto t) { backward<decltype(t)>(kTanh); });
  finite_differences(kTanh);
}

// The Parenchyma example's numbers.
TEST_P(Nn, parenchyma_example) {
  if (!backend.supports(OpId::math_unary, xylem::f64)) return;  // reported by the sigmoid test
  auto x = Tensor::from(std::vector<double>{3.5, 12.4, 0.5, 6.5});
  Tensor result(Shape{4}, xylem::f64);
  xylem::nn::sigmoid(backend, x, result);
  const auto r = result.to_vector<double>();
  const double expect[] = {0.9706877692486436, 0.999995881428255, 0.6224593312018546, 0.998498817743263};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(r[i], expect[i], 1e-12) << i;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Nn, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

#pragma once
// Gradients against finite differences of the backend's own forward op, in
// f64: the derivative of the scalar objective sum(dy * f(x)) along one
// coordinate of x, by central differences, at a handful of coordinates.
#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "conformance/conformance.hpp"

namespace conformance {

// f(x): the forward op on the backend, from a contiguous f64 tensor.
using ForwardF64 = std::function<Tensor(const Tensor&)>;

// `count` distinct coordinates of a tensor of n elements (all when n <= count),
// always including the first and the last.
inline std::vector<std::size_t> some_coordinates(std::mt19937_64& rng, std::size_t n, std::size_t count = 6) {
  std::vector<std::size_t> out;
  if (n <= count) {
    for (std::size_t k = 0; k < n; ++k) out.push_back(k);
    return out;
  }
  out = {0, n - 1};
  std::uniform_int_distribution<std::size_t> pick(1, n - 2);
  while (out.size() < count) {
    const std::size_t k = pick(rng);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

// d/dx[k] sum(dy * f(x)) by central differences with step h.
inline double numeric_derivative(const std::vector<double>& x, const Layout& shape, const std::vector<double>& dy,
                                 const ForwardF64& f, std::size_t k, double h = 1e-5) {
  auto objective = [&](double delta) {
    auto xs = x;
    xs[k] += delta;
    const auto y = f(Tensor::from(xs, shape)).to_doubles();
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i) sum += dy[i] * y[i];
    return sum;
  };
  return (objective(h) - objective(-h)) / (2 * h);
}

// Checks analytic[k] (the backend's gradient op, f64) against central
// differences at `coords`: within 1e-6 relative to the derivative's size or
// to `scale` (the typical size of the gradient), whichever is larger.
inline void expect_gradient(const std::vector<double>& analytic, const std::vector<double>& x, const Layout& shape,
                            const std::vector<double>& dy, const ForwardF64& f, const std::vector<std::size_t>& coords,
                            double scale, const std::string& what) {
  ASSERT_EQ(analytic.size(), x.size()) << what;
  for (std::size_t k : coords) {
    const double numeric = numeric_derivative(x, shape, dy, f, k);
    EXPECT_NEAR(analytic[k], numeric, 1e-6 * std::max(std::abs(numeric), scale))
        << what << ": d/dx[" << k << "] of sum(dy * f(x)) by central differences (x[k] = " << x[k] << ")";
  }
}

// The mean magnitude of a gradient: the scale for expect_gradient.
inline double mean_abs(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += std::abs(e);
  return v.empty() ? 1.0 : std::max(s / double(v.size()), 1e-3);
}

}  // namespace conformance

#pragma once
// Template definitions of conformance.hpp.
#include <sstream>

namespace conformance {

namespace detail {
Shape base_shape(Layout layout, const Dims& dims);
Shape view_shape(Layout layout, const Dims& dims);
Tensor view_of(const Tensor& base, Layout layout, const Dims& dims);
}  // namespace detail

template <class T>
Arg Conformance::input(Layout layout, const Dims& dims, double low, double high, const std::vector<double>* logical) {
  const Shape shape = detail::base_shape(layout, dims);
  auto values = xylem_test::random_vector<T>(rng, shape.numel(), low, high);
  Arg a;
  a.pos = positions(detail::view_shape(layout, dims));
  if (logical) {
    for (std::size_t k = 0; k < a.pos.size(); ++k) values[static_cast<std::size_t>(a.pos[k])] = static_cast<T>((*logical)[k]);
  }
  a.base = Tensor::from(values, shape);
  a.view = detail::view_of(a.base, layout, dims);
  a.base_values.assign(values.begin(), values.end());
  return a;
}

template <class T>
Arg Conformance::output(Layout layout, const Dims& dims) {
  const Shape shape = detail::base_shape(layout, dims);
  Arg a;
  a.base = Tensor(shape, xylem::dtype_of_v<T>);
  xylem::fill(backend, a.base, kNaN);
  a.view = detail::view_of(a.base, layout, dims);
  a.pos = positions(a.view.shape());
  a.base_values.assign(static_cast<std::size_t>(shape.numel()), kNaN);
  return a;
}

template <class T>
void Conformance::expect_result(const Arg& arg, const std::vector<double>& expect,
                                const std::function<double(std::size_t)>& allowed, const std::string& what) {
  const auto got = arg.base.template to_vector<T>();
  ASSERT_EQ(got.size(), arg.base_values.size()) << what;
  ASSERT_EQ(expect.size(), arg.pos.size()) << what;
  std::vector<char> in_view(got.size(), 0);
  std::ostringstream report;
  std::size_t bad = 0;
  for (std::size_t k = 0; k < arg.pos.size(); ++k) {
    const auto p = static_cast<std::size_t>(arg.pos[k]);
    in_view[p] = 1;
    const double g = got[p];
    const double err = std::abs(g - expect[k]);
    const bool ok = std::isnan(expect[k]) ? std::isnan(g) : (std::isfinite(g) || std::isinf(expect[k])) && err <= allowed(k);
    if (!ok && ++bad <= 5) {
      report << "\n  element " << k << ": got " << g << ", expected " << expect[k] << " (error " << err
             << ", allowed " << allowed(k) << ")";
    }
  }
  for (std::size_t p = 0; p < got.size(); ++p) {
    if (in_view[p]) continue;
    const double before = arg.base_values[p];
    const bool same = std::isnan(before) ? std::isnan(double(got[p])) : double(got[p]) == before;
    if (!same && ++bad <= 5) {
      report << "\n  storage element " << p << " outside the view changed: " << before << " -> " << got[p];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " wrong element(s) of " << got.size() << report.str();
}

}  // namespace conformance

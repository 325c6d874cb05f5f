#pragma once
// Template definitions of conformance.hpp.
#include <sstream>

namespace conformance {

namespace detail {
Layout base_shape(ViewKind layout, const Dims& dims);
Layout view_shape(ViewKind layout, const Dims& dims);
Tensor view_of(const Tensor& base, ViewKind layout, const Dims& dims);
}  // namespace detail

template <class T>
Arg Conformance::input(ViewKind layout, const Dims& dims, double low, double high, const std::vector<double>* logical) {
  const Layout shape = detail::base_shape(layout, dims);
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
Arg Conformance::output(ViewKind layout, const Dims& dims) {
  const Layout shape = detail::base_shape(layout, dims);
  Arg a;
  a.base = Tensor(shape, xylem::dtype_of_v<T>);
  xylem::fill(backend, a.base, kNaN);
  a.view = detail::view_of(a.base, layout, dims);
  a.pos = positions(a.view.layout());
  a.base_values.assign(static_cast<std::size_t>(shape.numel()), kNaN);
  return a;
}

template <class T>
void Conformance::expect_result(const Arg& arg, const std::vector<double>& expect,
                                const std::function<double(std::size_t)>& allowed, const std::string& what) {
  ASSERT_EQ(arg.base.dtype(), xylem::dtype_of_v<T>) << what;
  expect_result(arg, expect, allowed, what);  // every T converts to double exactly
}

}  // namespace conformance

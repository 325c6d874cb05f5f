// Creation ops on each backend: fill (whole and into views), zeros, ones,
// full, arange; and copy_view (contiguous() of any view).
#include "conformance/conformance.hpp"

namespace conformance {
namespace {

class Creation : public Conformance {};

TEST_P(Creation, fill) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!runs(OpId::creation_fill, dt, [&] { (void)xylem::zeros(backend, Layout{2}, dt); })) return;
    for (auto n : kSizes) {
      SCOPED_TRACE(n);
      auto y = output<T>(ViewKind::contiguous, {n});
      xylem::fill(backend, y.view, -2.75);
      expect_result<T>(y, std::vector<double>(static_cast<std::size_t>(n), -2.75), [](std::size_t) { return 0.0; },
                       "fill");
      EXPECT_TRUE(y.base.is_current_on(backend));
    }
    for (ViewKind layout : {ViewKind::strided, ViewKind::transposed, ViewKind::padded}) {
      SCOPED_TRACE(name(layout));
      auto y = output<T>(layout, {37, 13});
      xylem::fill(backend, y.view, 1e3);
      expect_result<T>(y, std::vector<double>(37 * 13, 1e3), [](std::size_t) { return 0.0; }, "fill view");
    }
  });
}

TEST_P(Creation, zeros_ones_full) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!backend.supports(OpId::creation_fill, dt)) return;  // reported by fill
    const Layout shape{3, 1001};
    auto z = xylem::zeros(backend, shape, dt);
    auto o = xylem::ones(backend, shape, dt);
    auto f = xylem::full(backend, shape, dt, 0.125);
    for (const auto* t : {&z, &o, &f}) {
      EXPECT_EQ(t->layout(), shape);
      EXPECT_EQ(t->dtype(), dt);
      EXPECT_EQ(t->version(), 1u);
      EXPECT_TRUE(t->is_current_on(backend));
      EXPECT_EQ(t->transfers(), 0u);
    }
    EXPECT_EQ(z.to_vector<T>(), std::vector<T>(3 * 1001, T(0)));
    EXPECT_EQ(o.to_vector<T>(), std::vector<T>(3 * 1001, T(1)));
    EXPECT_EQ(f.to_vector<T>(), std::vector<T>(3 * 1001, T(0.125)));
  });
}

TEST_P(Creation, arange) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!runs(OpId::creation_arange, dt, [&] { (void)xylem::arange(backend, 3, dt); })) return;
    for (auto n : kSizes) {
      SCOPED_TRACE(n);
      // Values exact in f32 too (quarter steps below 2^24).
      auto t = xylem::arange(backend, n, dt, -3.5, 0.25);
      EXPECT_EQ(t.layout(), (Layout{n}));
      const auto got = t.template to_vector<T>();
      ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k) ASSERT_EQ(got[k], T(-3.5 + 0.25 * double(k))) << k;
    }
    auto d = xylem::arange(backend, 5, dt);
    EXPECT_EQ(d.template to_vector<T>(), (std::vector<T>{0, 1, 2, 3, 4}));
  });
}

TEST_P(Creation, copy_view) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!runs(OpId::core_copy_view, dt, [&] {
          auto x = input<T>(ViewKind::transposed, {2, 3});
          (void)xylem::contiguous(backend, x.view);
        })) {
      return;
    }
    struct Case {
      ViewKind layout;
      Dims dims;
    };
    const Case cases[] = {{ViewKind::contiguous, {100003}}, {ViewKind::strided, {1000}}, {ViewKind::strided, {3, 5, 7}},
                          {ViewKind::transposed, {37, 29}}, {ViewKind::padded, {64, 7}}};
    for (const auto& c : cases) {
      SCOPED_TRACE(name(c.layout));
      auto x = input<T>(c.layout, c.dims);
      auto y = xylem::contiguous(backend, x.view);
      EXPECT_TRUE(y.layout().is_contiguous());
      EXPECT_TRUE(y.layout().same_dims(x.view.layout()));
      EXPECT_FALSE(y.shares_data_with(x.base));
      const auto got = y.template to_vector<T>();
      const auto want = x.values();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t k = 0; k < got.size(); ++k) ASSERT_EQ(double(got[k]), want[k]) << k;
    }
  });
  // Other dtypes move as bytes.
  if (backend.supports(OpId::core_copy_view, xylem::i32)) {
    auto x = Tensor::from(xylem_test::iota_vector<std::int32_t>(12), Layout{3, 4});
    auto y = xylem::contiguous(backend, x.transpose());
    EXPECT_EQ(y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Creation, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

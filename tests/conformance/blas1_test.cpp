// xylem::blas level 1 on vectors of odd sizes, contiguous and strided:
// asum, dot, nrm2, iamax (into a tensor and as a future), axpy, scal, copy, swap;
// iamax with NaN and Inf (NumPy's argmax rule: the first NaN wins) on
// contiguous, strided and negative-stride views.
#include "conformance/conformance.hpp"

namespace conformance {
namespace {

class Blas1 : public Conformance {
 protected:
  // Lengths and layouts of the vectors tested.
  static std::vector<std::pair<std::int64_t, ViewKind>> vectors() {
    std::vector<std::pair<std::int64_t, ViewKind>> v;
    for (auto n : kSizes) v.emplace_back(n, ViewKind::contiguous);
    for (std::int64_t n : {1, 7, 1000, 4099}) v.emplace_back(n, ViewKind::strided);
    return v;
  }
  static std::string describe(std::int64_t n, ViewKind layout) { return std::to_string(n) + " " + name(layout); }

  // A reduction's result, written into a one-element tensor and returned as
  // a future, compared with `expect` within tol.
  template <class T, class IntoTensor, class AsFuture>
  void expect_reduction(IntoTensor into, AsFuture as_future, double expect, double tol, const char* what) {
    Tensor result(Layout{1}, xylem::dtype_of_v<T>);
    xylem::fill(backend, result, kNaN);
    into(result);
    const auto r = result.to_vector<T>();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_NEAR(r[0], expect, tol) << what << " into a tensor";
    const double f = as_future().get();
    EXPECT_NEAR(f, expect, tol) << what << " as a future";
  }
};

TEST_P(Blas1, asum) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_asum, xylem::dtype_of_v<T>, [&] { (void)xylem::blas::asum(backend, probe.view).get(); })) return;
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n});
      double ref = 0;
      for (double v : x.values()) ref += std::abs(v);
      expect_reduction<T>([&](Tensor& r) { xylem::blas::asum(backend, x.view, r); },
                          [&] { return xylem::blas::asum(backend, x.view); }, ref, Tol<T>::reduce * ref + 1e-30,
                          "asum");
    }
  });
}

TEST_P(Blas1, dot) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_dot, xylem::dtype_of_v<T>,
              [&] { (void)xylem::blas::dot(backend, probe.view, probe.view).get(); })) {
      return;
    }
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n});
      auto y = input<T>(layout == ViewKind::strided ? ViewKind::contiguous : ViewKind::strided, {n});
      double ref = 0, mag = 0;
      for (std::size_t i = 0; i < x.pos.size(); ++i) {
        ref += x.at(i) * y.at(i);
        mag += std::abs(x.at(i) * y.at(i));
      }
      expect_reduction<T>([&](Tensor& r) { xylem::blas::dot(backend, x.view, y.view, r); },
                          [&] { return xylem::blas::dot(backend, x.view, y.view); }, ref,
                          Tol<T>::reduce * mag + 1e-30, "dot");
    }
  });
}

TEST_P(Blas1, nrm2) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_nrm2, xylem::dtype_of_v<T>, [&] { (void)xylem::blas::nrm2(backend, probe.view).get(); })) return;
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n}, -3, 3);
      double sq = 0;
      for (double v : x.values()) sq += v * v;
      const double ref = std::sqrt(sq);
      expect_reduction<T>([&](Tensor& r) { xylem::blas::nrm2(backend, x.view, r); },
                          [&] { return xylem::blas::nrm2(backend, x.view); }, ref, Tol<T>::reduce * ref + 1e-30,
                          "nrm2");
    }
  });
}

TEST_P(Blas1, iamax) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_iamax, xylem::dtype_of_v<T>, [&] { (void)xylem::blas::iamax(backend, probe.view).get(); })) {
      return;
    }
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n}, -5, 5);
      const auto v = x.values();
      std::int64_t ref = 0;
      for (std::size_t i = 1; i < v.size(); ++i) {
        if (std::abs(v[i]) > std::abs(v[static_cast<std::size_t>(ref)])) ref = static_cast<std::int64_t>(i);
      }
      Tensor result(Layout{1}, xylem::i64);
      xylem::blas::iamax(backend, x.view, result);
      EXPECT_EQ(result.to_vector<std::int64_t>(), std::vector<std::int64_t>{ref});
      EXPECT_EQ(xylem::blas::iamax(backend, x.view).get(), ref);
    }
    // Ties: the first maximum, by magnitude, whatever the sign.
    const std::vector<double> ties{1, -4, 2, 4, -4, 0.5, 4};
    for (ViewKind layout : {ViewKind::contiguous, ViewKind::strided}) {
      SCOPED_TRACE(std::string("ties, ") + name(layout));
      auto x = input<T>(layout, {7}, -1, 1, &ties);
      EXPECT_EQ(xylem::blas::iamax(backend, x.view).get(), 1);
    }
    // The first maximum far into a long vector (past any per-thread block).
    std::vector<double> late(100003, 1.0);
    late[70001] = -3;
    late[90001] = 3;
    auto x = input<T>(ViewKind::contiguous, {100003}, 0, 1, &late);
    EXPECT_EQ(xylem::blas::iamax(backend, x.view).get(), 70001);
  });
}

// NumPy's argmax of |x|: the first NaN, else the first largest magnitude.
std::int64_t iamax_reference(const std::vector<double>& v) {
  std::int64_t best = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<std::int64_t>(i);
    if (std::abs(v[i]) > std::abs(v[static_cast<std::size_t>(best)])) best = static_cast<std::int64_t>(i);
  }
  return best;
}

// `logical` as a rank-1 view with `stride` (1, 3 or -2) into a host tensor
// whose other elements are NaN: a kernel that reads outside the view finds
// a NaN and returns its index.
template <class T>
Tensor iamax_view(const std::vector<double>& logical, std::int64_t stride) {
  const auto n = static_cast<std::int64_t>(logical.size());
  const std::int64_t step = std::abs(stride), first = stride < 0 ? 1 + (n - 1) * step : 1;
  std::vector<T> base(static_cast<std::size_t>(2 + (n - 1) * step), static_cast<T>(kNaN));
  for (std::int64_t i = 0; i < n; ++i)
    base[static_cast<std::size_t>(first + i * stride)] = static_cast<T>(logical[static_cast<std::size_t>(i)]);
  const std::int64_t dims[] = {n}, strides[] = {stride};
  return Tensor::from(base).as_strided(Layout::strided(dims, strides, first));
}

TEST_P(Blas1, iamax_nan) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_iamax, xylem::dtype_of_v<T>, [&] { (void)xylem::blas::iamax(backend, probe.view).get(); })) {
      return;
    }
    const double inf = std::numeric_limits<double>::infinity();
    std::uniform_real_distribution<double> value(-5, 5);
    for (std::int64_t stride : {1, 3, -2}) {
      for (std::int64_t n : {1, 7, 33, 1000}) {
        SCOPED_TRACE("length " + std::to_string(n) + ", stride " + std::to_string(stride));
        std::vector<double> v(static_cast<std::size_t>(n));
        for (double& e : v) e = static_cast<T>(value(rng));
        // A NaN at every position, a second one after it, an Inf before it.
        for (std::int64_t p = 0; p < n; ++p) {
          std::vector<double> w = v;
          w[static_cast<std::size_t>(p)] = kNaN;
          if (p + 1 < n) w[static_cast<std::size_t>(p + 1 + (n - p - 1) / 2)] = -kNaN;
          if (p > 0) w[static_cast<std::size_t>(p / 2)] = -inf;
          const std::int64_t got = xylem::blas::iamax(backend, iamax_view<T>(w, stride)).get();
          ASSERT_EQ(got, p) << "NaN at " << p;
        }
        // All NaN: the first.
        EXPECT_EQ(xylem::blas::iamax(backend, iamax_view<T>(std::vector<double>(v.size(), kNaN), stride)).get(), 0);
        // Inf and -Inf without a NaN: the first infinite magnitude.
        std::vector<double> w = v;
        w[v.size() - 1] = inf;
        w[v.size() / 2] = -inf;
        EXPECT_EQ(xylem::blas::iamax(backend, iamax_view<T>(w, stride)).get(), iamax_reference(w)) << "Inf";
        // The same through a result tensor.
        Tensor result(Layout{1}, xylem::i64);
        xylem::blas::iamax(backend, iamax_view<T>(w, stride), result);
        EXPECT_EQ(result.to_vector<std::int64_t>(), std::vector<std::int64_t>{iamax_reference(w)});
      }
    }
    // Far into a long vector (past any per-thread block), after a larger
    // finite value and an Inf.
    std::vector<double> late(100003, 1.0);
    late[1000] = 7;
    late[50000] = -inf;
    late[90001] = kNaN;
    late[95000] = kNaN;
    EXPECT_EQ(xylem::blas::iamax(backend, iamax_view<T>(late, 1)).get(), 90001);
    EXPECT_EQ(xylem::blas::iamax(backend, iamax_view<T>(late, -2)).get(), 90001);
  });
}

TEST_P(Blas1, axpy) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_axpy, xylem::dtype_of_v<T>, [&] { xylem::blas::axpy(backend, 2.0, probe.view, probe.view); })) {
      return;
    }
    for (double alpha : {-2.25, 0.5}) {
      for (auto [n, layout] : vectors())
      for (ViewKind y_layout : {layout, layout == ViewKind::strided ? ViewKind::contiguous : ViewKind::strided}) {
        // Both dense takes the vectorised path; mixed layouts the strided one.
        SCOPED_TRACE(describe(n, layout) + ", y " + name(y_layout) + ", alpha " + std::to_string(alpha));
        auto x = input<T>(layout, {n});
        auto y = input<T>(y_layout, {n});
        std::vector<double> expect(y.pos.size());
        for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = y.at(i) + alpha * x.at(i);
        xylem::blas::axpy(backend, alpha, x.view, y.view);
        expect_result<T>(y, expect, [&](std::size_t i) {
          return 4 * Tol<T>::eps * (std::abs(y.at(i)) + std::abs(alpha * x.at(i)));
        }, "axpy");
        EXPECT_EQ(x.base.version(), 1u);
      }
    }
  });
}

TEST_P(Blas1, scal) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_scal, xylem::dtype_of_v<T>, [&] { xylem::blas::scal(backend, 2.0, probe.view); })) return;
    for (double alpha : {-3.5, 0.0}) {
      for (auto [n, layout] : vectors()) {
        SCOPED_TRACE(describe(n, layout) + ", alpha " + std::to_string(alpha));
        auto x = input<T>(layout, {n});
        std::vector<double> expect(x.pos.size());
        for (std::size_t i = 0; i < expect.size(); ++i) expect[i] = alpha * x.at(i);
        xylem::blas::scal(backend, alpha, x.view);
        expect_result<T>(x, expect, [&](std::size_t i) { return 2 * Tol<T>::eps * std::abs(expect[i]); }, "scal");
        EXPECT_EQ(x.base.version(), 2u);
      }
    }
  });
}

TEST_P(Blas1, copy) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_copy, xylem::dtype_of_v<T>, [&] {
          Tensor y(Layout{3}, xylem::dtype_of_v<T>);
          xylem::blas::copy(backend, probe.view, y);
        })) {
      return;
    }
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n});
      auto y = output<T>(layout == ViewKind::strided ? ViewKind::contiguous : ViewKind::strided, {n});
      xylem::blas::copy(backend, x.view, y.view);
      expect_result<T>(y, x.values(), [](std::size_t) { return 0.0; }, "copy");
    }
  });
}

TEST_P(Blas1, swap) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    auto probe = input<T>(ViewKind::contiguous, {3});
    auto probe2 = input<T>(ViewKind::contiguous, {3});
    if (!runs(OpId::blas_swap, xylem::dtype_of_v<T>, [&] { xylem::blas::swap(backend, probe.view, probe2.view); })) {
      return;
    }
    for (auto [n, layout] : vectors()) {
      SCOPED_TRACE(describe(n, layout));
      auto x = input<T>(layout, {n});
      auto y = input<T>(layout == ViewKind::strided ? ViewKind::contiguous : ViewKind::strided, {n});
      const auto xv = x.values(), yv = y.values();
      xylem::blas::swap(backend, x.view, y.view);
      expect_result<T>(x, yv, [](std::size_t) { return 0.0; }, "swap x");
      expect_result<T>(y, xv, [](std::size_t) { return 0.0; }, "swap y");
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Blas1, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

// Random creation: uniform and normal checked statistically (mean, variance,
// range), against the Philox stream of plugin/math.h computed here, bit for
// bit against native for the same seed (uniform), and for the counter
// advancing by the number of elements drawn.
#include <cstring>

#include "conformance/conformance.hpp"
#include "xylem/plugin/math.h"

namespace conformance {
namespace {

constexpr std::int64_t kN = 100003;

template <class T>
double uniform01(std::uint64_t seed, std::uint64_t counter) {
  if constexpr (std::is_same_v<T, float>) {
    return xy_uniform01_f(xy_philox(seed, counter));
  } else {
    return xy_uniform01_d(xy_philox(seed, counter));
  }
}
template <class T>
double normal01(std::uint64_t seed, std::uint64_t counter) {
  if constexpr (std::is_same_v<T, float>) {
    return xy_normal_f(xy_philox(seed, counter));
  } else {
    return xy_normal_d(xy_philox(seed, counter));
  }
}

struct Moments {
  double mean = 0, variance = 0, min = 0, max = 0;
};
template <class T>
Moments moments(const std::vector<T>& v) {
  Moments m{0, 0, double(v[0]), double(v[0])};
  for (T x : v) {
    m.mean += x;
    m.min = std::min(m.min, double(x));
    m.max = std::max(m.max, double(x));
  }
  m.mean /= double(v.size());
  for (T x : v) m.variance += (x - m.mean) * (x - m.mean);
  m.variance /= double(v.size() - 1);
  return m;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

class Random : public Conformance {};

TEST_P(Random, uniform) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    xylem::Generator probe(1);
    if (!runs(OpId::creation_uniform, dt, [&] { (void)xylem::uniform(backend, Layout{4}, dt, probe); })) return;

    // Statistics of U(low, high).
    const double low = -2, high = 3;
    xylem::Generator gen(seed);
    auto t = xylem::uniform(backend, Layout{kN}, dt, gen, low, high);
    EXPECT_TRUE(t.is_current_on(backend));
    const auto v = t.template to_vector<T>();
    const auto m = moments(v);
    const double width = high - low;
    EXPECT_NEAR(m.mean, (low + high) / 2, 5 * width / std::sqrt(12.0 * kN));
    EXPECT_NEAR(m.variance, width * width / 12, 5 * width * width * std::sqrt(1.0 / 180 / kN));
    EXPECT_GE(m.min, low);
    EXPECT_LT(m.max, high);

    // The specified stream: element k of the first draw is Philox(seed, k).
    xylem::Generator g01(seed);
    const auto u = xylem::uniform(backend, Layout{kN}, dt, g01).template to_vector<T>();
    std::size_t bad = 0;
    for (std::int64_t k = 0; k < kN; ++k) {
      if (u[k] != T(uniform01<T>(seed, std::uint64_t(k))) && ++bad <= 3) {
        ADD_FAILURE() << "element " << k << ": " << u[k] << " is not Philox's " << uniform01<T>(seed, std::uint64_t(k));
      }
    }
    EXPECT_EQ(bad, 0u);
  });
}

TEST_P(Random, uniform_same_bits_as_native) {
  auto native = Backend::native();
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!backend.supports(OpId::creation_uniform, dt)) return;  // reported by uniform
    for (auto n : kSizes) {
      SCOPED_TRACE(n);
      xylem::Generator here(seed), there(seed);
      const auto a = xylem::uniform(backend, Layout{n}, dt, here, -1, 4).template to_vector<T>();
      const auto b = xylem::uniform(native, Layout{n}, dt, there, -1, 4).template to_vector<T>();
      EXPECT_TRUE(same_bits(a, b)) << target.spec() << " and native drew different numbers from one seed";
    }
  });
}

TEST_P(Random, counter_advances_by_elements_drawn) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    if (!backend.supports(OpId::creation_uniform, dt)) return;
    xylem::Generator one(seed), two(seed);
    const auto whole = xylem::uniform(backend, Layout{1007}, dt, one).template to_vector<T>();
    const auto first = xylem::uniform(backend, Layout{1000}, dt, two).template to_vector<T>();
    const auto rest = xylem::uniform(backend, Layout{7}, dt, two).template to_vector<T>();
    std::vector<T> joined(first);
    joined.insert(joined.end(), rest.begin(), rest.end());
    EXPECT_TRUE(same_bits(whole, joined));
    EXPECT_FALSE(same_bits(first, std::vector<T>(whole.begin() + 7, whole.begin() + 1007)));
  });
}

TEST_P(Random, uniform_into_a_view) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    if (!backend.supports(OpId::creation_uniform, xylem::dtype_of_v<T>)) return;
    auto y = output<T>(ViewKind::strided, {5001});
    xylem::Generator gen(seed);
    xylem::fill_uniform(backend, y.view, gen, 10, 11);
    // Element k of the view draws counter k (logical order).
    std::vector<double> expect(y.pos.size());
    for (std::size_t k = 0; k < expect.size(); ++k) expect[k] = 10 + uniform01<T>(seed, k);
    expect_result<T>(y, expect, [](std::size_t) { return 11 * Tol<T>::eps; }, "fill_uniform");
  });
}

TEST_P(Random, normal) {
  for_each_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = xylem::dtype_of_v<T>;
    xylem::Generator probe(1);
    if (!runs(OpId::creation_normal, dt, [&] { (void)xylem::normal(backend, Layout{4}, dt, probe); })) return;
    const double mean = 1.5, stddev = 2;
    xylem::Generator gen(seed);
    auto t = xylem::normal(backend, Layout{kN}, dt, gen, mean, stddev);
    const auto v = t.template to_vector<T>();
    const auto m = moments(v);
    EXPECT_NEAR(m.mean, mean, 5 * stddev / std::sqrt(double(kN)));
    EXPECT_NEAR(m.variance, stddev * stddev, 5 * stddev * stddev * std::sqrt(2.0 / kN));
    for (T x : v) ASSERT_TRUE(std::isfinite(double(x)));

    // The specified transform of the stream (Box-Muller in math.h), up to the
    // accuracy of the backend's log and cos.
    std::size_t bad = 0;
    for (std::int64_t k = 0; k < kN; ++k) {
      const double want = mean + stddev * normal01<T>(seed, std::uint64_t(k));
      if (std::abs(v[k] - want) > (std::is_same_v<T, float> ? 2e-5 : 1e-11) * (1 + std::abs(want)) && ++bad <= 3) {
        ADD_FAILURE() << "element " << k << ": " << v[k] << ", Box-Muller of Philox gives " << want;
      }
    }
    EXPECT_EQ(bad, 0u);
  });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Random, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

// xylem math reductions: sum, mean, max, min, argmax, argmin and var along
// any set of axes (one, several, non-adjacent, negative, all), with and
// without keepdim, over views; empty and size-1 axes; NaN and Inf; long sums
// against the sum of the magnitudes of their terms; var's correction and
// numerical soundness; rejected arguments.
#include <algorithm>
#include <numeric>

#include "conformance/math_common.hpp"

namespace conformance {
namespace {

using xylem::Reduction;
constexpr double kInf = std::numeric_limits<double>::infinity();

using ReduceInto = void (*)(const Backend&, const Tensor&, const Reduction&, Tensor&);
using ReduceNew = Tensor (*)(const Backend&, const Tensor&, const Reduction&);

// Reference reductions of the terms of one output element, in row-major order.
double sum_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double mean_of(const std::vector<double>& v) { return v.empty() ? kNaN : sum_of(v) / double(v.size()); }
bool has_nan(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isnan(x); });
}
double max_of(const std::vector<double>& v) { return has_nan(v) ? kNaN : *std::max_element(v.begin(), v.end()); }
double min_of(const std::vector<double>& v) { return has_nan(v) ? kNaN : *std::min_element(v.begin(), v.end()); }
// The first extreme; the first NaN wins.
double argmax_of(const std::vector<double>& v) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return double(i);
    if (v[i] > v[best]) best = i;
  }
  return double(best);
}
double argmin_of(const std::vector<double>& v) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return double(i);
    if (v[i] < v[best]) best = i;
  }
  return double(best);
}
// Two passes in double. n - correction <= 0 divides by zero (as PyTorch's
// max(0, n - correction)): 0/0 = NaN, or Inf.
double var_of(const std::vector<double>& v, int correction) {
  if (v.empty()) return kNaN;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return ss / std::max(0.0, double(v.size()) - correction);
}

struct Reducer {
  const char* name;
  ReduceInto into;
  ReduceNew make;
  double (*ref)(const std::vector<double>&);
  bool index;  // argmax/argmin: i64 results
  bool exact;  // max/min: one of the terms
};

#define XY_REDUCER(fn, ref, index, exact)                                                                          \
  Reducer {                                                                                                         \
    #fn, [](const Backend& b, const Tensor& x, const Reduction& r, Tensor& y) { xylem::fn(b, x, r, y); },           \
        [](const Backend& b, const Tensor& x, const Reduction& r) { return xylem::fn(b, x, r); }, ref, index, exact \
  }
const Reducer kSum = XY_REDUCER(sum, sum_of, false, false);
const Reducer kMean = XY_REDUCER(mean, mean_of, false, false);
const Reducer kMax = XY_REDUCER(max, max_of, false, true);
const Reducer kMin = XY_REDUCER(min, min_of, false, true);
const Reducer kArgmax = XY_REDUCER(argmax, argmax_of, true, true);
const Reducer kArgmin = XY_REDUCER(argmin, argmin_of, true, true);
#undef XY_REDUCER
// var with its default correction (1); other corrections have their own test.
const Reducer kVar{"var", [](const Backend& b, const Tensor& x, const Reduction& r, Tensor& y) { xylem::var(b, x, r, y); },
                   [](const Backend& b, const Tensor& x, const Reduction& r) { return xylem::var(b, x, r); },
                   [](const std::vector<double>& v) { return var_of(v, 1); }, false, false};

struct Case {
  Dims dims;
  std::vector<int> axes;
  bool keepdim = false;
  ViewKind in = ViewKind::contiguous, out = ViewKind::contiguous;
};

std::string describe(const Case& c) {
  std::string s = dims_string(c.dims) + " " + name(c.in) + " axes {";
  for (std::size_t i = 0; i < c.axes.size(); ++i) s += (i ? ", " : "") + std::to_string(c.axes[i]);
  return s + "}" + (c.keepdim ? " keepdim" : "") + " -> " + name(c.out);
}

std::vector<Case> cases() {
  using L = ViewKind;
  return {
      {{1000}, {}},
      {{100003}, {0}, true, L::strided},
      {{7}, {-1}},
      {{37, 29}, {0}, false, L::contiguous, L::strided},
      {{37, 29}, {1}, true, L::transposed},
      {{37, 29}, {-1, 0}, false, L::padded},
      {{3, 4, 5}, {1}},
      {{3, 4, 5}, {0, 2}, true, L::strided},  // non-adjacent axes
      {{3, 4, 5}, {2, 0}, false, L::contiguous, L::strided},
      {{2, 3, 4, 5}, {1, 3}, false, L::transposed},
      {{2, 3, 4, 5}, {-1, -3}, true},
      {{2, 3, 4, 5}, {0, 1, 2, 3}, true},
      {{2, 3, 4, 5}, {0, 2, 3}, false, L::strided},
      {{1, 7, 1}, {0}},                       // size-1 axes
      {{1, 7, 1}, {0, 2}, true},
      {{5, 1, 3}, {1}},                       // reducing one element
      {{}, {}},                               // a rank-0 scalar
      {{64, 1000}, {1}},
      {{1000, 64}, {0}, false, L::padded},
      {{0, 3}, {1}},                          // nothing to compute
      {{4, 0, 5}, {0, 2}, true},
  };
}

// The reference of one reduction over logical values x of `dims`: the
// result's dims and, per result element, its terms in row-major order.
struct Groups {
  Dims out;
  std::vector<std::vector<double>> terms;
};

Groups group(const std::vector<double>& x, const Dims& dims, std::vector<int> axes, bool keepdim) {
  const int rank = static_cast<int>(dims.size());
  if (axes.empty())
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  std::vector<bool> reduced(dims.size(), false);
  for (int a : axes) reduced[static_cast<std::size_t>(a < 0 ? a + rank : a)] = true;
  Groups g;
  Dims kept;
  for (std::size_t a = 0; a < dims.size(); ++a) {
    if (!reduced[a]) kept.push_back(dims[a]);
    if (!reduced[a] || keepdim) g.out.push_back(reduced[a] ? 1 : dims[a]);
  }
  g.terms.resize(static_cast<std::size_t>(numel(kept)));
  for (std::size_t k = 0; k < x.size(); ++k) {
    auto rest = static_cast<std::int64_t>(k);
    std::int64_t o = 0, stride = 1;
    for (int a = rank - 1; a >= 0; --a) {
      const std::int64_t coordinate = rest % dims[a];
      rest /= dims[a];
      if (reduced[static_cast<std::size_t>(a)]) continue;
      o += coordinate * stride;
      stride *= dims[a];
    }
    g.terms[static_cast<std::size_t>(o)].push_back(x[k]);
  }
  return g;
}

class Reduce : public MathConformance {
 protected:
  // Error allowed for a sum-like result: accumulation relative to the sum of
  // the magnitudes of the terms (divided by n for mean), plus the rounding
  // of the result to dtype.
  static double accumulation(DType dtype, const std::vector<double>& terms, double expect, double rel) {
    double magnitude = 0;
    for (double t : terms) magnitude += std::abs(t);
    return rel * magnitude + arith_tol(dtype) * std::abs(expect) + tiny(dtype);
  }

  double allowed(const Reducer& r, DType dtype, const std::vector<double>& terms, double expect) const {
    if (r.exact) return 0;
    const double rel = tol(dtype).reduce;
    if (std::string_view(r.name) == "mean")
      return accumulation(dtype, terms, expect, rel / std::max<double>(1, double(terms.size())));
    if (std::string_view(r.name) == "var") return var_allowed(dtype, expect);
    return accumulation(dtype, terms, expect, rel);
  }

  // var: relative to the variance itself, whatever the mean (a one-pass
  // sum-of-squares formula fails this at large offsets).
  static double var_allowed(DType dtype, double expect) {
    return 4 * tol(dtype).reduce * std::abs(expect) + arith_tol(dtype) * std::abs(expect) + tiny(dtype);
  }

  DType result_dtype(const Reducer& r, DType dtype) const { return r.index ? DType::i64 : dtype; }

  // Runs r over x (a view of `dims`) into a poisoned output and checks it.
  void check(const Reducer& r, DType dtype, const Arg& x, const Case& c) {
    const auto g = group(x.values(), c.dims, c.axes, c.keepdim);
    const ViewKind out_layout = g.out.empty() ? ViewKind::contiguous : c.out;
    auto y = poisoned(result_dtype(r, dtype), out_layout, g.out, r.index ? -7.0 : kNaN);
    r.into(backend, x.view, Reduction{c.axes, c.keepdim}, y.view);
    std::vector<double> e(g.terms.size());
    for (std::size_t k = 0; k < e.size(); ++k) e[k] = r.index ? r.ref(g.terms[k]) : round_to(dtype, r.ref(g.terms[k]));
    expect_result(y, e, [&](std::size_t k) { return allowed(r, dtype, g.terms[k], e[k]); }, r.name);
  }

  void run(const Reducer& r) {
    for_each_float_dtype([&](DType dtype) {
      if (!runs(OpId::math_reduce, dtype, [&] {
            auto x = input(dtype, ViewKind::contiguous, {4});
            (void)r.make(backend, x.view, {});
          })) {
        return;
      }
      for (const auto& c : cases()) {
        SCOPED_TRACE(describe(c));
        check(r, dtype, input(dtype, c.in, c.dims, -2, 2), c);
      }
      {
        SCOPED_TRACE("a new tensor, [2, 3, 4] axes {1} keepdim");
        auto x = input(dtype, ViewKind::contiguous, {2, 3, 4}, -2, 2);
        Tensor y = r.make(backend, x.view, Reduction{{1}, true});
        EXPECT_EQ(y.layout().dims_string(), "[2, 1, 4]");
        EXPECT_EQ(y.dtype(), result_dtype(r, dtype));
        const auto g = group(x.values(), {2, 3, 4}, {1}, true);
        const auto got = y.to_doubles();
        ASSERT_EQ(got.size(), g.terms.size());
        for (std::size_t k = 0; k < got.size(); ++k) {
          const double e = r.index ? r.ref(g.terms[k]) : round_to(dtype, r.ref(g.terms[k]));
          EXPECT_LE(std::abs(got[k] - e), allowed(r, dtype, g.terms[k], e)) << r.name << " element " << k;
        }
        Tensor all = r.make(backend, x.view, {});
        EXPECT_EQ(all.rank(), 0) << "reducing every axis gives a scalar";
      }
      {
        SCOPED_TRACE("NaN, Inf and ties");
        // Row by row: ordinary; one NaN; two NaNs; +Inf; all -Inf; +Inf and
        // -Inf; all equal; a NaN last. Rows long enough for the kernels'
        // unrolled loops (8 vectors of 16 lanes and more).
        constexpr std::int64_t rows = 8, cols = 333;
        auto x = input(dtype, ViewKind::contiguous, {rows, cols}, -2, 2);
        std::vector<double> v = x.values();
        const auto at = [&](std::int64_t row, std::int64_t col) -> double& {
          return v[static_cast<std::size_t>(row * cols + col)];
        };
        at(1, 205) = kNaN;
        at(2, 0) = kNaN, at(2, 200) = kNaN;
        at(3, 170) = kInf;
        for (std::int64_t j = 0; j < cols; ++j) at(4, j) = -kInf, at(6, j) = 0.5;
        at(5, 3) = kInf, at(5, 300) = -kInf;
        at(7, cols - 1) = kNaN;
        check(r, dtype, host_input(dtype, ViewKind::contiguous, {rows, cols}, v), {{rows, cols}, {1}});
        // The same along axis 0 of the transpose.
        std::vector<double> t(v.size());
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j) t[static_cast<std::size_t>(j * rows + i)] = at(i, j);
        check(r, dtype, host_input(dtype, ViewKind::transposed, {cols, rows}, t), {{cols, rows}, {0}});
      }
      if (r.exact) {
        SCOPED_TRACE("a NaN at every position; Inf and huge values");
        // Row j of the square part holds one NaN, at column j: the first
        // vector, inside an unrolled block, the single vectors after the
        // blocks, the last partial vector, rows shorter than a vector. Then
        // an all-NaN row, and rows where a kernel's cheap NaN check can fire
        // with no NaN (+Inf next to 0, opposite Infs, products that
        // overflow): their result is still a number.
        const double big = largest(dtype) / 4;
        for (const std::int64_t cols : {1, 7, 24, 160, 333}) {
          SCOPED_TRACE("rows of " + std::to_string(cols));
          const std::int64_t rows = cols + 6;
          auto x = input(dtype, ViewKind::contiguous, {rows, cols}, -2, 2);
          std::vector<double> v = x.values();
          const auto at = [&](std::int64_t row, std::int64_t col) -> double& {
            return v[static_cast<std::size_t>(row * cols + col)];
          };
          for (std::int64_t j = 0; j < cols; ++j) {
            at(j, j) = kNaN;
            at(cols, j) = kNaN;
            at(cols + 1, j) = j % 2 ? 0.0 : kInf;
            at(cols + 2, j) = j % 2 ? 0.0 : -kInf;
            at(cols + 3, j) = j % 3 == 0 ? kInf : j % 3 == 1 ? -kInf : 1.0;
            at(cols + 4, j) = j % 2 ? -big : big;
            at(cols + 5, j) = j % 5 ? big / double(j % 5) : -big;
          }
          check(r, dtype, host_input(dtype, ViewKind::contiguous, {rows, cols}, v), {{rows, cols}, {1}});
          std::vector<double> t(v.size());
          for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) t[static_cast<std::size_t>(j * rows + i)] = at(i, j);
          check(r, dtype, host_input(dtype, ViewKind::transposed, {cols, rows}, t), {{cols, rows}, {0}});
          // Stored as it is read: a strided axis 0 (the kernels' column loop).
          check(r, dtype, host_input(dtype, ViewKind::contiguous, {cols, rows}, t), {{cols, rows}, {0}});
        }
      }
      {
        SCOPED_TRACE("large and small values");
        const double big = largest(dtype) / 4, small = smallest_normal(dtype);
        std::vector<double> v{big, -big, big, small, -small, small, 1, 0.0, -0.0};
        check(r, dtype, host_input(dtype, ViewKind::contiguous, {3, 3}, v), {{3, 3}, {1}});
        check(r, dtype, host_input(dtype, ViewKind::contiguous, {3, 3}, v), {{3, 3}, {0}});
      }
    });
  }
};

TEST_P(Reduce, sum) { run(kSum); }
TEST_P(Reduce, mean) { run(kMean); }
TEST_P(Reduce, max) { run(kMax); }
TEST_P(Reduce, min) { run(kMin); }
TEST_P(Reduce, argmax) { run(kArgmax); }
TEST_P(Reduce, argmin) { run(kArgmin); }
TEST_P(Reduce, var) { run(kVar); }

// Reductions over nothing: sum 0, mean and var NaN, the others raise.
TEST_P(Reduce, empty) {
  for_each_float_dtype([&](DType dtype) {
    if (!backend.supports(OpId::math_reduce, dtype)) return;  // reported by the tests above
    for (const Case& c : {Case{{0}, {}}, Case{{3, 0}, {1}}, Case{{0, 3}, {0}, true}, Case{{2, 0, 3}, {1}, false}}) {
      SCOPED_TRACE(describe(c));
      auto x = input(dtype, ViewKind::contiguous, c.dims);
      for (const Reducer* r : {&kSum, &kMean, &kVar}) check(*r, dtype, x, c);
      for (const Reducer* r : {&kMax, &kMin, &kArgmax, &kArgmin}) {
        const auto out = group({}, c.dims, c.axes, c.keepdim).out;
        auto y = poisoned(result_dtype(*r, dtype), ViewKind::contiguous, out, r->index ? -7.0 : kNaN);
        expect_rejected(xylem::ErrorCode::invalid_argument, r->name, {}, {y.base},
                        [&] { r->into(backend, x.view, Reduction{c.axes, c.keepdim}, y.view); });
      }
    }
  });
}

// Over a million terms: the error must stay near that of pairwise summation.
TEST_P(Reduce, long_sums) {
  for_each_float_dtype([&](DType dtype) {
    if (!backend.supports(OpId::math_reduce, dtype)) return;
    constexpr std::int64_t n = (1 << 20) + 3;
    // Pairwise or blocked f32 accumulation stays near 2e-7 of the sum here;
    // adding the terms one after another (even in 8 SIMD lanes) drifts to
    // 2e-6..1e-5.
    const double rel = dtype == DType::f64 ? 1e-13 : 1e-6;
    const bool half = dtype == DType::f16 || dtype == DType::bf16;
    auto x = input(dtype, ViewKind::contiguous, {n}, half ? -1 : 0, 1);  // halves: keep the sum in range
    const auto v = x.values();
    for (const Reducer* r : {&kSum, &kMean}) {
      SCOPED_TRACE(r->name);
      auto y = poisoned(dtype, ViewKind::contiguous, {});
      r->into(backend, x.view, {}, y.view);
      const double e = round_to(dtype, r->ref(v));
      expect_result(y, {e}, [&](std::size_t) {
        return accumulation(dtype, v, e, r == &kMean ? rel / double(n) : rel);
      }, r->name);
    }
    {
      SCOPED_TRACE("sum along the outer axis of [1024, 1031]");
      auto m = input(dtype, ViewKind::contiguous, {1024, 1031}, 0, 1);
      check(kSum, dtype, m, {{1024, 1031}, {0}});
    }
  });
}

// var: every correction, and a large mean that one-pass formulas cancel.
TEST_P(Reduce, var_correction) {
  for_each_float_dtype([&](DType dtype) {
    if (!backend.supports(OpId::math_reduce, dtype)) return;
    for (int correction : {0, 1, 2}) {
      for (const Case& c : {Case{{5, 1000}, {1}}, Case{{37, 29}, {0}, true, ViewKind::transposed}, Case{{4, 1}, {1}},
                            Case{{6, 2}, {1}}}) {
        SCOPED_TRACE(describe(c) + ", correction " + std::to_string(correction));
        auto x = input(dtype, c.in, c.dims, -3, 3);
        const auto g = group(x.values(), c.dims, c.axes, c.keepdim);
        auto y = poisoned(dtype, ViewKind::contiguous, g.out);
        xylem::var(backend, x.view, Reduction{c.axes, c.keepdim}, y.view, correction);
        std::vector<double> e(g.terms.size());
        for (std::size_t k = 0; k < e.size(); ++k) e[k] = round_to(dtype, var_of(g.terms[k], correction));
        expect_result(y, e, [&](std::size_t k) { return var_allowed(dtype, e[k]); }, "var");
      }
    }
    {
      // f64 computes in f64: a larger offset, where sum(x^2) - n*mean^2 loses every digit.
      const double offset = dtype == DType::f64 ? 1e6 : 100;
      SCOPED_TRACE("mean " + std::to_string(offset) + ", spread 1");
      auto x = input(dtype, ViewKind::contiguous, {4, 20000}, offset - 1, offset + 1);
      const auto g = group(x.values(), {4, 20000}, {1}, false);
      Tensor y = xylem::var(backend, x.view, Reduction{{1}, false});
      const auto got = y.to_doubles();
      ASSERT_EQ(got.size(), 4u);
      for (std::size_t k = 0; k < 4; ++k) {
        const double e = var_of(g.terms[k], 1);
        EXPECT_NEAR(got[k], e, var_allowed(dtype, e)) << "row " << k;
      }
    }
  });
}

TEST_P(Reduce, reduced_shape) {
  const Layout x{2, 3, 4};
  EXPECT_EQ(xylem::reduced_shape(x, {{1}, false}).dims_string(), "[2, 4]");
  EXPECT_EQ(xylem::reduced_shape(x, {{1}, true}).dims_string(), "[2, 1, 4]");
  EXPECT_EQ(xylem::reduced_shape(x, {{-1, 0}, false}).dims_string(), "[3]");
  EXPECT_EQ(xylem::reduced_shape(x, {{}, false}).rank(), 0);
  EXPECT_EQ(xylem::reduced_shape(x, {{}, true}).dims_string(), "[1, 1, 1]");
  XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, (void)xylem::reduced_shape(x, {{3}, false}));
}

// Bad axes, wrong output shapes and dtypes: the right error, a message that
// names the op and the shapes, and no tensor changed.
TEST_P(Reduce, rejects_bad_arguments) {
  using xylem::ErrorCode;
  auto x = input(DType::f32, ViewKind::contiguous, {3, 4});
  auto ints = host_input(DType::i32, ViewKind::contiguous, {3, 4}, std::vector<double>(12, 1.0));
  auto y4 = poisoned(DType::f32, ViewKind::contiguous, {4});
  auto y3 = poisoned(DType::f32, ViewKind::contiguous, {3});
  auto y14 = poisoned(DType::f32, ViewKind::contiguous, {1, 4});
  auto d4 = poisoned(DType::f64, ViewKind::contiguous, {4});
  auto i4 = poisoned(DType::i64, ViewKind::contiguous, {4}, -7);
  const std::vector<Tensor> all{x.base, ints.base, y4.base, y3.base, y14.base, d4.base, i4.base};
  const auto rx = [&](const Reducer& r, std::vector<int> axes, bool keepdim, Tensor& y) {
    return [&r, &x, &y, axes, keepdim, this] { r.into(backend, x.view, Reduction{axes, keepdim}, y); };
  };
  expect_rejected(ErrorCode::invalid_argument, "sum", {"[3, 4]"}, all, rx(kSum, {2}, false, y4.view));
  expect_rejected(ErrorCode::invalid_argument, "mean", {"[3, 4]"}, all, rx(kMean, {-3}, false, y4.view));
  expect_rejected(ErrorCode::invalid_argument, "max", {}, all, rx(kMax, {0, 0}, false, y4.view));  // twice
  expect_rejected(ErrorCode::invalid_argument, "var", {}, all,
                  [&] { (void)xylem::var(backend, x.view, Reduction{{0, -2}, false}); });
  expect_rejected(ErrorCode::shape_mismatch, "sum", {"[3]", "[4]"}, all, rx(kSum, {0}, false, y3.view));
  expect_rejected(ErrorCode::shape_mismatch, "min", {"[4]", "[1, 4]"}, all, rx(kMin, {0}, true, y4.view));
  expect_rejected(ErrorCode::shape_mismatch, "mean", {"[1, 4]", "[4]"}, all, rx(kMean, {0}, false, y14.view));
  expect_rejected(ErrorCode::dtype_mismatch, "sum", {}, all, rx(kSum, {0}, false, d4.view));
  expect_rejected(ErrorCode::dtype_mismatch, "argmax", {}, all, rx(kArgmax, {0}, false, y4.view));
  expect_rejected(ErrorCode::dtype_mismatch, "max", {}, all, rx(kMax, {0}, false, i4.view));
  expect_rejected(ErrorCode::dtype_mismatch, "sum", {}, all,
                  [&] { xylem::sum(backend, ints.view, Reduction{{0}, false}, y4.view); });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Reduce, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

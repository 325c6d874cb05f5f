// xylem math, elementwise: unary ops (exp ... cos, clamp), binary ops with
// NumPy broadcasting (add ... minimum), comparisons and where, in f16, bf16,
// f32 and f64: random inputs against float64 references over views, broadcast
// shapes, empty tensors and in place; NaN, Inf and extreme values; rejected
// arguments.
#include "conformance/math_common.hpp"

namespace conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using UnaryInto = void (*)(const Backend&, const Tensor&, Tensor&);
using UnaryNew = Tensor (*)(const Backend&, const Tensor&);
using BinaryInto = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);
using BinaryNew = Tensor (*)(const Backend&, const Tensor&, const Tensor&);

struct UnaryOp {
  const char* name;
  UnaryInto into;
  UnaryNew make;
  double (*ref)(double);
  double low, high;  // random inputs
  bool transcendental;
  bool absolute;  // error relative to 1 near the function's zeros (sin, cos)
};

constexpr double kClampLow = -0.5, kClampHigh = 0.75;

#define XY_UNARY(fn, ref, low, high, transcendental, absolute)                                     \
  UnaryOp {                                                                                          \
    #fn, [](const Backend& b, const Tensor& x, Tensor& y) { xylem::fn(b, x, y); },                  \
        [](const Backend& b, const Tensor& x) { return xylem::fn(b, x); }, ref, low, high, transcendental, absolute \
  }

const UnaryOp kUnary[] = {
    XY_UNARY(exp, [](double x) { return std::exp(x); }, -10, 10, true, false),
    XY_UNARY(log, [](double x) { return std::log(x); }, 1e-3, 100, true, false),
    XY_UNARY(sqrt, [](double x) { return std::sqrt(x); }, 0, 100, false, false),
    XY_UNARY(rsqrt, [](double x) { return 1 / std::sqrt(x); }, 1e-2, 100, true, false),
    XY_UNARY(abs, [](double x) { return std::abs(x); }, -5, 5, false, false),
    XY_UNARY(neg, [](double x) { return -x; }, -5, 5, false, false),
    XY_UNARY(sin, [](double x) { return std::sin(x); }, -10, 10, true, true),
    XY_UNARY(cos, [](double x) { return std::cos(x); }, -10, 10, true, true),
    UnaryOp{"clamp", [](const Backend& b, const Tensor& x, Tensor& y) { xylem::clamp(b, x, kClampLow, kClampHigh, y); },
            [](const Backend& b, const Tensor& x) { return xylem::clamp(b, x, kClampLow, kClampHigh); },
            [](double x) { return x < kClampLow ? kClampLow : (x > kClampHigh ? kClampHigh : x); }, -2, 2, false,
            false},
};
#undef XY_UNARY

struct BinaryOp {
  const char* name;
  BinaryInto into;
  BinaryNew make;
  double (*ref)(double, double);
  double a_low, a_high, b_low, b_high;
  bool transcendental;
};

#define XY_BINARY(fn, ref, a_low, a_high, b_low, b_high, transcendental)                                       \
  BinaryOp {                                                                                                     \
    #fn, [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& out) { xylem::fn(b, x, y, out); },        \
        [](const Backend& b, const Tensor& x, const Tensor& y) { return xylem::fn(b, x, y); }, ref, a_low, a_high, \
        b_low, b_high, transcendental                                                                            \
  }

const BinaryOp kBinary[] = {
    XY_BINARY(add, [](double a, double b) { return a + b; }, -1, 1, -1, 1, false),
    XY_BINARY(sub, [](double a, double b) { return a - b; }, -1, 1, -1, 1, false),
    XY_BINARY(mul, [](double a, double b) { return a * b; }, -4, 4, -4, 4, false),
    XY_BINARY(div, [](double a, double b) { return a / b; }, -4, 4, 0.25, 4, false),
    XY_BINARY(pow, [](double a, double b) { return std::pow(a, b); }, 0.1, 4, -3, 3, true),
    // The contract's formulas: NaN in either operand propagates.
    XY_BINARY(maximum, [](double a, double b) { return (a > b || a != a) ? a : b; }, -1, 1, -1, 1, false),
    XY_BINARY(minimum, [](double a, double b) { return (a < b || a != a) ? a : b; }, -1, 1, -1, 1, false),
};

struct CompareOp {
  const char* name;
  BinaryInto into;
  BinaryNew make;
  bool (*ref)(double, double);
};

const CompareOp kCompare[] = {
#define XY_COMPARE(fn, expr)                                                                               \
  CompareOp{#fn, [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& out) { xylem::fn(b, x, y, out); }, \
            [](const Backend& b, const Tensor& x, const Tensor& y) { return xylem::fn(b, x, y); },                 \
            [](double a, double b) { return expr; }}
    XY_COMPARE(eq, a == b), XY_COMPARE(ne, a != b), XY_COMPARE(lt, a < b),
    XY_COMPARE(le, a <= b), XY_COMPARE(gt, a > b),  XY_COMPARE(ge, a >= b),
#undef XY_COMPARE
};
#undef XY_BINARY

// One unary case: input and output layouts over the same dims.
struct UnaryCase {
  ViewKind in, out;
  Dims dims;
};

std::vector<UnaryCase> unary_cases() {
  std::vector<UnaryCase> out;
  for (auto n : kSizes) out.push_back({ViewKind::contiguous, ViewKind::contiguous, {n}});
  out.push_back({ViewKind::contiguous, ViewKind::contiguous, {}});         // rank 0
  out.push_back({ViewKind::contiguous, ViewKind::contiguous, {0}});        // empty
  out.push_back({ViewKind::strided, ViewKind::contiguous, {3, 0, 2}});     // empty, rank 3
  out.push_back({ViewKind::contiguous, ViewKind::strided, {1, 1, 7}});     // size-1 dims
  out.push_back({ViewKind::strided, ViewKind::strided, {1000}});
  out.push_back({ViewKind::strided, ViewKind::contiguous, {7}});
  out.push_back({ViewKind::contiguous, ViewKind::strided, {1001}});
  out.push_back({ViewKind::transposed, ViewKind::contiguous, {37, 29}});
  out.push_back({ViewKind::contiguous, ViewKind::transposed, {29, 37}});
  out.push_back({ViewKind::transposed, ViewKind::padded, {16, 5}});
  out.push_back({ViewKind::strided, ViewKind::strided, {3, 4, 5}});
  out.push_back({ViewKind::transposed, ViewKind::transposed, {4, 3, 5, 2}});
  return out;
}

// One binary case: operand dims (broadcast against each other) and layouts.
struct BinaryCase {
  Dims a, b;
  ViewKind a_layout = ViewKind::contiguous, b_layout = ViewKind::contiguous, out_layout = ViewKind::contiguous;
};

std::vector<BinaryCase> binary_cases() {
  using L = ViewKind;
  return {
      {{1000}, {1000}},
      {{100003}, {100003}},
      {{7}, {1}},
      {{1}, {7}},
      {{}, {5, 7}},                                          // a rank-0 scalar
      {{5, 7}, {}},
      {{3, 1}, {1, 4}},                                      // both broadcast
      {{5, 1, 7}, {6, 1}, L::strided, L::contiguous},        // ranks differ, both broadcast
      {{2, 3, 4, 5}, {5}, L::contiguous, L::strided, L::strided},
      {{2, 3, 4, 5}, {3, 1, 1}, L::transposed, L::contiguous},
      {{37, 29}, {37, 29}, L::transposed, L::strided, L::padded},
      {{29, 37}, {37}, L::transposed, L::contiguous, L::transposed},
      {{37, 1}, {37, 29}, L::padded, L::transposed, L::strided},
      {{4, 1}, {0}},                                         // empty result [4, 0]
      {{0, 3}, {1, 3}},                                      // empty result [0, 3]
      {{1, 1}, {1, 1}},
      {{256, 1}, {1, 1003}},                                 // an outer "product"
      {{256, 1003}, {1003}, L::contiguous, L::contiguous, L::strided},
  };
}

std::string describe(const BinaryCase& c) {
  return dims_string(c.a) + " " + name(c.a_layout) + " with " + dims_string(c.b) + " " + name(c.b_layout) + " -> " +
         name(c.out_layout);
}

// NaN, infinities, zeros, extremes of dtype and a few ordinary values.
std::vector<double> special_values(DType dtype) {
  std::vector<double> v{kNaN, kInf, -kInf, 0.0, -0.0, 1, -1, 2, -2, 0.5, 3, largest(dtype), -largest(dtype),
                        smallest_normal(dtype), -smallest_normal(dtype)};
  // f16 subnormals are normal f32 numbers inside the kernel; f64 computes in f64.
  if (dtype == DType::f16) v.push_back(0x1p-24);
  if (dtype == DType::f64) v.push_back(std::numeric_limits<double>::denorm_min());
  return v;
}

class Elementwise : public MathConformance {
 protected:
  double allowed(DType dtype, bool transcendental, double expect) const {
    return (transcendental ? math_tol(dtype) : arith_tol(dtype)) * std::abs(expect) + tiny(dtype);
  }

  // Values of op(x) as stored in dtype.
  std::vector<double> expected(const UnaryOp& op, DType dtype, const std::vector<double>& x) const {
    std::vector<double> e(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) e[k] = round_to(dtype, op.ref(x[k]));
    return e;
  }

  std::function<double(std::size_t)> tolerance(const UnaryOp& op, DType dtype, const std::vector<double>& e) const {
    return [this, &op, dtype, &e](std::size_t k) {
      return allowed(dtype, op.transcendental, e[k]) + (op.absolute ? 0.1 * math_tol(dtype) : 0.0);
    };
  }

  void unary(const UnaryOp& op, DType dtype) {
    if (!runs(OpId::math_unary, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {4}, 1, 2);
          (void)op.make(backend, x.view);
        })) {
      return;
    }
    for (const auto& c : unary_cases()) {
      SCOPED_TRACE(std::string(name(c.in)) + " -> " + name(c.out) + " " + dims_string(c.dims));
      auto x = input(dtype, c.in, c.dims, op.low, op.high);
      auto y = poisoned(dtype, c.out, c.dims);
      op.into(backend, x.view, y.view);
      const auto e = expected(op, dtype, x.values());
      expect_result(y, e, tolerance(op, dtype, e), op.name);
      EXPECT_EQ(x.base.version(), 1u) << "the input was written";
    }
    {
      SCOPED_TRACE("a new tensor");
      auto x = input(dtype, ViewKind::transposed, {13, 11}, op.low, op.high);
      Tensor y = op.make(backend, x.view);
      EXPECT_EQ(y.layout().dims_string(), "[13, 11]");
      EXPECT_EQ(y.dtype(), dtype);
      const auto e = expected(op, dtype, x.values());
      const auto got = y.to_doubles();
      for (std::size_t k = 0; k < e.size(); ++k)
        EXPECT_TRUE(got[k] == e[k] || std::abs(got[k] - e[k]) <= tolerance(op, dtype, e)(k))
            << op.name << " element " << k << ": got " << got[k] << ", expected " << e[k];
    }
    for (ViewKind layout : {ViewKind::contiguous, ViewKind::strided}) {
      SCOPED_TRACE(std::string("in place, ") + name(layout));
      auto x = input(dtype, layout, {1003}, op.low, op.high);
      const auto e = expected(op, dtype, x.values());
      op.into(backend, x.view, x.view);
      expect_result(x, e, tolerance(op, dtype, e), std::string(op.name) + " in place");
    }
    {
      SCOPED_TRACE("NaN, Inf and extreme values");
      auto values = special_values(dtype);
      if (op.absolute) {  // the argument reduction of sin(FLT_MAX) is not what this tests
        for (auto& v : values)
          if (std::isfinite(v) && std::abs(v) > 1e4) v = std::copysign(1e4, v);
      }
      auto x = host_input(dtype, ViewKind::contiguous, {std::int64_t(values.size())}, values);
      auto y = poisoned(dtype, ViewKind::contiguous, {std::int64_t(values.size())}, 7.0);
      op.into(backend, x.view, y.view);
      const auto e = expected(op, dtype, x.values());
      expect_result(y, e, tolerance(op, dtype, e), std::string(op.name) + " of special values");
    }
  }

  std::vector<double> expected(const BinaryOp& op, DType dtype, const Dims& out, const BinaryCase& c,
                               const Arg& a, const Arg& b) const {
    std::vector<double> e(static_cast<std::size_t>(numel(out)));
    for (std::size_t k = 0; k < e.size(); ++k)
      e[k] = round_to(dtype, op.ref(a.at(broadcast_index(out, c.a, k)), b.at(broadcast_index(out, c.b, k))));
    return e;
  }

  void binary(const BinaryOp& op, DType dtype) {
    if (!runs(OpId::math_binary, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {4}, 1, 2);
          (void)op.make(backend, x.view, x.view);
        })) {
      return;
    }
    const auto tolerance = [&](const std::vector<double>& e) {
      return [&, dtype](std::size_t k) { return allowed(dtype, op.transcendental, e[k]); };
    };
    for (const auto& c : binary_cases()) {
      SCOPED_TRACE(describe(c));
      const Dims out = broadcast_dims(c.a, c.b);
      auto a = input(dtype, c.a_layout, c.a, op.a_low, op.a_high);
      auto b = input(dtype, c.b_layout, c.b, op.b_low, op.b_high);
      auto y = poisoned(dtype, c.out_layout, out);
      op.into(backend, a.view, b.view, y.view);
      const auto e = expected(op, dtype, out, c, a, b);
      expect_result(y, e, tolerance(e), op.name);
    }
    {
      SCOPED_TRACE("a new tensor, [3, 1] with [4]");
      const BinaryCase c{{3, 1}, {4}};
      auto a = input(dtype, ViewKind::contiguous, c.a, op.a_low, op.a_high);
      auto b = input(dtype, ViewKind::contiguous, c.b, op.b_low, op.b_high);
      Tensor y = op.make(backend, a.view, b.view);
      EXPECT_EQ(y.layout().dims_string(), "[3, 4]");
      EXPECT_EQ(y.dtype(), dtype);
      const auto e = expected(op, dtype, {3, 4}, c, a, b);
      const auto got = y.to_doubles();
      for (std::size_t k = 0; k < e.size(); ++k)
        EXPECT_TRUE(got[k] == e[k] || std::abs(got[k] - e[k]) <= tolerance(e)(k))
            << op.name << " element " << k << ": got " << got[k] << ", expected " << e[k];
    }
    {
      SCOPED_TRACE("an input already broadcast by the caller (stride 0)");
      auto row = input(dtype, ViewKind::contiguous, {1, 7}, op.a_low, op.a_high);
      const std::int64_t dims[] = {5, 7}, strides[] = {0, 1};
      Tensor expanded = row.view.as_strided(Layout::strided(dims, strides, 0));
      const BinaryCase c{{1, 7}, {5, 7}};
      auto b = input(dtype, ViewKind::contiguous, c.b, op.b_low, op.b_high);
      auto y = poisoned(dtype, ViewKind::contiguous, {5, 7});
      op.into(backend, expanded, b.view, y.view);
      const auto e = expected(op, dtype, {5, 7}, c, row, b);
      expect_result(y, e, tolerance(e), op.name);
    }
    for (int which : {0, 1}) {
      SCOPED_TRACE(which == 0 ? "in place into a" : "in place into b (a broadcast)");
      const BinaryCase c = which == 0 ? BinaryCase{{33, 65}, {65}} : BinaryCase{{65}, {33, 65}};
      auto a = input(dtype, which == 0 ? ViewKind::padded : ViewKind::contiguous, c.a, op.a_low, op.a_high);
      auto b = input(dtype, which == 0 ? ViewKind::contiguous : ViewKind::transposed, c.b, op.b_low, op.b_high);
      Arg& y = which == 0 ? a : b;
      const auto e = expected(op, dtype, {33, 65}, c, a, b);
      op.into(backend, a.view, b.view, y.view);
      expect_result(y, e, tolerance(e), std::string(op.name) + " in place");
    }
    {
      SCOPED_TRACE("NaN, Inf and extreme values, every pair");
      const auto values = special_values(dtype);
      const std::int64_t n = static_cast<std::int64_t>(values.size());
      const BinaryCase c{{n, 1}, {1, n}};
      auto a = host_input(dtype, ViewKind::contiguous, c.a, values);
      auto b = host_input(dtype, ViewKind::contiguous, c.b, values);
      auto y = poisoned(dtype, ViewKind::contiguous, {n, n}, 7.0);
      op.into(backend, a.view, b.view, y.view);
      const auto e = expected(op, dtype, {n, n}, c, a, b);
      expect_result(y, e, tolerance(e), std::string(op.name) + " of special values");
    }
  }

  void compare(const CompareOp& op, DType dtype) {
    if (!runs(OpId::math_compare, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {4});
          (void)op.make(backend, x.view, x.view);
        })) {
      return;
    }
    // Small integers, so that equal pairs are common; every special pair.
    std::uniform_int_distribution<int> small(-3, 3);
    const auto ints = [&](const Dims& dims) {
      std::vector<double> v(static_cast<std::size_t>(numel(dims)));
      for (auto& x : v) x = small(rng);
      return v;
    };
    auto cases = binary_cases();
    const auto specials = special_values(dtype);
    const std::int64_t n = static_cast<std::int64_t>(specials.size());
    cases.push_back({{n, 1}, {1, n}});
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      const bool special = i + 1 == cases.size();
      SCOPED_TRACE(special ? std::string("NaN, Inf and extreme values, every pair") : describe(c));
      const Dims out = broadcast_dims(c.a, c.b);
      auto a = host_input(dtype, c.a_layout, c.a, special ? specials : ints(c.a));
      auto b = host_input(dtype, c.b_layout, c.b, special ? specials : ints(c.b));
      std::vector<double> e(static_cast<std::size_t>(numel(out)));
      for (std::size_t k = 0; k < e.size(); ++k)
        e[k] = op.ref(a.at(broadcast_index(out, c.a, k)), b.at(broadcast_index(out, c.b, k))) ? 1 : 0;
      // Twice, over false and over true: every element must be written.
      for (double poison : {0.0, 1.0}) {
        auto y = poisoned(DType::boolean, c.out_layout, out, poison);
        op.into(backend, a.view, b.view, y.view);
        expect_result(y, e, [](std::size_t) { return 0.0; }, op.name);
      }
    }
    auto a = host_input(dtype, ViewKind::contiguous, {2, 1}, {1, kNaN});
    auto b = host_input(dtype, ViewKind::contiguous, {3}, {kNaN, 1, 2});
    Tensor y = op.make(backend, a.view, b.view);
    EXPECT_EQ(y.layout().dims_string(), "[2, 3]");
    EXPECT_EQ(y.dtype(), DType::boolean);
    std::vector<double> e;
    for (double x : {1.0, kNaN})
      for (double z : {kNaN, 1.0, 2.0}) e.push_back(op.ref(x, z) ? 1 : 0);
    EXPECT_EQ(y.to_doubles(), e) << op.name << " as a new tensor";
  }
};

#define XY_UNARY_TEST(fn, index)                                        \
  TEST_P(Elementwise, fn) {                                              \
    ASSERT_STREQ(kUnary[index].name, #fn);                               \
    for_each_float_dtype([&](DType dtype) { unary(kUnary[index], dtype); }); \
  }
XY_UNARY_TEST(exp, 0)
XY_UNARY_TEST(log, 1)
XY_UNARY_TEST(sqrt, 2)
XY_UNARY_TEST(rsqrt, 3)
XY_UNARY_TEST(abs, 4)
XY_UNARY_TEST(neg, 5)
XY_UNARY_TEST(sin, 6)
XY_UNARY_TEST(cos, 7)
XY_UNARY_TEST(clamp, 8)
#undef XY_UNARY_TEST

#define XY_BINARY_TEST(fn, index)                                          \
  TEST_P(Elementwise, fn) {                                                 \
    ASSERT_STREQ(kBinary[index].name, #fn);                                 \
    for_each_float_dtype([&](DType dtype) { binary(kBinary[index], dtype); }); \
  }
XY_BINARY_TEST(add, 0)
XY_BINARY_TEST(sub, 1)
XY_BINARY_TEST(mul, 2)
XY_BINARY_TEST(div, 3)
XY_BINARY_TEST(pow, 4)
XY_BINARY_TEST(maximum, 5)
XY_BINARY_TEST(minimum, 6)
#undef XY_BINARY_TEST

TEST_P(Elementwise, comparisons) {
  for (const auto& op : kCompare) {
    SCOPED_TRACE(op.name);
    for_each_float_dtype([&](DType dtype) { compare(op, dtype); });
  }
}

TEST_P(Elementwise, where) {
  for_each_float_dtype([&](DType dtype) {
    if (!runs_where(dtype)) return;
    struct Case {
      Dims cond, x, y;
      ViewKind cond_layout = ViewKind::contiguous, x_layout = ViewKind::contiguous, out_layout = ViewKind::contiguous;
    };
    const Case cases[] = {
        {{1000}, {1000}, {1000}},
        {{100003}, {100003}, {100003}, ViewKind::strided, ViewKind::strided},
        {{4, 1, 5}, {3, 1}, {1, 5}},  // all three broadcast
        {{}, {7}, {7}},                // a scalar condition
        {{2, 7}, {}, {7}, ViewKind::contiguous, ViewKind::contiguous, ViewKind::strided},
        {{37, 29}, {37, 29}, {29}, ViewKind::transposed, ViewKind::padded, ViewKind::transposed},
        {{0, 3}, {1, 3}, {3}},         // empty
        {{1000, 1}, {1}, {1000, 1}},
    };
    for (const auto& c : cases) {
      SCOPED_TRACE(dims_string(c.cond) + " " + dims_string(c.x) + " " + dims_string(c.y));
      const Dims out = broadcast_dims(broadcast_dims(c.cond, c.x), c.y);
      auto cond = random_bools(c.cond_layout, c.cond);
      auto x = input(dtype, c.x_layout, c.x, -10, 10);
      auto y = input(dtype, ViewKind::contiguous, c.y, -10, 10);
      auto r = poisoned(dtype, c.out_layout, out);
      xylem::where(backend, cond.view, x.view, y.view, r.view);
      std::vector<double> e(static_cast<std::size_t>(numel(out)));
      for (std::size_t k = 0; k < e.size(); ++k)
        e[k] = cond.at(broadcast_index(out, c.cond, k)) != 0 ? x.at(broadcast_index(out, c.x, k))
                                                              : y.at(broadcast_index(out, c.y, k));
      expect_result(r, e, [](std::size_t) { return 0.0; }, "where");
    }
    // NaN and Inf pass through unchanged, and the value not taken never leaks.
    const std::vector<double> xs{kNaN, 1, kInf, -kInf, kNaN, 2}, ys{3, kNaN, -kInf, 4, -0.0, kNaN};
    auto cond = host_input(DType::boolean, ViewKind::contiguous, {6}, {1, 0, 1, 0, 0, 1});
    auto x = host_input(dtype, ViewKind::contiguous, {6}, xs);
    auto y = host_input(dtype, ViewKind::contiguous, {6}, ys);
    Tensor r = xylem::where(backend, cond.view, x.view, y.view);
    EXPECT_EQ(r.dtype(), dtype);
    const auto got = r.to_doubles();
    const std::vector<double> e{kNaN, kNaN, kInf, 4, -0.0, 2};
    ASSERT_EQ(got.size(), e.size());
    for (std::size_t k = 0; k < e.size(); ++k)
      EXPECT_TRUE(std::isnan(e[k]) ? std::isnan(got[k]) : got[k] == e[k]) << "where element " << k << ": " << got[k];
  });
}

// relu's NaN rule (math.h: x < 0 ? 0 : x, so NaN stays NaN), with the
// other special values; nn_test covers relu on random inputs.
TEST_P(Elementwise, relu_special_values) {
  for_each_float_dtype([&](DType dtype) {
    if (!backend.supports(OpId::math_unary, dtype)) return;  // reported by the unary tests
    const auto values = special_values(dtype);
    const std::int64_t n = static_cast<std::int64_t>(values.size());
    auto x = host_input(dtype, ViewKind::contiguous, {n}, values);
    auto y = poisoned(dtype, ViewKind::strided, {n}, 7.0);
    xylem::nn::relu(backend, x.view, y.view);
    std::vector<double> e(values.size());
    for (std::size_t k = 0; k < e.size(); ++k) e[k] = x.at(k) < 0 ? 0.0 : x.at(k);
    expect_result(y, e, [](std::size_t) { return 0.0; }, "relu of special values");
  });
}

// Wrong shapes and dtypes: the right error, a message naming the op and the
// shapes, and no tensor changed (the poisoned output keeps its poison).
TEST_P(Elementwise, rejects_bad_arguments) {
  using xylem::ErrorCode;
  const DType f = DType::f32;
  auto a = input(f, ViewKind::contiguous, {3, 4});
  auto b = input(f, ViewKind::contiguous, {5});
  auto row = input(f, ViewKind::contiguous, {4});
  auto y = poisoned(f, ViewKind::contiguous, {3, 4});
  auto y35 = poisoned(f, ViewKind::contiguous, {3, 5});
  auto y64 = poisoned(DType::f64, ViewKind::contiguous, {3, 4});
  auto d = input(DType::f64, ViewKind::contiguous, {3, 4});
  auto ints = host_input(DType::i32, ViewKind::contiguous, {3, 4}, std::vector<double>(12, 2.0));
  auto cond_f = input(f, ViewKind::contiguous, {3, 4});
  auto cond = random_bools(ViewKind::contiguous, {3, 4});
  auto cond2 = random_bools(ViewKind::contiguous, {2});
  auto bools = poisoned(DType::boolean, ViewKind::contiguous, {3, 4}, 1.0);
  const std::vector<Tensor> all{a.base, b.base, row.base, y.base, y35.base, y64.base, d.base, ints.base, bools.base};

  expect_rejected(ErrorCode::shape_mismatch, "add", {"[3, 4]", "[5]"}, all,
                  [&] { xylem::add(backend, a.view, b.view, y.view); });
  expect_rejected(ErrorCode::shape_mismatch, "mul", {"[3, 4]", "[5]"}, all,
                  [&] { (void)xylem::mul(backend, a.view, b.view); });
  expect_rejected(ErrorCode::shape_mismatch, "sub", {"[3, 4]", "[3, 5]"}, all,
                  [&] { xylem::sub(backend, a.view, row.view, y35.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "add", {}, all, [&] { xylem::add(backend, a.view, d.view, y.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "div", {}, all, [&] { xylem::div(backend, a.view, a.view, y64.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "maximum", {}, all,
                  [&] { xylem::maximum(backend, ints.view, ints.view, y.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "exp", {}, all, [&] { xylem::exp(backend, ints.view, y.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "exp", {}, all, [&] { (void)xylem::exp(backend, ints.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "sqrt", {}, all, [&] { xylem::sqrt(backend, a.view, y64.view); });
  expect_rejected(ErrorCode::shape_mismatch, "log", {"[3, 4]", "[3, 5]"}, all,
                  [&] { xylem::log(backend, a.view, y35.view); });
  expect_rejected(ErrorCode::shape_mismatch, "clamp", {"[3, 4]", "[3, 5]"}, all,
                  [&] { xylem::clamp(backend, a.view, 0, 1, y35.view); });
  expect_rejected(ErrorCode::invalid_argument, "clamp", {}, all, [&] { xylem::clamp(backend, a.view, 1, 0, y.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "lt", {}, all, [&] { xylem::lt(backend, a.view, a.view, y.view); });
  expect_rejected(ErrorCode::shape_mismatch, "eq", {"[3, 4]", "[5]"}, all,
                  [&] { xylem::eq(backend, a.view, b.view, bools.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "where", {}, all,
                  [&] { xylem::where(backend, cond_f.view, a.view, a.view, y.view); });
  expect_rejected(ErrorCode::shape_mismatch, "where", {"[2]", "[3, 4]"}, all,
                  [&] { xylem::where(backend, cond2.view, a.view, a.view, y.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "where", {}, all,
                  [&] { xylem::where(backend, cond.view, a.view, d.view, y.view); });
  expect_rejected(ErrorCode::shape_mismatch, "broadcast", {"[3, 4]", "[5]"}, {},
                  [&] { (void)xylem::broadcast_shape(Layout{3, 4}, Layout{5}); });
  EXPECT_EQ(xylem::broadcast_shape(Layout{5, 1, 7}, Layout{6, 1}).dims_string(), "[5, 6, 7]");
  EXPECT_EQ(xylem::broadcast_shape(Layout{}, Layout{0, 3}).dims_string(), "[0, 3]");
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Elementwise, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

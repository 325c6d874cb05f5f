// Integer arithmetic on i32 and i64: add, sub, mul (wrapping as two's
// complement), maximum, minimum, the six comparisons, neg and abs, where,
// and the reductions sum (into i64), max, min, argmax and argmin, against
// references computed in 64-bit integers on the host, on random values that
// include values near the type's limits (so add and mul wrap), broadcast
// operands, strided views and empty tensors. Outputs are poisoned first and
// every element outside an output view must keep its poison. Codes without
// an integer form (div, pow, exp, mean, ...), i32 beside i64 and outputs of
// the wrong dtype are refused with every tensor left as it was.
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include "conformance/math_common.hpp"

namespace conformance {
namespace {

using xylem::Reduction;

// An argument of an integer (or boolean) dtype held exactly: its storage
// values, and where each logical element of the view lies.
template <class T>
struct IntArg {
  Tensor base;
  Tensor view;
  std::vector<T> base_values;
  std::vector<std::int64_t> pos;
};

template <class T>
IntArg<T> make_arg(DType dtype, ViewKind layout, const Dims& dims, const std::vector<T>& logical, T filler) {
  const Layout shape = detail::base_shape(layout, dims);
  IntArg<T> a;
  a.pos = positions(detail::view_shape(layout, dims));
  a.base_values.assign(static_cast<std::size_t>(shape.numel()), filler);
  for (std::size_t k = 0; k < a.pos.size(); ++k) a.base_values[static_cast<std::size_t>(a.pos[k])] = logical.at(k);
  a.base = Tensor::from_bytes(a.base_values.data(), a.base_values.size() * sizeof(T), shape, dtype);
  a.view = detail::view_of(a.base, layout, dims);
  return a;
}

// A tensor's elements, row-major, as T (any dtype of T's size).
template <class T>
std::vector<T> host_values(const Tensor& t) {
  const auto bytes = t.read_bytes().get();
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// Every logical element of `out` equals `expect`; its other storage
// elements keep their poison.
template <class T>
void expect_exact(const IntArg<T>& out, const std::vector<T>& expect, const std::string& what) {
  std::vector<T> want = out.base_values;
  for (std::size_t k = 0; k < out.pos.size(); ++k) want[static_cast<std::size_t>(out.pos[k])] = expect.at(k);
  const std::vector<T> got = host_values<T>(out.base);
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t wrong = 0, first = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (got[k] != want[k] && wrong++ == 0) first = k;
  }
  EXPECT_EQ(wrong, 0u) << what << ": " << wrong << " of " << got.size() << " storage elements wrong, first at "
                       << first << ": " << std::int64_t(got[first]) << ", expected " << std::int64_t(want[first]);
}

// Values of T: a third small (either sign), a third within 100 of the
// type's limits, a third anywhere in its range.
template <class T>
std::vector<T> random_ints(std::mt19937_64& rng, std::int64_t n) {
  using L = std::numeric_limits<T>;
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    const std::uint64_t r = rng();
    switch (r % 3) {
      case 0: x = T(std::int64_t(r % 201) - 100); break;
      case 1: x = (r & 8) ? T(L::max() - T((r >> 8) % 100)) : T(L::min() + T((r >> 8) % 100)); break;
      default: x = T(rng()); break;  // modular: every bit pattern
    }
  }
  return v;
}

// References in 64 bits: wrapping arithmetic as unsigned, then truncated
// to T (modular in C++20).
std::int64_t wrap_add(std::int64_t a, std::int64_t b) { return std::int64_t(std::uint64_t(a) + std::uint64_t(b)); }
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) { return std::int64_t(std::uint64_t(a) - std::uint64_t(b)); }
std::int64_t wrap_mul(std::int64_t a, std::int64_t b) { return std::int64_t(std::uint64_t(a) * std::uint64_t(b)); }

using BinaryInto = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);
struct IntBinary {
  const char* name;
  BinaryInto into;
  std::int64_t (*ref)(std::int64_t, std::int64_t);
  bool compare;  // boolean result
};
#define XY_INT_BINARY(fn, ref, compare) \
  IntBinary { #fn, [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& o) { xylem::fn(b, x, y, o); }, ref, compare }
const IntBinary kBinaries[] = {
    XY_INT_BINARY(add, wrap_add, false),
    XY_INT_BINARY(sub, wrap_sub, false),
    XY_INT_BINARY(mul, wrap_mul, false),
    XY_INT_BINARY(maximum, [](std::int64_t a, std::int64_t b) { return std::max(a, b); }, false),
    XY_INT_BINARY(minimum, [](std::int64_t a, std::int64_t b) { return std::min(a, b); }, false),
    XY_INT_BINARY(eq, [](std::int64_t a, std::int64_t b) { return std::int64_t(a == b); }, true),
    XY_INT_BINARY(ne, [](std::int64_t a, std::int64_t b) { return std::int64_t(a != b); }, true),
    XY_INT_BINARY(lt, [](std::int64_t a, std::int64_t b) { return std::int64_t(a < b); }, true),
    XY_INT_BINARY(le, [](std::int64_t a, std::int64_t b) { return std::int64_t(a <= b); }, true),
    XY_INT_BINARY(gt, [](std::int64_t a, std::int64_t b) { return std::int64_t(a > b); }, true),
    XY_INT_BINARY(ge, [](std::int64_t a, std::int64_t b) { return std::int64_t(a >= b); }, true),
};
#undef XY_INT_BINARY

struct BinaryCase {
  Dims x, y;
  ViewKind xl = ViewKind::contiguous, yl = ViewKind::contiguous, out = ViewKind::contiguous;
};
std::vector<BinaryCase> binary_cases() {
  using L = ViewKind;
  return {
      {{1000}, {1000}},
      {{100003}, {100003}, L::strided, L::contiguous, L::shifted},
      {{37, 29}, {29}, L::transposed, L::contiguous, L::strided},
      {{37, 29}, {}, L::padded},               // x + 1
      {{}, {5, 7}, L::contiguous, L::shifted},  // 1 - x
      {{3, 1, 5}, {4, 1}, L::strided, L::strided, L::contiguous},
      {{2, 3, 4, 5}, {3, 1, 5}},
      {{0, 3}, {3}},                            // nothing to compute
  };
}

std::string describe(const Dims& x, const Dims& y) { return dims_string(x) + " with " + dims_string(y); }

template <class T>
constexpr T kPoison = T(-77777777);

class Integer : public MathConformance {
 protected:
  template <class T>
  bool runs_int(OpId op, DType dtype) {
    return runs(op, dtype, [&] {
      const auto x = make_arg<T>(dtype, ViewKind::contiguous, {4}, {1, 2, 3, 4}, T(0));
      (void)xylem::add(backend, x.view, x.view);
      (void)xylem::eq(backend, x.view, x.view);
      (void)xylem::neg(backend, x.view);
      (void)xylem::sum(backend, x.view);
      (void)xylem::max(backend, x.view);
    });
  }

  template <class T>
  void binary_ops(DType dtype) {
    if (!runs_int<T>(OpId::math_binary, dtype)) return;
    for (const auto& c : binary_cases()) {
      const Dims dims = broadcast_dims(c.x, c.y);
      const auto x = make_arg<T>(dtype, c.xl, c.x, random_ints<T>(rng, numel(c.x)), T(5));
      const auto y = make_arg<T>(dtype, c.yl, c.y, random_ints<T>(rng, numel(c.y)), T(6));
      for (const IntBinary& op : kBinaries) {
        const std::string what = std::string(op.name) + " " + describe(c.x, c.y) + " " + name(c.xl) + " -> " +
                                 name(c.out);
        const auto n = static_cast<std::size_t>(numel(dims));
        std::vector<std::int64_t> e(n);
        for (std::size_t k = 0; k < n; ++k)
          e[k] = op.ref(x.base_values[std::size_t(x.pos[broadcast_index(dims, c.x, k)])],
                        y.base_values[std::size_t(y.pos[broadcast_index(dims, c.y, k)])]);
        if (op.compare) {
          // Poison 2: neither false nor true.
          auto out = make_arg<std::uint8_t>(DType::boolean, c.out, dims, std::vector<std::uint8_t>(n, 2), 2);
          op.into(backend, x.view, y.view, out.view);
          std::vector<std::uint8_t> expect(n);
          for (std::size_t k = 0; k < n; ++k) expect[k] = std::uint8_t(e[k]);
          expect_exact(out, expect, what);
        } else {
          auto out = make_arg<T>(dtype, c.out, dims, std::vector<T>(n, kPoison<T>), kPoison<T>);
          op.into(backend, x.view, y.view, out.view);
          std::vector<T> expect(n);
          for (std::size_t k = 0; k < n; ++k) expect[k] = T(e[k]);
          expect_exact(out, expect, what);
        }
      }
      // The returning form, in place and with the result's dtype.
      const Tensor r = xylem::add(backend, x.view, y.view);
      EXPECT_EQ(r.dtype(), dtype);
      EXPECT_EQ(xylem::lt(backend, x.view, y.view).dtype(), DType::boolean);
    }
  }

  template <class T>
  void unary_ops(DType dtype) {
    if (!runs_int<T>(OpId::math_unary, dtype)) return;
    using L = ViewKind;
    const std::pair<Dims, L> cases[] = {{{100003}, L::strided}, {{37, 29}, L::transposed}, {{}, L::contiguous},
                                        {{0}, L::contiguous}};
    for (const auto& [dims, layout] : cases) {
      std::vector<T> v = random_ints<T>(rng, numel(dims));
      if (!v.empty()) v[0] = std::numeric_limits<T>::min();  // -min and |min| wrap to min
      const auto x = make_arg<T>(dtype, layout, dims, v, T(9));
      for (const bool is_abs : {false, true}) {
        const auto n = static_cast<std::size_t>(numel(dims));
        auto out = make_arg<T>(dtype, layout == L::contiguous ? L::shifted : L::strided, dims,
                               std::vector<T>(n, kPoison<T>), kPoison<T>);
        if (is_abs)
          xylem::abs(backend, x.view, out.view);
        else
          xylem::neg(backend, x.view, out.view);
        std::vector<T> expect(n);
        for (std::size_t k = 0; k < n; ++k) {
          const std::int64_t a = v[k];
          expect[k] = T(is_abs && a >= 0 ? a : wrap_sub(0, a));
        }
        expect_exact(out, expect, std::string(is_abs ? "abs " : "neg ") + dims_string(dims));
      }
      EXPECT_EQ(xylem::neg(backend, x.view).dtype(), dtype);
    }
  }

  template <class T>
  void where_op(DType dtype) {
    const bool where_runs = runs(OpId::math_where, dtype, [&] {
      const auto x = make_arg<T>(dtype, ViewKind::contiguous, {4}, {1, 2, 3, 4}, T(0));
      const auto c = make_arg<std::uint8_t>(DType::boolean, ViewKind::contiguous, {4}, {1, 0, 1, 0}, 0);
      (void)xylem::where(backend, c.view, x.view, x.view);
    });
    if (!where_runs) return;
    const Dims dims{37, 29};
    const auto x = make_arg<T>(dtype, ViewKind::transposed, dims, random_ints<T>(rng, numel(dims)), T(1));
    const auto y = make_arg<T>(dtype, ViewKind::contiguous, {29}, random_ints<T>(rng, 29), T(2));
    std::vector<std::uint8_t> cond(static_cast<std::size_t>(numel(dims)));
    for (auto& c : cond) c = std::uint8_t(rng() & 1);
    const auto cd = make_arg<std::uint8_t>(DType::boolean, ViewKind::strided, dims, cond, 0);
    auto out = make_arg<T>(dtype, ViewKind::strided, dims, std::vector<T>(cond.size(), kPoison<T>), kPoison<T>);
    xylem::where(backend, cd.view, x.view, y.view, out.view);
    std::vector<T> expect(cond.size());
    for (std::size_t k = 0; k < cond.size(); ++k)
      expect[k] = cond[k] ? x.base_values[std::size_t(x.pos[k])]
                          : y.base_values[std::size_t(y.pos[broadcast_index(dims, {29}, k)])];
    expect_exact(out, expect, "where");
  }

  template <class T>
  void reductions(DType dtype) {
    if (!runs_int<T>(OpId::math_reduce, dtype)) return;
    using L = ViewKind;
    struct Case {
      Dims dims;
      std::vector<int> axes;
      bool keepdim = false;
      L in = L::contiguous, out = L::contiguous;
    };
    const Case cases[] = {
        {{1000}, {}},
        {{100003}, {0}, true, L::strided},
        {{200003}, {}},  // several row segments
        {{37, 29}, {0}, false, L::contiguous, L::strided},
        {{37, 29}, {1}, true, L::transposed},
        {{37, 29}, {-1, 0}, false, L::padded},
        {{3, 4, 5}, {0, 2}, true, L::strided},
        {{2, 3, 4, 5}, {1, 3}, false, L::strided},
        {{1000, 64}, {0}, false, L::padded},  // columns
        {{5, 1, 3}, {1}},
        {{}, {}},
        {{0, 3}, {1}},
        {{4, 0, 5}, {1}},  // over nothing: a sum is 0, max and the others raise
    };
    enum Kind { kSum, kMax, kMin, kArgmax, kArgmin };
    const char* names[] = {"sum", "max", "min", "argmax", "argmin"};
    for (const Case& c : cases) {
      const auto x = make_arg<T>(dtype, c.in, c.dims, random_ints<T>(rng, numel(c.dims)), T(3));
      const Reduction r{c.axes, c.keepdim};
      const Layout out_dims = xylem::reduced_shape(Layout(std::span<const std::int64_t>(c.dims)), r);
      const Dims od(out_dims.dims().begin(), out_dims.dims().end());
      // The terms of each output element, in row-major order of the reduced axes.
      std::vector<int> axes = c.axes;
      if (axes.empty())
        for (int a = 0; a < int(c.dims.size()); ++a) axes.push_back(a);
      for (int& a : axes) a = a < 0 ? a + int(c.dims.size()) : a;
      std::sort(axes.begin(), axes.end());
      const auto n_out = static_cast<std::size_t>(numel(od));
      std::vector<std::vector<std::int64_t>> terms(n_out);
      for (std::int64_t k = 0; k < numel(c.dims); ++k) {
        const Dims co = coords_of(c.dims, k);
        Dims oc;
        for (int a = 0; a < int(c.dims.size()); ++a) {
          const bool reduced = std::find(axes.begin(), axes.end(), a) != axes.end();
          if (!reduced)
            oc.push_back(co[std::size_t(a)]);
          else if (c.keepdim)
            oc.push_back(0);
        }
        terms[std::size_t(flat_of(od, oc))].push_back(x.base_values[std::size_t(x.pos[std::size_t(k)])]);
      }
      const bool empty_axis = numel(c.dims) == 0 && n_out > 0;
      for (int kind = kSum; kind <= kArgmin; ++kind) {
        const std::string what = std::string(names[kind]) + " " + dims_string(c.dims) + " " + name(c.in);
        if (empty_axis && kind != kSum) {
          XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, (void)xylem::max(backend, x.view, r));
          continue;
        }
        std::vector<std::int64_t> e(n_out);
        for (std::size_t o = 0; o < n_out; ++o) {
          const auto& t = terms[o];
          if (kind == kSum) {
            std::int64_t s = 0;
            for (std::int64_t v : t) s = wrap_add(s, v);
            e[o] = s;
          } else if (kind == kMax || kind == kMin) {
            e[o] = kind == kMax ? *std::max_element(t.begin(), t.end()) : *std::min_element(t.begin(), t.end());
          } else {  // the first extreme
            const auto it = kind == kArgmax ? std::max_element(t.begin(), t.end()) : std::min_element(t.begin(), t.end());
            e[o] = it - t.begin();
          }
        }
        const bool wide = kind != kMax && kind != kMin;  // i64 results
        const DType out_dtype = wide ? DType::i64 : dtype;
        Tensor made;
        switch (kind) {
          case kSum: made = xylem::sum(backend, x.view, r); break;
          case kMax: made = xylem::max(backend, x.view, r); break;
          case kMin: made = xylem::min(backend, x.view, r); break;
          case kArgmax: made = xylem::argmax(backend, x.view, r); break;
          default: made = xylem::argmin(backend, x.view, r); break;
        }
        ASSERT_EQ(made.dtype(), out_dtype) << what;
        if (wide) {
          auto out = make_arg<std::int64_t>(DType::i64, c.out, od, std::vector<std::int64_t>(n_out, -5), -5);
          reduce_into(kind, x.view, r, out.view);
          expect_exact(out, e, what);
          EXPECT_EQ(host_values<std::int64_t>(made), e) << what << " (returning form)";
        } else {
          auto out = make_arg<T>(dtype, c.out, od, std::vector<T>(n_out, kPoison<T>), kPoison<T>);
          reduce_into(kind, x.view, r, out.view);
          std::vector<T> expect(n_out);
          for (std::size_t o = 0; o < n_out; ++o) expect[o] = T(e[o]);
          expect_exact(out, expect, what);
        }
      }
    }
  }

  void reduce_into(int kind, const Tensor& x, const Reduction& r, Tensor& out) {
    switch (kind) {
      case 0: xylem::sum(backend, x, r, out); break;
      case 1: xylem::max(backend, x, r, out); break;
      case 2: xylem::min(backend, x, r, out); break;
      case 3: xylem::argmax(backend, x, r, out); break;
      default: xylem::argmin(backend, x, r, out); break;
    }
  }

  template <class T>
  void rejected(DType dtype) {
    const auto x = make_arg<T>(dtype, ViewKind::contiguous, {3, 4}, random_ints<T>(rng, 12), T(0));
    const auto y = make_arg<T>(dtype, ViewKind::contiguous, {4}, random_ints<T>(rng, 4), T(0));
    auto out = make_arg<T>(dtype, ViewKind::contiguous, {3, 4}, std::vector<T>(12, kPoison<T>), kPoison<T>);
    const std::string dn(xylem::name(dtype));
    const std::vector<Tensor> all{x.base, y.base, out.base};
    using E = xylem::ErrorCode;
    const auto expect = [&](const std::string& op, const std::function<void()>& fn) {
      SCOPED_TRACE(op);
      expect_rejected(E::dtype_mismatch, op, {dn}, all, fn);
    };
    // Codes without an integer form, in both forms.
    expect("div", [&] { xylem::div(backend, x.view, y.view, out.view); });
    expect("div", [&] { (void)xylem::div(backend, x.view, y.view); });
    expect("pow", [&] { xylem::pow(backend, x.view, y.view, out.view); });
    expect("exp", [&] { xylem::exp(backend, x.view, out.view); });
    expect("sqrt", [&] { (void)xylem::sqrt(backend, x.view); });
    expect("clamp", [&] { xylem::clamp(backend, x.view, -1, 1, out.view); });
    expect("nn::relu", [&] { (void)xylem::nn::relu(backend, x.view); });
    expect("mean", [&] { (void)xylem::mean(backend, x.view); });
    expect("var", [&] { (void)xylem::var(backend, x.view); });
    // i32 beside i64, and outputs of another dtype.
    const DType other = dtype == DType::i32 ? DType::i64 : DType::i32;
    Tensor z = xylem::cast(xylem::Backend::native(), y.view, other);  // made on the host: any framework
    const std::vector<Tensor> with_z{x.base, y.base, out.base, z};
    expect_rejected(E::dtype_mismatch, "add", {dn, std::string(xylem::name(other))}, with_z,
                    [&] { xylem::add(backend, x.view, z, out.view); });
    Tensor wrong(Layout({3, 4}), DType::f32);
    expect_rejected(E::dtype_mismatch, "mul", {"f32"}, all, [&] { xylem::mul(backend, x.view, y.view, wrong); });
    Tensor not_bool(Layout({3, 4}), dtype);
    expect_rejected(E::dtype_mismatch, "lt", {dn}, all, [&] { xylem::lt(backend, x.view, y.view, not_bool); });
    // A sum's result is i64: an out of the input's i32 is refused.
    if (dtype == DType::i32) {
      Tensor narrow(Layout({3}), DType::i32);
      expect_rejected(E::dtype_mismatch, "sum", {"i32"}, all,
                      [&] { xylem::sum(backend, x.view, Reduction{{1}}, narrow); });
    }
  }
};

TEST_P(Integer, binary_and_compare) {
  { SCOPED_TRACE("i32"); binary_ops<std::int32_t>(DType::i32); }
  { SCOPED_TRACE("i64"); binary_ops<std::int64_t>(DType::i64); }
}

TEST_P(Integer, neg_and_abs) {
  { SCOPED_TRACE("i32"); unary_ops<std::int32_t>(DType::i32); }
  { SCOPED_TRACE("i64"); unary_ops<std::int64_t>(DType::i64); }
}

TEST_P(Integer, where) {
  { SCOPED_TRACE("i32"); where_op<std::int32_t>(DType::i32); }
  { SCOPED_TRACE("i64"); where_op<std::int64_t>(DType::i64); }
}

TEST_P(Integer, reductions) {
  { SCOPED_TRACE("i32"); reductions<std::int32_t>(DType::i32); }
  { SCOPED_TRACE("i64"); reductions<std::int64_t>(DType::i64); }
}

TEST_P(Integer, rejected_arguments_change_nothing) {
  { SCOPED_TRACE("i32"); rejected<std::int32_t>(DType::i32); }
  { SCOPED_TRACE("i64"); rejected<std::int64_t>(DType::i64); }
}

// The usual accuracy count: (argmax(logits, 1) == labels).sum().
TEST_P(Integer, counting_correct_predictions) {
  if (!runs_int<std::int64_t>(OpId::math_compare, DType::i64)) return;
  const Tensor logits = Tensor::from(std::vector<float>{0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.7f}, Layout({3, 2}));
  const Tensor labels = Tensor::from(std::vector<std::int64_t>{1, 1, 1});
  const Tensor hits = xylem::eq(backend, xylem::argmax(backend, logits, Reduction{{1}}), labels);
  const Tensor count = xylem::sum(backend, hits);  // a boolean sum: the count of trues, i64
  ASSERT_EQ(count.dtype(), DType::i64);
  EXPECT_EQ(count.to_vector<std::int64_t>(), std::vector<std::int64_t>{2});
}

// An output overlapping its input (y is x shifted by one element): the
// result is computed from x as it was; a shape of 2^40 elements is the
// call's out_of_memory and changes nothing.
TEST_P(Integer, overlapping_output_and_absurd_shape) {
  if (!runs_int<std::int64_t>(OpId::math_binary, DType::i64)) return;
  std::vector<std::int64_t> values(1001);
  std::mt19937_64 pick(std::random_device{}());
  for (auto& v : values) v = std::int64_t(pick() % 2001) - 1000;
  Tensor base = xylem::contiguous(backend, Tensor::from(values));
  const Tensor x = base.as_strided(Layout::strided(std::vector<std::int64_t>{1000}, std::vector<std::int64_t>{1}, 0));
  Tensor y = base.as_strided(Layout::strided(std::vector<std::int64_t>{1000}, std::vector<std::int64_t>{1}, 1));
  const Tensor three = Tensor::from(std::vector<std::int64_t>{3});
  xylem::mul(backend, x, three, y);
  const auto got = base.to_vector<std::int64_t>();
  EXPECT_EQ(got[0], values[0]);
  for (std::size_t k = 0; k < 1000; ++k) ASSERT_EQ(got[k + 1], values[k] * 3) << "element " << k + 1;

  const Tensor huge_a = Tensor::from(std::vector<std::int64_t>{1, 2}).reshape({2, 1});
  const Tensor before = xylem::contiguous(backend, huge_a);
  XY_EXPECT_ERROR(xylem::ErrorCode::out_of_memory,
                  (void)xylem::add(backend, huge_a.as_strided(Layout::strided(std::vector<std::int64_t>{std::int64_t{1} << 20, 1},
                                                                                std::vector<std::int64_t>{0, 1}, 0)),
                                   Tensor::from(std::vector<std::int64_t>(1, 5)).as_strided(Layout::strided(
                                       std::vector<std::int64_t>{1, std::int64_t{1} << 20}, std::vector<std::int64_t>{0, 0}, 0))));
  EXPECT_EQ(huge_a.to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 2}));
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Frameworks, Integer, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace conformance

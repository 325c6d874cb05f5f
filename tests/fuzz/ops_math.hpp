#pragma once
// The ops fuzzer's math families: unary math and activations, broadcasting
// binary ops and comparisons, where, casts, reductions and fills.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

#include "run.hpp"

namespace xylem_fuzz {

using xylem::Backend;

// Scalar parameters of an elementwise op: what it takes and what is valid.
enum class Params { none, clamp, slope, alpha, softplus };

struct UnaryOp {
  const char* name;
  void (*into)(const Backend&, const Tensor&, Tensor&, double, double);
  double (*ref)(double, double, double);
  Params params = Params::none;
  bool transcendental = true;
};

#define XYLEM_FUZZ_MATH(fn, expr) \
  {#fn, [](const Backend& b, const Tensor& x, Tensor& y, double, double) { xylem::fn(b, x, y); }, \
   [](double x, double, double) { return double(expr); }}
#define XYLEM_FUZZ_NN(fn, expr) \
  {"nn::" #fn, [](const Backend& b, const Tensor& x, Tensor& y, double, double) { xylem::nn::fn(b, x, y); }, \
   [](double x, double, double) { return double(expr); }}
inline const UnaryOp kUnary[] = {
    XYLEM_FUZZ_MATH(exp, std::exp(x)),
    XYLEM_FUZZ_MATH(log, std::log(x)),
    XYLEM_FUZZ_MATH(sqrt, std::sqrt(x)),
    XYLEM_FUZZ_MATH(rsqrt, 1 / std::sqrt(x)),
    XYLEM_FUZZ_MATH(abs, std::abs(x)),
    XYLEM_FUZZ_MATH(neg, -x),
    XYLEM_FUZZ_MATH(sin, std::sin(x)),
    XYLEM_FUZZ_MATH(cos, std::cos(x)),
    XYLEM_FUZZ_NN(sigmoid, 1 / (1 + std::exp(-x))),
    XYLEM_FUZZ_NN(relu, x > 0 ? x : 0.0),
    XYLEM_FUZZ_NN(tanh, std::tanh(x)),
    XYLEM_FUZZ_NN(gelu, 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))),
    {"clamp", [](const Backend& b, const Tensor& x, Tensor& y, double lo, double hi) { xylem::clamp(b, x, lo, hi, y); },
     [](double x, double lo, double hi) { return std::min(std::max(x, lo), hi); }, Params::clamp},
    {"nn::leaky_relu",
     [](const Backend& b, const Tensor& x, Tensor& y, double s, double) { xylem::nn::leaky_relu(b, x, y, s); },
     [](double x, double s, double) { return x > 0 ? x : s * x; }, Params::slope},
    {"nn::elu", [](const Backend& b, const Tensor& x, Tensor& y, double a, double) { xylem::nn::elu(b, x, y, a); },
     [](double x, double a, double) { return x > 0 ? x : a * std::expm1(x); }, Params::alpha},
    {"nn::softplus",
     [](const Backend& b, const Tensor& x, Tensor& y, double beta, double t) { xylem::nn::softplus(b, x, y, beta, t); },
     [](double x, double beta, double t) { return beta * x > t ? x : std::log1p(std::exp(beta * x)) / beta; },
     Params::softplus},
    XYLEM_FUZZ_NN(silu, x / (1 + std::exp(-x))),
    XYLEM_FUZZ_NN(gelu_tanh, 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)))),
};
#undef XYLEM_FUZZ_MATH
#undef XYLEM_FUZZ_NN

// An output's dims: usually `dims`, one time in 16 something else.
inline Dims maybe_wrong(Picker& p, const Dims& dims) {
  if (!p.one_in(16)) return dims;
  Dims d = pick_dims(p, int(p.pick(5)));
  return d == dims ? Dims{3, 5, 2} : d;
}
inline DType maybe_wrong(Picker& p, DType t) { return p.one_in(16) ? p.from(kAllDTypes) : t; }

// i32 and i64: the integer dtypes elementwise math and reductions take
// (xylem/math.hpp): neg, abs, add, sub, mul, maximum, minimum, the
// comparisons, where; sum (into i64), max, min, argmax, argmin.
inline bool math_integer(DType t) { return t == DType::i32 || t == DType::i64; }
inline bool named(const char* name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), std::string_view(name)) != names.end();
}

inline void fuzz_unary(Ctx& c) {
  const UnaryOp& op = kUnary[c.p.pick(std::size(kUnary))];
  static constexpr double values[] = {-1, 0, 0.01, 0.5, 1, 2, 20, -0.25};
  double p0 = c.p.from(values), p1 = c.p.from(values);
  bool params_ok = true;
  if (op.params == Params::clamp) params_ok = !(p0 > p1);
  if (op.params == Params::softplus) params_ok = p0 > 0;
  const DType t = pick_dtype(c.p);
  const Dims dims = pick_dims(c.p, int(c.p.pick(5)));
  const Arg x = make_arg(c.backend, c.p, t, dims);
  const Arg y = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, dims), {&x});
  const bool dtype_ok = xylem::is_floating(t) || (math_integer(t) && named(op.name, {"neg", "abs"}));
  const bool valid = params_ok && dtype_ok && y.dtype == t && y.dims == dims;
  const std::string what = std::string(op.name) + "(" + std::to_string(p0) + ", " + std::to_string(p1) + ") x " +
                           x.describe() + " -> y " + y.describe();
  run(op.name, what, valid, {&x}, &y, [&] { Tensor out = y.view; op.into(c.backend, x.view, out, p0, p1); },
      [&] {
        xylem_ref::Expect e;
        for (double v : x.logical().v) e.push(op.ref(v, p0, p1), 1e-3 * std::abs(v));
        return e;
      });
}

struct BinaryOp {
  const char* name;
  void (*into)(const Backend&, const Tensor&, const Tensor&, Tensor&);
  Tensor (*make)(const Backend&, const Tensor&, const Tensor&);
  double (*ref)(double, double);
  bool compare;
};
#define XYLEM_FUZZ_BINARY(fn, expr, cmp)                                                                      \
  {#fn, [](const Backend& b, const Tensor& x, const Tensor& y, Tensor& o) { xylem::fn(b, x, y, o); },          \
   [](const Backend& b, const Tensor& x, const Tensor& y) { return xylem::fn(b, x, y); },                     \
   [](double a, double b) { return double(expr); }, cmp}
inline const BinaryOp kBinary[] = {
    XYLEM_FUZZ_BINARY(add, a + b, false),     XYLEM_FUZZ_BINARY(sub, a - b, false),
    XYLEM_FUZZ_BINARY(mul, a * b, false),     XYLEM_FUZZ_BINARY(div, a / b, false),
    XYLEM_FUZZ_BINARY(pow, std::pow(a, b), false),
    XYLEM_FUZZ_BINARY(maximum, std::max(a, b), false),
    XYLEM_FUZZ_BINARY(minimum, std::min(a, b), false),
    XYLEM_FUZZ_BINARY(eq, a == b, true),      XYLEM_FUZZ_BINARY(ne, a != b, true),
    XYLEM_FUZZ_BINARY(lt, a < b, true),       XYLEM_FUZZ_BINARY(le, a <= b, true),
    XYLEM_FUZZ_BINARY(gt, a > b, true),       XYLEM_FUZZ_BINARY(ge, a >= b, true),
};
#undef XYLEM_FUZZ_BINARY

// Dims that broadcast to `out`: fewer leading axes, some axes 1; one time
// in 12 any dims (which may not).
inline Dims broadcast_operand(Picker& p, const Dims& out) {
  if (p.one_in(12)) return pick_dims(p, int(p.pick(5)));
  Dims d(out.begin() + p.pick(std::uint32_t(out.size()) + 1), out.end());
  for (auto& x : d)
    if (p.one_in(3)) x = 1;
  return d;
}

// x (op) y over the broadcast of their dims, elementwise.
inline xylem_ref::Expect elementwise(const Arg& x, const Arg& y, const Dims& out, double (*f)(double, double)) {
  const auto xa = x.logical(), ya = y.logical();
  xylem_ref::Expect e;
  for (std::int64_t k = 0; k < xylem_ref::numel(out); ++k) {
    const double a = xylem_ref::broadcast_at(xa, out, k), b = xylem_ref::broadcast_at(ya, out, k);
    e.push(f(a, b), 1e-3 * (std::abs(a) + std::abs(b)));
  }
  return e;
}

inline void fuzz_binary(Ctx& c) {
  const BinaryOp& op = kBinary[c.p.pick(std::size(kBinary))];
  const Dims full = pick_dims(c.p, int(c.p.pick(5)));
  const DType t = pick_dtype(c.p);
  const DType ty = c.p.one_in(12) ? pick_dtype(c.p, 2) : t;
  const Arg x = make_arg(c.backend, c.p, t, broadcast_operand(c.p, full));
  const Arg y = make_arg(c.backend, c.p, ty, broadcast_operand(c.p, full));
  const auto out = xylem_ref::broadcast(x.dims, y.dims);
  const bool dtype_ok = xylem::is_floating(t) ||
                        (math_integer(t) && (op.compare || named(op.name, {"add", "sub", "mul", "maximum", "minimum"})));
  const bool inputs_ok = out && dtype_ok && t == ty;
  const DType out_t = op.compare ? DType::boolean : t;
  const std::string what = std::string(op.name) + " x " + x.describe() + ", y " + y.describe();
  const auto expect = [&] { return elementwise(x, y, *out, op.ref); };
  if (c.p.one_in(4)) {
    run_new(op.name, what + " -> new", inputs_ok, {&x, &y}, out ? *out : Dims{}, out_t,
            [&] { return op.make(c.backend, x.view, y.view); }, expect);
    return;
  }
  const Dims out_dims = maybe_wrong(c.p, out ? *out : full);
  const Arg o = make_out(c.backend, c.p, maybe_wrong(c.p, out_t), out_dims, {&x, &y});
  const bool valid = inputs_ok && o.dims == *out && o.dtype == out_t;
  run(op.name, what + " -> out " + o.describe(), valid, {&x, &y}, &o,
      [&] { Tensor w = o.view; op.into(c.backend, x.view, y.view, w); }, expect);
}

inline void fuzz_where(Ctx& c) {
  const Dims full = pick_dims(c.p, int(c.p.pick(5)));
  const DType t = pick_dtype(c.p);
  const Arg cond = make_arg(c.backend, c.p, c.p.one_in(12) ? pick_dtype(c.p, 1) : DType::boolean,
                            broadcast_operand(c.p, full));
  const Arg x = make_arg(c.backend, c.p, t, broadcast_operand(c.p, full));
  const Arg y = make_arg(c.backend, c.p, c.p.one_in(12) ? pick_dtype(c.p, 2) : t, broadcast_operand(c.p, full));
  auto out = xylem_ref::broadcast(cond.dims, x.dims);
  if (out) out = xylem_ref::broadcast(*out, y.dims);
  const Arg o = make_out(c.backend, c.p, maybe_wrong(c.p, t), maybe_wrong(c.p, out ? *out : full), {&x, &y});
  const bool valid = out && cond.dtype == DType::boolean && (xylem::is_floating(t) || math_integer(t)) && y.dtype == t &&
                     o.dtype == t &&
                     o.dims == *out;
  run("where", "where cond " + cond.describe() + ", x " + x.describe() + ", y " + y.describe() + " -> " + o.describe(),
      valid, {&cond, &x, &y}, &o, [&] { Tensor w = o.view; xylem::where(c.backend, cond.view, x.view, y.view, w); },
      [&] {
        const auto ca = cond.logical(), xa = x.logical(), ya = y.logical();
        xylem_ref::Expect e;
        for (std::int64_t k = 0; k < xylem_ref::numel(*out); ++k)
          e.push(xylem_ref::broadcast_at(ca, *out, k) != 0 ? xylem_ref::broadcast_at(xa, *out, k)
                                                          : xylem_ref::broadcast_at(ya, *out, k),
                 0);
        return e;
      });
}

inline void fuzz_cast(Ctx& c) {
  const Dims dims = pick_dims(c.p, int(c.p.pick(5)));
  const Arg x = make_arg(c.backend, c.p, c.p.from(kAllDTypes), dims);
  const DType to = c.p.from(kAllDTypes);
  const auto expect = [&] {
    xylem_ref::Expect e;
    for (double v : x.logical().v) e.push(xylem_ref::cast_value(v, to), 0);
    return e;
  };
  const std::string what = "cast x " + x.describe() + " to " + std::string(xylem::name(to));
  if (c.p.one_in(4)) {
    run_new("cast", what, true, {&x}, dims, to, [&] { return xylem::cast(c.backend, x.view, to); }, expect);
    return;
  }
  const Arg o = make_out(c.backend, c.p, to, maybe_wrong(c.p, dims), {&x});
  run("cast", what + " -> " + o.describe(), o.dims == dims, {&x}, &o,
      [&] { Tensor w = o.view; xylem::cast(c.backend, x.view, w); }, expect);
}

// Reductions: axes given in any order and sign, sometimes out of range or
// twice; keepdim either way.
inline void fuzz_reduce(Ctx& c) {
  using R = xylem_ref::Reduce;
  static constexpr R kinds[] = {R::sum, R::mean, R::max, R::min, R::argmax, R::argmin, R::var};
  static constexpr const char* names[] = {"sum", "mean", "max", "min", "argmax", "argmin", "var"};
  const auto which = c.p.pick(std::size(kinds));
  const R kind = kinds[which];
  const int rank = int(c.p.pick(5));
  const Arg x = make_arg(c.backend, c.p, pick_dtype(c.p), pick_dims(c.p, rank, 6));
  xylem::Reduction r;
  r.keepdim = c.p.one_in(2);
  std::vector<int> axes;  // sorted, distinct, non-negative
  bool axes_ok = true;
  if (!c.p.one_in(4)) {
    for (int a = 0; a < rank; ++a)
      if (c.p.one_in(2)) r.axes.push_back(c.p.one_in(2) ? a - rank : a);
    if (c.p.one_in(10)) r.axes.push_back(int(c.p.pick(12)) - 6);
  }
  for (int a : r.axes) {
    const int n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank || std::find(axes.begin(), axes.end(), n) != axes.end()) axes_ok = false;
    else axes.push_back(n);
  }
  if (r.axes.empty())
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  std::sort(axes.begin(), axes.end());
  const int correction = int(c.p.pick(2));
  std::int64_t count = 1;
  for (int a : axes) count *= x.dims[std::size_t(a)];
  const bool has_identity = kind == R::sum || kind == R::mean || kind == R::var;
  const bool counts = kind == R::sum && (math_integer(x.dtype) || x.dtype == DType::boolean);  // into i64
  const DType out_t = kind == R::argmax || kind == R::argmin || counts ? DType::i64 : x.dtype;
  const Dims out = axes_ok ? xylem_ref::reduced_dims(x.dims, axes, r.keepdim) : Dims{};
  const bool dtype_ok = xylem::is_floating(x.dtype) || counts ||
                        (math_integer(x.dtype) && kind != R::mean && kind != R::var);
  const bool inputs_ok = axes_ok && dtype_ok && (count > 0 || has_identity);
  const Arg o = make_out(c.backend, c.p, maybe_wrong(c.p, out_t), maybe_wrong(c.p, out), {&x});
  const bool valid = inputs_ok && o.dims == out && o.dtype == out_t;
  std::string axes_text;
  for (int a : r.axes) axes_text += std::to_string(a) + " ";
  run(names[which],
      std::string(names[which]) + " axes {" + axes_text + "} keepdim " + std::to_string(r.keepdim) + " correction " +
          std::to_string(correction) + " x " + x.describe() + " -> " + o.describe(),
      valid, {&x}, &o,
      [&] {
        Tensor w = o.view;
        switch (kind) {
          case R::sum: xylem::sum(c.backend, x.view, r, w); break;
          case R::mean: xylem::mean(c.backend, x.view, r, w); break;
          case R::max: xylem::max(c.backend, x.view, r, w); break;
          case R::min: xylem::min(c.backend, x.view, r, w); break;
          case R::argmax: xylem::argmax(c.backend, x.view, r, w); break;
          case R::argmin: xylem::argmin(c.backend, x.view, r, w); break;
          case R::var: xylem::var(c.backend, x.view, r, w, correction); break;
        }
      },
      [&] { return xylem_ref::reduce(kind, x.logical(), axes, correction); });
}

// fill into any view of any dtype.
inline void fuzz_fill(Ctx& c) {
  const DType t = c.p.from(kAllDTypes);
  Arg y = make_arg(c.backend, c.p, t, pick_dims(c.p, int(c.p.pick(5))), false);
  const double value = c.p.value(DType::f64) * double(1 + c.p.pick(64));
  run("fill", "fill " + std::to_string(value) + " into " + y.describe(), true, {}, &y,
      [&] { xylem::fill(c.backend, y.view, value); },
      [&] {
        xylem_ref::Expect e;
        for (std::size_t k = 0; k < y.pos.size(); ++k) e.push(xylem_ref::cast_value(value, t), 0);
        return e;
      });
}

}  // namespace xylem_fuzz

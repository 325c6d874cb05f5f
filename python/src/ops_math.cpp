// xylem math: elementwise ops with broadcasting, clamp, where, reductions.
// Each op list below pairs a C++ function of math.hpp with its docstring;
// one helper per signature binds the whole list.
#include <nanobind/stl/vector.h>

#include "def_op.hpp"

namespace xylem::python {
namespace {

#define XYLEM_PY_UNARY(X)                                    \
  X(exp, "e^x, elementwise.")                                \
  X(log, "The natural logarithm (NaN below 0, -inf at 0).") \
  X(sqrt, "sqrt(x), elementwise (NaN below 0).")            \
  X(rsqrt, "1/sqrt(x), elementwise (inf at 0).")            \
  X(abs, "|x|, elementwise.")                               \
  X(neg, "-x, elementwise.")                                \
  X(sin, "sin x (radians), elementwise.")                   \
  X(cos, "cos x (radians), elementwise.")

#define XYLEM_PY_BINARY(X)                                                        \
  X(add, "x + y, broadcasting as NumPy; x and y of one float dtype.")             \
  X(sub, "x - y, broadcasting.")                                                  \
  X(mul, "x * y, broadcasting.")                                                  \
  X(div, "x / y, broadcasting; IEEE division.")                                   \
  X(pow, "x ** y, broadcasting; follows std::pow.")                               \
  X(maximum, "The larger of x and y, broadcasting; NaN in either gives NaN.")    \
  X(minimum, "The smaller of x and y, broadcasting; NaN in either gives NaN.")   \
  X(eq, "x == y, broadcasting: a bool tensor (NaN equals nothing).")              \
  X(ne, "x != y, broadcasting: a bool tensor (true where either is NaN).")        \
  X(lt, "x < y, broadcasting: a bool tensor.")                                    \
  X(le, "x <= y, broadcasting: a bool tensor.")                                   \
  X(gt, "x > y, broadcasting: a bool tensor.")                                    \
  X(ge, "x >= y, broadcasting: a bool tensor.")

#define XYLEM_PY_REDUCE(X)                                                                        \
  X(sum, "The sum along `axis` (None: all; negative counts from the end), 0 over nothing.")       \
  X(mean, "The mean along `axis` (NaN over nothing).")                                            \
  X(max, "The maximum along `axis` (NaN if any is NaN); an axis of size 0 raises InvalidArgument.") \
  X(min, "The minimum along `axis` (NaN if any is NaN).")                                         \
  X(argmax, "The i64 index of the first maximum along `axis` (the axes taken together, row-major).") \
  X(argmin, "The i64 index of the first minimum along `axis`.")

constexpr const char* kOutDoc =
    " With `out` (the result's shape and dtype; may be an input or a view), written there and returned.";

// axis: an int or a sequence of ints (not None).
std::vector<int> axes_of(nb::handle axis) {
  std::vector<int> axes;
  if (PyLong_Check(axis.ptr())) {
    axes.push_back(nb::cast<int>(axis));
  } else {
    for (nb::handle a : axis) axes.push_back(nb::cast<int>(a));
  }
  return axes;
}

// axis: None, an int or a sequence of ints.
Reduction reduction(nb::handle axis, bool keepdims) {
  Reduction r;
  r.keepdim = keepdims;
  if (!axis.is_none()) r.axes = axes_of(axis);
  return r;
}

using UnaryNew = Tensor (*)(const Backend&, const Tensor&);
using UnaryOut = void (*)(const Backend&, const Tensor&, Tensor&);
using BinaryNew = Tensor (*)(const Backend&, const Tensor&, const Tensor&);
using BinaryOut = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);
using ReduceNew = Tensor (*)(const Backend&, const Tensor&, const Reduction&);
using ReduceOut = void (*)(const Backend&, const Tensor&, const Reduction&, Tensor&);

void def_reduce(nb::module_& m, const char* name, ReduceNew make, ReduceOut into, const char* doc) {
  m.def(
      name,
      [make, into](const Tensor& x, nb::handle axis, bool keepdims, std::optional<Tensor> out,
                   std::optional<Backend> b) {
        const Reduction r = reduction(axis, keepdims);
        nb::gil_scoped_release unlocked;
        if (!out) return make(resolve(b), x, r);
        into(resolve(b), x, r, *out);
        return *out;
      },
      "x"_a, "axis"_a = nb::none(), "keepdims"_a = false, nb::kw_only(), "out"_a = nb::none(),
      "backend"_a = nb::none(),
      (std::string(doc) + " keepdims keeps the reduced axes as size 1." + kOutDoc).c_str());
}

// Views that only drop or add axes of size 1 (their strides never matter),
// so any view has them without a copy.
Tensor squeezed(const Tensor& t, nb::handle axis) {
  const Layout& v = t.layout();
  std::vector<bool> drop(std::size_t(v.rank()), false);
  if (axis.is_none()) {
    for (int a = 0; a < v.rank(); ++a) drop[std::size_t(a)] = v.dims()[std::size_t(a)] == 1;
  } else {
    for (int a : axes_of(axis)) {
      const int at = a < 0 ? a + v.rank() : a;
      if (at < 0 || at >= v.rank())
        throw Error(ErrorCode::invalid_argument, "squeeze: axis " + std::to_string(a) + " of a tensor of rank " +
                                                     std::to_string(v.rank()));
      if (v.dims()[std::size_t(at)] != 1)
        throw Error(ErrorCode::invalid_argument, "squeeze: axis " + std::to_string(a) + " of " + v.dims_string() +
                                                     " has size " + std::to_string(v.dims()[std::size_t(at)]) +
                                                     ", not 1");
      drop[std::size_t(at)] = true;
    }
  }
  std::vector<std::int64_t> dims, strides;
  for (int a = 0; a < v.rank(); ++a) {
    if (drop[std::size_t(a)]) continue;
    dims.push_back(v.dims()[std::size_t(a)]);
    strides.push_back(v.strides()[std::size_t(a)]);
  }
  return t.as_strided(Layout::strided(dims, strides, v.offset()));
}

Tensor unsqueezed(const Tensor& t, int axis) {
  const Layout& v = t.layout();
  const int at = axis < 0 ? axis + v.rank() + 1 : axis;
  if (at < 0 || at > v.rank())
    throw Error(ErrorCode::invalid_argument, "unsqueeze: axis " + std::to_string(axis) + " of a tensor of rank " +
                                                 std::to_string(v.rank()) + " (from " + std::to_string(-v.rank() - 1) +
                                                 " to " + std::to_string(v.rank()) + ")");
  std::vector<std::int64_t> dims(v.dims().begin(), v.dims().end()), strides(v.strides().begin(), v.strides().end());
  dims.insert(dims.begin() + at, 1);
  strides.insert(strides.begin() + at, 1);
  return t.as_strided(Layout::strided(dims, strides, v.offset()));
}

}  // namespace

// The math above as Tensor methods, on the default backend, as NumPy's and
// PyTorch's arrays have them: t.sum(), t.max(axis=0), t.exp(), t.clamp(0, 1).
void bind_math_methods(nb::class_<Tensor>& cls) {
#define XYLEM_PY_METHOD_UNARY(fn, doc)                                                  \
  cls.def(                                                                              \
      #fn, [](const Tensor& x) { return xylem::fn(resolve(std::nullopt), x); }, release_gil(), \
      "xylem." #fn "(self): " doc);
  XYLEM_PY_UNARY(XYLEM_PY_METHOD_UNARY)
#undef XYLEM_PY_METHOD_UNARY
#define XYLEM_PY_METHOD_REDUCE(fn, doc)                                                          \
  cls.def(                                                                                       \
      #fn,                                                                                       \
      [](const Tensor& x, nb::handle axis, bool keepdims) {                                      \
        const Reduction r = reduction(axis, keepdims);                                           \
        nb::gil_scoped_release unlocked;                                                         \
        return static_cast<ReduceNew>(&xylem::fn)(resolve(std::nullopt), x, r);                  \
      },                                                                                         \
      "axis"_a = nb::none(), "keepdims"_a = false, "xylem." #fn "(self, axis, keepdims): " doc);
  XYLEM_PY_REDUCE(XYLEM_PY_METHOD_REDUCE)
#undef XYLEM_PY_METHOD_REDUCE
  cls.def(
         "var",
         [](const Tensor& x, nb::handle axis, bool keepdims, int correction) {
           const Reduction r = reduction(axis, keepdims);
           nb::gil_scoped_release unlocked;
           return var(resolve(std::nullopt), x, r, correction);
         },
         "axis"_a = nb::none(), "keepdims"_a = false, "correction"_a = 1,
         "xylem.var(self, axis, keepdims, correction): the variance along `axis` (correction 1: unbiased).")
      .def(
          "clamp", [](const Tensor& x, double low, double high) { return clamp(resolve(std::nullopt), x, low, high); },
          "low"_a, "high"_a, release_gil(), "xylem.clamp(self, low, high): min(max(x, low), high), elementwise.")
      .def("squeeze", &squeezed, "axis"_a = nb::none(),
           "The axes of size 1 dropped (all, or the ones `axis` names: an int or a sequence). A view.")
      .def("unsqueeze", &unsqueezed, "axis"_a,
           "An axis of size 1 inserted before `axis` (negative counts from the end, -1 appends). A view.")
      .def(
          "flatten",
          [](const Tensor& x) {
            const std::int64_t all[] = {x.numel()};
            if (x.layout().is_contiguous()) return x.reshape(all);
            nb::gil_scoped_release unlocked;
            return contiguous(resolve(std::nullopt), x).reshape(all);
          },
          "The elements in row-major order as one axis: a view where the layout allows, else a copy.");
}

void bind_math(nb::module_& m) {
#define XYLEM_PY_DEF_UNARY(fn, doc)                                                                   \
  def_with_out(m, #fn, static_cast<UnaryNew>(&xylem::fn), static_cast<UnaryOut>(&xylem::fn),            \
               std::string(doc) + kOutDoc, "x"_a);
  XYLEM_PY_UNARY(XYLEM_PY_DEF_UNARY)
#undef XYLEM_PY_DEF_UNARY
#define XYLEM_PY_DEF_BINARY(fn, doc)                                                                  \
  def_with_out(m, #fn, static_cast<BinaryNew>(&xylem::fn), static_cast<BinaryOut>(&xylem::fn),          \
               std::string(doc) + kOutDoc, "x"_a, "y"_a);
  XYLEM_PY_BINARY(XYLEM_PY_DEF_BINARY)
#undef XYLEM_PY_DEF_BINARY
#define XYLEM_PY_DEF_REDUCE(fn, doc) \
  def_reduce(m, #fn, static_cast<ReduceNew>(&xylem::fn), static_cast<ReduceOut>(&xylem::fn), doc);
  XYLEM_PY_REDUCE(XYLEM_PY_DEF_REDUCE)
#undef XYLEM_PY_DEF_REDUCE

  m.def(
      "var",
      [](const Tensor& x, nb::handle axis, bool keepdims, int correction, std::optional<Tensor> out,
         std::optional<Backend> b) {
        const Reduction r = reduction(axis, keepdims);
        nb::gil_scoped_release unlocked;
        if (!out) return var(resolve(b), x, r, correction);
        var(resolve(b), x, r, *out, correction);
        return *out;
      },
      "x"_a, "axis"_a = nb::none(), "keepdims"_a = false, "correction"_a = 1, nb::kw_only(), "out"_a = nb::none(),
      "backend"_a = nb::none(),
      "The variance along `axis`: sum((x - mean)^2) / (n - correction); correction 1 is unbiased, 0 biased. As "
      "sum otherwise.");
  m.def(
      "clamp",
      [](const Tensor& x, double low, double high, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return clamp(resolve(b), x, low, high);
        clamp(resolve(b), x, low, high, *out);
        return *out;
      },
      "x"_a, "low"_a, "high"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "min(max(x, low), high), elementwise; NaN stays NaN; low > high raises InvalidArgument.");
  m.def(
      "where",
      [](const Tensor& cond, const Tensor& x, const Tensor& y, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return where(resolve(b), cond, x, y);
        where(resolve(b), cond, x, y, *out);
        return *out;
      },
      "cond"_a, "x"_a, "y"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "cond ? x : y, broadcasting all three; cond is bool, x and y of one float dtype.");
  m.def(
      "broadcast_shape",
      [](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
        const Layout s = broadcast_shape(Layout(a), Layout(b));
        return std::vector<std::int64_t>(s.dims().begin(), s.dims().end());
      },
      "a"_a, "b"_a, "The shape a and b broadcast to (NumPy's rules); raises ShapeMismatch where they do not.");
}

}  // namespace xylem::python

// xylem.Tensor: shape, dtype, strides, views and indexing, host reads,
// printing, and the Python operators (on the default backend).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <sstream>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "future.hpp"

namespace xylem::python {

nb::tuple as_tuple(std::span<const std::int64_t> values) {
  nb::list list;
  for (const std::int64_t v : values) list.append(v);
  return nb::tuple(list);
}

namespace {

std::vector<std::int64_t> int_list(nb::handle seq) {
  std::vector<std::int64_t> values;
  for (nb::handle item : seq) values.push_back(nb::cast<std::int64_t>(item));
  return values;
}

// reshape(2, 3) and reshape((2, 3)) alike.
std::vector<std::int64_t> dims_from_args(const nb::args& args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return int_list(args[0]);
  return int_list(args);
}

// t[key]: integers, slices (any step), None and Ellipsis, as NumPy's basic
// indexing; a view of the same data.
Tensor index(const Tensor& t, nb::handle key) {
  nb::tuple keys = nb::isinstance<nb::tuple>(key) ? nb::borrow<nb::tuple>(key) : nb::make_tuple(key);
  const Layout& from = t.layout();
  int consuming = 0;  // keys that take an axis
  for (nb::handle k : keys) consuming += !(k.is_none() || k.ptr() == Py_Ellipsis);
  if (consuming > from.rank()) throw nb::index_error("too many indices for the tensor");
  std::vector<std::int64_t> dims, strides;
  std::int64_t offset = from.offset();
  int axis = 0;
  bool ellipsis = false;
  for (nb::handle k : keys) {
    if (k.is_none()) {
      dims.push_back(1);
      strides.push_back(0);
    } else if (k.ptr() == Py_Ellipsis) {
      if (ellipsis) throw nb::index_error("an index can only have a single ellipsis ('...')");
      ellipsis = true;
      for (const int end = axis + from.rank() - consuming; axis < end; ++axis) {
        dims.push_back(from.dim(axis));
        strides.push_back(from.stride(axis));
      }
    } else if (PySlice_Check(k.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(k.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      const Py_ssize_t n = PySlice_AdjustIndices(static_cast<Py_ssize_t>(from.dim(axis)), &start, &stop, step);
      dims.push_back(n);
      strides.push_back(step * from.stride(axis));
      if (n > 0) offset += start * from.stride(axis);
      ++axis;
    } else {
      std::int64_t i = nb::cast<std::int64_t>(k);
      const std::int64_t n = from.dim(axis);
      if (i < -n || i >= n) {
        throw nb::index_error(("index " + std::to_string(i) + " is out of bounds for axis " + std::to_string(axis) +
                               " with size " + std::to_string(n))
                                  .c_str());
      }
      offset += (i < 0 ? i + n : i) * from.stride(axis);
      ++axis;
    }
  }
  for (; axis < from.rank(); ++axis) {
    dims.push_back(from.dim(axis));
    strides.push_back(from.stride(axis));
  }
  return t.as_strided(Layout::strided(dims, strides, offset));
}

bool is_integer(DType d) { return d == DType::i32 || d == DType::i64; }

// The other operand of an operator: a tensor, a number (a rank-0 tensor of
// x's dtype) or anything NumPy takes (converted to x's dtype). A Python int
// beyond 2^53 (which a double cannot hold) goes through NumPy, exactly.
Tensor operand(nb::handle other, const Tensor& x, const Backend& b) {
  if (nb::isinstance<Tensor>(other)) return nb::cast<Tensor>(other);
  if (PyLong_Check(other.ptr()) && is_integer(x.dtype())) {
    const auto v = nb::cast<std::int64_t>(other);  // OverflowError beyond i64
    if (x.dtype() == DType::i32 && (v < INT32_MIN || v > INT32_MAX))
      throw Error(ErrorCode::invalid_argument,
                  "Python int " + std::to_string(v) + " is out of bounds for an i32 tensor (as NumPy)");
    if (v < -(std::int64_t{1} << 53) || v > (std::int64_t{1} << 53)) return from_python(other, x.dtype());
  }
  if (PyFloat_Check(other.ptr()) || PyLong_Check(other.ptr())) {
    return full(b, Layout{}, x.dtype(), nb::cast<double>(other));
  }
  return from_python(other, x.dtype());
}

// Both operands of `x op other` as the op computes them. NumPy's promotion
// for an integer x: true division and a Python float give f64 (the integer
// operands cast to f64, as NumPy's int32 / 2 and int64 * 0.5 are float64);
// a Python int keeps x's dtype.
std::pair<Tensor, Tensor> operands(const Tensor& x, nb::handle other, const Backend& b, bool true_division) {
  if (is_integer(x.dtype()) && (true_division || PyFloat_Check(other.ptr()))) {
    Tensor wide = cast(b, x, DType::f64);
    Tensor y = operand(other, wide, b);
    if (is_integer(y.dtype())) y = cast(b, y, DType::f64);
    return {wide, y};
  }
  return {x, operand(other, x, b)};
}

using BinaryNew = Tensor (*)(const Backend&, const Tensor&, const Tensor&);
using BinaryOut = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);

// The Python operators and the xylem functions behind them.
#define XYLEM_PY_OPERATORS(X)                                               \
  X(add, "__add__", "__radd__", "__iadd__")                                 \
  X(sub, "__sub__", "__rsub__", "__isub__")                                 \
  X(mul, "__mul__", "__rmul__", "__imul__")                                 \
  X(div, "__truediv__", "__rtruediv__", "__itruediv__")                     \
  X(pow, "__pow__", "__rpow__", "__ipow__")
#define XYLEM_PY_COMPARISONS(X) \
  X(eq, "__eq__") X(ne, "__ne__") X(lt, "__lt__") X(le, "__le__") X(gt, "__gt__") X(ge, "__ge__")

// self op other, or other op self (the reflected operators).
template <BinaryNew F, bool Reflected = false>
Tensor forward(const Tensor& x, nb::handle other) {
  const Backend b = resolve(std::nullopt);
  auto [a, y] = operands(x, other, b, F == static_cast<BinaryNew>(&xylem::div));
  nb::gil_scoped_release unlocked;
  return Reflected ? F(b, y, a) : F(b, a, y);
}
// In place, the result keeps x's dtype: an integer x with a Python float
// raises (NumPy's UFuncTypeError), and /= on it raises DTypeMismatch (div).
template <BinaryOut F>
Tensor& in_place(Tensor& x, nb::handle other) {
  const Backend b = resolve(std::nullopt);
  if (is_integer(x.dtype()) && PyFloat_Check(other.ptr()))
    throw Error(ErrorCode::dtype_mismatch, "an in-place operator on an " + std::string(name(x.dtype())) +
                                               " tensor with a Python float: the f64 result cannot be stored in " +
                                               std::string(name(x.dtype())) + " (as NumPy)");
  Tensor y = operand(other, x, b);
  nb::gil_scoped_release unlocked;
  F(b, x, y, x);
  return x;
}

std::string printed(const Tensor& t) {
  std::ostringstream os;
  nb::gil_scoped_release unlocked;
  os << t;
  return os.str();
}

void bind_operators(nb::class_<Tensor>& cls) {
#define XYLEM_PY_OPERATOR(fn, op, rop, iop)                                                                  \
  cls.def(op, &forward<static_cast<BinaryNew>(&xylem::fn)>, "other"_a, "self " #fn " other, broadcasting.") \
      .def(rop, &forward<static_cast<BinaryNew>(&xylem::fn), true>, "other"_a, "other " #fn " self.")         \
      .def(iop, &in_place<static_cast<BinaryOut>(&xylem::fn)>, "other"_a, nb::rv_policy::reference,       \
           "self = self " #fn " other, in place (other broadcasts to self's shape).");
  XYLEM_PY_OPERATORS(XYLEM_PY_OPERATOR)
#undef XYLEM_PY_OPERATOR
#define XYLEM_PY_COMPARISON(fn, op) \
  cls.def(op, &forward<static_cast<BinaryNew>(&xylem::fn)>, "other"_a, "A boolean tensor: self " #fn " other.");
  XYLEM_PY_COMPARISONS(XYLEM_PY_COMPARISON)
#undef XYLEM_PY_COMPARISON
  // Elementwise == makes tensors unhashable, as NumPy arrays are.
  cls.attr("__hash__") = nb::none();
  // NumPy defers to the reflected operators above (ndarray + tensor is a tensor).
  cls.attr("__array_ufunc__") = nb::none();
  cls.def(
         "__matmul__", [](const Tensor& x, const Tensor& y) { return blas::matmul(resolve(std::nullopt), x, y); },
         "other"_a, release_gil(), "Matrix product (see xylem.matmul).")
      .def(
          "__neg__", [](const Tensor& x) { return neg(resolve(std::nullopt), x); }, release_gil(), "-self.")
      .def(
          "__abs__", [](const Tensor& x) { return abs(resolve(std::nullopt), x); }, release_gil(), "|self|.")
      .def(
          "__pos__", [](const Tensor& x) { return x; }, "self.");
}

void bind_views(nb::class_<Tensor>& cls) {
  cls.def(
         "reshape", [](const Tensor& t, const nb::args& args) { return t.reshape(dims_from_args(args)); },
         "The same elements with new dimensions (one may be -1): t.reshape(2, 3) or t.reshape((2, 3)). A view.")
      .def("slice", &Tensor::slice, "axis"_a, "begin"_a, "end"_a, "step"_a = 1,
           "Elements begin, begin+step, ... before end along axis (step > 0). A view.")
      .def("transpose", &Tensor::transpose, "a"_a = 0, "b"_a = 1, "Axes a and b swapped. A view.")
      .def(
          "permute",
          [](const Tensor& t, const nb::args& args) {
            std::vector<int> order;
            for (const std::int64_t a : dims_from_args(args)) order.push_back(static_cast<int>(a));
            return t.as_strided(t.layout().permute(order));
          },
          "The axes in the given order: result axis i is axis order[i]. A view.")
      .def_prop_ro(
          "T",
          [](const Tensor& t) {
            std::vector<int> order;
            for (int a = t.rank() - 1; a >= 0; --a) order.push_back(a);
            return t.as_strided(t.layout().permute(order));
          },
          "The axes reversed (a matrix transposed). A view.")
      .def(
          "as_strided",
          [](const Tensor& t, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides,
             std::int64_t offset) { return t.as_strided(Layout::strided(shape, strides, offset)); },
          "shape"_a, "strides"_a, "offset"_a = 0,
          "Any view of the same data (strides and offset in elements); raises InvalidArgument outside the storage.")
      .def("__getitem__", &index, "key"_a, "A view: integers, slices (any step), None and ... as NumPy's.")
      .def(
          "__setitem__",
          [](Tensor& t, nb::handle key, nb::handle value) {
            Tensor view = index(t, key);
            const Backend b = resolve(std::nullopt);
            if (PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr())) {
              const double v = nb::cast<double>(value);
              nb::gil_scoped_release unlocked;
              fill(b, view, v);
              return;
            }
            Tensor source = nb::isinstance<Tensor>(value) ? nb::cast<Tensor>(value) : from_python(value, t.dtype());
            nb::gil_scoped_release unlocked;
            cast(b, source, view);
          },
          "key"_a, "value"_a,
          "Writes a number, or a tensor or array of the selected view's shape, into t[key] (on the default backend).")
      .def("shares_data_with", &Tensor::shares_data_with, "other"_a, "True when both are views of the same storage.");
}

nb::object item(const Tensor& t) {
  if (t.numel() != 1) {
    throw Error(ErrorCode::invalid_argument,
                "item: the tensor has " + std::to_string(t.numel()) + " elements, not 1");
  }
  return to_numpy(t).attr("reshape")(-1)[0].attr("item")();
}

void bind_reads(nb::class_<Tensor>& cls) {
  cls.def("numpy", &host_view,
          "The elements as a NumPy array sharing the tensor's host copy (no copy on native): waits for xylem's "
          "work on the tensor, and counts the host copy as written (docs/PYTHON.md has the rule).")
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle copy) {
            nb::object a = host_view(t);
            const bool same = dtype.is_none() || a.attr("dtype").equal(nb::module_::import_("numpy").attr("dtype")(dtype));
            if (!copy.is_none() && !nb::cast<bool>(copy) && !same) {
              throw nb::value_error("np.asarray(t, dtype, copy=False): converting the dtype copies");
            }
            if (!same) return a.attr("astype")(dtype);
            if (!copy.is_none() && nb::cast<bool>(copy)) return a.attr("copy")();
            return a;
          },
          "dtype"_a = nb::none(), "copy"_a = nb::none(),
          "np.asarray(t): t.numpy(), converted or copied when asked.")
      .def(
          "read",
          [](const Tensor& t) {
            Future<std::vector<unsigned char>> bytes;
            {
              nb::gil_scoped_release unlocked;
              bytes = t.read_bytes();
            }
            return PyFuture(std::move(bytes), [shape = Layout(t.shape()), dtype = t.dtype()](
                                                  const std::vector<unsigned char>& b) {
              return bytes_to_numpy(b, shape, dtype);
            });
          },
          "A Future of t.numpy(): enqueues the read and returns at once.")
      .def(
          "tolist", [](const Tensor& t) { return to_numpy(t).attr("tolist")(); }, "The elements as nested lists.")
      .def("item", &item, "The one element as a Python number.")
      .def(
          "__float__", [](const Tensor& t) { return nb::cast<double>(item(t)); }, "float(t) of one element.")
      .def(
          "__bool__", [](const Tensor& t) { return nb::cast<bool>(item(t)); },
          "bool(t) of one element (more are ambiguous, as in NumPy).")
      .def("__str__", &printed, "The elements (waiting for them), shape and strides.")
      .def(
          "__repr__", [](const Tensor& t) { return "xylem.Tensor(" + printed(t) + ", dtype=" + std::string(name(t.dtype())) + ")"; },
          "The elements, shape, strides and dtype.");
}

}  // namespace

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor> cls(m, "Tensor",
                         "n-dimensional data of one dtype, kept coherent across the devices that used it. "
                         "Allocates on a device at first use there; views share the data.");
  cls.def(
         "__init__",
         [](Tensor* t, const std::vector<std::int64_t>& shape, DType dtype) { new (t) Tensor(Layout(shape), dtype); },
         "shape"_a, "dtype"_a = DType::f32,
         "A tensor of `shape` and `dtype`; allocates nothing and holds nothing until first written.")
      .def_prop_ro("shape", [](const Tensor& t) { return as_tuple(t.shape()); }, "The dimensions.")
      .def_prop_ro("strides", [](const Tensor& t) { return as_tuple(t.layout().strides()); },
                   "The strides, in elements (not bytes, unlike NumPy).")
      .def_prop_ro("offset", [](const Tensor& t) { return t.layout().offset(); },
                   "The first element's place in the storage, in elements.")
      .def_prop_ro("dtype", &Tensor::dtype, "The element type.")
      .def_prop_ro("ndim", &Tensor::rank, "The number of dimensions.")
      .def_prop_ro("size", &Tensor::numel, "The number of elements.")
      .def_prop_ro("is_contiguous", [](const Tensor& t) { return t.layout().is_contiguous(); },
                   "Row-major and dense.")
      .def_prop_ro("version", &Tensor::version, "Bumps at every write; 0: never written.")
      .def_prop_ro("transfers", &Tensor::transfers, "Transfers of this tensor's data between devices so far.")
      .def_prop_ro("transfer_routes", &Tensor::transfer_routes, "The same, by route (a TransferRoutes).")
      .def("is_current_on", &Tensor::is_current_on, "backend"_a, "Its copy on `backend`'s device is up to date.")
      .def("is_allocated_on", &Tensor::is_allocated_on, "backend"_a, "It has memory on `backend`'s device.")
      .def(
          "to", [](const Tensor& t, const Backend& b) { return contiguous(b, t); }, "backend"_a, release_gil(),
          "A contiguous copy on `backend`'s device (the data moves there now).")
      .def(
          "astype",
          [](const Tensor& t, DType to, std::optional<Backend> b) { return cast(resolve(b), t, to); }, "dtype"_a,
          nb::kw_only(), "backend"_a = nb::none(), release_gil(), "A copy converted to `dtype` (see xylem.cast).")
      .def(
          "__len__",
          [](const Tensor& t) {
            if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
            return t.shape()[0];
          },
          "The first dimension.");
  bind_views(cls);
  bind_math_methods(cls);
  bind_reads(cls);
  bind_operators(cls);
  bind_dlpack(m, cls);
  m.def("matmul", [](const Tensor& x, const Tensor& y, std::optional<Backend> b) { return blas::matmul(resolve(b), x, y); },
        "x"_a, "y"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
        "x @ y as NumPy's matmul: dot for two vectors, gemv for a matrix and a vector, gemm for matrices, batched "
        "gemm for stacks of matrices whose batch axes broadcast.");
}

}  // namespace xylem::python

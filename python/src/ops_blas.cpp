// xylem.blas: levels 1 to 3. The reductions return a Future (or write a
// one-element tensor given as `out`).
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "future.hpp"

namespace xylem::python {
namespace {

using blas::Transpose;

Transpose transpose(bool t) { return t ? Transpose::yes : Transpose::no; }

template <class T>
nb::object to_python(const T& value) {
  return nb::cast(value);
}

using VectorFuture = Future<double> (*)(const Backend&, const Tensor&);
using VectorInto = void (*)(const Backend&, const Tensor&, Tensor&);

#define XYLEM_PY_BLAS_REDUCE(X)                               \
  X(asum, "sum_i |x_i|")                                      \
  X(nrm2, "sqrt(sum_i x_i^2)")

void def_vector_reduce(nb::module_& m, const char* name, VectorFuture make, VectorInto into, const char* what) {
  m.def(
      name,
      [make, into](const Tensor& x, std::optional<Tensor> out, std::optional<Backend> b) -> std::optional<PyFuture> {
        if (!out) return PyFuture(make(resolve(b), x), &to_python<double>);
        into(resolve(b), x, *out);
        return std::nullopt;
      },
      "x"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      (std::string(what) + " of a vector, as a Future (result() waits); with `out` (one element of x's dtype) "
                           "written there instead, returning None.")
          .c_str());
}

using IndexFuture = Future<std::int64_t> (*)(const Backend&, const Tensor&);

// iamax and iamin: `extreme` is "max" or "min".
void def_index(nb::module_& m, const char* name, IndexFuture make, VectorInto into, const char* extreme) {
  m.def(
      name,
      [make, into](const Tensor& x, std::optional<Tensor> out, std::optional<Backend> b) -> std::optional<PyFuture> {
        if (!out) return PyFuture(make(resolve(b), x), &to_python<std::int64_t>);
        into(resolve(b), x, *out);
        return std::nullopt;
      },
      "x"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      (std::string("The 0-based index of the first ") + extreme +
       " |x_i| (a NaN wins), as a Future; with `out` (one i64 element) written there. An empty x raises "
       "InvalidArgument.")
          .c_str());
}

}  // namespace

void bind_blas_extra(nb::module_& m);

void bind_blas(nb::module_& m) {
#define XYLEM_PY_DEF_BLAS_REDUCE(fn, what)                                                                \
  def_vector_reduce(m, #fn, static_cast<VectorFuture>(&blas::fn), static_cast<VectorInto>(&blas::fn), what);
  XYLEM_PY_BLAS_REDUCE(XYLEM_PY_DEF_BLAS_REDUCE)
#undef XYLEM_PY_DEF_BLAS_REDUCE
  m.def(
      "dot",
      [](const Tensor& x, const Tensor& y, std::optional<Tensor> out,
         std::optional<Backend> b) -> std::optional<PyFuture> {
        if (!out) return PyFuture(blas::dot(resolve(b), x, y), &to_python<double>);
        blas::dot(resolve(b), x, y, *out);
        return std::nullopt;
      },
      "x"_a, "y"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "sum_i x_i y_i of two vectors of one size and dtype, as a Future; with `out`, written there.");
  def_index(m, "iamax", &blas::iamax, &blas::iamax, "max");
  m.def(
      "axpy", [](double alpha, const Tensor& x, Tensor& y, std::optional<Backend> b) { blas::axpy(resolve(b), alpha, x, y); },
      "alpha"_a, "x"_a, "y"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "y += alpha x, in place; x and y of one size and dtype.");
  m.def(
      "copy", [](const Tensor& x, Tensor& y, std::optional<Backend> b) { blas::copy(resolve(b), x, y); }, "x"_a, "y"_a,
      nb::kw_only(), "backend"_a = nb::none(), release_gil(), "y = x; x and y of one size and dtype.");
  m.def(
      "scal", [](double alpha, Tensor& x, std::optional<Backend> b) { blas::scal(resolve(b), alpha, x); }, "alpha"_a,
      "x"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(), "x *= alpha, in place.");
  m.def(
      "swap", [](Tensor& x, Tensor& y, std::optional<Backend> b) { blas::swap(resolve(b), x, y); }, "x"_a, "y"_a,
      nb::kw_only(), "backend"_a = nb::none(), release_gil(), "Exchanges the elements of x and y.");
  m.def(
      "rot",
      [](Tensor& x, Tensor& y, double c, double s, std::optional<Backend> b) { blas::rot(resolve(b), x, y, c, s); },
      "x"_a, "y"_a, "c"_a, "s"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Plane rotation in place: (x, y) <- (c x + s y, c y - s x).");
  m.def(
      "gemv",
      [](const Tensor& a, const Tensor& x, std::optional<Tensor> y, double alpha, double beta, bool trans,
         std::optional<Backend> b) {
        const Backend backend = resolve(b);
        Tensor out = y ? *y : Tensor(Layout{a.rank() == 2 ? a.layout().dim(trans ? 1 : 0) : 0}, a.dtype());
        blas::gemv(backend, transpose(trans), alpha, a, x, y ? beta : 0.0, out);
        return out;
      },
      "a"_a, "x"_a, "y"_a = nb::none(), nb::kw_only(), "alpha"_a = 1.0, "beta"_a = 0.0, "trans"_a = false,
      "backend"_a = nb::none(), release_gil(),
      "y = alpha op(a) x + beta y (op(a) = a.T when trans), written into y and returned; without y, a new one "
      "(beta ignored). f32 and f64.");
  m.def(
      "gemm",
      [](const Tensor& a, const Tensor& bm, std::optional<Tensor> c, double alpha, double beta, bool trans_a,
         bool trans_b, std::optional<Backend> b) {
        const Backend backend = resolve(b);
        Tensor out;
        if (c) {
          out = *c;
        } else {
          const auto& la = a.layout();
          const auto& lb = bm.layout();
          const int r = la.rank();
          if (r < 2 || lb.rank() != r) {
            throw Error(ErrorCode::shape_mismatch,
                        "gemm: a " + la.dims_string() + " and b " + lb.dims_string() + " are not both rank 2 or 3");
          }
          const std::int64_t m_rows = trans_a ? la.dim(-1) : la.dim(-2);
          const std::int64_t n_cols = trans_b ? lb.dim(-2) : lb.dim(-1);
          out = r == 2 ? Tensor(Layout{m_rows, n_cols}, a.dtype())
                       : Tensor(Layout{std::max(la.dim(0), lb.dim(0)), m_rows, n_cols}, a.dtype());
        }
        blas::gemm(backend, transpose(trans_a), transpose(trans_b), alpha, a, bm, c ? beta : 0.0, out);
        return out;
      },
      "a"_a, "b"_a, "c"_a = nb::none(), nb::kw_only(), "alpha"_a = 1.0, "beta"_a = 0.0, "trans_a"_a = false,
      "trans_b"_a = false, "backend"_a = nb::none(), release_gil(),
      "c = alpha op(a) op(b) + beta c, written into c and returned; without c, a new one (beta ignored). Rank 3: "
      "batched (a batch of 1 serves every batch). f32, f64, f16, bf16.");
  bind_blas_extra(m);
}

void bind_blas_extra(nb::module_& m) {
  def_index(m, "iamin", &blas::iamin, &blas::iamin, "min");
  m.def(
      "ger",
      [](double alpha, const Tensor& x, const Tensor& y, Tensor& a, std::optional<Backend> b) {
        blas::ger(resolve(b), alpha, x, y, a);
      },
      "alpha"_a, "x"_a, "y"_a, "a"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "a += alpha x y^T, in place: a [m, n], x [m], y [n]. f32 and f64.");
  m.def(
      "syrk",
      [](const Tensor& a, Tensor& c, double alpha, double beta, bool lower, bool trans, std::optional<Backend> b) {
        blas::syrk(resolve(b), lower ? blas::Uplo::lower : blas::Uplo::upper, transpose(trans), alpha, a, beta, c);
      },
      "a"_a, "c"_a, nb::kw_only(), "alpha"_a = 1.0, "beta"_a = 0.0, "lower"_a = false, "trans"_a = false,
      "backend"_a = nb::none(), release_gil(),
      "c = alpha op(a) op(a)^T + beta c on c's upper triangle (lower: the lower one), in place; the other triangle "
      "is left as it was. op(a) = a.T when trans. f32 and f64.");
  m.def(
      "trsm",
      [](const Tensor& a, Tensor& bm, double alpha, bool left, bool lower, bool trans, bool unit_diagonal,
         std::optional<Backend> b) {
        blas::trsm(resolve(b), left ? blas::Side::left : blas::Side::right,
                   lower ? blas::Uplo::lower : blas::Uplo::upper, transpose(trans),
                   unit_diagonal ? blas::Diag::unit : blas::Diag::non_unit, alpha, a, bm);
      },
      "a"_a, "b"_a, nb::kw_only(), "alpha"_a = 1.0, "left"_a = true, "lower"_a = false, "trans"_a = false,
      "unit_diagonal"_a = false, "backend"_a = nb::none(), release_gil(),
      "Triangular solve in place: b becomes x with op(a) x = alpha b (left) or x op(a) = alpha b. Only a's upper "
      "(lower: lower) triangle is read; unit_diagonal takes its diagonal as ones. f32 and f64.");
  m.def(
      "geam",
      [](const Tensor& a, const Tensor& bm, std::optional<Tensor> c, double alpha, double beta, bool trans_a,
         bool trans_b, std::optional<Backend> b) {
        const Backend backend = resolve(b);
        Tensor out = c ? *c
                       : Tensor(Layout{a.rank() == 2 ? a.layout().dim(trans_a ? 1 : 0) : 0,
                                       a.rank() == 2 ? a.layout().dim(trans_a ? 0 : 1) : 0},
                                a.dtype());
        blas::geam(backend, transpose(trans_a), transpose(trans_b), alpha, a, beta, bm, out);
        return out;
      },
      "a"_a, "b"_a, "c"_a = nb::none(), nb::kw_only(), "alpha"_a = 1.0, "beta"_a = 1.0, "trans_a"_a = false,
      "trans_b"_a = false, "backend"_a = nb::none(), release_gil(),
      "c = alpha op(a) + beta op(b), written into c and returned; without c, a new one. A term whose scale is 0 is "
      "left out. f32 and f64.");
  m.def(
      "gemm_batched",
      [](const std::vector<Tensor>& a, const std::vector<Tensor>& bm, std::vector<Tensor> c, double alpha,
         double beta, bool trans_a, bool trans_b, std::optional<Backend> b) {
        blas::gemm_batched(resolve(b), transpose(trans_a), transpose(trans_b), alpha, a, bm, beta, c);
      },
      "a"_a, "b"_a, "c"_a, nb::kw_only(), "alpha"_a = 1.0, "beta"_a = 0.0, "trans_a"_a = false, "trans_b"_a = false,
      "backend"_a = nb::none(), release_gil(),
      "c[i] = alpha op(a[i]) op(b[i]) + beta c[i] for lists of matrices of one shape each, in place; every "
      "argument is checked before any c[i] changes.");
}

}  // namespace xylem::python

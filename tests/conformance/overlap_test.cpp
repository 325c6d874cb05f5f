// Outputs that share memory with inputs, on every framework. The rule is
// NumPy's: the result is as if every input were read before any output is
// written. Each case runs an op whose output is a view of the same storage as
// an input (the same elements, shifted, transposed, interleaved) and checks the
// whole storage against a float64 reference computed from the values it held
// before. Outputs that overlap each other, and output views naming an element
// twice, are invalid_argument with the data untouched.
#include <functional>
#include <iostream>

#include "conformance/conformance.hpp"
#include "xylem/blas.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::blas::Transpose;
using Values = std::vector<double>;

class Overlap : public Conformance {
 protected:
  // Random storage of n elements on the host (never zeros: [0.5, 1.5] with
  // random signs keeps products and quotients well away from cancellation).
  Tensor storage(DType dtype, std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    std::uniform_real_distribution<double> magnitude(0.5, 1.5);
    for (auto& e : v) e = round_to(dtype, rng() % 2 ? magnitude(rng) : -magnitude(rng));
    const auto bytes = encode(dtype, v);
    return Tensor::from_bytes(bytes.data(), bytes.size(), Layout{n}, dtype);
  }

  // Runs `op` on views of `base`, then checks every element of base
  // against `reference(before)` within `tolerance` (relative, per element,
  // plus `tolerance` absolute).
  void check(const Tensor& base, const std::function<void()>& op,
             const std::function<void(Values&)>& reference, double tolerance, const std::string& what) {
    SCOPED_TRACE(what);
    Values expect = base.to_doubles();
    reference(expect);
    try {
      op();
    } catch (const xylem::Error& e) {
      // A framework without the op says so (the mirror test plugin has no gemm).
      if (e.code() == ErrorCode::unsupported) {
        std::cout << "[ UNSUPPORTED ] " << target.spec() << ": " << what << "\n";
        return;
      }
      ADD_FAILURE() << "raised " << e.what();
      return;
    }
    const Values got = base.to_doubles();
    ASSERT_EQ(got.size(), expect.size());
    int wrong = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (std::abs(got[k] - expect[k]) <= tolerance * (1 + std::abs(expect[k]))) continue;
      if (++wrong <= 5) ADD_FAILURE() << "element " << k << ": " << got[k] << ", expected " << expect[k];
    }
    EXPECT_EQ(wrong, 0) << "elements wrong";
  }

  double elem(DType dtype) const { return 4 * tol(dtype).elem; }
};

// Row-major n x n matrix helpers over a flat vector.
double& at(Values& v, std::int64_t n, std::int64_t i, std::int64_t j) { return v[static_cast<std::size_t>(i * n + j)]; }

TEST_P(Overlap, binary_with_its_own_transpose) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (std::int64_t n : {3, 17, 64}) {
      Tensor base = storage(dtype, n * n);
      Tensor x = base.reshape({n, n});
      Tensor out = x;
      check(
          base, [&] { xylem::add(backend, x, x.transpose(), out); },
          [&](Values& v) {
            const Values old = v;
            for (std::int64_t i = 0; i < n; ++i)
              for (std::int64_t j = 0; j < n; ++j) v[i * n + j] = old[i * n + j] + old[j * n + i];
          },
          elem(dtype), "add(x, x^T, out = x), n = " + std::to_string(n));
      Tensor base2 = storage(dtype, n * n);
      Tensor y = base2.reshape({n, n});
      Tensor out_t = y.transpose();
      check(
          base2, [&] { xylem::sub(backend, y, y.transpose(), out_t); },
          [&](Values& v) {
            const Values old = v;
            // out_t[i, j] (= storage[j, i]) = y[i, j] - y[j, i]
            for (std::int64_t i = 0; i < n; ++i)
              for (std::int64_t j = 0; j < n; ++j) v[j * n + i] = old[i * n + j] - old[j * n + i];
          },
          elem(dtype), "sub(x, x^T, out = x^T), n = " + std::to_string(n));
    }
  }
}

TEST_P(Overlap, unary_into_own_transpose) {
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t n = 33;
    Tensor base = storage(dtype, n * n);
    Tensor x = base.reshape({n, n});
    Tensor out = x.transpose();
    check(
        base, [&] { xylem::neg(backend, x, out); },
        [&](Values& v) {
          const Values old = v;
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < n; ++j) at(v, n, j, i) = -old[i * n + j];
        },
        elem(dtype), "neg(x, out = x^T)");
  }
}

TEST_P(Overlap, shifted_slices) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (std::int64_t n : {2, 9, 1000, 100003}) {
      // op(head = x[:-1], tail = x[1:]) on fresh storage; reference(old, k)
      // is element k afterwards.
      auto shifted = [&](const std::function<void(Tensor&, Tensor&)>& op,
                         const std::function<double(const Values&, std::int64_t)>& reference, double tolerance,
                         const std::string& what) {
        Tensor base = storage(dtype, n);
        Tensor head = base.slice(0, 0, n - 1), tail = base.slice(0, 1, n);
        check(
            base, [&] { op(head, tail); },
            [&](Values& v) {
              const Values old = v;
              for (std::int64_t k = 0; k < n; ++k) v[k] = reference(old, k);
            },
            tolerance, what + ", n = " + std::to_string(n));
      };
      shifted([&](Tensor& head, Tensor& tail) { xylem::exp(backend, tail, head); },
              [&](const Values& old, std::int64_t k) { return k + 1 < n ? std::exp(old[k + 1]) : old[k]; },
              elem(dtype) * 4, "exp(x[1:], out = x[:-1])");
      shifted([&](Tensor& head, Tensor& tail) { xylem::mul(backend, head, tail, tail); },
              [](const Values& old, std::int64_t k) { return k > 0 ? old[k - 1] * old[k] : old[k]; }, elem(dtype),
              "mul(x[:-1], x[1:], out = x[1:])");
      shifted([&](Tensor& head, Tensor& tail) { xylem::blas::copy(backend, head, tail); },
              [](const Values& old, std::int64_t k) { return k > 0 ? old[k - 1] : old[k]; }, 0,
              "blas::copy(x[:-1], x[1:])");
      shifted([&](Tensor& head, Tensor& tail) { xylem::blas::copy(backend, tail, head); },
              [&](const Values& old, std::int64_t k) { return k + 1 < n ? old[k + 1] : old[k]; }, 0,
              "blas::copy(x[1:], x[:-1])");
      shifted([&](Tensor& head, Tensor& tail) { xylem::blas::axpy(backend, 0.5, head, tail); },
              [](const Values& old, std::int64_t k) { return k > 0 ? old[k] + 0.5 * old[k - 1] : old[k]; },
              elem(dtype), "blas::axpy(0.5, x[:-1], y = x[1:])");
    }
  }
}

TEST_P(Overlap, in_place_stays_in_place) {
  // The same elements in and out: elementwise kernels run in place, no copy.
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t n = 1000;
    Tensor base = storage(dtype, n);
    Tensor x = base;
    check(
        base, [&] { xylem::add(backend, x, x, x); },
        [&](Values& v) {
          for (auto& e : v) e = e + e;
        },
        elem(dtype), "add(x, x, out = x)");
    check(
        base, [&] { xylem::blas::axpy(backend, -0.25, x, x); },
        [&](Values& v) {
          for (auto& e : v) e = e - 0.25 * e;
        },
        elem(dtype), "axpy(-0.25, x, y = x)");
    Tensor strided = base.slice(0, 1, n, 3);
    check(
        base, [&] { xylem::neg(backend, strided, strided); },
        [&](Values& v) {
          for (std::int64_t k = 1; k < n; k += 3) v[k] = -v[k];
        },
        0, "neg(x[1::3], out = x[1::3])");
  }
}

TEST_P(Overlap, where_with_transpose) {
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t n = 19;
    Tensor base = storage(dtype, n * n);
    Tensor x = base.reshape({n, n});
    const Backend host = Backend::native();  // the condition is made anywhere
    Tensor cond = xylem::gt(host, x, xylem::zeros(host, Layout{n, n}, dtype));
    Tensor out = x;
    check(
        base, [&] { xylem::where(backend, cond, x.transpose(), x, out); },
        [&](Values& v) {
          const Values old = v;
          for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < n; ++j) at(v, n, i, j) = old[i * n + j] > 0 ? old[j * n + i] : old[i * n + j];
        },
        0, "where(x > 0, x^T, x, out = x)");
  }
}

// c = a * b, in float64.
Values matmul(const Values& a, const Values& b, std::int64_t m, std::int64_t k, std::int64_t n) {
  Values c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
  return c;
}

TEST_P(Overlap, gemm_into_an_operand) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (std::int64_t n : {5, 64, 129}) {
      const std::string size = ", n = " + std::to_string(n);
      const double tolerance = 8 * static_cast<double>(n) * tol(dtype).eps;
      Values identity(static_cast<std::size_t>(n * n), 0.0);
      for (std::int64_t i = 0; i < n; ++i) identity[i * n + i] = 1;
      Tensor eye = dtype == DType::f32 ? Tensor::from(std::vector<float>(identity.begin(), identity.end()), Layout{n, n})
                                       : Tensor::from(identity, Layout{n, n});
      Tensor base = storage(dtype, n * n);
      Tensor a = base.reshape({n, n});
      check(
          base, [&] { xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a, eye, 0, a); }, [](Values&) {},
          tolerance, "gemm(a, I) -> a" + size);
      check(
          base, [&] { xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, eye, a, 0, a); }, [](Values&) {},
          tolerance, "gemm(I, a) -> a" + size);
      check(
          base, [&] { xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a, a, 0, a); },
          [&](Values& v) { v = matmul(v, v, n, n, n); }, tolerance, "gemm(a, a) -> a" + size);
      check(
          base, [&] { xylem::blas::gemm(backend, Transpose::yes, Transpose::no, 0.5, a, eye, 2, a); },
          [&](Values& v) {
            const Values old = v;
            for (std::int64_t i = 0; i < n; ++i)
              for (std::int64_t j = 0; j < n; ++j) at(v, n, i, j) = 0.5 * old[j * n + i] + 2 * old[i * n + j];
          },
          tolerance, "gemm(0.5 a^T I + 2 a) -> a" + size);
    }
  }
}

TEST_P(Overlap, gemv_into_its_vector) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (std::int64_t n : {4, 100}) {
      const std::string size = ", n = " + std::to_string(n);
      const double tolerance = 8 * static_cast<double>(n) * tol(dtype).eps;
      // m is a separate tensor; v is both x and y.
      Tensor mbase = storage(dtype, n * n);
      Tensor m = mbase.reshape({n, n});
      const Values mv = mbase.to_doubles();
      Tensor v = storage(dtype, n);
      check(
          v, [&] { xylem::blas::gemv(backend, Transpose::no, 1, m, v, 0, v); },
          [&](Values& x) { x = matmul(mv, x, n, n, 1); }, tolerance, "gemv(m, v) -> v" + size);
      // x is the matrix's first column, y its first row: all one storage.
      Tensor base = storage(dtype, n * n);
      Tensor a = base.reshape({n, n});
      Tensor column = a.slice(1, 0, 1).reshape({n});
      Tensor row = a.slice(0, 0, 1).reshape({n});
      check(
          base, [&] { xylem::blas::gemv(backend, Transpose::yes, 1, a, column, 1, row); },
          [&](Values& x) {
            const Values old = x;
            for (std::int64_t j = 0; j < n; ++j) {
              double s = 0;
              for (std::int64_t i = 0; i < n; ++i) s += old[i * n + j] * old[i * n];
              x[j] = s + old[j];
            }
          },
          tolerance, "gemv(a^T, a[:, 0]) + a[0] -> a[0]" + size);
    }
  }
}

TEST_P(Overlap, row_ops_in_place) {
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t rows = 7, n = 300;
    Tensor base = storage(dtype, rows * n);
    Tensor x = base.reshape({rows, n});
    check(
        base, [&] { xylem::nn::softmax(backend, x, 1, x); },
        [&](Values& v) {
          for (std::int64_t r = 0; r < rows; ++r) {
            double mx = -INFINITY, s = 0;
            for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, v[r * n + j]);
            for (std::int64_t j = 0; j < n; ++j) s += std::exp(v[r * n + j] - mx);
            for (std::int64_t j = 0; j < n; ++j) v[r * n + j] = std::exp(v[r * n + j] - mx) / s;
          }
        },
        4 * tol(dtype).reduce, "softmax(x, out = x)");
    // Column sums into the first row of the same matrix.
    Tensor first_row = x.slice(0, 0, 1).reshape({n});
    check(
        base, [&] { xylem::sum(backend, x, xylem::Reduction{{0}}, first_row); },
        [&](Values& v) {
          for (std::int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (std::int64_t r = 0; r < rows; ++r) s += v[r * n + j];
            v[j] = s;
          }
        },
        4 * tol(dtype).reduce * rows, "sum(x, axis 0, out = x[0])");
  }
}

TEST_P(Overlap, outputs_that_overlap_are_refused) {
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t n = 50;
    Tensor base = storage(dtype, n);
    const auto before = xylem_test::snapshot(base);
    Tensor head = base.slice(0, 0, n - 1), tail = base.slice(0, 1, n);
    std::string message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::blas::swap(backend, head, tail));
    EXPECT_TRUE(xylem_test::contains(message, "share memory")) << message;
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::blas::rot(backend, head, tail, 0.6, 0.8));
    XY_EXPECT_UNCHANGED(base, before);

    // A view that names each element twice (stride 0) cannot be written.
    Tensor twice = base.as_strided(Layout::strided(std::vector<std::int64_t>{2, 5}, std::vector<std::int64_t>{0, 1}, 0));
    Tensor source = storage(dtype, 10).reshape({2, 5});
    message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::neg(backend, source, twice));
    EXPECT_TRUE(xylem_test::contains(message, "more than once")) << message;
    XY_EXPECT_UNCHANGED(base, before);
  }
}

TEST_P(Overlap, interleaved_views_need_no_copy_to_be_right) {
  // x[:, 0] and x[:, 1] share a storage but no element: written in turn.
  for (DType dtype : {DType::f32, DType::f64}) {
    const std::int64_t n = 257;
    Tensor base = storage(dtype, 2 * n);
    Tensor x = base.reshape({n, 2});
    Tensor even = x.slice(1, 0, 1).reshape({n}), odd = x.slice(1, 1, 2).reshape({n});
    check(
        base, [&] { xylem::exp(backend, even, odd); },
        [&](Values& v) {
          for (std::int64_t k = 0; k < n; ++k) v[2 * k + 1] = std::exp(v[2 * k]);
        },
        elem(dtype) * 4, "exp(x[:, 0], out = x[:, 1])");
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Overlap, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance

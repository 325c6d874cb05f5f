// Native BLAS: levels 1 and 3 through OpenBLAS's cblas, for f32 and f64
// (gemm for f16 and bf16 is in gemm_half.cpp).
//
// Vectors are rank-1 views with any stride. BLAS addresses a vector with a
// negative increment from its lowest address, so that is the pointer we
// pass; element i of the view is then the one BLAS calls element i. OpenBLAS
// indexes with `blasint` (32-bit in Debian's build): longer vectors are
// processed in pieces, and a stride beyond its range is refused.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/error.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr std::int64_t kBlasMax = std::numeric_limits<blasint>::max();

// The typed cblas entry points, so each kernel is written once.
template <class T>
struct Cblas;
template <>
struct Cblas<float> {
  static constexpr auto asum = &cblas_sasum;
  static constexpr auto axpy = &cblas_saxpy;
  static constexpr auto copy = &cblas_scopy;
  static constexpr auto dot = &cblas_sdot;
  static constexpr auto nrm2 = &cblas_snrm2;
  static constexpr auto scal = &cblas_sscal;
  static constexpr auto swap = &cblas_sswap;
  static constexpr auto iamax = &cblas_isamax;
  static constexpr auto gemm = &cblas_sgemm;
};
template <>
struct Cblas<double> {
  static constexpr auto asum = &cblas_dasum;
  static constexpr auto axpy = &cblas_daxpy;
  static constexpr auto copy = &cblas_dcopy;
  static constexpr auto dot = &cblas_ddot;
  static constexpr auto nrm2 = &cblas_dnrm2;
  static constexpr auto scal = &cblas_dscal;
  static constexpr auto swap = &cblas_dswap;
  static constexpr auto iamax = &cblas_idamax;
  static constexpr auto gemm = &cblas_dgemm;
};

[[noreturn]] void too_large(const char* op, std::int64_t value) {
  throw Error(ErrorCode::unsupported, std::string("blas::") + op + " on native: " + std::to_string(value) +
                                          " exceeds OpenBLAS's 32-bit index range");
}

blasint to_blasint(const char* op, std::int64_t value) {
  if (value > kBlasMax || value < -kBlasMax) too_large(op, value);
  return static_cast<blasint>(value);
}

// A vector as the view describes it: element i is first[i * stride].
template <class T>
struct Vec {
  T* first;
  std::int64_t n;
  std::int64_t stride;

  // The piece [begin, begin + len) as BLAS wants it: lowest address.
  [[nodiscard]] T* lowest(std::int64_t begin, std::int64_t len) const noexcept {
    T* p = first + begin * stride;
    return stride < 0 ? p + (len - 1) * stride : p;
  }
};

template <class T>
Vec<T> vec(const TensorArg& a) noexcept {
  const std::int64_t n = a.view.dims()[0];
  // A stride means nothing for fewer than two elements; 1 keeps BLAS happy.
  return {element_ptr<T>(a), n, n > 1 ? a.view.strides()[0] : 1};
}

// Calls f(begin, len) for pieces of [0, n) short enough for blasint.
template <class F>
void pieces(std::int64_t n, F f) {
  for (std::int64_t begin = 0; begin < n; begin += kBlasMax) f(begin, std::min(kBlasMax, n - begin));
}

// Single-vector reductions do not depend on the direction of traversal, so
// they take |stride| (OpenBLAS returns 0 for a non-positive increment).
template <class T>
void asum_kernel(const OpCall& call) {
  const auto x = vec<T>(call.t[0]);
  const blasint inc = to_blasint("asum", std::abs(x.stride));
  double sum = 0;  // an empty vector sums to 0
  pieces(x.n, [&](std::int64_t b, std::int64_t len) { sum += Cblas<T>::asum(blasint(len), x.lowest(b, len), inc); });
  *element_ptr<T>(call.t[1]) = static_cast<T>(sum);
}

template <class T>
void nrm2_kernel(const OpCall& call) {
  const auto x = vec<T>(call.t[0]);
  const blasint inc = to_blasint("nrm2", std::abs(x.stride));
  T norm = 0;  // an empty vector has norm 0
  // hypot combines the pieces' norms without overflow.
  pieces(x.n, [&](std::int64_t b, std::int64_t len) {
    norm = std::hypot(norm, Cblas<T>::nrm2(blasint(len), x.lowest(b, len), inc));
  });
  *element_ptr<T>(call.t[1]) = norm;
}

template <class T>
void scal_kernel(const OpCall& call) {
  const auto x = vec<T>(call.t[0]);
  const blasint inc = to_blasint("scal", std::abs(x.stride));
  pieces(x.n, [&](std::int64_t b, std::int64_t len) {
    Cblas<T>::scal(blasint(len), static_cast<T>(call.f[0]), x.lowest(b, len), inc);
  });
}

// Index of the first maximum of |x_i| in the view's order, 0-based; -1 for
// an empty vector (there is no index to give). A negative stride reverses
// the order BLAS scans in, which would make ties resolve to the last
// maximum, so those views are scanned here instead.
template <class T>
void iamax_kernel(const OpCall& call) {
  const auto x = vec<T>(call.t[0]);
  std::int64_t best = -1;
  T best_abs = 0;
  if (x.stride >= 0) {
    const blasint inc = to_blasint("iamax", x.stride);
    pieces(x.n, [&](std::int64_t b, std::int64_t len) {
      const auto i = static_cast<std::int64_t>(Cblas<T>::iamax(blasint(len), x.lowest(b, len), inc));
      const T v = std::abs(x.first[(b + i) * x.stride]);
      if (best < 0 || v > best_abs) best = b + i, best_abs = v;
    });
  } else {
    for (std::int64_t i = 0; i < x.n; ++i) {
      const T v = std::abs(x.first[i * x.stride]);
      if (best < 0 || v > best_abs) best = i, best_abs = v;
    }
  }
  *element_ptr<std::int64_t>(call.t[1]) = best;
}

// Two-vector operations keep the signed increments: direction matters.
template <class T, class F>
void two_vectors(const char* op, const OpCall& call, F f) {
  const auto x = vec<T>(call.t[0]);
  const auto y = vec<T>(call.t[1]);
  const blasint incx = to_blasint(op, x.stride), incy = to_blasint(op, y.stride);
  pieces(x.n,
         [&](std::int64_t b, std::int64_t len) { f(blasint(len), x.lowest(b, len), incx, y.lowest(b, len), incy); });
}

template <class T>
void axpy_kernel(const OpCall& call) {
  const auto alpha = static_cast<T>(call.f[0]);
  two_vectors<T>("axpy", call, [&](blasint n, T* x, blasint incx, T* y, blasint incy) {
    Cblas<T>::axpy(n, alpha, x, incx, y, incy);
  });
}

template <class T>
void copy_kernel(const OpCall& call) {
  two_vectors<T>("copy", call,
                 [](blasint n, T* x, blasint incx, T* y, blasint incy) { Cblas<T>::copy(n, x, incx, y, incy); });
}

template <class T>
void swap_kernel(const OpCall& call) {
  two_vectors<T>("swap", call,
                 [](blasint n, T* x, blasint incx, T* y, blasint incy) { Cblas<T>::swap(n, x, incx, y, incy); });
}

template <class T>
void dot_kernel(const OpCall& call) {
  double sum = 0;  // an empty dot product is 0
  two_vectors<T>("dot", call,
                 [&](blasint n, T* x, blasint incx, T* y, blasint incy) { sum += Cblas<T>::dot(n, x, incx, y, incy); });
  *element_ptr<T>(call.t[2]) = static_cast<T>(sum);
}

// Leading dimension of a row-major matrix view. With one row the stride is
// meaningless (and may be anything), but BLAS still checks lda >= columns.
blasint leading_dim(const TensorArg& m) {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return to_blasint("gemm", rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols));
}

template <class T>
void gemm_kernel(const OpCall& call) {
  const TensorArg &a = call.t[0], &b = call.t[1], &c = call.t[2];
  const bool ta = call.i[0] != 0, tb = call.i[1] != 0;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const std::int64_t k = ta ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return;
  // k == 0 still runs: BLAS then sets c = beta*c (zero when beta is 0,
  // without reading c).
  Cblas<T>::gemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, to_blasint("gemm", m),
                 to_blasint("gemm", n), to_blasint("gemm", k), static_cast<T>(call.f[0]), element_ptr<T>(a),
                 leading_dim(a), element_ptr<T>(b), leading_dim(b), static_cast<T>(call.f[1]), element_ptr<T>(c),
                 leading_dim(c));
}

template <class T>
void register_typed(KernelTable& table) {
  constexpr DType d = dtype_of_v<T>;
  table.set(OpId::blas_asum, d, &asum_kernel<T>);
  table.set(OpId::blas_axpy, d, &axpy_kernel<T>);
  table.set(OpId::blas_copy, d, &copy_kernel<T>);
  table.set(OpId::blas_dot, d, &dot_kernel<T>);
  table.set(OpId::blas_nrm2, d, &nrm2_kernel<T>);
  table.set(OpId::blas_scal, d, &scal_kernel<T>);
  table.set(OpId::blas_swap, d, &swap_kernel<T>);
  table.set(OpId::blas_iamax, d, &iamax_kernel<T>);
  table.set(OpId::blas_gemm, d, &gemm_kernel<T>);
}

}  // namespace

void register_blas(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
  register_gemm_half(table);  // f16, bf16: gemm only, accumulating in f32
}

}  // namespace xylem::native

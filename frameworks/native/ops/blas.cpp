// Native BLAS: levels 1, 2 and 3 through OpenBLAS's cblas, for f32 and f64
// (gemm and gemm_batched for f16 and bf16 are in gemm_half.cpp).
//
// Vectors are rank-1 views with any stride. BLAS addresses a vector with a
// negative increment from its lowest address, so that is the pointer we
// pass; element i of the view is then the one BLAS calls element i. OpenBLAS
// indexes with `blasint` (32-bit in Debian's build): longer vectors are
// processed in pieces, and a stride beyond its range is refused.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/gemm_onednn.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "xylem/error.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

// Calls f(begin, len) for pieces of [0, n) short enough for blasint.
template <class F>
void pieces(std::int64_t n, F f) {
  for (std::int64_t begin = 0; begin < n; begin += kBlasMax) f(begin, std::min(kBlasMax, n - begin));
}

// Single-vector reductions do not depend on the direction of traversal, so
// they take |stride| (OpenBLAS returns 0 for a non-positive increment).
template <class T>
void asum_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_asum>(call);
  const auto x = vec<T>(args.x);
  const blasint inc = to_blasint("asum", std::abs(x.stride));
  double sum = 0;  // an empty vector sums to 0
  pieces(x.n, [&](std::int64_t b, std::int64_t len) { sum += Cblas<T>::asum(blasint(len), x.lowest(b, len), inc); });
  *element_ptr<T>(args.result) = static_cast<T>(sum);
}

template <class T>
void nrm2_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_nrm2>(call);
  const auto x = vec<T>(args.x);
  const blasint inc = to_blasint("nrm2", std::abs(x.stride));
  T norm = 0;  // an empty vector has norm 0
  // hypot combines the pieces' norms without overflow.
  pieces(x.n, [&](std::int64_t b, std::int64_t len) {
    norm = std::hypot(norm, Cblas<T>::nrm2(blasint(len), x.lowest(b, len), inc));
  });
  *element_ptr<T>(args.result) = norm;
}

template <class T>
void scal_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_scal>(call);
  const auto x = vec<T>(args.x);
  const blasint inc = to_blasint("scal", std::abs(x.stride));
  pieces(x.n, [&](std::int64_t b, std::int64_t len) {
    Cblas<T>::scal(blasint(len), static_cast<T>(args.alpha), x.lowest(b, len), inc);
  });
}

// Index of the first maximum (iamax) or minimum (iamin, Least) of |x_i| in
// the view's order, 0-based, a NaN counting as the extreme (the first NaN
// wins, as NumPy's argmax/argmin and xylem's own); -1 for an empty vector
// (the core refuses those). OpenBLAS's i?amax and i?amin do not follow that
// rule (their kernels skip or keep a NaN depending on where it falls), so
// each piece is summed first, asum being NaN exactly when the piece holds
// one, and a piece with a NaN is scanned here. A negative stride reverses
// the order BLAS scans in, which would make ties resolve to the last
// extreme, so those views are scanned here too.
template <class T, template <class> class Args, bool Least>
void extreme_index_kernel(const OpCall& call) {
  const auto args = plugin::unpack<Args>(call);
  const auto x = vec<T>(args.x);
  std::int64_t best = -1;
  T best_abs = 0;
  // Strictly beyond replaces, so ties keep the first.
  const auto beyond = [](T v, T than) { return Least ? v < than : v > than; };
  // The rule element by element over [begin, end); true when a NaN ended
  // the search.
  const auto scan = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const T v = std::abs(x.first[i * x.stride]);
      if (std::isnan(v)) {
        best = i;
        return true;
      }
      if (best < 0 || beyond(v, best_abs)) best = i, best_abs = v;
    }
    return false;
  };
  const char* op = Least ? "iamin" : "iamax";
  if (x.stride < 0) {
    scan(0, x.n);
  } else {
    const blasint inc = to_blasint(op, x.stride);
    for (std::int64_t b = 0; b < x.n; b += kBlasMax) {
      const std::int64_t len = std::min(kBlasMax, x.n - b);
      T* const first = x.lowest(b, len);
      if (std::isnan(Cblas<T>::asum(blasint(len), first, inc)) && scan(b, b + len)) break;
      const auto i = static_cast<std::int64_t>(Least ? Cblas<T>::iamin(blasint(len), first, inc)
                                                     : Cblas<T>::iamax(blasint(len), first, inc));
      const T v = std::abs(x.first[(b + i) * x.stride]);
      if (best < 0 || beyond(v, best_abs)) best = b + i, best_abs = v;
    }
  }
  *element_ptr<std::int64_t>(args.result) = best;
}

// Two-vector operations keep the signed increments: direction matters.
template <class T, class F>
void two_vectors(const char* op, const TensorArg& x_arg, const TensorArg& y_arg, F f) {
  const auto x = vec<T>(x_arg);
  const auto y = vec<T>(y_arg);
  const blasint incx = to_blasint(op, x.stride), incy = to_blasint(op, y.stride);
  pieces(x.n,
         [&](std::int64_t b, std::int64_t len) { f(blasint(len), x.lowest(b, len), incx, y.lowest(b, len), incy); });
}

template <class T>
void axpy_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_axpy>(call);
  const auto alpha = static_cast<T>(args.alpha);
  two_vectors<T>("axpy", args.x, args.y, [&](blasint n, T* x, blasint incx, T* y, blasint incy) {
    Cblas<T>::axpy(n, alpha, x, incx, y, incy);
  });
}

template <class T>
void copy_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_copy>(call);
  two_vectors<T>("copy", args.x, args.y,
                 [](blasint n, T* x, blasint incx, T* y, blasint incy) { Cblas<T>::copy(n, x, incx, y, incy); });
}

template <class T>
void swap_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_swap>(call);
  two_vectors<T>("swap", args.x, args.y,
                 [](blasint n, T* x, blasint incx, T* y, blasint incy) { Cblas<T>::swap(n, x, incx, y, incy); });
}

template <class T>
void dot_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_dot>(call);
  double sum = 0;  // an empty dot product is 0
  two_vectors<T>("dot", args.x, args.y,
                 [&](blasint n, T* x, blasint incx, T* y, blasint incy) { sum += Cblas<T>::dot(n, x, incx, y, incy); });
  *element_ptr<T>(args.result) = static_cast<T>(sum);
}

// rot: (x, y) <- (c*x + s*y, c*y - s*x), exactly cblas_?rot.
template <class T>
void rot_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_rot>(call);
  const auto c = static_cast<T>(args.c), s = static_cast<T>(args.s);
  two_vectors<T>("rot", args.x, args.y,
                 [&](blasint n, T* x, blasint incx, T* y, blasint incy) { Cblas<T>::rot(n, x, incx, y, incy, c, s); });
}

// gemv: y = alpha*op(a)*x + beta*y. beta is applied here and BLAS called
// with beta = 1: OpenBLAS returns early, without applying beta, when op(a)
// has no columns, and with beta == 0 y must be cleared, not scaled (it may
// hold NaN). A broadcast x (stride 0, which BLAS refuses) is made dense.
template <class T>
void gemv_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_gemv>(call);
  const TensorArg& a = args.a;
  const bool ta = args.transpose_a != 0;
  const auto alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  const auto x = vec<T>(args.x);
  const auto y = vec<T>(args.y);
  if (y.n == 0) return;
  if (beta != T(1))
    for (std::int64_t i = 0; i < y.n; ++i) y.first[i * y.stride] = beta == T(0) ? T(0) : beta * y.first[i * y.stride];
  if (x.n == 0) return;
  std::vector<T> packed;  // a broadcast x (stride 0) as a dense vector
  const T* xp = x.lowest(0, x.n);
  blasint incx = to_blasint("gemv", x.stride);
  if (x.stride == 0) {
    packed.assign(std::size_t(x.n), *x.first);
    xp = packed.data();
    incx = 1;
  }
  Cblas<T>::gemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, to_blasint("gemv", a.view.dims()[0]),
                 to_blasint("gemv", a.view.dims()[1]), alpha, element_ptr<T>(a), to_blasint("gemv", leading_dim(a)),
                 xp, incx, T(1), y.lowest(0, y.n), to_blasint("gemv", y.stride));
}

template <class T>
void gemm_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_gemm>(call);
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const std::int64_t k = ta ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return;
  // k == 0 still runs: BLAS then sets c = beta*c (zero when beta is 0,
  // without reading c).
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (gemm_onednn(ta, tb, m, n, k, static_cast<T>(args.alpha), element_ptr<T>(a), leading_dim(a), element_ptr<T>(b),
                    leading_dim(b), static_cast<T>(args.beta), element_ptr<T>(c), leading_dim(c)))
      return;
  }
#endif
  gemm_rows<T>(ta, tb, m, n, k, static_cast<T>(args.alpha), element_ptr<T>(a), leading_dim(a), element_ptr<T>(b),
               leading_dim(b), static_cast<T>(args.beta), element_ptr<T>(c), leading_dim(c));
}

// gemm_batched: views [batch, rows, cols]; a or b may repeat one matrix
// (batch stride 0).
template <class T>
void gemm_batched_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_gemm_batched>(call);
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const std::int64_t batch = c.view.dims()[0], m = c.view.dims()[1], n = c.view.dims()[2];
  const std::int64_t k = ta ? a.view.dims()[1] : a.view.dims()[2];
  if (batch == 0 || m == 0 || n == 0) return;
  const T alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  const T* pa = element_ptr<const T>(a);
  const T* pb = element_ptr<const T>(b);
  T* pc = element_ptr<T>(c);
  const std::int64_t sa = a.view.strides()[0], sb = b.view.strides()[0], sc = c.view.strides()[0];
  const std::int64_t lda = leading_dim(a, 1), ldb = leading_dim(b, 1), ldc = leading_dim(c, 1);
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (gemm_onednn_batched(ta, tb, batch, m, n, k, alpha, pa, sa, lda, pb, sb, ldb, beta, pc, sc, ldc)) return;
  }
#endif
  run_gemms(batch, double(m) * double(n) * double(k), [&](std::int64_t i) {
    gemm_rows<T>(ta, tb, m, n, k, alpha, pa + i * sa, lda, pb + i * sb, ldb, beta, pc + i * sc, ldc);
  });
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
  table.set(OpId::blas_iamax, d, &extreme_index_kernel<T, plugin::args::blas_iamax, false>);
  table.set(OpId::blas_iamin, d, &extreme_index_kernel<T, plugin::args::blas_iamin, true>);
  table.set(OpId::blas_rot, d, &rot_kernel<T>);
  table.set(OpId::blas_gemv, d, &gemv_kernel<T>);
  table.set(OpId::blas_gemm, d, &gemm_kernel<T>);
  table.set(OpId::blas_gemm_batched, d, &gemm_batched_kernel<T>);
}

}  // namespace

void register_blas(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
  register_gemm_half(table);  // f16, bf16: gemm only, accumulating in f32
}

}  // namespace xylem::native

// Native ger, syrk and trsm through OpenBLAS's cblas, and geam (which
// OpenBLAS lacks: its geadd cannot transpose the second operand) as a loop
// over rows; f32 and f64. Matrix views arrive with unit column stride
// (the core's contract in op.hpp). iamin is in blas.cpp, beside iamax.
#include <algorithm>
#include <cstdint>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

// BLAS checks ld >= max(1, columns) even where a matrix has one row.
blasint ld_of(const char* op, const TensorArg& m) { return to_blasint(op, std::max<std::int64_t>(1, leading_dim(m))); }

// a += alpha*x*y^T
template <class T>
void ger_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_ger>(call);
  const auto x = vec<T>(args.x), y = vec<T>(args.y);
  const TensorArg& a = args.a;
  if (x.n == 0 || y.n == 0) return;
  Cblas<T>::ger(CblasRowMajor, to_blasint("ger", x.n), to_blasint("ger", y.n), static_cast<T>(args.alpha),
                x.lowest(0, x.n), to_blasint("ger", x.stride), y.lowest(0, y.n), to_blasint("ger", y.stride),
                element_ptr<T>(a), ld_of("ger", a));
}

// c = alpha*op(a)*op(a)^T + beta*c on one triangle. beta is applied here
// and BLAS called with beta = 1, as gemv does: OpenBLAS returns before
// applying beta when k or alpha is 0, and beta == 0 must clear the
// triangle rather than scale it (it may hold NaN).
template <class T>
void syrk_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(call);
  const TensorArg &a = args.a, &c = args.c;
  const bool upper = args.upper != 0, trans = args.transpose != 0;
  const std::int64_t n = c.view.dims()[0], k = trans ? a.view.dims()[0] : a.view.dims()[1];
  const T alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  T* const pc = element_ptr<T>(c);
  const std::int64_t ldc = leading_dim(c);
  if (beta != T(1)) {
    parallel_chunks(n, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(n, 1)),
                    [&](std::int64_t i0, std::int64_t i1) {
                      for (std::int64_t i = i0; i < i1; ++i) {
                        T* const row = pc + i * ldc;
                        for (std::int64_t j = upper ? i : 0, end = upper ? n : i + 1; j < end; ++j)
                          row[j] = beta == T(0) ? T(0) : beta * row[j];
                      }
                    });
  }
  if (k == 0 || alpha == T(0)) return;
  Cblas<T>::syrk(CblasRowMajor, upper ? CblasUpper : CblasLower, trans ? CblasTrans : CblasNoTrans,
                 to_blasint("syrk", n), to_blasint("syrk", k), alpha, element_ptr<const T>(a), ld_of("syrk", a), T(1),
                 pc, ld_of("syrk", c));
}

// b = x with op(a)*x = alpha*b or x*op(a) = alpha*b (alpha != 0: the core
// writes zeros itself).
template <class T>
void trsm_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_trsm>(call);
  const TensorArg &a = args.a, &b = args.b;
  const std::int64_t m = b.view.dims()[0], n = b.view.dims()[1];
  if (m == 0 || n == 0) return;
  Cblas<T>::trsm(CblasRowMajor, args.left != 0 ? CblasLeft : CblasRight, args.upper != 0 ? CblasUpper : CblasLower,
                 args.transpose != 0 ? CblasTrans : CblasNoTrans, args.unit_diagonal != 0 ? CblasUnit : CblasNonUnit,
                 to_blasint("trsm", m), to_blasint("trsm", n), static_cast<T>(args.alpha), element_ptr<const T>(a),
                 ld_of("trsm", a), element_ptr<T>(b), ld_of("trsm", b));
}

// c = alpha*op(a) + beta*op(b), a term of scale 0 left out (its operand
// may hold NaN).
template <class T>
void geam_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_geam>(call);
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const T alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  const T* const pa = element_ptr<const T>(a);
  const T* const pb = element_ptr<const T>(b);
  T* const pc = element_ptr<T>(c);
  const std::int64_t lda = leading_dim(a), ldb = leading_dim(b), ldc = leading_dim(c);
  // op(x)'s element (i, j) is at i*row + j*col.
  const std::int64_t a_row = args.transpose_a ? 1 : lda, a_col = args.transpose_a ? lda : 1;
  const std::int64_t b_row = args.transpose_b ? 1 : ldb, b_col = args.transpose_b ? ldb : 1;
  parallel_chunks(m, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1)),
                  [&](std::int64_t i0, std::int64_t i1) {
                    for (std::int64_t i = i0; i < i1; ++i)
                      for (std::int64_t j = 0; j < n; ++j) {
                        const T av = alpha == T(0) ? T(0) : alpha * pa[i * a_row + j * a_col];
                        const T bv = beta == T(0) ? T(0) : beta * pb[i * b_row + j * b_col];
                        pc[i * ldc + j] = av + bv;
                      }
                  });
}

template <class T>
void register_typed(KernelTable& table) {
  constexpr DType d = dtype_of_v<T>;
  table.set(OpId::blas_ger, d, &ger_kernel<T>);
  table.set(OpId::blas_syrk, d, &syrk_kernel<T>);
  table.set(OpId::blas_trsm, d, &trsm_kernel<T>);
  table.set(OpId::blas_geam, d, &geam_kernel<T>);
}

}  // namespace

void register_blas_extra(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
}

}  // namespace xylem::native

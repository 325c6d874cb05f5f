// Native ger, syrk and trsm through OpenBLAS's cblas, and geam (which
// OpenBLAS lacks: its geadd cannot transpose the second operand) tile by
// tile; f32 and f64. Matrix views arrive with unit column stride
// (the core's contract in op.hpp). iamin is in blas.cpp, beside iamax.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "frameworks/native/ops/cblas.hpp"
#include "frameworks/native/ops/kernels.hpp"
#if XYLEM_HAVE_ONEDNN
#include "frameworks/native/ops/gemm_onednn.hpp"
#endif

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
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>)
    if (syrk_onednn(upper, trans, n, k, alpha, element_ptr<const float>(a), leading_dim(a), pc, ldc)) return;
#endif
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
#if XYLEM_HAVE_ONEDNN
  if constexpr (std::is_same_v<T, float>)
    if (args.left != 0 && trsm_left_onednn(args.upper != 0, args.transpose != 0, args.unit_diagonal != 0, m, n,
                                           static_cast<float>(args.alpha), element_ptr<const float>(a), leading_dim(a),
                                           element_ptr<float>(b), leading_dim(b)))
      return;
#endif
  Cblas<T>::trsm(CblasRowMajor, args.left != 0 ? CblasLeft : CblasRight, args.upper != 0 ? CblasUpper : CblasLower,
                 args.transpose != 0 ? CblasTrans : CblasNoTrans, args.unit_diagonal != 0 ? CblasUnit : CblasNonUnit,
                 to_blasint("trsm", m), to_blasint("trsm", n), static_cast<T>(args.alpha), element_ptr<const T>(a),
                 ld_of("trsm", a), element_ptr<T>(b), ld_of("trsm", b));
}

// One term of geam: scale * op(x), x row-major with leading dimension ld.
template <class T>
struct GeamTerm {
  const T* p;
  std::int64_t ld;
  bool transposed;
  T scale;
};

// c's row i, columns [j0, j0 + n), as sx*x + sy*y over rows x and y of n
// elements, a term of scale 0 left out (its operand may hold NaN). The
// branches sit outside the loops so that each loop vectorises.
template <class T>
void geam_row(T* c, const T* x, T sx, const T* y, T sy, std::int64_t n) {
  if (sx == T(0) && sy == T(0)) {
    std::fill(c, c + n, T(0));
  } else if (sx == T(0)) {
    for (std::int64_t j = 0; j < n; ++j) c[j] = sy * y[j];
  } else if (sy == T(0)) {
    for (std::int64_t j = 0; j < n; ++j) c[j] = sx * x[j];
  } else {
    for (std::int64_t j = 0; j < n; ++j) c[j] = sx * x[j] + sy * y[j];
  }
}

// c = alpha*op(a) + beta*op(b), tile by tile. A transposed operand's tile
// is first turned into a small buffer, reading its rows whole; walking it
// by columns straight into c reads one element per cache line, and for a
// large leading dimension one per page (2048^2 f32, b transposed: 36 ms of
// CPU against 7.4 on one thread of a 2-core EPYC VM). 256 bytes a tile
// row: two f32 buffers of 64 x 64 stay in L1 (32 beat 16, 64 beat 32 there).
template <class T>
void geam_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::blas_geam>(call);
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const GeamTerm<T> ta{element_ptr<const T>(a), leading_dim(a), args.transpose_a != 0, static_cast<T>(args.alpha)};
  const GeamTerm<T> tb{element_ptr<const T>(b), leading_dim(b), args.transpose_b != 0, static_cast<T>(args.beta)};
  T* const pc = element_ptr<T>(c);
  const std::int64_t ldc = leading_dim(c);
  constexpr std::int64_t kTile = 256 / sizeof(T);
  const std::int64_t bands = (m + kTile - 1) / kTile;
  // About 64 Ki elements of c per chunk.
  parallel_chunks(bands, std::max<std::int64_t>(1, 65536 / (kTile * std::max<std::int64_t>(n, 1))),
                  [&](std::int64_t band0, std::int64_t band1) {
                    alignas(64) T buf_a[kTile][kTile];
                    alignas(64) T buf_b[kTile][kTile];
                    for (std::int64_t i0 = band0 * kTile, i_end = std::min(m, band1 * kTile); i0 < i_end; i0 += kTile) {
                      const std::int64_t ni = std::min(kTile, m - i0);
                      for (std::int64_t j0 = 0; j0 < n; j0 += kTile) {
                        const std::int64_t nj = std::min(kTile, n - j0);
                        // Row r of the tile of op(x): x's own row, or a row of the buffer.
                        const auto rows = [&](const GeamTerm<T>& x, T (&buf)[kTile][kTile]) {
                          if (x.transposed && x.scale != T(0))
                            for (std::int64_t j = 0; j < nj; ++j) {
                              const T* const src = x.p + (j0 + j) * x.ld + i0;
                              for (std::int64_t i = 0; i < ni; ++i) buf[i][j] = src[i];
                            }
                          return [&x, &buf, i0, j0](std::int64_t r) -> const T* {
                            return x.transposed ? buf[r] : x.p + (i0 + r) * x.ld + j0;
                          };
                        };
                        const auto row_a = rows(ta, buf_a);
                        const auto row_b = rows(tb, buf_b);
                        for (std::int64_t r = 0; r < ni; ++r)
                          geam_row(pc + (i0 + r) * ldc + j0, row_a(r), ta.scale, row_b(r), tb.scale, nj);
                      }
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

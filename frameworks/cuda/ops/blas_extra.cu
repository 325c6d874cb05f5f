// ger, syrk, trsm and geam through cuBLAS, f32 and f64. cuBLAS is
// column-major: a row-major matrix [rows, cols] with row stride ld is the
// column-major [cols, rows] with the same ld, its transpose. Each call below
// states the row-major problem as the column-major one on the same memory.
// iamin is in blas.cu, beside iamax.
#include <algorithm>
#include <climits>
#include <string>

#include "../check.hpp"
#include "map.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

int cublas_int(std::int64_t v, const char* what) {
  if (v > INT_MAX || v < INT_MIN)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(v) + " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

// A row-major matrix's leading dimension; with one row the stride means
// nothing, but cuBLAS still checks ld >= max(1, columns).
int leading_dim(const TensorArg& m, const char* what) {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return cublas_int(rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols), what);
}

// BLAS addresses a vector with a negative increment from its lowest element.
template <class T>
const T* blas_vector(const TensorArg& v, int& inc, const char* what) {
  const std::int64_t n = v.view.dims()[0];
  const std::int64_t stride = n > 1 ? v.view.strides()[0] : 1;
  inc = cublas_int(stride, what);
  const T* first = element_ptr<const T>(v);
  return stride < 0 ? first + (n - 1) * stride : first;
}

cublasOperation_t op_of(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// The cuBLAS entry points by element type.
template <class T>
struct Blas;
template <>
struct Blas<float> {
  static constexpr auto ger = &CublasLibrary::cublasSger;
  static constexpr auto syrk = &CublasLibrary::cublasSsyrk;
  static constexpr auto trsm = &CublasLibrary::cublasStrsm;
  static constexpr auto geam = &CublasLibrary::cublasSgeam;
};
template <>
struct Blas<double> {
  static constexpr auto ger = &CublasLibrary::cublasDger;
  static constexpr auto syrk = &CublasLibrary::cublasDsyrk;
  static constexpr auto trsm = &CublasLibrary::cublasDtrsm;
  static constexpr auto geam = &CublasLibrary::cublasDgeam;
};

// Calls one typed entry point behind the library-call fault point, as
// XY_CUBLAS does for the untyped ones.
template <auto Member, class... Args>
void call_cublas(const Context& ctx, const char* what, const char* name, Args... args) {
  check_cublas(library_call_fails() ? CUBLAS_STATUS_INTERNAL_ERROR : (cublas().*Member)(args...), name, ctx.device,
               what);
}

// a += alpha*x*y^T on row-major a [m, n] is a^T += alpha*y*x^T column-major.
template <class T>
void ger(const OpCall& c, const Context& ctx) {
  constexpr const char* what = "blas::ger";
  const auto args = plugin::unpack<plugin::args::blas_ger>(c);
  const TensorArg& a = args.a;
  const std::int64_t m = a.view.dims()[0], n = a.view.dims()[1];
  if (m == 0 || n == 0) return;
  int incx = 0, incy = 0;
  const T* x = blas_vector<T>(args.x, incx, what);
  const T* y = blas_vector<T>(args.y, incy, what);
  const T alpha = T(args.alpha);
  call_cublas<Blas<T>::ger>(ctx, what, "cublas?ger", ctx.blas->handle(ctx.stream), cublas_int(n, what),
                            cublas_int(m, what), &alpha, y, incy, x, incx, element_ptr<T>(a), leading_dim(a, what));
}

// c = beta*c on one triangle of c [n, n] (0 when beta is 0: c may hold NaN).
template <class T>
__global__ void scale_triangle(T* c, std::int64_t ldc, std::int64_t n, bool upper, T beta) {
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n * n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = k / n, j = k % n;
    if (upper ? j < i : j > i) continue;
    T& v = c[i * ldc + j];
    v = beta == T(0) ? T(0) : beta * v;
  }
}

// Row-major c = alpha*op(a)*op(a)^T + beta*c on the upper triangle is the
// column-major c^T's lower triangle; op(a) = a is column-major a^T's
// transpose, so the flag flips too. beta is applied by scale_triangle and
// cuBLAS called with beta = 1, so that k = 0 and alpha = 0 need no case of
// their own and a beta of 0 never reads c.
template <class T>
void syrk(const OpCall& c, const Context& ctx) {
  constexpr const char* what = "blas::syrk";
  const auto args = plugin::unpack<plugin::args::blas_syrk>(c);
  const TensorArg &a = args.a, &out = args.c;
  const bool upper = args.upper != 0, trans = args.transpose != 0;
  const std::int64_t n = out.view.dims()[0], k = trans ? a.view.dims()[0] : a.view.dims()[1];
  if (n == 0) return;
  const T alpha = T(args.alpha), beta = T(args.beta), one = T(1);
  const int ldc = leading_dim(out, what);
  if (beta != one) {
    const int grid = int(std::clamp<std::int64_t>((n * n + 255) / 256, 1, 65536));
    scale_triangle<T><<<grid, 256, 0, ctx.stream>>>(element_ptr<T>(out), ldc, n, upper, beta);
    XY_CUDA_LAUNCHED(ctx.device, what);
  }
  if (k == 0 || alpha == T(0)) return;
  call_cublas<Blas<T>::syrk>(ctx, what, "cublas?syrk", ctx.blas->handle(ctx.stream),
                             upper ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER, op_of(!trans),
                             cublas_int(n, what), cublas_int(k, what), &alpha, element_ptr<const T>(a),
                             leading_dim(a, what), &one, element_ptr<T>(out), ldc);
}

// Row-major op(a) x = alpha b is column-major x^T op(a)^T = alpha b^T, and
// op(a)^T is op(a^T) with the same flag: the side and the triangle flip,
// the transpose flag stays. b [m, n] is column-major [n, m].
template <class T>
void trsm(const OpCall& c, const Context& ctx) {
  constexpr const char* what = "blas::trsm";
  const auto args = plugin::unpack<plugin::args::blas_trsm>(c);
  const TensorArg &a = args.a, &b = args.b;
  const std::int64_t m = b.view.dims()[0], n = b.view.dims()[1];
  if (m == 0 || n == 0) return;
  const T alpha = T(args.alpha);
  call_cublas<Blas<T>::trsm>(ctx, what, "cublas?trsm", ctx.blas->handle(ctx.stream),
                             args.left != 0 ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT,
                             args.upper != 0 ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER,
                             op_of(args.transpose != 0),
                             args.unit_diagonal != 0 ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT,
                             cublas_int(n, what), cublas_int(m, what), &alpha, element_ptr<const T>(a),
                             leading_dim(a, what), element_ptr<T>(b), leading_dim(b, what));
}

// Row-major c = alpha op(a) + beta op(b) is column-major c^T = alpha
// op(a)^T + beta op(b)^T, op(x)^T being op(x^T) with the same flag. cuBLAS
// does not read an operand whose scale is 0 when it is the second one: a
// zero alpha swaps the operands, and both zero clears c.
template <class T>
void geam(const OpCall& c, const Context& ctx) {
  constexpr const char* what = "blas::geam";
  const auto args = plugin::unpack<plugin::args::blas_geam>(c);
  const TensorArg &out = args.c;
  const std::int64_t m = out.view.dims()[0], n = out.view.dims()[1];
  if (m == 0 || n == 0) return;
  const int ldc = leading_dim(out, what);
  if (args.alpha == 0 && args.beta == 0) {
    XY_CUDA(cudaMemset2DAsync(element_ptr<T>(out), std::size_t(ldc) * sizeof(T), 0, std::size_t(n) * sizeof(T),
                              std::size_t(m), ctx.stream),
            ctx.device, what);
    return;
  }
  const bool swap = args.alpha == 0;
  const TensorArg& first = swap ? args.b : args.a;
  const TensorArg& second = swap ? args.a : args.b;
  const bool t_first = (swap ? args.transpose_b : args.transpose_a) != 0;
  const bool t_second = (swap ? args.transpose_a : args.transpose_b) != 0;
  const T s_first = T(swap ? args.beta : args.alpha), s_second = T(swap ? args.alpha : args.beta);
  call_cublas<Blas<T>::geam>(ctx, what, "cublas?geam", ctx.blas->handle(ctx.stream), op_of(t_first), op_of(t_second),
                             cublas_int(n, what), cublas_int(m, what), &s_first, element_ptr<const T>(first),
                             leading_dim(first, what), &s_second, element_ptr<const T>(second),
                             leading_dim(second, what), element_ptr<T>(out), ldc);
}

template <class T>
void register_typed(KernelTable& table) {
  constexpr DType d = dtype_of_v<T>;
  table.set(OpId::blas_ger, d, &ger<T>);
  table.set(OpId::blas_syrk, d, &syrk<T>);
  table.set(OpId::blas_trsm, d, &trsm<T>);
  table.set(OpId::blas_geam, d, &geam<T>);
}

}  // namespace

void register_blas_extra(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
}

}  // namespace xylem::cuda

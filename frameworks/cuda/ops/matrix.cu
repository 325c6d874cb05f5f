// blas::gemv (cuBLAS, f32 and f64) and blas::gemm_batched (cuBLAS strided
// batched, f32, f64, f16 and bf16); blas.cu has gemm and level 1.
// Conventions in plugin.hpp: with beta == 0 the output is write-only and may
// hold NaN, so it is never read then; an empty inner dimension gives
// beta*output (BLAS's quick return would leave it alone).
#include <algorithm>
#include <climits>
#include <optional>
#include <string>

#include "block.cuh"
#include "gemm_rows.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kThreads = 256;

// out = beta*out over a rank-1..3 view, or 0 when beta == 0 (out may hold NaN).
template <DType D>
__global__ void __launch_bounds__(kThreads) scale_view(StorageT<D>* p, std::int64_t d0, std::int64_t d1,
                                                       std::int64_t d2, std::int64_t s0, std::int64_t s1,
                                                       std::int64_t s2, ComputeT<D> beta) {
  const std::int64_t total = d0 * d1 * d2;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i2 = k % d2, i1 = (k / d2) % d1, i0 = k / (d1 * d2);
    StorageT<D>& v = p[i0 * s0 + i1 * s1 + i2 * s2];
    v = Real<D>::store(beta == ComputeT<D>(0) ? ComputeT<D>(0) : beta * Real<D>::load(v));
  }
}

template <DType D>
void scale_output(const Context& ctx, std::string_view what, const TensorArg& out, double beta) {
  const auto dims = out.view.dims();
  const auto st = out.view.strides();
  std::int64_t d[3] = {1, 1, 1}, s[3] = {0, 0, 0};
  const int r = out.view.rank();
  for (int i = 0; i < r; ++i) d[3 - r + i] = dims[i], s[3 - r + i] = st[i];
  const std::int64_t total = d[0] * d[1] * d[2];
  if (total == 0) return;
  const int grid = int(std::clamp<std::int64_t>((total + kThreads - 1) / kThreads, 1, 65536));
  scale_view<D><<<grid, kThreads, 0, ctx.stream>>>(element_ptr<StorageT<D>>(out), d[0], d[1], d[2], s[0], s[1],
                                                    s[2], ComputeT<D>(beta));
  XY_CUDA_LAUNCHED(ctx.device, what);
}

int cublas_int(std::int64_t v, std::string_view what) {
  if (v > INT_MAX || v < INT_MIN)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(v) + " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

// ---- gemv ---------------------------------------------------------------------
// BLAS addresses a vector with a negative increment from its lowest element.
template <class T>
T* blas_vector(const TensorArg& v, std::int64_t& inc) {
  const std::int64_t n = v.view.dims()[0];
  inc = n > 1 ? v.view.strides()[0] : 1;
  T* first = element_ptr<T>(v);
  return inc < 0 ? first + (n - 1) * inc : first;
}

template <class T>
__global__ void gather_vector(const T* x, std::int64_t n, std::int64_t stride, T* out) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = x[i * stride];
}

// a [m, n]
template <class T>
void gemv(const OpCall& c, const Context& ctx) {
  constexpr DType D = sizeof(T) == 4 ? DType::f32 : DType::f64;
  const auto args = plugin::unpack<plugin::args::blas_gemv>(c);
  const TensorArg &a = args.a, &x = args.x, &y = args.y;
  const bool trans = args.transpose_a != 0;
  const std::int64_t m = a.view.dims()[0], n = a.view.dims()[1];
  const std::int64_t inner = trans ? m : n;
  if (y.view.dims()[0] == 0) return;
  const T alpha = T(args.alpha), beta = T(args.beta);
  if (inner == 0) {
    scale_output<D>(ctx, "blas::gemv", y, args.beta);
    return;
  }
  std::int64_t incx = 0, incy = 0;
  const T* xp = blas_vector<const T>(x, incx);
  T* yp = blas_vector<T>(y, incy);
  std::optional<TempBuffer> dense_x;
  if (incx == 0) {  // a broadcast x: cuBLAS wants a non-zero increment
    dense_x.emplace(ctx.temp(std::size_t(inner) * sizeof(T)));
    gather_vector<T><<<int(std::min<std::int64_t>((inner + 255) / 256, 1024)), 256, 0, ctx.stream>>>(
        xp, inner, 0, dense_x->as<T>());
    XY_CUDA_LAUNCHED(ctx.device, "blas::gemv");
    xp = dense_x->as<T>();
    incx = 1;
  }
  const int lda = cublas_int(m > 1 ? a.view.strides()[0] : std::max<std::int64_t>(1, n), "blas::gemv");
  // Row-major [m, n] is column-major [n, m]: y = A x is op T there.
  const cublasOperation_t op = trans ? CUBLAS_OP_N : CUBLAS_OP_T;
  const int rows = cublas_int(n, "blas::gemv"), cols = cublas_int(m, "blas::gemv");
  const int ix = cublas_int(incx, "blas::gemv"), iy = cublas_int(incy, "blas::gemv");
  if constexpr (D == DType::f32)
    XY_CUBLAS(cublasSgemv(ctx.blas->handle(ctx.stream), op, rows, cols, &alpha, element_ptr<const T>(a), lda, xp, ix, &beta, yp,
                          iy),
              ctx.device, "blas::gemv");
  else
    XY_CUBLAS(cublasDgemv(ctx.blas->handle(ctx.stream), op, rows, cols, &alpha, element_ptr<const T>(a), lda, xp, ix, &beta, yp,
                          iy),
              ctx.device, "blas::gemv");
}

// ---- gemm_batched ---------------------------------------------------------------
template <DType D>
constexpr cudaDataType_t cuda_type() {
  if constexpr (D == DType::f16) return CUDA_R_16F;
  else if constexpr (D == DType::bf16) return CUDA_R_16BF;
  else if constexpr (D == DType::f32) return CUDA_R_32F;
  else return CUDA_R_64F;
}

// Rows between consecutive rows of a [batch, rows, cols] view; with one row
// the stride is meaningless, but cuBLAS still checks ld >= columns.
std::int64_t batch_ld(const TensorArg& t) {
  const std::int64_t rows = t.view.dims()[1], cols = t.view.dims()[2];
  return rows > 1 ? t.view.strides()[1] : std::max<std::int64_t>(1, cols);
}

std::int64_t batch_stride(const TensorArg& t) { return t.view.dims()[0] > 1 ? t.view.strides()[0] : 0; }

// a, b, c [batch, rows, cols]
template <DType D>
void gemm_batched(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_gemm_batched>(c);
  const TensorArg &a = args.a, &b = args.b, &out = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const std::int64_t batch = out.view.dims()[0], m = out.view.dims()[1], n = out.view.dims()[2];
  const std::int64_t k = ta ? a.view.dims()[1] : a.view.dims()[2];
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    scale_output<D>(ctx, "blas::gemm_batched", out, args.beta);
    return;
  }
  constexpr cudaDataType_t type = cuda_type<D>();
  const RowMajor ra{element_ptr<const StorageT<D>>(a), type, batch_ld(a), batch_stride(a), ta};
  const RowMajor rb{element_ptr<const StorageT<D>>(b), type, batch_ld(b), batch_stride(b), tb};
  const RowMajorOut rc{element_ptr<StorageT<D>>(out), type, batch_ld(out), batch_stride(out)};
  if constexpr (D == DType::f64) {
    const double alpha = args.alpha, beta = args.beta;
    gemm_rows(ctx, "blas::gemm_batched", m, n, k, &alpha, ra, rb, &beta, rc, batch, CUBLAS_COMPUTE_64F);
  } else {
    // f16/bf16: products accumulate in f32; f32: TF32 only when the user
    // opted in (as blas::gemm).
    const float alpha = float(args.alpha), beta = float(args.beta);
    const cublasComputeType_t compute =
        D == DType::f32 && tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    gemm_rows(ctx, "blas::gemm_batched", m, n, k, &alpha, ra, rb, &beta, rc, batch, compute);
  }
}

}  // namespace

void register_matrix(KernelTable& table) {
  table.set(OpId::blas_gemv, DType::f32, &gemv<float>);
  table.set(OpId::blas_gemv, DType::f64, &gemv<double>);
  for_each_real([&]<DType D>() { table.set(OpId::blas_gemm_batched, D, &gemm_batched<D>); });
}

}  // namespace xylem::cuda

#include "gemm_rows.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "../check.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
int cublas_int(std::int64_t v, std::string_view what) {
  if (v > INT_MAX)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": dimension " + std::to_string(v) + " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

int leading_dim(const plugin::TensorArg& m, std::string_view what) {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return cublas_int(rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols), what);
}

bool tf32_allowed() noexcept {
  const char* v = std::getenv("XYLEM_CUDA_TF32");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

void gemm_rows(const Context& ctx, std::string_view what, std::int64_t m, std::int64_t n, std::int64_t k,
               const void* alpha, const RowMajor& a, const RowMajor& b, const void* beta, const RowMajorOut& c,
               std::int64_t batch, cublasComputeType_t compute) {
  if (m == 0 || n == 0 || batch == 0) return;
  const cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasHandle_t h = ctx.blas->handle(ctx.stream);
  if (batch == 1) {
    XY_CUBLAS(cublasGemmEx(h, op_b, op_a, cublas_int(n, what), cublas_int(m, what), cublas_int(k, what), alpha,
                           b.data, b.type, cublas_int(b.ld, what), a.data, a.type, cublas_int(a.ld, what), beta,
                           c.data, c.type, cublas_int(c.ld, what), compute, CUBLAS_GEMM_DEFAULT),
              ctx.device, what);
    return;
  }
  XY_CUBLAS(cublasGemmStridedBatchedEx(h, op_b, op_a, cublas_int(n, what), cublas_int(m, what), cublas_int(k, what),
                                       alpha, b.data, b.type, cublas_int(b.ld, what), b.stride, a.data, a.type,
                                       cublas_int(a.ld, what), a.stride, beta, c.data, c.type,
                                       cublas_int(c.ld, what), c.stride, cublas_int(batch, what), compute,
                                       CUBLAS_GEMM_DEFAULT),
            ctx.device, what);
}

}  // namespace xylem::cuda

#pragma once
// Row-major (strided batched) matrix products through cuBLAS, which is
// column-major: row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T, the same memory with the operands swapped. Used by
// blas::gemm_batched and by the im2col convolution.
#include <cublas_v2.h>

#include <cstdint>
#include <string_view>

#include "kernels.hpp"

namespace xylem::cuda {

// Whether f32 products may use TF32 tensor cores (10-bit mantissas): only
// when the user opts in with XYLEM_CUDA_TF32=1, read at each call so that a
// program (the benchmark) can compare both.
[[nodiscard]] bool tf32_allowed() noexcept;

// One operand: a row-major matrix (or a batch of them `stride` elements
// apart; 0: the same matrix for every batch), ld = elements between rows.
struct RowMajor {
  const void* data;
  cudaDataType_t type;
  std::int64_t ld;
  std::int64_t stride = 0;
  bool transposed = false;
};

struct RowMajorOut {
  void* data;
  cudaDataType_t type;
  std::int64_t ld;
  std::int64_t stride = 0;
};

// v as cuBLAS's int; invalid_argument (naming `what`) beyond 32 bits.
[[nodiscard]] int cublas_int(std::int64_t v, std::string_view what);
// The leading dimension of a row-major matrix view [rows, cols]: with one
// row its stride is meaningless, but cuBLAS still checks ld >= columns.
[[nodiscard]] int leading_dim(const plugin::TensorArg& m, std::string_view what);

// c[b] = alpha*op(a[b])*op(b[b]) + beta*c[b] for b < batch; op(a) is
// [m, k], op(b) [k, n], c [m, n]. alpha and beta point to float for
// CUBLAS_COMPUTE_32F*, to double for CUBLAS_COMPUTE_64F. With beta == 0,
// c is not read. Throws invalid_argument beyond cuBLAS's 32-bit sizes.
void gemm_rows(const Context& ctx, std::string_view what, std::int64_t m, std::int64_t n, std::int64_t k,
               const void* alpha, const RowMajor& a, const RowMajor& b, const void* beta, const RowMajorOut& c,
               std::int64_t batch, cublasComputeType_t compute);

}  // namespace xylem::cuda

#pragma once
// blas::gemm's two engines, ours (kernels/gemm.cl, ops/gemm.cpp) and
// CLBlast (ops/gemm_clblast.cpp, when the plugin is built with it), and
// what both take.
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

// c (m x n) = alpha * op(a) (m x k) * op(b) (k x n) + beta * c, row-major.
struct GemmDims {
  std::int64_t m, n, k;
  bool trans_a, trans_b;
  double alpha, beta;
};

// Row stride of a row-major matrix view; with one row it means nothing, but
// CLBlast still checks ld >= columns.
[[nodiscard]] std::int64_t leading_dim(const plugin::TensorArg& matrix) noexcept;

// blas::gemm of f16 or bf16 (ops/gemm_half.cpp): through dense f32 copies
// of the operands and launch_gemm's f32 path.
[[nodiscard]] EventPtr launch_gemm_half(Launcher& launch);

#ifdef XYLEM_OPENCL_HAVE_CLBLAST
// Enqueues CLBlast's Gemm on the launcher's queue, after the call's inputs.
void clblast_gemm(Launcher& launch, const GemmDims& g);
#endif

}  // namespace xylem::opencl

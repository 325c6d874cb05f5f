#pragma once
// blas::gemm's two engines, ours (kernels/gemm.cl, ops/gemm.cpp) and
// CLBlast (ops/gemm_clblast.cpp, when the plugin is built with it), and
// what both take.
#include <cstdint>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

// The programs of blas: level 1 and gemv, with gemm's c = beta*c
// (kernels/blas.cl), our gemm (kernels/gemm.cl), and the f16/bf16 <-> f32
// conversions of gemm_half (kernels/convert.cl). Convolution runs them too.
extern const ProgramSpec kBlasProgram;
extern const ProgramSpec kGemmProgram;
extern const ProgramSpec kConvertProgram;
// core::copy_view's (kernels/copy.cl), which blas::copy runs.
extern const ProgramSpec kCopyProgram;

// c (m x n) = alpha * op(a) (m x k) * op(b) (k x n) + beta * c, row-major.
struct GemmDims {
  std::int64_t m, n, k;
  bool trans_a, trans_b;
  double alpha, beta;
};

// Our kernel's operands once b is dense: a's element (i, p) at
// a[ao + i*sai + p*sak] (both transposes), b's row p at b[bo + p*ldb],
// c's row i at c[co + i*ldc]; for a batch (blas::gemm_batched), matrix i's
// operands a_bs, b_bs and c_bs elements after matrix i-1's (0: one matrix
// serves every product).
struct OurGemmOperands {
  cl_mem a;
  cl_long ao, sai, sak;
  cl_mem b;
  cl_long bo, ldb;
  cl_mem c;
  cl_long co, ldc;
  cl_long batch = 1;
  cl_long a_bs = 0, b_bs = 0, c_bs = 0;
};

// Enqueues our kernel as candidate `candidate` (ops/gemm_candidates.hpp)
// of the gemm program of dtype.
void enqueue_our_gemm(Launcher& launch, int candidate, DType dtype, const GemmDims& g, const OurGemmOperands& ops);

// The candidate our kernel runs for this call (ops/gemm_tune.cpp):
// XYLEM_OPENCL_GEMM_CANDIDATE's when set, else the tuning cache's for the
// shape class, else (with tuning on) the fastest measured now and stored,
// else the default, 0.
[[nodiscard]] int gemm_candidate_for(Launcher& launch, DType dtype, const GemmDims& g);

// Row stride of a row-major matrix view; with one row it means nothing, but
// CLBlast still checks ld >= columns.
[[nodiscard]] std::int64_t leading_dim(const plugin::TensorArg& matrix) noexcept;

// blas::gemm and gemm_batched of every float dtype (ops/gemm.cpp).
[[nodiscard]] EventPtr launch_gemm(Launcher& launch);

// blas::gemm of f16 or bf16 (ops/gemm_half.cpp): through dense f32 copies
// of the operands and launch_gemm's f32 path.
[[nodiscard]] EventPtr launch_gemm_half(Launcher& launch);

// c = beta*c over an m x n matrix view (zeros without reading c when beta
// is 0).
void scale_c(Launcher& launch, const plugin::TensorArg& c, std::int64_t m, std::int64_t n, double beta);

// Whether blas::gemm runs CLBlast on this device (otherwise our kernel).
[[nodiscard]] bool gemm_uses_clblast(const DeviceInfo& info);

// Enqueues c = alpha*op(a)*op(b) + beta*c (matrix views as blas::gemm
// takes them, any float dtype) as one step of another call: after the
// call's dependencies, and the launcher's later commands (and finish())
// after it. For the ops built on gemm: blas::gemm_batched, convolution.
void enqueue_gemm(Launcher& launch, const plugin::TensorArg& a, const plugin::TensorArg& b,
                  const plugin::TensorArg& c, bool trans_a, bool trans_b, double alpha, double beta);

// blas::gemm_batched (ops/gemm_batched.cpp).
[[nodiscard]] EventPtr launch_gemm_batched(Launcher& launch);

// Enqueues the `batch` products c_i = alpha*op(a_i)*op(b_i) + beta*c_i of
// our kernel as one launch (f32, f64), after the call's dependencies.
// a, b and c are matrix 0's views; matrix i's sit i*a_bs, i*b_bs and i*c_bs
// elements further. m, n and k are non-zero and alpha is not 0.
void our_gemm_batched(Launcher& launch, const GemmDims& g, const plugin::TensorArg& a, const plugin::TensorArg& b,
                      const plugin::TensorArg& c, std::int64_t batch, std::int64_t a_bs, std::int64_t b_bs,
                      std::int64_t c_bs);

#ifdef XYLEM_OPENCL_HAVE_CLBLAST
// Enqueues CLBlast's Gemm on the launcher's queue, after the call's inputs.
void clblast_gemm(Launcher& launch, const GemmDims& g);
// The same for the launcher's blas::gemm_batched call (f32, f64): CLBlast's
// GemmStridedBatched over its rank-3 views, `batch` matrices.
void clblast_gemm_batched(Launcher& launch, const GemmDims& g, std::int64_t batch);
#endif

}  // namespace xylem::opencl

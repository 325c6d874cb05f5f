// blas::gemm_batched, f32 and f64: one launch of our kernel over the whole
// batch where gemm runs ours (CPU devices: on PoCL on the 16-core Xeon, 64
// products of [256, 256] took 8.7 ms as 64 launches), CLBlast's
// GemmStridedBatched where gemm runs CLBlast. Otherwise (f16, bf16; CLBlast
// with a shared operand) each matrix of the batch through blas::gemm's
// path (ops/gemm.cpp; f16 and bf16 through f32), on views at offset +
// batch*stride(0). A batch stride of 0 (or a batch of one) in a or b makes
// that matrix serve every batch.
#include <cstdint>

#include "frameworks/opencl/ops/gemm.hpp"

namespace xylem::opencl {

namespace {

// The step from one matrix of a rank-3 view [batch, rows, cols] to the
// next: 0 when one matrix serves the batch.
std::int64_t batch_stride(const plugin::TensorArg& t) {
  return t.view.dims()[0] > 1 ? t.view.strides()[0] : 0;
}

// Matrix `index` of a rank-3 view [batch, rows, cols].
plugin::TensorArg batch_matrix(const plugin::TensorArg& t, std::int64_t index) {
  const auto dims = t.view.dims();
  const auto strides = t.view.strides();
  const std::int64_t stride = batch_stride(t);
  const std::int64_t matrix_dims[] = {dims[1], dims[2]};
  const std::int64_t matrix_strides[] = {strides[1], strides[2]};
  return plugin::TensorArg{t.data, Layout::strided(matrix_dims, matrix_strides, t.view.offset() + index * stride),
                           t.dtype};
}

// One matrix's product of the call.
GemmDims matrix_dims(const plugin::args::blas_gemm_batched<plugin::TensorArg>& args) {
  GemmDims g{};
  g.trans_a = args.transpose_a != 0;
  g.trans_b = args.transpose_b != 0;
  g.m = args.c.view.dims()[1];
  g.n = args.c.view.dims()[2];
  g.k = g.trans_a ? args.a.view.dims()[1] : args.a.view.dims()[2];
  g.alpha = args.alpha;
  g.beta = args.beta;
  return g;
}

}  // namespace

EventPtr launch_gemm_batched(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_gemm_batched>(launch.call());
  const plugin::TensorArg &a = args.a, &b = args.b, &c = args.c;
  const bool trans_a = args.transpose_a != 0, trans_b = args.transpose_b != 0;
  const std::int64_t batch = c.view.dims()[0];
  const bool real = c.dtype == DType::f32 || c.dtype == DType::f64;
  if (real && batch > 1 && !gemm_uses_clblast(launch.device().info())) {
    const GemmDims g = matrix_dims(args);
    // Nothing to multiply: blas::gemm's own path scales c, per matrix.
    if (g.m > 0 && g.n > 0 && g.k > 0 && g.alpha != 0) {
      our_gemm_batched(launch, g, batch_matrix(a, 0), batch_matrix(b, 0), batch_matrix(c, 0), batch,
                       batch_stride(a), batch_stride(b), batch_stride(c));
      return launch.finish();
    }
  }
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  // On devices where gemm runs CLBlast, one strided-batched call instead
  // of a launch per matrix (f16 and bf16 still go matrix by matrix,
  // through their f32 copies, and so do operands shared by every batch:
  // CLBlast rejects a batch stride of 0).
  if (real && gemm_uses_clblast(launch.device().info()) &&
      (batch == 1 || (a.view.strides()[0] != 0 && b.view.strides()[0] != 0))) {
    const GemmDims g = matrix_dims(args);
    if (batch == 0 || g.m == 0 || g.n == 0) return launch.finish();
    if (g.k > 0 && g.alpha != 0) {
      // CLBlast reads c even with beta == 0, and c may hold NaN: clear it.
      if (g.beta == 0) {
        for (std::int64_t i = 0; i < batch; ++i) scale_c(launch, batch_matrix(c, i), g.m, g.n, 0);
      }
      clblast_gemm_batched(launch, g, batch);
      return launch.finish();
    }
  }
#endif
  for (std::int64_t i = 0; i < batch; ++i) {
    enqueue_gemm(launch, batch_matrix(a, i), batch_matrix(b, i), batch_matrix(c, i), trans_a, trans_b, args.alpha,
                 args.beta);
  }
  return launch.finish();
}

}  // namespace xylem::opencl

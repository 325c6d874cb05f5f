// blas::gemm_batched: CLBlast's GemmStridedBatched where gemm runs CLBlast
// (f32, f64), otherwise each matrix of the batch through blas::gemm's path
// (ops/gemm.cpp; f16 and bf16 through f32), on views at offset +
// batch*stride(0). A batch stride of 0 (or a batch of one) in a
// or b makes that matrix serve every batch.
#include <cstdint>

#include "frameworks/opencl/ops/gemm.hpp"

namespace xylem::opencl {

namespace {

// Matrix `index` of a rank-3 view [batch, rows, cols].
plugin::TensorArg batch_matrix(const plugin::TensorArg& t, std::int64_t index) {
  const auto dims = t.view.dims();
  const auto strides = t.view.strides();
  const std::int64_t stride = dims[0] > 1 ? strides[0] : 0;
  const std::int64_t matrix_dims[] = {dims[1], dims[2]};
  const std::int64_t matrix_strides[] = {strides[1], strides[2]};
  return plugin::TensorArg{t.data, Layout::strided(matrix_dims, matrix_strides, t.view.offset() + index * stride),
                           t.dtype};
}

}  // namespace

EventPtr launch_gemm_batched(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_gemm_batched>(launch.call());
  const plugin::TensorArg &a = args.a, &b = args.b, &c = args.c;
  const bool trans_a = args.transpose_a != 0, trans_b = args.transpose_b != 0;
  const std::int64_t batch = c.view.dims()[0];
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  // On devices where gemm runs CLBlast, one strided-batched call instead
  // of a launch per matrix (f16 and bf16 still go matrix by matrix,
  // through their f32 copies, and so do operands shared by every batch:
  // CLBlast rejects a batch stride of 0).
  if ((c.dtype == DType::f32 || c.dtype == DType::f64) && gemm_uses_clblast(launch.device().info()) &&
      (batch == 1 || (a.view.strides()[0] != 0 && b.view.strides()[0] != 0))) {
    GemmDims g{};
    g.m = c.view.dims()[1];
    g.n = c.view.dims()[2];
    g.k = trans_a ? a.view.dims()[1] : a.view.dims()[2];
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.alpha = args.alpha;
    g.beta = args.beta;
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

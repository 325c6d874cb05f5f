// ger, syrk, trsm and geam: kernels/blas_extra.cl, f32 and f64, or
// CLBlast for ger, syrk and trsm where gemm runs CLBlast (GPUs; see
// gemm.cpp for why CPU devices run ours). Matrix views arrive with unit
// column stride (op.hpp's contract), so each is an offset and a row stride;
// reading one transposed swaps its two strides. iamin is in blas.cpp,
// beside iamax, whose kernels it shares.
#include "frameworks/opencl/ops/blas_extra.hpp"
#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kBlasExtraProgram{"blas_extra", {&sources::blas_extra}, Helpers::none, Passes::reals};

using plugin::OpId;
using plugin::TensorArg;

// Strides of op(m)'s rows and columns, m a row-major view.
struct OpStrides {
  cl_long row, col;
};
OpStrides op_strides(const TensorArg& m, bool transposed) noexcept {
  const cl_long ld = leading_dim(m);
  return transposed ? OpStrides{1, ld} : OpStrides{ld, 1};
}

// A vector's stride; with fewer than two elements it means nothing.
cl_long vec_stride(const TensorArg& v) noexcept { return v.view.dims()[0] > 1 ? v.view.strides()[0] : 1; }

const KernelInfo& kernel_of(Launcher& launch, DType dtype, const char* name) {
  return launch.program(kBlasExtraProgram, dtype).kernel(join({name, suffix(dtype)}));
}

void ger(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_ger>(launch.call());
  const TensorArg &x = args.x, &y = args.y, &a = args.a;
  const std::int64_t m = a.view.dims()[0], n = a.view.dims()[1];
  if (m == 0 || n == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  if (gemm_uses_clblast(launch.device().info()) && clblast_ger(launch)) return;
#endif
  launch.run(kernel_of(launch, a.dtype, "ger"), static_cast<std::size_t>(m * n), mem_of(x), offset_of(x),
             vec_stride(x), mem_of(y), offset_of(y), vec_stride(y), mem_of(a), offset_of(a), cl_long{leading_dim(a)},
             cl_long{m}, cl_long{n}, Scalar{a.dtype, args.alpha});
}

// Our kernel with the product scaled by `alpha` (0: beta*c alone).
void our_syrk(Launcher& launch, double alpha) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(launch.call());
  const TensorArg &a = args.a, &c = args.c;
  const bool trans = args.transpose != 0;
  const std::int64_t n = c.view.dims()[0], k = trans ? a.view.dims()[0] : a.view.dims()[1];
  const OpStrides s = op_strides(a, trans);
  launch.run(kernel_of(launch, c.dtype, "syrk"), static_cast<std::size_t>(n * n), mem_of(a), offset_of(a), s.row,
             s.col, mem_of(c), offset_of(c), cl_long{leading_dim(c)}, cl_long{n}, cl_long{k},
             cl_int{args.upper != 0}, Scalar{c.dtype, alpha}, Scalar{c.dtype, args.beta});
}

void syrk(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(launch.call());
  const std::int64_t n = args.c.view.dims()[0];
  if (n == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  const std::int64_t k = args.transpose != 0 ? args.a.view.dims()[0] : args.a.view.dims()[1];
  if (gemm_uses_clblast(launch.device().info()) && k > 0 && args.alpha != 0) {
    // CLBlast reads c even for beta 0, and c may hold NaN there: beta is
    // applied by our kernel first (product left out), then CLBlast adds
    // the product.
    our_syrk(launch, 0);
    clblast_syrk_product(launch);
    return;
  }
#endif
  our_syrk(launch, args.alpha);
}

// Left: op(a) x = alpha b, one right-hand side per column of b, M = op(a).
// Right: x op(a) = alpha b is op(a)^T x^T = alpha b^T, one per row of b,
// M = op(a)^T. M is lower triangular when a's triangle, seen through the
// transposes, is.
void trsm(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_trsm>(launch.call());
  const TensorArg &a = args.a, &b = args.b;
  const std::int64_t m = b.view.dims()[0], n = b.view.dims()[1];
  if (m == 0 || n == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  if (gemm_uses_clblast(launch.device().info())) {
    clblast_trsm(launch);
    return;
  }
#endif
  const bool left = args.left != 0, trans = args.transpose != 0, upper = args.upper != 0;
  const bool m_transposes_a = left == trans;  // M is a^T
  const OpStrides s = op_strides(a, m_transposes_a);
  const bool lower = upper == m_transposes_a;
  const cl_long ldb = leading_dim(b);
  launch.run(kernel_of(launch, b.dtype, "trsm"), static_cast<std::size_t>(left ? n : m), mem_of(a), offset_of(a),
             s.row, s.col, mem_of(b), offset_of(b), left ? ldb : cl_long{1}, left ? cl_long{1} : ldb,
             cl_long{left ? m : n}, cl_long{left ? n : m}, cl_int{lower}, cl_int{args.unit_diagonal != 0},
             Scalar{b.dtype, args.alpha});
}

void geam(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_geam>(launch.call());
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  if (m == 0 || n == 0) return;
  const OpStrides sa = op_strides(a, args.transpose_a != 0), sb = op_strides(b, args.transpose_b != 0);
  launch.run(kernel_of(launch, c.dtype, "geam"), static_cast<std::size_t>(m * n), mem_of(a), offset_of(a), sa.row,
             sa.col, mem_of(b), offset_of(b), sb.row, sb.col, mem_of(c), offset_of(c), cl_long{leading_dim(c)},
             cl_long{m}, cl_long{n}, Scalar{c.dtype, args.alpha}, Scalar{c.dtype, args.beta});
}

EventPtr launch_blas_extra(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::blas_ger:
      ger(launch);
      break;
    case OpId::blas_syrk:
      syrk(launch);
      break;
    case OpId::blas_trsm:
      trsm(launch);
      break;
    case OpId::blas_geam:
      geam(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not one of ger, syrk, trsm, geam");
  }
  return launch.finish();
}

constinit const OpKernel kBlasExtra{launch_blas_extra, {&kBlasExtraProgram}};

}  // namespace

void register_blas_extra(KernelTable& table) {
  for (OpId op : {OpId::blas_ger, OpId::blas_syrk, OpId::blas_trsm, OpId::blas_geam})
    set_dtypes(table, op, kRealDtypes, &kBlasExtra);
}

}  // namespace xylem::opencl

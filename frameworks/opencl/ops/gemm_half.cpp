// blas::gemm of f16 and bf16, on every device (no fp16 support needed):
// a and b are widened into dense f32 buffers (kernels/convert.cl), the f32
// gemm (launch_gemm: ours or CLBlast, as it picks) computes t = alpha *
// op(a) * op(b) into a third, and c = t + beta * c is computed in f32 and
// rounded back into c's view (to nearest even) in one pass. Products thus
// accumulate in f32, and with beta == 0 c is never read.
//
// The buffers are created per call and released as soon as the commands
// are enqueued: OpenCL keeps a buffer alive until the commands queued on
// it complete. Everything runs on the device's in-order queue, so the f32
// gemm, launched with no dependencies of its own, follows the conversions,
// which follow the call's dependencies.
#include <cstdint>

#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

constinit const ProgramSpec kConvertProgram{"convert", {&sources::convert}, Helpers::none, Passes::once};

namespace {

using plugin::TensorArg;

// Items of a conversion kernel over a rows x cols matrix: one per run of
// XY_CVT_W (16) elements of a row.
std::size_t conversion_items(std::int64_t rows, std::int64_t cols) {
  return static_cast<std::size_t>(rows * ((cols + 15) / 16));
}

// The dense f32 copy of a 16-bit matrix view.
Mem widen(Launcher& launch, const ProgramPackage& program, const TensorArg& x) {
  const std::int64_t rows = x.view.dims()[0], cols = x.view.dims()[1];
  Mem y = temporary_buffer(launch, rows * cols, DType::f32);
  launch.run(program.kernel(join({"to_f32", suffix(x.dtype)})), conversion_items(rows, cols), mem_of(x),
             static_cast<cl_long>(x.view.offset()), static_cast<cl_long>(leading_dim(x)), static_cast<cl_long>(rows),
             static_cast<cl_long>(cols), y.get());
  return y;
}

TensorArg dense_f32(const Mem& mem, std::int64_t rows, std::int64_t cols) {
  return TensorArg{mem.get(), Layout{rows, cols}, DType::f32};
}

}  // namespace

EventPtr launch_gemm_half(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_gemm>(launch.call());
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const std::int64_t k = args.transpose_a ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return launch.finish();
  const double alpha = args.alpha, beta = args.beta;
  const ProgramPackage& program = launch.program(kConvertProgram, c.dtype);

  // The f32 gemm reads a and b only when there is something to multiply;
  // otherwise it only clears t, after the call's dependencies.
  Mem a32, b32;
  if (k > 0 && alpha != 0) {
    a32 = widen(launch, program, a);
    b32 = widen(launch, program, b);
  } else {
    a32 = temporary_buffer(launch, 1, DType::f32);
    b32 = temporary_buffer(launch, 1, DType::f32);
    launch.wait_for_deps();
  }
  Mem t32 = temporary_buffer(launch, m * n, DType::f32);

  auto inner_args = args;
  inner_args.a = dense_f32(a32, a.view.dims()[0], a.view.dims()[1]);
  inner_args.b = dense_f32(b32, b.view.dims()[0], b.view.dims()[1]);
  inner_args.c = dense_f32(t32, m, n);
  inner_args.beta = 0;  // beta*c is added while rounding back
  const plugin::OpCall inner = plugin::pack(inner_args);
  {
    Launcher f32_launch(launch.device(), inner, Deps{});
    (void)launch_gemm(f32_launch);
  }

  launch.run(program.kernel(join({"from_f32", suffix(c.dtype)})), conversion_items(m, n), t32.get(), mem_of(c),
             static_cast<cl_long>(c.view.offset()), static_cast<cl_long>(leading_dim(c)), static_cast<cl_long>(m),
             static_cast<cl_long>(n), static_cast<cl_float>(beta));
  return launch.finish();
}

namespace {

// launch_gemm: blas::gemm_batched goes matrix by matrix, each through here.
constinit const OpKernel kGemmHalf{launch_gemm, {&kConvertProgram, &kGemmProgram}};

}  // namespace

void register_gemm_half(KernelTable& table) {
  for (auto op : {plugin::OpId::blas_gemm, plugin::OpId::blas_gemm_batched})
    for (DType dtype : {DType::f16, DType::bf16}) table.set(op, dtype, &kGemmHalf);
}

}  // namespace xylem::opencl

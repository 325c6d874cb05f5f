// blas::gemm through CLBlast (row-major, leading dimensions from the views'
// row strides). CLBlast takes no event wait list, so the call's
// dependencies become a barrier on our in-order queue first.
#include <clblast.h>

#include <algorithm>
#include <string>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

namespace {

using plugin::TensorArg;

// Row stride of a row-major matrix view; with one row it means nothing, but
// CLBlast still checks ld >= columns.
std::size_t leading_dim(const TensorArg& m) {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return static_cast<std::size_t>(rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols));
}

std::string clblast_status(clblast::StatusCode status) {
  const int code = static_cast<int>(status);
  // Codes above -1000 are OpenCL's own.
  if (code > -1000) return cl_error_name(code);
  std::string text = "CLBlast status ";
  text += std::to_string(code);
  return text;
}

// c = beta*c (zero without reading c when beta is 0).
void scale_c(Launcher& launch, const TensorArg& c, std::int64_t m, std::int64_t n, double beta) {
  const ProgramPackage& program = launch.program(Family::blas);
  launch.run(program.kernel(join({"scale_matrix", suffix(c.dtype)})), static_cast<std::size_t>(m * n), mem_of(c),
             offset_of(c), static_cast<cl_long>(leading_dim(c)), static_cast<cl_long>(m), static_cast<cl_long>(n),
             Scalar{c.dtype, beta});
}

template <class T>
void clblast_gemm(Launcher& launch, std::size_t m, std::size_t n, std::size_t k, double beta) {
  const auto& call = launch.call();
  const TensorArg &a = call.t[0], &b = call.t[1], &c = call.t[2];
  launch.wait_for_deps();
  cl_command_queue queue = launch.device().queue();
  cl_event event = nullptr;
  const auto status = clblast::Gemm<T>(
      clblast::Layout::kRowMajor, call.i[0] ? clblast::Transpose::kYes : clblast::Transpose::kNo,
      call.i[1] ? clblast::Transpose::kYes : clblast::Transpose::kNo, m, n, k, static_cast<T>(call.f[0]), mem_of(a),
      static_cast<std::size_t>(a.view.offset()), leading_dim(a), mem_of(b), static_cast<std::size_t>(b.view.offset()),
      leading_dim(b), static_cast<T>(beta), mem_of(c), static_cast<std::size_t>(c.view.offset()), leading_dim(c),
      &queue, &event);
  if (status != clblast::StatusCode::kSuccess) {
    if (event) clReleaseEvent(event);
    throw Error(status == clblast::StatusCode::kOpenCLOutOfResources || status == clblast::StatusCode::kOpenCLOutOfHostMemory
                    ? ErrorCode::out_of_memory
                    : ErrorCode::internal,
                launch.describe() + ": CLBlast Gemm failed: " + clblast_status(status));
  }
  launch.enqueued(event);
}

}  // namespace

EventPtr launch_gemm(Launcher& launch) {
  const auto& call = launch.call();
  const TensorArg &a = call.t[0], &c = call.t[2];
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  const std::int64_t k = call.i[0] ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return launch.finish();
  const double beta = call.f[1];
  // c = beta*c alone when there is nothing to multiply. With beta == 0, c
  // may hold NaN, and NaN*0 is NaN: clear it first, then accumulate.
  if (k == 0 || call.f[0] == 0) {
    scale_c(launch, c, m, n, beta);
    return launch.finish();
  }
  if (beta == 0) scale_c(launch, c, m, n, 0);
  const auto um = static_cast<std::size_t>(m), un = static_cast<std::size_t>(n), uk = static_cast<std::size_t>(k);
  if (c.dtype == DType::f64) {
    clblast_gemm<double>(launch, um, un, uk, beta);
  } else {
    clblast_gemm<float>(launch, um, un, uk, beta);
  }
  return launch.finish();
}

}  // namespace xylem::opencl

// blas::gemm through CLBlast. CLBlast takes no event wait list, so the
// call's dependencies become a barrier on our in-order queue first.
#include <clblast.h>

#include <string>

#include "frameworks/opencl/ops/gemm.hpp"

namespace xylem::opencl {

namespace {

using plugin::TensorArg;

std::string clblast_status(clblast::StatusCode status) {
  const int code = static_cast<int>(status);
  // Codes above -1000 are OpenCL's own.
  if (code > -1000) return cl_error_name(code);
  std::string text = "CLBlast status ";
  text += std::to_string(code);
  return text;
}

template <class T>
void gemm_as(Launcher& launch, const GemmDims& g) {
  const auto& call = launch.call();
  const TensorArg &a = call.t[0], &b = call.t[1], &c = call.t[2];
  launch.wait_for_deps();
  cl_command_queue queue = launch.device().queue();
  cl_event event = nullptr;
  const auto size = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  const auto status = clblast::Gemm<T>(
      clblast::Layout::kRowMajor, g.trans_a ? clblast::Transpose::kYes : clblast::Transpose::kNo,
      g.trans_b ? clblast::Transpose::kYes : clblast::Transpose::kNo, size(g.m), size(g.n), size(g.k),
      static_cast<T>(g.alpha), mem_of(a), size(a.view.offset()), size(leading_dim(a)), mem_of(b),
      size(b.view.offset()), size(leading_dim(b)), static_cast<T>(g.beta), mem_of(c), size(c.view.offset()),
      size(leading_dim(c)), &queue, &event);
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

void clblast_gemm(Launcher& launch, const GemmDims& g) {
  if (launch.call().t[2].dtype == DType::f64) {
    gemm_as<double>(launch, g);
  } else {
    gemm_as<float>(launch, g);
  }
}

}  // namespace xylem::opencl

// Local response normalisation, forward and backward: kernels/lrn.cl.
// Backward first writes every element's scale into the device's scratch.
#include <cstdint>

#include "frameworks/opencl/ops/nn_launch.hpp"

namespace xylem::opencl {

EventPtr launch_lrn(Launcher& launch) {
  const auto& call = launch.call();
  const auto& t = call.t;
  const plugin::TensorArg& x = t[0];
  const DType dtype = x.dtype;
  const auto dims = x.view.dims();
  const cl_long channels = dims[1], height = dims[2], width = dims[3];
  const std::int64_t total = x.view.numel();
  if (total == 0) return launch.finish();
  const auto size = static_cast<cl_long>(call.i[0]);
  const Scalar alpha = compute_scalar(dtype, call.f[0]), beta = compute_scalar(dtype, call.f[1]),
               k = compute_scalar(dtype, call.f[2]);
  const ProgramPackage& program = launch.program(Family::lrn);
  const auto items = static_cast<std::size_t>(total);
  if (call.op == plugin::OpId::nn_lrn) {
    launch.run(program.kernel(join({"lrn", suffix(dtype)})), items, mem_of(x), view_arg(x), mem_of(t[1]),
               view_arg(t[1]), channels, height, width, static_cast<cl_long>(total), size, alpha, beta, k);
    return launch.finish();
  }
  cl_mem scale = launch.device().scratch(0, items * size_of(compute_dtype(dtype)));
  launch.run(program.kernel(join({"lrn_scale", suffix(dtype)})), items, mem_of(x), view_arg(x), scale, channels,
             height, width, static_cast<cl_long>(total), size, alpha, k);
  launch.run(program.kernel(join({"lrn_grad", suffix(dtype)})), items, mem_of(x), view_arg(x), mem_of(t[1]),
             view_arg(t[1]), mem_of(t[2]), view_arg(t[2]), scale, mem_of(t[3]), view_arg(t[3]), channels, height,
             width, static_cast<cl_long>(total), size, alpha, beta);
  return launch.finish();
}

}  // namespace xylem::opencl

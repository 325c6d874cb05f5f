// optim::sgd_step and adam_step: kernels/optim.cl, one kernel per call over
// the contiguous tensors, in place.
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kOptimProgram{"optim", {&sources::optim}, Helpers::none, Passes::reals};

cl_long offset_of(const TensorArg& t) { return cl_long{t.view.offset()}; }

void sgd(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::optim_sgd_step>(launch.call());
  const DType dtype = a.param.dtype;
  const cl_long n = a.param.view.numel();
  const bool has_buffer = a.momentum_buffer.data != nullptr;
  const TensorArg& buffer = has_buffer ? a.momentum_buffer : a.param;
  const KernelInfo& kernel = launch.program(kOptimProgram, dtype).kernel(join({"sgd_step", suffix(dtype)}));
  launch.run_chunks_in_place(kernel, static_cast<std::size_t>(n), mem_of(a.param), offset_of(a.param), mem_of(a.grad),
                             offset_of(a.grad), mem_of(buffer), offset_of(buffer), cl_int{has_buffer ? 1 : 0}, n,
                             Scalar{dtype, a.lr}, Scalar{dtype, a.momentum}, Scalar{dtype, a.dampening},
                             Scalar{dtype, a.weight_decay}, cl_int{a.nesterov != 0}, cl_int{a.first_step != 0});
}

void adam(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::optim_adam_step>(launch.call());
  const DType dtype = a.param.dtype;
  const cl_long n = a.param.view.numel();
  const KernelInfo& kernel = launch.program(kOptimProgram, dtype).kernel(join({"adam_step", suffix(dtype)}));
  launch.run_chunks_in_place(
      kernel, static_cast<std::size_t>(n), mem_of(a.param), offset_of(a.param), mem_of(a.grad), offset_of(a.grad),
      mem_of(a.exp_avg), offset_of(a.exp_avg), mem_of(a.exp_avg_sq), offset_of(a.exp_avg_sq), n, Scalar{dtype, a.lr},
      Scalar{dtype, a.beta1}, Scalar{dtype, a.beta2}, Scalar{dtype, a.eps}, Scalar{dtype, a.weight_decay},
      Scalar{dtype, a.bias_correction1}, Scalar{dtype, a.bias_correction2}, cl_int{a.decoupled != 0});
}

EventPtr launch_optim(Launcher& launch) {
  if (launch.call().op == OpId::optim_sgd_step)
    sgd(launch);
  else
    adam(launch);
  return launch.finish();
}

constinit const OpKernel kOptim{launch_optim, {&kOptimProgram}};

}  // namespace

void register_optim(KernelTable& table) {
  set_dtypes(table, OpId::optim_sgd_step, kRealDtypes, &kOptim);
  set_dtypes(table, OpId::optim_adam_step, kRealDtypes, &kOptim);
}

}  // namespace xylem::opencl

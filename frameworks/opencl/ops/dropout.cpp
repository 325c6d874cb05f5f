// nn::dropout and dropout_grad: kernels/dropout.cl, one kernel per dtype
// over collapsed views (launch.hpp) walked in runs along their innermost
// axis; the mask is math.h's Philox, as on every framework.
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kDropoutProgram{"dropout", {&sources::dropout}, Helpers::none, Passes::floats};

// nn::dropout and dropout_grad: t0 in, t1 out, the same mask.
EventPtr launch_dropout(Launcher& launch) {
  const plugin::OpCall& call = launch.call();
  const TensorArg& x = call.t[0];
  const TensorArg& y = call.t[1];
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel == 0) return launch.finish();
  const KernelInfo& kernel = launch.program(kDropoutProgram, x.dtype).kernel(join({"dropout", suffix(x.dtype)}));
  launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(x), mem_of(y), c.layout,
                    cl_long{c.numel}, static_cast<cl_float>(call.f[0]), Scalar{x.dtype, call.f[0]},
                    static_cast<cl_ulong>(call.i[0]), static_cast<cl_ulong>(call.i[1]));
  return launch.finish();
}

constinit const OpKernel kDropout{launch_dropout, {&kDropoutProgram}};

}  // namespace

void register_dropout(KernelTable& table) {
  set_dtypes(table, OpId::nn_dropout, kFloatDtypes, &kDropout);
  set_dtypes(table, OpId::nn_dropout_grad, kFloatDtypes, &kDropout);
}

}  // namespace xylem::opencl

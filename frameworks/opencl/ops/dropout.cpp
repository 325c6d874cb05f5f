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

// nn::dropout (x -> y) and dropout_grad (dy -> dx): the same mask.
void apply_mask(Launcher& launch, const TensorArg& x, const TensorArg& y, std::int64_t seed, std::int64_t offset,
                double p) {
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel == 0) return;
  const KernelInfo& kernel = launch.program(kDropoutProgram, x.dtype).kernel(join({"dropout", suffix(x.dtype)}));
  launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(x), mem_of(y), c.layout,
                    cl_long{c.numel}, static_cast<cl_float>(p), Scalar{x.dtype, p}, static_cast<cl_ulong>(seed),
                    static_cast<cl_ulong>(offset));
}

EventPtr launch_dropout(Launcher& launch) {
  if (launch.call().op == OpId::nn_dropout) {
    const auto a = plugin::unpack<plugin::args::nn_dropout>(launch.call());
    apply_mask(launch, a.x, a.y, a.seed, a.offset, a.p);
  } else {
    const auto a = plugin::unpack<plugin::args::nn_dropout_grad>(launch.call());
    apply_mask(launch, a.dy, a.dx, a.seed, a.offset, a.p);
  }
  return launch.finish();
}

constinit const OpKernel kDropout{launch_dropout, {&kDropoutProgram}};

}  // namespace

void register_dropout(KernelTable& table) {
  set_dtypes(table, OpId::nn_dropout, kFloatDtypes, &kDropout);
  set_dtypes(table, OpId::nn_dropout_grad, kFloatDtypes, &kDropout);
}

}  // namespace xylem::opencl

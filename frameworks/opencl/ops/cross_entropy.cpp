// nn::cross_entropy and its gradient: kernels/cross_entropy.cl, a
// work-group per row of the [N, C] logits.
#include <string>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/rows.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpCall;
using plugin::OpId;

constinit const ProgramSpec kCrossEntropyProgram{
    "cross_entropy", {&sources::exp_sums, &sources::cross_entropy}, Helpers::rows, Passes::floats};

const KernelInfo& kernel_for(Launcher& launch, std::string_view base, DType dtype) {
  return launch.program(kCrossEntropyProgram, dtype).kernel(join({base, suffix(dtype)}));
}

// cross_entropy (t0 = x [N, C], t1 = target, t2 = loss) and its gradient
// (t2 = dloss, t3 = dx): a work-group per row.
void cross_entropy(Launcher& launch, const OpCall& call, bool grad) {
  const auto &x = call.t[0], &target = call.t[1];
  const std::int64_t n = x.view.dims()[0], classes = x.view.dims()[1];
  if (n == 0) return;
  const DType dtype = x.dtype;
  const KernelInfo& kernel = kernel_for(launch, grad ? "cross_entropy_grad" : "cross_entropy", dtype);
  // Always grouped (an item per row would serialise short batches).
  const std::size_t local = plan_rows(launch.device(), kernel, classes, 1, n).local;
  const auto groups = static_cast<std::size_t>(n);
  if (grad) {
    const auto &dloss = call.t[2], &dx = call.t[3];
    launch.run_groups(kernel, groups, local, mem_of(x), view_arg(x), mem_of(target), view_arg(target), mem_of(dloss),
                      view_arg(dloss), mem_of(dx), view_arg(dx), cl_long{classes}, group_scratch(dtype, local));
  } else {
    const auto& loss = call.t[2];
    launch.run_groups(kernel, groups, local, mem_of(x), view_arg(x), mem_of(target), view_arg(target), mem_of(loss),
                      view_arg(loss), cl_long{classes}, group_scratch(dtype, local));
  }
}

EventPtr launch_cross_entropy(Launcher& launch) {
  const OpCall& call = launch.call();
  switch (call.op) {
    case OpId::nn_cross_entropy:
      cross_entropy(launch, call, false);
      break;
    case OpId::nn_cross_entropy_grad:
      cross_entropy(launch, call, true);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a cross_entropy op");
  }
  return launch.finish();
}

constinit const OpKernel kCrossEntropy{launch_cross_entropy, {&kCrossEntropyProgram}};

}  // namespace

void register_cross_entropy(KernelTable& table) {
  set_dtypes(table, OpId::nn_cross_entropy, kFloatDtypes, &kCrossEntropy);
  set_dtypes(table, OpId::nn_cross_entropy_grad, kFloatDtypes, &kCrossEntropy);
}

}  // namespace xylem::opencl

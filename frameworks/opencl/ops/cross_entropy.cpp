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

// cross_entropy (x [N, C], target, loss) and its gradient (x, target,
// dloss, dx): a work-group per row; `outputs` are the view arguments after
// x's and target's.
template <class... Outputs>
void run_rows(Launcher& launch, std::string_view name, std::int64_t ignore_index, const plugin::TensorArg& x,
              const plugin::TensorArg& target, const Outputs&... outputs) {
  const std::int64_t n = x.view.dims()[0], classes = x.view.dims()[1];
  if (n == 0) return;
  const DType dtype = x.dtype;
  const KernelInfo& kernel = kernel_for(launch, name, dtype);
  // Always grouped (an item per row would serialise short batches).
  const std::size_t local = plan_rows(launch.device(), kernel, classes, 1, n).local;
  launch.run_groups(kernel, static_cast<std::size_t>(n), local, mem_of(x), view_arg(x), mem_of(target),
                    view_arg(target), outputs..., cl_long{classes}, cl_long{ignore_index},
                    group_scratch(dtype, local));
}

EventPtr launch_cross_entropy(Launcher& launch) {
  const OpCall& call = launch.call();
  switch (call.op) {
    case OpId::nn_cross_entropy: {
      const auto a = plugin::unpack<plugin::args::nn_cross_entropy>(call);
      run_rows(launch, "cross_entropy", a.ignore_index, a.x, a.target, mem_of(a.loss), view_arg(a.loss));
      break;
    }
    case OpId::nn_cross_entropy_grad: {
      const auto a = plugin::unpack<plugin::args::nn_cross_entropy_grad>(call);
      run_rows(launch, "cross_entropy_grad", a.ignore_index, a.x, a.target, mem_of(a.dloss), view_arg(a.dloss),
               mem_of(a.dx), view_arg(a.dx));
      break;
    }
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

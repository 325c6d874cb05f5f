// nn::softmax (and log_softmax) and softmax_grad: kernels/softmax.cl over
// [outer, r, inner] views along axis 1, a work-group or a work-item per
// slice (ops/rows.hpp).
#include <array>
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

// XY_SOFTMAX_VARIANT in kernels/softmax.cl: the op, then the log mode.
int softmax_variant(const OpCall& call) noexcept {
  return (call.op == OpId::nn_softmax_grad ? 2 : 0) + (call.i[0] != 0 ? 1 : 0);
}

std::string softmax_variant_name(int variant) {
  constexpr std::array<const char*, 4> kNames = {"forward", "log", "grad", "log grad"};
  return kNames[static_cast<std::size_t>(variant)];
}

constinit const ProgramSpec kSoftmaxProgram{"softmax",      {&sources::exp_sums, &sources::softmax},
                                            Helpers::rows,  Passes::floats,
                                            4,              "XY_SOFTMAX_VARIANT",
                                            softmax_variant, softmax_variant_name};

const KernelInfo& kernel_for(Launcher& launch, std::string_view base, DType dtype) {
  return launch.program(kSoftmaxProgram, dtype).kernel(join({base, suffix(dtype)}));
}

// softmax (t0 = x, t1 = y) and softmax_grad (t0 = y, t1 = dy, t2 = dx):
// the same walk over [outer, r, inner].
void softmax(Launcher& launch, const OpCall& call, bool grad) {
  const Layout& view = call.t[0].view;
  const std::int64_t outer = view.dims()[0], r = view.dims()[1], inner = view.dims()[2];
  const std::int64_t slices = outer * inner;
  if (slices == 0 || r == 0) return;
  const DType dtype = call.t[0].dtype;
  const std::string base = grad ? "softmax_grad" : "softmax";
  const KernelInfo& rows = kernel_for(launch, base + "_rows", dtype);
  const RowPlan plan = plan_rows(launch.device(), rows, r, inner, slices);
  const auto groups = static_cast<std::size_t>(slices);
  if (grad) {
    const auto &y = call.t[0], &dy = call.t[1], &dx = call.t[2];
    if (plan.grouped) {
      launch.run_groups(rows, groups, plan.local, mem_of(y), view_arg(y), mem_of(dy), view_arg(dy), mem_of(dx),
                        view_arg(dx), cl_long{inner}, cl_long{r}, group_scratch(dtype, plan.local));
    } else {
      const KernelInfo& cols = kernel_for(launch, base + "_cols", dtype);
      const std::size_t local = cols_local(launch.device(), cols);
      launch.run_groups(cols, groups_for(slices, local), local, mem_of(y), view_arg(y), mem_of(dy), view_arg(dy),
                        mem_of(dx), view_arg(dx), cl_long{inner}, cl_long{r}, cl_long{slices});
    }
    return;
  }
  const auto &x = call.t[0], &y = call.t[1];
  if (plan.grouped) {
    launch.run_groups(rows, groups, plan.local, mem_of(x), view_arg(x), mem_of(y), view_arg(y), cl_long{inner},
                      cl_long{r}, group_scratch(dtype, plan.local));
  } else {
    const KernelInfo& cols = kernel_for(launch, base + "_cols", dtype);
    const std::size_t local = cols_local(launch.device(), cols);
    launch.run_groups(cols, groups_for(slices, local), local, mem_of(x), view_arg(x), mem_of(y), view_arg(y),
                      cl_long{inner}, cl_long{r}, cl_long{slices});
  }
}

EventPtr launch_softmax(Launcher& launch) {
  const OpCall& call = launch.call();
  switch (call.op) {
    case OpId::nn_softmax:
      softmax(launch, call, false);
      break;
    case OpId::nn_softmax_grad:
      softmax(launch, call, true);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a softmax op");
  }
  return launch.finish();
}

constinit const OpKernel kSoftmax{launch_softmax, {&kSoftmaxProgram}};

}  // namespace

void register_softmax(KernelTable& table) {
  set_dtypes(table, OpId::nn_softmax, kFloatDtypes, &kSoftmax);
  set_dtypes(table, OpId::nn_softmax_grad, kFloatDtypes, &kSoftmax);
}

}  // namespace xylem::opencl

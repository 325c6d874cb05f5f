// nn::softmax (and log_softmax), softmax_grad, cross_entropy and its
// gradient: kernels/softmax.cl. Softmax works on [outer, r, inner] views
// along axis 1, a work-group or a work-item per slice (ops/rows.hpp);
// cross-entropy a work-group per row of its [N, C] logits.
#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/rows.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpCall;
using plugin::OpId;

const KernelInfo& kernel_for(Launcher& launch, std::string_view base, DType dtype) {
  return launch.program(Family::softmax).kernel(join({base, suffix(dtype)}));
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
  const auto log_mode = static_cast<cl_int>(call.i[0] != 0);
  const auto groups = static_cast<std::size_t>(slices);
  if (grad) {
    const auto &y = call.t[0], &dy = call.t[1], &dx = call.t[2];
    if (plan.grouped) {
      launch.run_groups(rows, groups, plan.local, mem_of(y), view_arg(y), mem_of(dy), view_arg(dy), mem_of(dx),
                        view_arg(dx), cl_long{inner}, cl_long{r}, log_mode, group_scratch(dtype, plan.local));
    } else {
      const KernelInfo& cols = kernel_for(launch, base + "_cols", dtype);
      const std::size_t local = cols_local(launch.device(), cols);
      launch.run_groups(cols, groups_for(slices, local), local, mem_of(y), view_arg(y), mem_of(dy), view_arg(dy),
                        mem_of(dx), view_arg(dx), cl_long{inner}, cl_long{r}, log_mode, cl_long{slices});
    }
    return;
  }
  const auto &x = call.t[0], &y = call.t[1];
  if (plan.grouped) {
    launch.run_groups(rows, groups, plan.local, mem_of(x), view_arg(x), mem_of(y), view_arg(y), cl_long{inner},
                      cl_long{r}, log_mode, group_scratch(dtype, plan.local));
  } else {
    const KernelInfo& cols = kernel_for(launch, base + "_cols", dtype);
    const std::size_t local = cols_local(launch.device(), cols);
    launch.run_groups(cols, groups_for(slices, local), local, mem_of(x), view_arg(x), mem_of(y), view_arg(y),
                      cl_long{inner}, cl_long{r}, log_mode, cl_long{slices});
  }
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

}  // namespace

EventPtr launch_softmax(Launcher& launch) {
  const OpCall& call = launch.call();
  switch (call.op) {
    case OpId::nn_softmax:
      softmax(launch, call, false);
      break;
    case OpId::nn_softmax_grad:
      softmax(launch, call, true);
      break;
    case OpId::nn_cross_entropy:
      cross_entropy(launch, call, false);
      break;
    case OpId::nn_cross_entropy_grad:
      cross_entropy(launch, call, true);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a softmax op");
  }
  return launch.finish();
}

}  // namespace xylem::opencl

// math::reduce: kernels/reduce.cl over [outer, r, inner] views, a
// work-group or a work-item per output (ops/rows.hpp).
#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/rows.hpp"
#include "xylem/plugin/math.h"

namespace xylem::opencl {

namespace {

// The CPU path that reduces VW neighbouring outputs at once: x contiguous
// along inner, and inner at least a vector wide.
bool vector_columns(const Device& device, const plugin::TensorArg& x, std::int64_t inner) {
  return (device.info().type & CL_DEVICE_TYPE_CPU) && x.view.strides()[2] == 1 && inner >= 16;
}

}  // namespace

EventPtr launch_reduce(Launcher& launch) {
  const plugin::OpCall& call = launch.call();
  const auto &x = call.t[0], &y = call.t[1];
  const std::int64_t code = call.i[0];
  if (code < 0 || code >= XY_RED_COUNT)
    throw Error(ErrorCode::invalid_argument, launch.describe() + ": unknown reduction code " + std::to_string(code));
  const std::int64_t outer = x.view.dims()[0], r = x.view.dims()[1], inner = x.view.dims()[2];
  const std::int64_t slices = outer * inner;
  if (slices > 0) {
    const ProgramPackage& program = launch.program(Family::reduce);
    const std::string sfx = suffix(x.dtype);
    const KernelInfo& rows = program.kernel(join({"reduce_rows", sfx}));
    const RowPlan plan = plan_rows(launch.device(), rows, r, inner, slices);
    // y is passed twice: as x's type and as i64 (argmax, argmin).
    if (plan.grouped) {
      launch.run_groups(rows, static_cast<std::size_t>(slices), plan.local, mem_of(x), view_arg(x), mem_of(y),
                        mem_of(y), view_arg(y), cl_long{inner}, cl_long{r}, static_cast<cl_int>(code),
                        cl_long{call.i[1]}, group_scratch(x.dtype, plan.local),
                        LocalBytes{plan.local * sizeof(cl_long)});
    } else if (vector_columns(launch.device(), x, inner)) {
      const std::int64_t lanes = x.dtype == DType::f64 ? 8 : 16;  // VW in kernels/reduce.cl
      const std::int64_t items = outer * ((inner + lanes - 1) / lanes);
      const KernelInfo& vcols = program.kernel(join({"reduce_vcols", sfx}));
      const std::size_t local = cols_local(launch.device(), vcols);
      launch.run_groups(vcols, groups_for(items, local), local, mem_of(x), view_arg(x), mem_of(y), mem_of(y),
                        view_arg(y), cl_long{inner}, cl_long{r}, static_cast<cl_int>(code), cl_long{call.i[1]},
                        cl_long{items});
    } else {
      const KernelInfo& cols = program.kernel(join({"reduce_cols", sfx}));
      const std::size_t local = cols_local(launch.device(), cols);
      launch.run_groups(cols, groups_for(slices, local), local, mem_of(x), view_arg(x), mem_of(y), mem_of(y),
                        view_arg(y), cl_long{inner}, cl_long{r}, static_cast<cl_int>(code), cl_long{call.i[1]},
                        cl_long{slices});
    }
  }
  return launch.finish();
}

}  // namespace xylem::opencl

// math::cast: kernels/cast.cl, one kernel per (source, target) dtype.
#include <string>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

EventPtr launch_cast(Launcher& launch) {
  const plugin::TensorArg& x = launch.call().t[0];
  const plugin::TensorArg& y = launch.call().t[1];
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel > 0) {
    const KernelInfo& kernel = launch.program(Family::cast).kernel(join({"cast_", name(x.dtype), "_", name(y.dtype)}));
    launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(x), mem_of(y), c.layout,
                      cl_long{c.numel});
  }
  return launch.finish();
}

}  // namespace xylem::opencl

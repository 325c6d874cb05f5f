// core::copy_view (and blas::copy): kernels/copy.cl, moving elements as
// bits of their size, so every dtype shares the four kernels.
#include <string>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

void enqueue_copy(Launcher& launch, const plugin::TensorArg& x, const plugin::TensorArg& y) {
  const Collapsed c = collapse({&x.view, &y.view});
  if (c.numel == 0) return;
  const std::string bits = std::to_string(size_of(x.dtype) * 8);
  const ProgramPackage& program = launch.program(Family::copy);
  const cl_long n = c.numel;
  if (c.contiguous) {
    launch.run_runs(program.kernel(join({"copy_c_", bits})), static_cast<std::size_t>(n), mem_of(x), offset_of(x), mem_of(y),
               offset_of(y), n);
  } else {
    launch.run(program.kernel(join({"copy_s_", bits})), static_cast<std::size_t>(n), mem_of(x), mem_of(y), c.layout, n);
  }
}

EventPtr launch_copy(Launcher& launch) {
  enqueue_copy(launch, launch.call().t[0], launch.call().t[1]);
  return launch.finish();
}

}  // namespace xylem::opencl

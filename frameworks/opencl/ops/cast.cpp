// math::cast: kernels/cast.cl, one kernel per (source, target) dtype.
#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kCastProgram{"cast", {&sources::cast}, Helpers::none, Passes::once};

}  // namespace

EventPtr launch_cast(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::math_cast>(launch.call());
  const plugin::TensorArg &x = args.x, &y = args.y;
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel > 0) {
    const KernelInfo& kernel =
        launch.program(kCastProgram, x.dtype).kernel(join({"cast_", name(x.dtype), "_", name(y.dtype)}));
    launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(x), mem_of(y), c.layout,
                      cl_long{c.numel});
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kCast{launch_cast, {&kCastProgram}};

}  // namespace

void register_cast(KernelTable& table) {
  // Every pair of dtypes the device has (f64 only with fp64: Device::supports).
  set_dtypes(table, plugin::OpId::math_cast, kEveryDtype, &kCast);
}

}  // namespace xylem::opencl

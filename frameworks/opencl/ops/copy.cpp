// core::copy_view (and blas::copy): kernels/copy.cl, moving elements as
// bits of their size, so every dtype shares the four kernels.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

constinit const ProgramSpec kCopyProgram{"copy", {&sources::copy}, Helpers::none, Passes::once};

// Tile side of the copy_t kernels (XY_TILE in kernels/copy.cl).
constexpr std::int64_t kTile = 16;

// A two-axis layout whose operands are dense along different axes (a
// transpose): a walk in either order reads or writes one element per cache
// line, so it goes tile by tile.
bool is_transpose(const Collapsed& c) {
  if (c.layout.rank != 2) return false;
  const auto dense = [&](int operand) {
    return std::abs(c.layout.strides[operand][0]) < std::abs(c.layout.strides[operand][1]) ? 0 : 1;
  };
  return dense(0) != dense(1);
}

void enqueue_copy(Launcher& launch, const plugin::TensorArg& x, const plugin::TensorArg& y) {
  const Collapsed c = collapse({&x.view, &y.view});
  if (c.numel == 0) return;
  const std::string bits = std::to_string(size_of(x.dtype) * 8);
  const ProgramPackage& program = launch.program(kCopyProgram, x.dtype);
  const cl_long n = c.numel;
  if (c.contiguous) {
    launch.run_chunks(program.kernel(join({"copy_c_", bits})), static_cast<std::size_t>(n), size_of(x.dtype), mem_of(x),
                      offset_of(x), mem_of(y), offset_of(y), n);
  } else if (is_transpose(c)) {
    // CPU devices: groups of one item taking a run of 64 tiles (16K
    // elements, like a chunk); GPUs: an item per tile.
    const bool cpu = launch.device().info().type & CL_DEVICE_TYPE_CPU;
    const cl_long span = cpu ? 64 : 1;
    const std::int64_t bands = (c.layout.dims[0] + kTile - 1) / kTile;
    const std::int64_t per_band = (c.layout.dims[1] + kTile * span - 1) / (kTile * span);
    const KernelInfo& kernel = program.kernel(join({"copy_t_", bits}));
    const auto items = static_cast<std::size_t>(bands * per_band);
    if (cpu) {
      launch.run_groups(kernel, items, 1, mem_of(x), mem_of(y), c.layout, span);
    } else {
      launch.run(kernel, items, mem_of(x), mem_of(y), c.layout, span);
    }
  } else {
    launch.run(program.kernel(join({"copy_s_", bits})), static_cast<std::size_t>(n), mem_of(x), mem_of(y), c.layout, n);
  }
}

EventPtr launch_copy(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::core_copy_view>(launch.call());
  enqueue_copy(launch, args.x, args.y);
  return launch.finish();
}

namespace {

constinit const OpKernel kCopy{launch_copy, {&kCopyProgram}};

}  // namespace

void register_copy(KernelTable& table) {
  // Bit patterns: every dtype, f64 too without fp64 (Device::supports).
  set_dtypes(table, plugin::OpId::core_copy_view, kEveryDtype, &kCopy);
  set_dtypes(table, plugin::OpId::core_copy_view, kComplexDtypes, &kCopy);
}

}  // namespace xylem::opencl

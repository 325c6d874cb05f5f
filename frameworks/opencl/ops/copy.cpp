// core::copy_view (and blas::copy): kernels/copy.cl, moving elements as
// bits of their size, so every dtype shares the four kernels.
#include <algorithm>
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

// The axis to tile with the innermost one, or -1 when a walk along the
// innermost axis reads and writes whole lines: the axis of smallest stride
// of an operand that steps through it more finely than through the
// innermost one (the native framework's rule, frameworks/native/ops/copy.cpp).
// A broadcast axis (stride 0) reads no new lines: never tiled.
int tile_axis(const KernelLayout& l) {
  const auto inner = static_cast<int>(l.rank) - 1;
  for (int t = 0; t < 2; ++t) {
    int best = -1;
    for (int axis = 0; axis < inner; ++axis)
      if (l.strides[t][axis] != 0 && (best < 0 || std::abs(l.strides[t][axis]) < std::abs(l.strides[t][best])))
        best = axis;
    if (best >= 0 && std::abs(l.strides[t][best]) < std::abs(l.strides[t][inner])) return best;
  }
  return -1;
}

// `l` with axis `a` moved to the second last place, the tiled pair of
// copy_t; the axes before it (planes) keep their order. A copy may walk
// its operands' axes in any order, as long as both walk them alike.
KernelLayout tiled_last(const KernelLayout& l, int a) {
  KernelLayout out = l;
  const auto pair = static_cast<int>(l.rank) - 2;
  for (int axis = a; axis <= pair; ++axis) {
    const int from = axis == pair ? a : axis + 1;
    out.dims[axis] = l.dims[from];
    for (std::size_t t = 0; t < 3; ++t) out.strides[t][axis] = l.strides[t][from];
  }
  return out;
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
    return;
  }
  // CPU devices walk every other layout in long stretches per item (PoCL
  // runs a group's items as a loop, and dividing an element's place out of
  // the layout costs more than moving it): transposes of any rank tile by
  // tile, a run of 64 tiles per item; the rest in chunks of runs along the
  // innermost axis. (An item per element took 11x the native framework's
  // time to concatenate 4 x [2048, 512] f32 along axis 1.) GPUs take a tile
  // per item for a two-axis transpose and an element per item otherwise:
  // neighbouring items on neighbouring elements.
  const bool cpu = launch.device().info().type & CL_DEVICE_TYPE_CPU;
  const int a = cpu ? tile_axis(c.layout) : (is_transpose(c) ? 0 : -1);
  if (a >= 0) {
    const KernelLayout l = tiled_last(c.layout, a);
    const auto pair = static_cast<std::size_t>(l.rank - 2);
    const cl_long span = cpu ? 64 : 1;
    const std::int64_t bands = (l.dims[pair] + kTile - 1) / kTile;
    const std::int64_t per_band = (l.dims[pair + 1] + kTile * span - 1) / (kTile * span);
    const cl_long items = n / (l.dims[pair] * l.dims[pair + 1]) * bands * per_band;
    const KernelInfo& kernel = program.kernel(join({"copy_t_", bits}));
    if (cpu) {
      // Groups of items with some 16K elements between them, so that a
      // group's start is paid for when the tiled axes are short.
      const std::int64_t per_item = std::min(l.dims[pair], kTile) * std::min(l.dims[pair + 1], kTile * span);
      std::size_t local = 1;
      while (local * 2 <= kernel.max_local && static_cast<std::int64_t>(local) * 2 * per_item <= 16384) local *= 2;
      launch.run_groups(kernel, (static_cast<std::size_t>(items) + local - 1) / local, local, mem_of(x), mem_of(y), l,
                        span, items);
    } else {
      launch.run(kernel, static_cast<std::size_t>(items), mem_of(x), mem_of(y), l, span, items);
    }
  } else if (cpu) {
    launch.run_chunks(program.kernel(join({"copy_r_", bits})), static_cast<std::size_t>(n), size_of(x.dtype),
                      mem_of(x), mem_of(y), c.layout, n);
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

// index::check, index::gather and index::scatter: kernels/index.cl (bits
// of every size, one pass) and kernels/index_add.cl (the accumulating
// scatter, per float dtype), both over kernels/index_walk.cl. The views the kernels walk come from
// include/xylem/plugin/index.hpp.
#include <algorithm>
#include <string>
#include <tuple>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/index.hpp"

namespace xylem::opencl {
namespace {

using plugin::OpCall;
using plugin::OpId;

constinit const ProgramSpec kIndexProgram{"index", {&sources::index_walk, &sources::index}, Helpers::none, Passes::once};
constinit const ProgramSpec kIndexAddProgram{"index_add", {&sources::index_walk, &sources::index_add},
                                                Helpers::none, Passes::floats};

// The kernel name part of an index dtype: "int" or "long" (their OpenCL C types).
std::string_view index_type(const plugin::TensorArg& index) { return index.dtype == DType::i32 ? "int" : "long"; }

std::string bits_of(DType dtype) { return std::to_string(size_of(dtype) * 8); }

void check(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::index_check>(launch.call());
  // CPU devices: chunks of runs per item, as gather_r.
  const bool cpu = launch.device().info().type & CL_DEVICE_TYPE_CPU;
  const Collapsed c = cpu ? collapse_for_runs({&a.index.view}) : collapse({&a.index.view});
  if (c.numel == 0) return;
  const ProgramPackage& program = launch.program(kIndexProgram, a.index.dtype);
  if (cpu) {
    launch.run_chunks(program.kernel(join({"index_check_r_", index_type(a.index)})), static_cast<std::size_t>(c.numel),
                      size_of(a.index.dtype), mem_of(a.index), c.layout, cl_long{a.n}, cl_long{c.numel},
                      mem_of(a.flag), offset_of(a.flag));
  } else {
    launch.run(program.kernel(join({"index_check_", index_type(a.index)})), static_cast<std::size_t>(c.numel),
               mem_of(a.index), c.layout, cl_long{a.n}, cl_long{c.numel}, mem_of(a.flag), offset_of(a.flag));
  }
}

void gather(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::index_gather>(launch.call());
  const int axis = int(a.axis);
  const Layout starts = plugin::line_starts(a.x.view, a.index.view, axis);
  const Collapsed c = collapse_for_runs({&a.index.view, &a.y.view, &starts});
  if (c.numel == 0) return;
  const ProgramPackage& program = launch.program(kIndexProgram, a.x.dtype);
  const std::string name = join({bits_of(a.x.dtype), "_", index_type(a.index)});
  const cl_long n = a.x.view.dims()[std::size_t(axis)], step = a.x.view.strides()[std::size_t(axis)];
  // CPU devices: chunks of runs per item (gather_r), so an index_select of
  // rows moves each row in vectors after one division of its place; an
  // item per element divided it out for each element, at 4x the native
  // framework's time (8192 rows of [16384, 512] f32). GPUs: an item per
  // element.
  if (launch.device().info().type & CL_DEVICE_TYPE_CPU) {
    launch.run_chunks(program.kernel(join({"gather_r_", name})), static_cast<std::size_t>(c.numel),
                      size_of(a.x.dtype), mem_of(a.index), mem_of(a.y), mem_of(a.x), c.layout, n, step,
                      cl_long{c.numel});
  } else {
    launch.run(program.kernel(join({"gather_", name})), static_cast<std::size_t>(c.numel), mem_of(a.index),
               mem_of(a.y), mem_of(a.x), c.layout, n, step, cl_long{c.numel});
  }
}

void scatter(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::index_scatter>(launch.call());
  const int axis = int(a.axis);
  const auto ax = std::size_t(axis);
  const Layout ic = plugin::columns(a.index.view, axis), sc = plugin::columns(a.src.view, axis);
  const Layout yc = plugin::columns(plugin::line_starts(a.y.view, a.index.view, axis), axis);
  const Collapsed c = collapse_for_runs({&ic, &sc, &yc});
  if (a.index.view.numel() == 0) return;
  // CPU devices: chunks of columns per item (scatter_r, kernels/index_walk.cl),
  // at least a line of f32 wide and some 8 chunks per compute unit. An
  // item per column read each line of the embedding gradient's rows once
  // per column: 2x the native framework's time ([64, 128] of [50000, 512]).
  // GPUs: an item per column.
  const DeviceInfo& info = launch.device().info();
  const bool cpu = info.type & CL_DEVICE_TYPE_CPU;
  const std::string_view runs = cpu ? "r_" : "";
  const KernelInfo& kernel =
      a.accumulate ? launch.program(kIndexAddProgram, a.y.dtype)
                         .kernel(join({"scatter_add_", runs, index_type(a.index), suffix(a.y.dtype)}))
                   : launch.program(kIndexProgram, a.y.dtype)
                         .kernel(join({"scatter_", runs, bits_of(a.y.dtype), "_", index_type(a.index)}));
  const auto args = std::make_tuple(mem_of(a.index), mem_of(a.src), mem_of(a.y), c.layout, cl_long{c.numel},
                                    cl_long{a.index.view.dims()[ax]}, cl_long{a.index.view.strides()[ax]},
                                    cl_long{a.src.view.strides()[ax]}, cl_long{a.y.view.strides()[ax]},
                                    cl_long{a.y.view.dims()[ax]}, cl_long{a.skip});
  if (cpu) {
    constexpr std::int64_t kLine = 16;
    const std::int64_t want = c.numel / (8 * std::max(info.compute_units, 1));
    const std::int64_t per = std::clamp<std::int64_t>((want + kLine - 1) / kLine * kLine, kLine, 4096);
    const auto items = static_cast<std::size_t>((c.numel + per - 1) / per);
    std::apply([&](const auto&... v) { launch.run_groups(kernel, items, 1, v..., cl_long{per}); }, args);
  } else {
    std::apply([&](const auto&... v) { launch.run(kernel, static_cast<std::size_t>(c.numel), v...); }, args);
  }
}

EventPtr launch_index(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::index_check:
      check(launch);
      break;
    case OpId::index_gather:
      gather(launch);
      break;
    case OpId::index_scatter:
      scatter(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not an index op");
  }
  return launch.finish();
}

constinit const OpKernel kIndex{launch_index, {&kIndexProgram}};
constinit const OpKernel kIndexFloat{launch_index, {&kIndexProgram, &kIndexAddProgram}};
constexpr std::array<DType, 4> kBitsOnly = {DType::i32, DType::i64, DType::u8, DType::boolean};

}  // namespace

void register_index(KernelTable& table) {
  set_dtypes(table, OpId::index_check, std::array<DType, 2>{DType::i32, DType::i64}, &kIndex);
  set_dtypes(table, OpId::index_gather, kEveryDtype, &kIndex);
  set_dtypes(table, OpId::index_scatter, kBitsOnly, &kIndex);
  set_dtypes(table, OpId::index_scatter, kFloatDtypes, &kIndexFloat);
}

}  // namespace xylem::opencl

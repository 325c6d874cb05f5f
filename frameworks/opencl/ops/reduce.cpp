// math::reduce: kernels/reduce.cl over [outer, r, inner] views, a
// work-group or a work-item per output (ops/rows.hpp); i32 and i64:
// kernels/integer.cl's ireduce, an item per part of an output.
#include <algorithm>
#include <array>
#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/rows.hpp"
#include "frameworks/opencl/ops/code_variants.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/math.h"

namespace xylem::opencl {

namespace {

// XY_RED_* in math.h's order.
std::string reduction_name(int code) {
  constexpr std::array<const char*, XY_RED_COUNT> kNames = {"sum", "mean", "max", "min", "argmax", "argmin", "var"};
  return kNames[static_cast<std::size_t>(code)];
}

constinit const ProgramSpec kReduceProgram{"reduce",       {&sources::reduce}, Helpers::rows,
                                           Passes::floats, XY_RED_COUNT,       "XY_REDUCE_CODE",
                                           code_variant,   reduction_name};

// The CPU path that reduces VW neighbouring outputs at once: x contiguous
// along inner, and inner at least a vector wide.
bool vector_columns(const Device& device, const plugin::TensorArg& x, std::int64_t inner) {
  return (device.info().type & CL_DEVICE_TYPE_CPU) && x.view.strides()[2] == 1 && inner >= 16;
}

// Sums and means along r on CPU devices, x contiguous along inner: the
// two passes of kernels/reduce.cl's reduce_col_chunks and reduce_col_total,
// items streaming whole row segments. Measured on PoCL (2-core EPYC),
// [4096, 4096] summed along axis 0: 3 GB/s with an item per column vector
// (reduce_vcols), which reads one line per row, a page apart; 19 GB/s so
// (native: 12-14).
bool column_chunks(const Device& device, const plugin::TensorArg& x, std::int64_t inner, std::int64_t r,
                   std::int64_t code) {
  return (device.info().type & CL_DEVICE_TYPE_CPU) && x.view.strides()[2] == 1 && inner >= 16 && r >= 64 &&
         (code == XY_RED_SUM || code == XY_RED_MEAN);
}

void enqueue_column_chunks(Launcher& launch, const ProgramPackage& program, std::int64_t outer, std::int64_t r,
                           std::int64_t inner) {
  const plugin::OpCall& call = launch.call();
  const auto &x = call.t[0], &y = call.t[1];
  const std::string sfx = suffix(x.dtype);
  constexpr std::int64_t kBlock = 4096;  // XY_COLS_BLOCK in kernels/reduce.cl
  const std::int64_t blocks = (inner + kBlock - 1) / kBlock;
  // Enough items for every core to take several, chunks of at least 32 rows.
  const std::int64_t want = 8 * std::max<std::int64_t>(launch.device().info().compute_units, 1);
  std::int64_t chunks = std::clamp<std::int64_t>((want + outer * blocks - 1) / (outer * blocks), 1,
                                                 std::max<std::int64_t>(r / 32, 1));
  const std::int64_t rows_per_chunk = (r + chunks - 1) / chunks;
  chunks = (r + rows_per_chunk - 1) / rows_per_chunk;
  cl_mem part = launch.device().scratch(0, static_cast<std::size_t>(outer * chunks * inner) * size_of(compute_dtype(x.dtype)));
  const KernelInfo& first = program.kernel(join({"reduce_col_chunks", sfx}));
  const std::size_t local = cols_local(launch.device(), first);
  const std::int64_t items = outer * chunks * blocks;
  launch.run_groups(first, groups_for(items, local), local, mem_of(x), view_arg(x), cl_long{inner}, cl_long{r},
                    cl_long{chunks}, cl_long{rows_per_chunk}, cl_long{items}, part);
  const KernelInfo& second = program.kernel(join({"reduce_col_total", sfx}));
  const std::int64_t lanes = x.dtype == DType::f64 ? 8 : 16;  // VW
  const std::int64_t totals = outer * ((inner + lanes - 1) / lanes);
  launch.run_groups(second, groups_for(totals, local), local, part, cl_long{inner}, cl_long{r}, cl_long{chunks},
                    static_cast<cl_int>(call.i[0] == XY_RED_MEAN), cl_long{totals}, mem_of(y), view_arg(y));
}

}  // namespace

EventPtr launch_reduce(Launcher& launch) {
  const plugin::OpCall& call = launch.call();
  const auto &x = call.t[0], &y = call.t[1];
  const std::int64_t code = call.i[0];  // in range: Device::launch built its program
  const std::int64_t outer = x.view.dims()[0], r = x.view.dims()[1], inner = x.view.dims()[2];
  const std::int64_t slices = outer * inner;
  if (slices > 0) {
    const ProgramPackage& program = launch.program(kReduceProgram, x.dtype);
    const std::string sfx = suffix(x.dtype);
    const KernelInfo& rows = program.kernel(join({"reduce_rows", sfx}));
    const RowPlan plan = plan_rows(launch.device(), rows, r, inner, slices);
    // y is passed twice: as x's type and as i64 (argmax, argmin).
    if (plan.grouped) {
      launch.run_groups(rows, static_cast<std::size_t>(slices), plan.local, mem_of(x), view_arg(x), mem_of(y),
                        mem_of(y), view_arg(y), cl_long{inner}, cl_long{r}, cl_long{call.i[1]}, group_scratch(x.dtype, plan.local),
                        LocalBytes{plan.local * sizeof(cl_long)});
    } else if (column_chunks(launch.device(), x, inner, r, code)) {
      enqueue_column_chunks(launch, program, outer, r, inner);
    } else if (vector_columns(launch.device(), x, inner)) {
      const std::int64_t lanes = x.dtype == DType::f64 ? 8 : 16;  // VW in kernels/reduce.cl
      const std::int64_t items = outer * ((inner + lanes - 1) / lanes);
      const KernelInfo& vcols = program.kernel(join({"reduce_vcols", sfx}));
      const std::size_t local = cols_local(launch.device(), vcols);
      launch.run_groups(vcols, groups_for(items, local), local, mem_of(x), view_arg(x), mem_of(y), mem_of(y),
                        view_arg(y), cl_long{inner}, cl_long{r}, cl_long{call.i[1]}, cl_long{items});
    } else {
      const KernelInfo& cols = program.kernel(join({"reduce_cols", sfx}));
      const std::size_t local = cols_local(launch.device(), cols);
      launch.run_groups(cols, groups_for(slices, local), local, mem_of(x), view_arg(x), mem_of(y), mem_of(y),
                        view_arg(y), cl_long{inner}, cl_long{r}, cl_long{call.i[1]}, cl_long{slices});
    }
  }
  return launch.finish();
}

// i32 and i64: sum, max, min, argmax, argmin (the core refuses mean and
// var). Each output's reduced axis is split into parts when the outputs
// alone are too few to give every compute unit work; ireduce_finish then
// combines each output's parts in order.
EventPtr launch_integer_reduce(Launcher& launch) {
  const plugin::OpCall& call = launch.call();
  const auto &x = call.t[0], &y = call.t[1];
  const std::int64_t code = call.i[0];
  const bool known = code == XY_RED_SUM || code == XY_RED_MAX || code == XY_RED_MIN || code == XY_RED_ARGMAX ||
                     code == XY_RED_ARGMIN;
  if (!known)
    throw Error(ErrorCode::invalid_argument, launch.describe() + ": code " + std::to_string(code) +
                                                 " has no integer form");
  const std::int64_t r = x.view.dims()[1], inner = x.view.dims()[2];
  const std::int64_t outputs = x.view.dims()[0] * inner;
  if (outputs > 0) {
    const ProgramPackage& program = launch.program(kIntegerProgram, x.dtype);
    const std::string sfx = suffix(x.dtype);
    const KernelInfo& first = program.kernel(join({"ireduce", sfx}));
    // Enough items for 64 per compute unit, parts of at least 256 elements.
    const std::int64_t want = 64 * std::max<std::int64_t>(launch.device().info().compute_units, 1);
    const std::int64_t parts =
        std::clamp<std::int64_t>((want + outputs - 1) / outputs, 1, std::max<std::int64_t>(r / 256, 1));
    const std::int64_t items = outputs * parts;
    cl_mem part = parts > 1 ? launch.device().scratch(0, static_cast<std::size_t>(items) * 2 * sizeof(cl_long))
                            : mem_of(y);  // unused: a valid buffer to pass
    const std::size_t local = cols_local(launch.device(), first);
    launch.run_groups(first, groups_for(items, local), local, mem_of(x), view_arg(x), mem_of(y), mem_of(y),
                      view_arg(y), cl_long{inner}, cl_long{r}, static_cast<cl_int>(code), cl_long{parts},
                      cl_long{items}, part);
    if (parts > 1) {
      const KernelInfo& second = program.kernel(join({"ireduce_finish", sfx}));
      const std::size_t local2 = cols_local(launch.device(), second);
      launch.run_groups(second, groups_for(outputs, local2), local2, part, cl_long{parts}, cl_long{outputs},
                        static_cast<cl_int>(code), mem_of(y), mem_of(y), view_arg(y), cl_long{inner});
    }
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kReduce{launch_reduce, {&kReduceProgram}};
constinit const OpKernel kIntegerReduce{launch_integer_reduce, {&kIntegerProgram}};

}  // namespace

void register_reduce(KernelTable& table) {
  set_dtypes(table, plugin::OpId::math_reduce, kFloatDtypes, &kReduce);
  set_dtypes(table, plugin::OpId::math_reduce, kIntegerDtypes, &kIntegerReduce);
}

}  // namespace xylem::opencl

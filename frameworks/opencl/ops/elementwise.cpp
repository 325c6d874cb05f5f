// math::unary, binary, compare and where: kernels/elementwise.cl. One kernel per op and dtype takes the op's code;
// the views are collapsed (launch.hpp) and walked in runs along their
// innermost axis.
#include <string>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/math.h"

namespace xylem::opencl {

namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kElementwiseProgram{"elementwise", {&sources::elementwise}, Helpers::none, Passes::floats};

void check_code(const Launcher& launch, std::int64_t code, std::int64_t count) {
  if (code < 0 || code >= count)
    throw Error(ErrorCode::invalid_argument, launch.describe() + ": unknown op code " + std::to_string(code));
}

// The kernel of `base` for the call's dispatch dtype.
const KernelInfo& kernel_for(Launcher& launch, std::string_view base, DType dtype) {
  return launch.program(kElementwiseProgram, dtype).kernel(join({base, suffix(dtype)}));
}

void unary(Launcher& launch, const OpCall& call) {
  check_code(launch, call.i[0], XY_UN_COUNT);
  const TensorArg& x = call.t[0];
  const TensorArg& y = call.t[1];
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel == 0) return;
  launch.run_chunks(kernel_for(launch, "unary", x.dtype), static_cast<std::size_t>(c.numel), size_of(y.dtype),
                    mem_of(x), mem_of(y), c.layout, cl_long{c.numel}, static_cast<cl_int>(call.i[0]),
                    Scalar{x.dtype, call.f[0]}, Scalar{x.dtype, call.f[1]});
}

void binary(Launcher& launch, const OpCall& call, bool compare) {
  check_code(launch, call.i[0], compare ? std::int64_t{XY_CMP_COUNT} : std::int64_t{XY_BIN_COUNT});
  const TensorArg& a = call.t[0];
  const TensorArg& b = call.t[1];
  const TensorArg& y = call.t[2];
  const Collapsed c = collapse_for_runs({&a.view, &b.view, &y.view});
  if (c.numel == 0) return;
  const auto n = static_cast<std::size_t>(c.numel);
  const auto code = static_cast<cl_int>(call.i[0]);
  if (compare) {
    launch.run_chunks(kernel_for(launch, "compare", a.dtype), n, size_of(y.dtype), mem_of(a), mem_of(b), mem_of(y),
                      c.layout, cl_long{c.numel}, code);
  } else {
    launch.run_chunks(kernel_for(launch, "binary", a.dtype), n, size_of(y.dtype), mem_of(a), mem_of(b), mem_of(y),
                      c.layout, cl_long{c.numel}, code, Scalar{a.dtype, call.f[0]}, Scalar{a.dtype, call.f[1]});
  }
}

// y = cond ? a : b. The kernel writes a dense y (four strided operands
// would not fit its layout); another view of y gets the result through a
// scratch buffer and a copy.
void where(Launcher& launch, const OpCall& call) {
  const TensorArg& a = call.t[0];
  const TensorArg& b = call.t[1];
  const TensorArg& cond = call.t[2];
  const TensorArg& y = call.t[3];
  const Collapsed c = collapse_for_runs({&a.view, &b.view, &cond.view});
  if (c.numel == 0) return;
  const bool dense = y.view.is_contiguous();
  TensorArg staged;
  if (!dense) {
    staged.dtype = y.dtype;
    staged.view = Layout(y.view.dims());
    staged.data = launch.device().scratch(0, static_cast<std::size_t>(c.numel) * size_of(y.dtype));
  }
  const TensorArg& out = dense ? y : staged;
  launch.run_chunks(kernel_for(launch, "where", a.dtype), static_cast<std::size_t>(c.numel), size_of(y.dtype),
                    mem_of(a), mem_of(b), mem_of(cond), mem_of(out), offset_of(out), c.layout, cl_long{c.numel});
  if (!dense) enqueue_copy(launch, staged, y);
}

EventPtr launch_elementwise(Launcher& launch) {
  const OpCall& call = launch.call();
  switch (call.op) {
    case OpId::math_unary:
      unary(launch, call);
      break;
    case OpId::math_binary:
      binary(launch, call, false);
      break;
    case OpId::math_compare:
      binary(launch, call, true);
      break;
    case OpId::math_where:
      where(launch, call);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not an elementwise op");
  }
  return launch.finish();
}

constinit const OpKernel kElementwise{launch_elementwise, {&kElementwiseProgram}};

}  // namespace

void register_elementwise(KernelTable& table) {
  for (OpId op : {OpId::math_unary, OpId::math_binary, OpId::math_compare, OpId::math_where})
    set_dtypes(table, op, kFloatDtypes, &kElementwise);
}

}  // namespace xylem::opencl

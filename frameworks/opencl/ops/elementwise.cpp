// math::unary, binary, compare and where: kernels/elementwise.cl. One
// program per op code and dtype, built on first use of that code; the
// views are collapsed (launch.hpp) and walked in runs along their innermost
// axis. i32 and i64: kernels/integer.cl, one program per type holding every
// integer code (a kernel argument).
#include <array>
#include <string>

#include "frameworks/opencl/ops/code_variants.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/math.h"

namespace xylem::opencl {

namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr auto kUnaryNames = XY_CODE_NAMES(XY_UN_COUNT, XY_UNARY_FORMULAS(XY_CODE_NAME_AT, , , , , , , , ));
constexpr auto kBinaryNames = XY_CODE_NAMES(XY_BIN_COUNT, XY_BINARY_FORMULAS(XY_CODE_NAME_AT, , , , , , , , ));
constexpr auto kCompareNames = XY_CODE_NAMES(XY_CMP_COUNT, XY_COMPARE_FORMULAS(XY_CODE_NAME_AT, , ));
static_assert(all_named(kUnaryNames) && all_named(kBinaryNames) && all_named(kCompareNames));

constinit const ProgramSpec kUnaryProgram{"unary",        {&sources::elementwise}, Helpers::none,
                                          Passes::floats, XY_UN_COUNT,             "XY_UNARY_CODE",
                                          code_variant,   code_variant_name<kUnaryNames>};
constinit const ProgramSpec kBinaryProgram{"binary",       {&sources::elementwise}, Helpers::none,
                                           Passes::floats, XY_BIN_COUNT,            "XY_BINARY_CODE",
                                           code_variant,   code_variant_name<kBinaryNames>};
constinit const ProgramSpec kCompareProgram{"compare",      {&sources::elementwise}, Helpers::none,
                                            Passes::floats, XY_CMP_COUNT,            "XY_COMPARE_CODE",
                                            code_variant,   code_variant_name<kCompareNames>};
constinit const ProgramSpec kWhereProgram{"where", {&sources::elementwise}, Helpers::none, Passes::floats, 1,
                                          "XY_WHERE"};

// The kernel of `base` for the call's dispatch dtype, from its program.
const KernelInfo& kernel_for(Launcher& launch, const ProgramSpec& program, std::string_view base, DType dtype) {
  return launch.program(program, dtype).kernel(join({base, suffix(dtype)}));
}

void unary(Launcher& launch, const OpCall& call) {
  const TensorArg& x = call.t[0];
  const TensorArg& y = call.t[1];
  const Collapsed c = collapse_for_runs({&x.view, &y.view});
  if (c.numel == 0) return;
  launch.run_chunks(kernel_for(launch, kUnaryProgram, "unary", x.dtype), static_cast<std::size_t>(c.numel),
                    size_of(y.dtype), mem_of(x), mem_of(y), c.layout, cl_long{c.numel}, Scalar{x.dtype, call.f[0]},
                    Scalar{x.dtype, call.f[1]});
}

void binary(Launcher& launch, const OpCall& call, bool compare) {
  const TensorArg& a = call.t[0];
  const TensorArg& b = call.t[1];
  const TensorArg& y = call.t[2];
  const Collapsed c = collapse_for_runs({&a.view, &b.view, &y.view});
  if (c.numel == 0) return;
  const auto n = static_cast<std::size_t>(c.numel);
  if (compare) {
    launch.run_chunks(kernel_for(launch, kCompareProgram, "compare", a.dtype), n, size_of(y.dtype), mem_of(a),
                      mem_of(b), mem_of(y), c.layout, cl_long{c.numel});
  } else {
    launch.run_chunks(kernel_for(launch, kBinaryProgram, "binary", a.dtype), n, size_of(y.dtype), mem_of(a),
                      mem_of(b), mem_of(y), c.layout, cl_long{c.numel}, Scalar{a.dtype, call.f[0]},
                      Scalar{a.dtype, call.f[1]});
  }
}

// y = cond ? a : b. The kernel writes a dense y (four strided operands
// would not fit its layout); another view of y gets the result through a
// scratch buffer and a copy.
void where(Launcher& launch, const OpCall& call, const KernelInfo& kernel) {
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
  launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(a), mem_of(b), mem_of(cond),
                    mem_of(out), offset_of(out), c.layout, cl_long{c.numel});
  if (!dense) enqueue_copy(launch, staged, y);
}

// ---- i32 and i64 (kernels/integer.cl) -------------------------------------

// The call's code, refused unless math.h gives it an integer formula.
cl_int integer_code(Launcher& launch, bool has_form) {
  if (!has_form)
    throw Error(ErrorCode::invalid_argument,
                launch.describe() + ": code " + std::to_string(launch.call().i[0]) + " has no integer form");
  return static_cast<cl_int>(launch.call().i[0]);
}

EventPtr launch_integer(Launcher& launch) {
  const OpCall& call = launch.call();
  const TensorArg& a = call.t[0];
  const auto kernel = [&](std::string_view base) -> const KernelInfo& {
    return launch.program(kIntegerProgram, a.dtype).kernel(join({base, suffix(a.dtype)}));
  };
  const int code = call.i[0] >= 0 && call.i[0] < 1024 ? static_cast<int>(call.i[0]) : -1;
  if (call.op == OpId::math_unary) {
    const TensorArg& y = call.t[1];
    const Collapsed c = collapse_for_runs({&a.view, &y.view});
    const cl_int k = integer_code(launch, xy_int_unary_code(code) != 0);
    if (c.numel > 0)
      launch.run_chunks(kernel("iunary"), static_cast<std::size_t>(c.numel), size_of(y.dtype), mem_of(a), mem_of(y),
                        c.layout, cl_long{c.numel}, k);
  } else if (call.op == OpId::math_where) {
    where(launch, call, kernel("iwhere"));
  } else {
    const bool compare = call.op == OpId::math_compare;
    const TensorArg& b = call.t[1];
    const TensorArg& y = call.t[2];
    const Collapsed c = collapse_for_runs({&a.view, &b.view, &y.view});
    const cl_int k = integer_code(launch, compare ? code >= 0 && code < XY_CMP_COUNT : xy_int_binary_code(code) != 0);
    if (c.numel > 0)
      launch.run_chunks(kernel(compare ? "icompare" : "ibinary"), static_cast<std::size_t>(c.numel),
                        size_of(y.dtype), mem_of(a), mem_of(b), mem_of(y), c.layout, cl_long{c.numel}, k);
  }
  return launch.finish();
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
      where(launch, call, kernel_for(launch, kWhereProgram, "where", call.t[0].dtype));
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not an elementwise op");
  }
  return launch.finish();
}

constinit const OpKernel kUnary{launch_elementwise, {&kUnaryProgram}};
constinit const OpKernel kBinary{launch_elementwise, {&kBinaryProgram}};
constinit const OpKernel kCompare{launch_elementwise, {&kCompareProgram}};
constinit const OpKernel kWhere{launch_elementwise, {&kWhereProgram}};
constinit const OpKernel kInteger{launch_integer, {&kIntegerProgram}};

}  // namespace

constinit const ProgramSpec kIntegerProgram{"integer", {&sources::integer}, Helpers::nn, Passes::integers};

void register_elementwise(KernelTable& table) {
  set_dtypes(table, OpId::math_unary, kFloatDtypes, &kUnary);
  set_dtypes(table, OpId::math_binary, kFloatDtypes, &kBinary);
  set_dtypes(table, OpId::math_compare, kFloatDtypes, &kCompare);
  set_dtypes(table, OpId::math_where, kFloatDtypes, &kWhere);
  for (const OpId op : {OpId::math_unary, OpId::math_binary, OpId::math_compare, OpId::math_where})
    set_dtypes(table, op, kIntegerDtypes, &kInteger);
}

}  // namespace xylem::opencl

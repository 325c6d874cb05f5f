// Native math::reduce_epilogue: the reduction into y0, then its tail over y0
// (xylem/plugin/epilogue.hpp), both this framework's own kernels (reduce.cpp,
// fused.cpp's tile evaluator). The result is r times smaller than what the
// reduction reads, so it is still in cache when the tail reads it back.
#include <string>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/epilogue.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
namespace pe = plugin::epilogue;

void reduce_epilogue_kernel(const OpCall& call) {
  const auto e = plugin::unpack<plugin::args::math_reduce_epilogue>(call);
  if (e.code < XY_RED_SUM || e.code > XY_RED_MIN)
    throw Error(ErrorCode::invalid_argument, "math::reduce_epilogue: code " + std::to_string(e.code) +
                                                 " is not sum, mean, max or min");
  if (e.y0.view.numel() == 0) return;
  kernels().get(OpId::math_reduce, e.y0.dtype)(pe::reduce(e));
  kernels().get(OpId::math_fused, e.y0.dtype)(pe::tail(e));
}

}  // namespace

void register_reduce_epilogue(KernelTable& table) {
  for (const DType d : {DType::f16, DType::bf16, DType::f32, DType::f64})
    table.set(OpId::math_reduce_epilogue, d, &reduce_epilogue_kernel);
}

}  // namespace xylem::native

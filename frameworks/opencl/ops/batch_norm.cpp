// nn::batch_norm, forward and backward: kernels/batch_norm.cl. Channel
// statistics take one work-group each; batch_norm_apply and _grad_input
// take runs of rows (ops/row_runs.hpp).
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/row_runs.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kBatchNormProgram{"batch_norm", {&sources::batch_norm}, Helpers::nn, Passes::floats};

const KernelInfo& norm_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(kBatchNormProgram, dtype).kernel(join({name, suffix(dtype)}));
}

LocalBytes group_scratch(DType dtype, std::size_t local) { return LocalBytes{local * size_of(compute_dtype(dtype))}; }

// [N, C, S] of a batch-norm call's x.
struct Ncs {
  std::int64_t n, c, s;
};
Ncs ncs(const TensorArg& x) noexcept { return {x.view.dims()[0], x.view.dims()[1], x.view.dims()[2]}; }

void batch_norm_stats(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_stats>(launch.call());
  const TensorArg &x = args.x, &mean = args.mean, &var = args.var;
  const Ncs d = ncs(x);
  if (d.c == 0) return;
  const KernelInfo& kernel = norm_kernel(launch, "batch_norm_stats", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, d.n * d.s);
  launch.run_groups(kernel, static_cast<std::size_t>(d.c), local, mem_of(x), view_arg(x), static_cast<cl_long>(d.n),
                    static_cast<cl_long>(d.s), mem_of(mean), view_arg(mean), mem_of(var), view_arg(var),
                    group_scratch(x.dtype, local));
}

void batch_norm_apply(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_apply>(launch.call());
  const TensorArg &x = args.x, &mean = args.mean, &var = args.var, &gamma = args.gamma, &beta = args.beta,
                  &y = args.y;
  const Ncs d = ncs(x);
  if (d.n * d.c * d.s == 0) return;
  const RowRuns r = row_runs(launch.device(), d.n * d.c, d.s);
  launch.run(norm_kernel(launch, "batch_norm_apply", x.dtype), r.items, mem_of(x), view_arg(x), mem_of(mean),
             view_arg(mean), mem_of(var), view_arg(var), mem_of(gamma), view_arg(gamma), mem_of(beta),
             view_arg(beta), mem_of(y), view_arg(y), static_cast<cl_long>(d.c), static_cast<cl_long>(d.s),
             static_cast<cl_long>(r.per), static_cast<cl_long>(d.n * d.c), r.narrow,
             compute_scalar(x.dtype, args.eps));
}

void batch_norm_grad_params(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_params>(launch.call());
  const TensorArg &x = args.x, &mean = args.mean, &var = args.var, &dy = args.dy, &dgamma = args.dgamma,
                  &dbeta = args.dbeta;
  const Ncs d = ncs(x);
  if (d.c == 0 || (!dgamma.data && !dbeta.data)) return;
  const KernelInfo& kernel = norm_kernel(launch, "batch_norm_grad_params", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, d.n * d.s);
  launch.run_groups(kernel, static_cast<std::size_t>(d.c), local, mem_of(x), view_arg(x), mem_of(mean),
                    view_arg(mean), mem_of(var), view_arg(var), mem_of(dy), view_arg(dy), static_cast<cl_long>(d.n),
                    static_cast<cl_long>(d.s), compute_scalar(x.dtype, args.eps), mem_of(dgamma), view_arg(dgamma),
                    mem_of(dbeta), view_arg(dbeta), group_scratch(x.dtype, local));
}

void batch_norm_grad_input(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_batch_norm_grad_input>(launch.call());
  const TensorArg &x = args.x, &mean = args.mean, &var = args.var, &gamma = args.gamma, &dgamma = args.dgamma,
                  &dbeta = args.dbeta, &dy = args.dy, &dx = args.dx;
  const Ncs d = ncs(x);
  if (d.n * d.c * d.s == 0) return;
  const RowRuns r = row_runs(launch.device(), d.n * d.c, d.s);
  launch.run(norm_kernel(launch, "batch_norm_grad_input", x.dtype), r.items, mem_of(x), view_arg(x), mem_of(mean),
             view_arg(mean), mem_of(var), view_arg(var), mem_of(gamma), view_arg(gamma), mem_of(dgamma),
             view_arg(dgamma), mem_of(dbeta), view_arg(dbeta), mem_of(dy), view_arg(dy), mem_of(dx), view_arg(dx),
             static_cast<cl_long>(d.c), static_cast<cl_long>(d.s), static_cast<cl_long>(r.per),
             static_cast<cl_long>(d.n * d.c), r.narrow, compute_scalar(x.dtype, args.eps),
             static_cast<cl_int>(args.training != 0));
}

EventPtr launch_batch_norm(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::nn_batch_norm_stats:
      batch_norm_stats(launch);
      break;
    case OpId::nn_batch_norm_apply:
      batch_norm_apply(launch);
      break;
    case OpId::nn_batch_norm_grad_params:
      batch_norm_grad_params(launch);
      break;
    case OpId::nn_batch_norm_grad_input:
      batch_norm_grad_input(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a batch_norm op");
  }
  return launch.finish();
}

constinit const OpKernel kBatchNorm{launch_batch_norm, {&kBatchNormProgram}};

}  // namespace

void register_batch_norm(KernelTable& table) {
  for (OpId op : {OpId::nn_batch_norm_stats, OpId::nn_batch_norm_apply, OpId::nn_batch_norm_grad_params,
                  OpId::nn_batch_norm_grad_input})
    set_dtypes(table, op, kFloatDtypes, &kBatchNorm);
}

}  // namespace xylem::opencl

// Layer and batch normalisation, forward and backward: kernels/norm.cl.
// Row and channel statistics take one work-group each; the per-column sums
// of layer_norm_grad_params take two passes through the device's scratch.
// batch_norm_apply and _grad_input take runs of rows (ops/row_runs.hpp).
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/row_runs.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

const KernelInfo& norm_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(Family::norm).kernel(join({name, suffix(dtype)}));
}

LocalBytes group_scratch(DType dtype, std::size_t local) { return LocalBytes{local * size_of(compute_dtype(dtype))}; }

void layer_norm(Launcher& launch) {
  const auto& t = launch.call().t;
  const TensorArg &x = t[0], &gamma = t[1], &beta = t[2], &y = t[3], &mean = t[4], &rstd = t[5];
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  const auto unit = [](const TensorArg& v) { return !v.data || v.view.dims().back() <= 1 || v.view.strides().back() == 1; };
  const DeviceInfo& info = launch.device().info();
  if ((info.type & CL_DEVICE_TYPE_CPU) && unit(x) && unit(y) && unit(gamma) && unit(beta)) {
    // One item per row, walked in vectors (kernels/norm.cl); groups of
    // rows, a few per compute unit.
    const KernelInfo& kernel = norm_kernel(launch, "layer_norm_rows", x.dtype);
    const auto want = static_cast<std::size_t>(std::max<std::int64_t>(rows / (8 * std::max(info.compute_units, 1)), 1));
    std::size_t local = 1;
    while (local * 2 <= std::min(want, kernel.max_local)) local *= 2;
    const std::size_t groups = (static_cast<std::size_t>(rows) + local - 1) / local;
    launch.run_groups(kernel, groups, local, mem_of(x), view_arg(x), mem_of(gamma), view_arg(gamma), mem_of(beta),
                      view_arg(beta), mem_of(y), view_arg(y), mem_of(mean), view_arg(mean), mem_of(rstd),
                      view_arg(rstd), static_cast<cl_long>(rows), static_cast<cl_long>(n),
                      compute_scalar(x.dtype, launch.call().f[0]));
    return;
  }
  const KernelInfo& kernel = norm_kernel(launch, "layer_norm", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, n);
  launch.run_groups(kernel, static_cast<std::size_t>(rows), local, mem_of(x), view_arg(x), mem_of(gamma),
                    view_arg(gamma), mem_of(beta), view_arg(beta), mem_of(y), view_arg(y), mem_of(mean),
                    view_arg(mean), mem_of(rstd), view_arg(rstd), static_cast<cl_long>(n),
                    compute_scalar(x.dtype, launch.call().f[0]), group_scratch(x.dtype, local));
}

void layer_norm_grad_input(Launcher& launch) {
  const auto& t = launch.call().t;
  const TensorArg &x = t[0], &gamma = t[1], &mean = t[2], &rstd = t[3], &dy = t[4], &dx = t[5];
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  const KernelInfo& kernel = norm_kernel(launch, "layer_norm_grad_input", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, n);
  launch.run_groups(kernel, static_cast<std::size_t>(rows), local, mem_of(x), view_arg(x), mem_of(gamma),
                    view_arg(gamma), mem_of(mean), view_arg(mean), mem_of(rstd), view_arg(rstd), mem_of(dy),
                    view_arg(dy), mem_of(dx), view_arg(dx), static_cast<cl_long>(n), group_scratch(x.dtype, local));
}

void layer_norm_grad_params(Launcher& launch) {
  const auto& t = launch.call().t;
  const TensorArg &x = t[0], &mean = t[1], &rstd = t[2], &dy = t[3], &dgamma = t[4], &dbeta = t[5];
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (n == 0 || (!dgamma.data && !dbeta.data)) return;
  // Split the rows into chunks so that (chunk, column) items fill the
  // device; a chunk's partials are summed in order by the second pass.
  const DeviceInfo& info = launch.device().info();
  const std::int64_t units = std::max(info.compute_units, 1);
  const std::int64_t target = (info.type & CL_DEVICE_TYPE_CPU) ? units * 256 : units * 4096;
  std::int64_t chunks = std::clamp<std::int64_t>((target + n - 1) / n, 1, std::max<std::int64_t>(rows, 1));
  const std::int64_t rows_per_chunk = std::max<std::int64_t>((rows + chunks - 1) / chunks, 1);
  chunks = std::max<std::int64_t>((rows + rows_per_chunk - 1) / rows_per_chunk, 1);
  const std::size_t stat = size_of(compute_dtype(x.dtype));
  cl_mem part = launch.device().scratch(0, static_cast<std::size_t>(2 * chunks * n) * stat);
  launch.run(norm_kernel(launch, "layer_norm_grad_params_p1", x.dtype), static_cast<std::size_t>(chunks * n),
             mem_of(x), view_arg(x), mem_of(mean), view_arg(mean), mem_of(rstd), view_arg(rstd), mem_of(dy),
             view_arg(dy), static_cast<cl_long>(rows), static_cast<cl_long>(n), static_cast<cl_long>(rows_per_chunk),
             static_cast<cl_long>(chunks), part);
  launch.run(norm_kernel(launch, "layer_norm_grad_params_p2", x.dtype), static_cast<std::size_t>(n), part,
             static_cast<cl_long>(chunks), static_cast<cl_long>(n), mem_of(dgamma), view_arg(dgamma), mem_of(dbeta),
             view_arg(dbeta));
}

// [N, C, S] of a batch-norm call's x.
struct Ncs {
  std::int64_t n, c, s;
};
Ncs ncs(const TensorArg& x) noexcept { return {x.view.dims()[0], x.view.dims()[1], x.view.dims()[2]}; }

void batch_norm_stats(Launcher& launch) {
  const auto& t = launch.call().t;
  const TensorArg &x = t[0], &mean = t[1], &var = t[2];
  const Ncs d = ncs(x);
  if (d.c == 0) return;
  const KernelInfo& kernel = norm_kernel(launch, "batch_norm_stats", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, d.n * d.s);
  launch.run_groups(kernel, static_cast<std::size_t>(d.c), local, mem_of(x), view_arg(x), static_cast<cl_long>(d.n),
                    static_cast<cl_long>(d.s), mem_of(mean), view_arg(mean), mem_of(var), view_arg(var),
                    group_scratch(x.dtype, local));
}

void batch_norm_apply(Launcher& launch) {
  const auto& call = launch.call();
  const TensorArg &x = call.t[0], &mean = call.t[1], &var = call.t[2], &gamma = call.t[3], &beta = call.t[4],
                  &y = call.t[5];
  const Ncs d = ncs(x);
  if (d.n * d.c * d.s == 0) return;
  const RowRuns r = row_runs(launch.device(), d.n * d.c, d.s);
  launch.run(norm_kernel(launch, "batch_norm_apply", x.dtype), r.items, mem_of(x), view_arg(x), mem_of(mean),
             view_arg(mean), mem_of(var), view_arg(var), mem_of(gamma), view_arg(gamma), mem_of(beta),
             view_arg(beta), mem_of(y), view_arg(y), static_cast<cl_long>(d.c), static_cast<cl_long>(d.s),
             static_cast<cl_long>(r.per), static_cast<cl_long>(d.n * d.c), r.narrow,
             compute_scalar(x.dtype, call.f[0]));
}

void batch_norm_grad_params(Launcher& launch) {
  const auto& call = launch.call();
  const TensorArg &x = call.t[0], &mean = call.t[1], &var = call.t[2], &dy = call.t[3], &dgamma = call.t[4],
                  &dbeta = call.t[5];
  const Ncs d = ncs(x);
  if (d.c == 0 || (!dgamma.data && !dbeta.data)) return;
  const KernelInfo& kernel = norm_kernel(launch, "batch_norm_grad_params", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, d.n * d.s);
  launch.run_groups(kernel, static_cast<std::size_t>(d.c), local, mem_of(x), view_arg(x), mem_of(mean),
                    view_arg(mean), mem_of(var), view_arg(var), mem_of(dy), view_arg(dy), static_cast<cl_long>(d.n),
                    static_cast<cl_long>(d.s), compute_scalar(x.dtype, call.f[0]), mem_of(dgamma), view_arg(dgamma),
                    mem_of(dbeta), view_arg(dbeta), group_scratch(x.dtype, local));
}

void batch_norm_grad_input(Launcher& launch) {
  const auto& call = launch.call();
  const auto& t = call.t;
  const TensorArg& x = t[0];
  const Ncs d = ncs(x);
  if (d.n * d.c * d.s == 0) return;
  const RowRuns r = row_runs(launch.device(), d.n * d.c, d.s);
  launch.run(norm_kernel(launch, "batch_norm_grad_input", x.dtype), r.items, mem_of(x), view_arg(x), mem_of(t[1]),
             view_arg(t[1]), mem_of(t[2]), view_arg(t[2]), mem_of(t[3]), view_arg(t[3]), mem_of(t[4]),
             view_arg(t[4]), mem_of(t[5]), view_arg(t[5]), mem_of(t[6]), view_arg(t[6]), mem_of(t[7]),
             view_arg(t[7]), static_cast<cl_long>(d.c), static_cast<cl_long>(d.s), static_cast<cl_long>(r.per),
             static_cast<cl_long>(d.n * d.c), r.narrow, compute_scalar(x.dtype, call.f[0]),
             static_cast<cl_int>(call.i[0] != 0));
}

}  // namespace

EventPtr launch_norm(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::nn_layer_norm:
      layer_norm(launch);
      break;
    case OpId::nn_layer_norm_grad_input:
      layer_norm_grad_input(launch);
      break;
    case OpId::nn_layer_norm_grad_params:
      layer_norm_grad_params(launch);
      break;
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
      throw Error(ErrorCode::internal, launch.describe() + ": not a normalisation op");
  }
  return launch.finish();
}

}  // namespace xylem::opencl

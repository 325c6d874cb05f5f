// nn::layer_norm, forward and backward: kernels/layer_norm.cl. Row
// statistics take one work-group each (or, on CPU devices with unit
// strides, an item walking the row in vectors); the per-column sums of
// layer_norm_grad_params take two passes through the device's scratch.
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kLayerNormProgram{"layer_norm", {&sources::layer_norm}, Helpers::nn, Passes::floats};

const KernelInfo& norm_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(kLayerNormProgram, dtype).kernel(join({name, suffix(dtype)}));
}

LocalBytes group_scratch(DType dtype, std::size_t local) { return LocalBytes{local * size_of(compute_dtype(dtype))}; }

void layer_norm(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm>(launch.call());
  const TensorArg &x = args.x, &gamma = args.gamma, &beta = args.beta, &y = args.y, &mean = args.mean,
                  &rstd = args.rstd;
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  const auto unit = [](const TensorArg& v) { return !v.data || v.view.dims().back() <= 1 || v.view.strides().back() == 1; };
  const DeviceInfo& info = launch.device().info();
  if ((info.type & CL_DEVICE_TYPE_CPU) && unit(x) && unit(y) && unit(gamma) && unit(beta)) {
    // One item per row, walked in vectors (kernels/layer_norm.cl); groups of
    // rows, a few per compute unit.
    const KernelInfo& kernel = norm_kernel(launch, "layer_norm_rows", x.dtype);
    const auto want = static_cast<std::size_t>(std::max<std::int64_t>(rows / (8 * std::max(info.compute_units, 1)), 1));
    std::size_t local = 1;
    while (local * 2 <= std::min(want, kernel.max_local)) local *= 2;
    const std::size_t groups = (static_cast<std::size_t>(rows) + local - 1) / local;
    launch.run_groups(kernel, groups, local, mem_of(x), view_arg(x), mem_of(gamma), view_arg(gamma), mem_of(beta),
                      view_arg(beta), mem_of(y), view_arg(y), mem_of(mean), view_arg(mean), mem_of(rstd),
                      view_arg(rstd), static_cast<cl_long>(rows), static_cast<cl_long>(n),
                      compute_scalar(x.dtype, args.eps), static_cast<cl_long>(args.rms));
    return;
  }
  const KernelInfo& kernel = norm_kernel(launch, "layer_norm", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, n);
  launch.run_groups(kernel, static_cast<std::size_t>(rows), local, mem_of(x), view_arg(x), mem_of(gamma),
                    view_arg(gamma), mem_of(beta), view_arg(beta), mem_of(y), view_arg(y), mem_of(mean),
                    view_arg(mean), mem_of(rstd), view_arg(rstd), static_cast<cl_long>(n),
                    compute_scalar(x.dtype, args.eps), static_cast<cl_long>(args.rms), group_scratch(x.dtype, local));
}

void layer_norm_grad_input(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_input>(launch.call());
  const TensorArg &x = args.x, &gamma = args.gamma, &mean = args.mean, &rstd = args.rstd, &dy = args.dy,
                  &dx = args.dx;
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  const KernelInfo& kernel = norm_kernel(launch, "layer_norm_grad_input", x.dtype);
  const std::size_t local = reduction_group_size(launch.device(), kernel, n);
  launch.run_groups(kernel, static_cast<std::size_t>(rows), local, mem_of(x), view_arg(x), mem_of(gamma),
                    view_arg(gamma), mem_of(mean), view_arg(mean), mem_of(rstd), view_arg(rstd), mem_of(dy),
                    view_arg(dy), mem_of(dx), view_arg(dx), static_cast<cl_long>(n), static_cast<cl_long>(args.rms),
                    group_scratch(x.dtype, local));
}

void layer_norm_grad_params(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_params>(launch.call());
  const TensorArg &x = args.x, &mean = args.mean, &rstd = args.rstd, &dy = args.dy, &dgamma = args.dgamma,
                  &dbeta = args.dbeta;
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

EventPtr launch_layer_norm(Launcher& launch) {
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
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a layer_norm op");
  }
  return launch.finish();
}

constinit const OpKernel kLayerNorm{launch_layer_norm, {&kLayerNormProgram}};

}  // namespace

void register_layer_norm(KernelTable& table) {
  for (OpId op : {OpId::nn_layer_norm, OpId::nn_layer_norm_grad_input, OpId::nn_layer_norm_grad_params})
    set_dtypes(table, op, kFloatDtypes, &kLayerNorm);
}

}  // namespace xylem::opencl
